//! Dense layers: their weights packed into panels once when a net is laid out, and their
//! product with the bias and activation applied as each tile of outputs leaves the
//! registers.
//!
//! Every product of the pass but the policy's queries against its keys is against a
//! layer's fixed weights, so the weights are packed here once ([`DenseW::new`]; the keys
//! of each position are packed the same way into one buffer): panels of
//! [`PANEL`] output columns, the inputs in order inside a panel, zero columns padding the
//! last. [`dense`] runs tiles of up to six rows against one panel at a time (twelve running
//! sums in registers, the panel in the L1 cache) and writes `act(sum + bias)` straight to
//! the output. The `gemm` crate, which the products went through before, packs its operands
//! on each call: its driver and packing took 7-8% of self-play beside its microkernel's 38%,
//! and the bias and activation took one more pass over each output. The pass now has no
//! other product engine.
//!
//! Each output value is one chain of fused multiply-adds over the inputs in order, whatever
//! the number of rows or the tile a row lands in: a position's outputs do not depend on the
//! block it is evaluated in.

use super::kernels::Act;
use super::simd::Lanes;

/// Output columns per panel: two vectors of lanes.
pub const PANEL: usize = 16;

/// A dense layer packed for [`dense`].
#[derive(Debug, Clone)]
pub struct DenseW {
    /// Panel `p` holds `w[i][p * PANEL + j]` at `p * d_in * PANEL + i * PANEL + j`; columns
    /// past `d_out` are zero.
    panels: Vec<f32>,
    /// The bias padded with zeros to whole panels (all zero for a layer without one).
    bias: Vec<f32>,
    /// Input width.
    d_in: usize,
    /// Output width.
    d_out: usize,
    /// The panels again as bf16 pairs for the bf16 products (`super::dense_bf16`), empty
    /// for a layer computed in f32; packed only where the CPU runs them.
    pairs: Vec<u32>,
}

impl DenseW {
    /// Packs weight `w` `[d_out, d_in]` (a row per output, as the net stores it) and `bias`
    /// `[d_out]`.
    ///
    /// # Panics
    /// If `w` or `bias` is not of that size (the caller has checked the tensors' shapes).
    pub fn new(w: &[f32], bias: Option<&[f32]>, d_in: usize, d_out: usize) -> DenseW {
        let panels = d_out.div_ceil(PANEL);
        let mut layer = DenseW {
            panels: vec![0f32; panels * d_in * PANEL],
            bias: vec![0f32; panels * PANEL],
            d_in,
            d_out,
            pairs: Vec::new(),
        };
        layer.set_output_major(w);
        if let Some(b) = bias {
            assert_eq!(b.len(), d_out, "bias size");
            layer.bias[..d_out].copy_from_slice(b);
        }
        layer
    }

    /// A layer of zeros without a bias, its weights to be set by
    /// [`DenseW::set_output_major`].
    pub fn zeros(d_in: usize, d_out: usize) -> DenseW {
        DenseW::new(&vec![0f32; d_in * d_out], None, d_in, d_out)
    }

    /// Replaces the weights by `m` `[d_out, d_in]`, a row per output (as a net stores them,
    /// and as the policy's keys are against its queries), in place.
    ///
    /// # Panics
    /// If `m` is not of that size.
    pub fn set_output_major(&mut self, m: &[f32]) {
        let (k, n) = (self.d_in, self.d_out);
        assert_eq!(m.len(), k * n, "weight size");
        for (p, panel) in self.panels.chunks_exact_mut(k * PANEL).enumerate() {
            let c0 = p * PANEL;
            for (j, row) in m.chunks_exact(k).skip(c0).take(PANEL).enumerate() {
                for (i, &v) in row.iter().enumerate() {
                    panel[i * PANEL + j] = v;
                }
            }
        }
        if !self.pairs.is_empty() {
            self.pack_pairs();
        }
    }

    /// Computes this layer's products in bf16 from now on, where the CPU runs them
    /// (`super::dense_bf16::supported`); returns whether it does.
    pub fn use_bf16(&mut self) -> bool {
        #[cfg(target_arch = "x86_64")]
        if super::dense_bf16::supported() {
            self.pack_pairs();
            return true;
        }
        false
    }

    /// Whether the products run in bf16.
    pub fn is_bf16(&self) -> bool {
        !self.pairs.is_empty()
    }

    #[cfg(target_arch = "x86_64")]
    fn pack_pairs(&mut self) {
        super::dense_bf16::pack_pairs(&self.panels, self.d_in, &mut self.pairs);
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn pack_pairs(&mut self) {}

    /// The bf16 pairs (empty in f32).
    pub fn pairs(&self) -> &[u32] {
        &self.pairs
    }

    /// The bias, padded to whole panels.
    pub fn bias(&self) -> &[f32] {
        &self.bias
    }

    /// Input width.
    pub fn d_in(&self) -> usize {
        self.d_in
    }

    /// Whether a product of `rows` rows has anything to compute; panics if `dst` or `src`
    /// (rows `stride` apart) is too short for it.
    pub fn fits(&self, dst: &[f32], (src, stride): (&[f32], usize), rows: usize) -> bool {
        let (k, n) = (self.d_in, self.d_out);
        if rows == 0 || n == 0 {
            return false;
        }
        assert!(dst.len() >= rows * n, "output rows");
        assert!(
            stride >= k && src.len() >= (rows - 1) * stride + k,
            "input rows"
        );
        true
    }

    /// Output width.
    pub fn d_out(&self) -> usize {
        self.d_out
    }
}

/// `dst[rows, d_out] = act(src[rows, d_in] w + bias)`: `src` with the distance between its
/// rows (row `r` at `src[r * stride..]`), `dst` packed.
#[inline(always)]
pub fn dense<L: Lanes>(
    dst: &mut [f32],
    (src, stride): (&[f32], usize),
    w: &DenseW,
    rows: usize,
    act: Act,
) {
    #[cfg(target_arch = "x86_64")]
    if w.is_bf16() {
        // SAFETY: a layer has pairs only where the CPU runs the bf16 products (`use_bf16`).
        unsafe { super::dense_bf16::dense(dst, (src, stride), w, rows, act) };
        return;
    }
    let (k, n) = (w.d_in, w.d_out);
    if !w.fits(dst, (src, stride), rows) {
        return;
    }
    assert_eq!(w.panels.len(), n.div_ceil(PANEL) * k * PANEL);
    for (p, (panel, bias)) in w
        .panels
        .chunks_exact(k * PANEL)
        .zip(w.bias.chunks_exact(PANEL))
        .enumerate()
    {
        let c0 = p * PANEL;
        let width = PANEL.min(n - c0);
        let mut r = 0;
        while r < rows {
            let tile = Tile {
                src: &src[r * stride..],
                stride,
                panel,
                bias,
                act,
                width,
            };
            let out = &mut dst[r * n + c0..];
            // Six rows take twelve sums and three more registers of the sixteen; the rest
            // of a block (64 rows are ten tiles of six and four) in smaller tiles.
            r += match rows - r {
                6.. => tile.run::<L, 6>(out, n),
                4 | 5 => tile.run::<L, 4>(out, n),
                2 | 3 => tile.run::<L, 2>(out, n),
                _ => tile.run::<L, 1>(out, n),
            };
        }
    }
}

/// One tile's operands: rows of inputs from `src` on, against one panel.
struct Tile<'a> {
    src: &'a [f32],
    stride: usize,
    panel: &'a [f32],
    bias: &'a [f32],
    act: Act,
    /// Output columns of the panel that exist.
    width: usize,
}

impl Tile<'_> {
    /// Computes `R` rows of the panel's columns into `out` (row `r` at `out[r * ldo..]`);
    /// returns `R`.
    #[inline(always)]
    fn run<L: Lanes, const R: usize>(&self, out: &mut [f32], ldo: usize) -> usize {
        let k = self.panel.len() / PANEL;
        assert!(self.src.len() >= (R - 1) * self.stride + k, "tile rows");
        assert!(out.len() >= (R - 1) * ldo + self.width, "tile outputs");
        let (a, b) = (self.src.as_ptr(), self.panel.as_ptr());
        let mut acc = [[L::zero(); 2]; R];
        for i in 0..k {
            // SAFETY: the panel holds `k * PANEL` values; row `r < R` of the inputs reaches
            // `(R - 1) * stride + k`, asserted above.
            unsafe {
                let b0 = L::load_ptr(b.add(i * PANEL));
                let b1 = L::load_ptr(b.add(i * PANEL + 8));
                for (r, sums) in acc.iter_mut().enumerate() {
                    let x = L::splat(*a.add(r * self.stride + i));
                    sums[0] = sums[0].mul_add(x, b0);
                    sums[1] = sums[1].mul_add(x, b1);
                }
            }
        }
        let (b0, b1) = (L::load(&self.bias[..8]), L::load(&self.bias[8..]));
        for (r, sums) in acc.iter().enumerate() {
            let v0 = self.act.lanes(sums[0].add(b0));
            let v1 = self.act.lanes(sums[1].add(b1));
            store_panel_row(&mut out[r * ldo..], v0, v1, self.width);
        }
        R
    }
}

/// Writes one row of a panel's outputs, the two halves `v0` and `v1`, to the first `width`
/// (at most [`PANEL`]) values of `row`: straight from the registers for a whole panel,
/// through a stack copy for the last, partial one.
#[inline(always)]
pub(super) fn store_panel_row<L: Lanes>(row: &mut [f32], v0: L, v1: L, width: usize) {
    if width == PANEL {
        v0.store(&mut row[..8]);
        v1.store(&mut row[8..PANEL]);
    } else {
        let mut t = [0f32; PANEL];
        v0.store(&mut t[..8]);
        v1.store(&mut t[8..]);
        row[..width].copy_from_slice(&t[..width]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernels::mish;
    use super::super::simd::on_both_lanes;
    use super::*;

    /// A product of awkward sizes (a partial panel, every tile height) against a direct sum.
    fn check<L: Lanes>() {
        let (k, n, stride) = (7, 21, 10);
        // `[n, k]`, a row per output.
        let w: Vec<f32> = (0..k * n)
            .map(|i| ((i * 7) % 11) as f32 * 0.25 - 1.0)
            .collect();
        let bias: Vec<f32> = (0..n).map(|i| i as f32 * 0.1 - 1.0).collect();
        for (b, act) in [(None, Act::Identity), (Some(&bias[..]), Act::Mish)] {
            let dw = DenseW::new(&w, b, k, n);
            for rows in 1..=13 {
                let src: Vec<f32> = (0..rows * stride)
                    .map(|i| ((i * 5) % 13) as f32 * 0.5 - 3.0)
                    .collect();
                let mut dst = vec![f32::NAN; rows * n];
                dense::<L>(&mut dst, (&src, stride), &dw, rows, act);
                for r in 0..rows {
                    // The same chains whatever tile the row is in.
                    let mut alone = vec![0f32; n];
                    dense::<L>(&mut alone, (&src[r * stride..], k), &dw, 1, act);
                    for c in 0..n {
                        let mut sum = 0f32;
                        for i in 0..k {
                            sum = src[r * stride + i].mul_add(w[c * k + i], sum);
                        }
                        let sum = sum + b.map_or(0.0, |b| b[c]);
                        let want = if act == Act::Mish { mish(sum) } else { sum };
                        let got = dst[r * n + c];
                        assert!(
                            (got - want).abs() <= 1e-6 * (1.0 + want.abs()),
                            "rows {rows}, ({r}, {c}): {got} against {want}"
                        );
                        assert_eq!(alone[c].to_bits(), got.to_bits(), "row {r} of {rows}");
                    }
                }
            }
        }
    }

    #[test]
    fn weights_set_again_in_place_pack_as_a_new_layer() {
        let (k, n) = (5, 19);
        let first: Vec<f32> = (0..k * n).map(|i| i as f32).collect();
        let second: Vec<f32> = (0..k * n).map(|i| -(i as f32) * 0.5).collect();
        let mut set = DenseW::new(&first, None, k, n);
        set.set_output_major(&second);
        assert_eq!(set.panels, DenseW::new(&second, None, k, n).panels);
    }

    #[test]
    fn dense_matches_a_direct_product_on_both_lanes() {
        on_both_lanes!(check);
    }
}
