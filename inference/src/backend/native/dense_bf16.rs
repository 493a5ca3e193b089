//! Dense layers in bf16 on CPUs with AVX-512 BF16: the weights and each product's inputs
//! rounded to bfloat16, multiplied in pairs by `vdpbf16ps` and summed in f32.
//!
//! On such a CPU a `vdpbf16ps` of 512 bits does 32 multiply-adds, where the f32 FMAs the
//! pass otherwise runs do 8 (AMD EPYC, family 25: libtorch's bf16 matmul peak is 4.2 times
//! its f32 one, BENCHMARKS.md). A layer packed for bf16 ([`DenseW::use_bf16`]) keeps its f32
//! panels and adds pairs: for input pair `i` (inputs `2i` and `2i + 1`, a zero past an odd
//! width) and the panel's 16 columns, one `u32` holding the two weights' bf16 bits, low half
//! first, the order `vdpbf16ps` multiplies them in. A product first rounds its input rows to
//! the same pairs (in a buffer of the thread's, grown once; 32 values an instruction), then
//! runs tiles of up to [`ROWS`] rows against two panels (one where one is left): a running
//! sum of 16 columns per row and panel in one register, so each broadcast of a row's pair
//! feeds two `vdpbf16ps` and sixteen independent sums hide the instruction's latency (one
//! panel a tile ran cf6m's products about 1.2x slower). Bias and
//! activation are applied as the sums leave the registers, as in the f32 kernel.
//!
//! Each output is one chain of pair products over the inputs in order, whatever the tile its
//! row lands in, so a position's outputs do not depend on its batch here either. Rounding the
//! inputs and weights to 8 bits of mantissa moves outputs by about 2^-9 of the sum of the
//! terms' magnitudes (`native_bf16_stays_within_its_bound_of_libtorch_f32` states the net's
//! bound).

use std::arch::x86_64::{
    __m256bh, __m256i, __m512, __m512bh, __m512i, _mm256_castpd_ps, _mm256_storeu_si256,
    _mm512_castps_pd, _mm512_castps512_ps256, _mm512_cvtepu16_epi32, _mm512_cvtne2ps_pbh,
    _mm512_cvtneps_pbh, _mm512_dpbf16_ps, _mm512_extractf64x4_pd, _mm512_loadu_ps,
    _mm512_loadu_si512, _mm512_or_si512, _mm512_set1_epi32, _mm512_setzero_ps, _mm512_slli_epi32,
    _mm512_storeu_si512,
};
use std::cell::RefCell;

use super::dense::{DenseW, PANEL, store_panel_row};
use super::kernels::Act;
use super::simd::{Avx2, Lanes};

/// Rows per tile: eight running sums of 16 columns, and the loads and broadcasts beside
/// them, in the 32 registers of AVX-512. A block's 64 rows per position are eight tiles.
const ROWS: usize = 8;

/// Whether this CPU runs the bf16 products (AVX-512 F, BF16 and VL, the last for the 256-bit
/// products of `super::attention_bf16`; AVX2 and FMA for the rest of the pass).
pub fn supported() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bf16")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
}

/// The bf16 bits of `x`, rounded to nearest, ties to even (as `vcvtne2ps2bf16` rounds).
#[inline(always)]
fn bf16_bits(x: f32) -> u32 {
    u32::from(half::bf16::from_f32(x).to_bits())
}

/// Two values as one pair, `lo` in the low half.
#[inline(always)]
pub(super) fn pair(lo: f32, hi: f32) -> u32 {
    bf16_bits(lo) | (bf16_bits(hi) << 16)
}

/// One input row as pairs: `out[i] = pair(row[2i], row[2i + 1])`, a zero past an odd width.
/// Thirty-two values at a time by `vcvtne2ps2bf16`, whose 32 bf16 in order are 16 pairs low
/// half first, then sixteen by `vcvtneps2bf16`; the rest one pair at a time. (The
/// instructions read denormal inputs as zero, where [`bf16_bits`] rounds them; both keep a
/// row's pairs independent of its batch.)
///
/// # Safety
/// The CPU must run the bf16 products; `out` holds `row.len().div_ceil(2)` pairs.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512bf16")]
pub(super) unsafe fn round_row(row: &[f32], out: &mut [u32]) {
    let k = row.len();
    assert!(out.len() >= k.div_ceil(2), "pairs of the row");
    let mut c = 0;
    while c + 32 <= k {
        // SAFETY: `c + 32 <= k` values read; `c / 2 + 16 <= k.div_ceil(2)` pairs written.
        unsafe {
            let lo = _mm512_loadu_ps(row.as_ptr().add(c));
            let hi = _mm512_loadu_ps(row.as_ptr().add(c + 16));
            let bf = std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo));
            _mm512_storeu_si512(out.as_mut_ptr().add(c / 2) as *mut __m512i, bf);
        }
        c += 32;
    }
    if c + 16 <= k {
        // SAFETY: `c + 16 <= k` values read; `c / 2 + 8 <= k.div_ceil(2)` pairs written.
        unsafe {
            let bf = _mm512_cvtneps_pbh(_mm512_loadu_ps(row.as_ptr().add(c)));
            _mm256_storeu_si256(
                out.as_mut_ptr().add(c / 2) as *mut __m256i,
                std::mem::transmute::<__m256bh, __m256i>(bf),
            );
        }
        c += 16;
    }
    let mut halves = row[c..].chunks_exact(2);
    for (o, two) in out[c / 2..].iter_mut().zip(&mut halves) {
        *o = pair(two[0], two[1]);
    }
    if let [last] = halves.remainder() {
        out[k.div_ceil(2) - 1] = pair(*last, 0.0);
    }
}

/// Packs f32 panels (`d_in` inputs of [`PANEL`] columns each, one after another) into pairs:
/// `pairs[p][i][j] = pair(w[2i][j], w[2i + 1][j])` of panel `p`.
pub fn pack_pairs(panels: &[f32], d_in: usize, pairs: &mut Vec<u32>) {
    let kp = d_in.div_ceil(2);
    let count = panels.len() / (d_in * PANEL).max(1);
    pairs.clear();
    pairs.resize(count * kp * PANEL, 0);
    for (panel, out) in panels
        .chunks_exact(d_in * PANEL)
        .zip(pairs.chunks_exact_mut(kp * PANEL))
    {
        for i in 0..kp {
            for j in 0..PANEL {
                let lo = panel[2 * i * PANEL + j];
                let hi = if 2 * i + 1 < d_in {
                    panel[(2 * i + 1) * PANEL + j]
                } else {
                    0.0
                };
                out[i * PANEL + j] = pair(lo, hi);
            }
        }
    }
}

thread_local! {
    /// The input rows of the product in progress, as pairs: grown to the largest product
    /// once, then reused.
    static INPUT_PAIRS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// `dst[rows, d_out] = act(src[rows, d_in] w + bias)` in bf16 products (see the module
/// docs); `w` must be packed for bf16.
///
/// # Safety
/// The CPU must run the bf16 products ([`supported`]).
#[target_feature(enable = "avx2,fma,avx512f,avx512bf16")]
pub unsafe fn dense(
    dst: &mut [f32],
    (src, stride): (&[f32], usize),
    w: &DenseW,
    rows: usize,
    act: Act,
) {
    let (k, n) = (w.d_in(), w.d_out());
    let kp = k.div_ceil(2);
    if !w.fits(dst, (src, stride), rows) {
        return;
    }
    let (pairs, bias) = (w.pairs(), w.bias());
    assert_eq!(
        pairs.len(),
        n.div_ceil(PANEL) * kp * PANEL,
        "packed for bf16"
    );
    INPUT_PAIRS.with_borrow_mut(|input| {
        if input.len() < rows * kp {
            input.resize(rows * kp, 0);
        }
        for (r, out) in input.chunks_exact_mut(kp).take(rows).enumerate() {
            // SAFETY: the caller's promise of the CPU; `out` holds `kp` pairs.
            unsafe { round_row(&src[r * stride..][..k], out) };
        }
        // SAFETY: the caller's promise of the CPU.
        unsafe { products(&input[..rows * kp], kp, (pairs, bias, act), n, dst, n) };
    });
}

/// Scratch of [`weighted_values`]: one head's weights and values as pairs.
#[derive(Debug, Clone, Default)]
pub struct ValuePairs {
    /// The `[64, 64]` attention weights, each row as 32 pairs of keys.
    weights: Vec<u32>,
    /// The head's values as panels of pairs: for panel `p`, key pair `m` and channel `c`,
    /// `pair(v[2m][16p + c], v[2m + 1][16p + c])`.
    values: Vec<u32>,
}

impl ValuePairs {
    /// The weights of [`weighted_values`], each query's 64 as 32 pairs of keys (`[64, 32]`),
    /// for its caller to write.
    pub fn weights_mut(&mut self) -> &mut [u32] {
        self.weights.resize(64 * 32, 0);
        &mut self.weights
    }

    /// The weights as [`ValuePairs::weights_mut`] left them.
    pub fn weights(&self) -> &[u32] {
        &self.weights
    }
}

/// Zero biases for the panels of [`weighted_values`] (heads of up to 64 channels).
const NO_BIAS: [f32; 4 * PANEL] = [0.0; 4 * PANEL];

/// One head's `out[i] = sum_j a[i][j] v_j` for the 64 queries `i` in bf16 products: the
/// weights `a`, already pairs of keys in `scratch` ([`ValuePairs::weights_mut`], written by
/// the softmax), and the values (64 rows `stride` apart, `d_head` channels each, a multiple
/// of 16 up to 64) rounded to pairs of keys here, the sums in f32, each query's output one
/// chain over the key pairs in order. Query `i`'s output goes to `out[i * ldo..][..d_head]`.
///
/// The values are the weights of this product, so they are paired here, per head and
/// position: 16 channels of two keys rounded and interleaved in six instructions.
///
/// # Safety
/// The CPU must run the bf16 products ([`supported`]).
#[target_feature(enable = "avx2,fma,avx512f,avx512bf16")]
pub unsafe fn weighted_values(
    out: &mut [f32],
    ldo: usize,
    values: &[f32],
    stride: usize,
    d_head: usize,
    scratch: &mut ValuePairs,
) {
    assert!(
        d_head.is_multiple_of(PANEL) && d_head <= NO_BIAS.len(),
        "head width"
    );
    assert!(values.len() >= 63 * stride + d_head, "values");
    assert_eq!(scratch.weights.len(), 64 * 32, "the weights' pairs");
    assert!(out.len() >= 63 * ldo + d_head, "outputs");
    let panels = d_head / PANEL;
    scratch.values.resize(panels * 32 * PANEL, 0);
    for p in 0..panels {
        for m in 0..32 {
            let (even, odd) = (
                &values[2 * m * stride + PANEL * p..][..PANEL],
                &values[(2 * m + 1) * stride + PANEL * p..][..PANEL],
            );
            let dst = &mut scratch.values[(p * 32 + m) * PANEL..][..PANEL];
            // SAFETY: 16 values read from each row and 16 pairs written, checked by the
            // slices above.
            unsafe {
                let (lo, hi) = (widened_bf16(even.as_ptr()), widened_bf16(odd.as_ptr()));
                let both = _mm512_or_si512(lo, _mm512_slli_epi32::<16>(hi));
                _mm512_storeu_si512(dst.as_mut_ptr() as *mut __m512i, both);
            }
        }
    }
    // SAFETY: the caller's promise of the CPU.
    unsafe {
        products(
            &scratch.weights,
            32,
            (&scratch.values, &NO_BIAS, Act::Identity),
            d_head,
            out,
            ldo,
        )
    };
}

/// Sixteen values from `p` rounded to bf16, each in the low half of a 32-bit lane.
///
/// # Safety
/// The CPU must run the bf16 products; `p` points at sixteen readable values.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512bf16")]
unsafe fn widened_bf16(p: *const f32) -> __m512i {
    // SAFETY: the caller's promise.
    unsafe {
        _mm512_cvtepu16_epi32(std::mem::transmute::<__m256bh, __m256i>(
            _mm512_cvtneps_pbh(_mm512_loadu_ps(p)),
        ))
    }
}

/// `out[r * ldo..][..n] = act(a_r w + bias)` for each row `r` of input pairs `a` (`kp` a row)
/// against the panels of pairs `w` (`kp * PANEL` each, `n.div_ceil(PANEL)` of them) and their
/// biases (padded to whole panels): the rows in tiles of [`ROWS`] (fewer at the end), two
/// panels a tile where two are left, each broadcast input pair then feeding two products so
/// that sixteen running sums hide `vdpbf16ps`'s latency.
///
/// # Safety
/// The CPU must run the bf16 products.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512bf16")]
unsafe fn products(
    a: &[u32],
    kp: usize,
    (w, bias, act): (&[u32], &[f32], Act),
    n: usize,
    out: &mut [f32],
    ldo: usize,
) {
    let rows = a.len() / kp.max(1);
    let panels = n.div_ceil(PANEL);
    let mut p = 0;
    while p < panels {
        let group = if panels - p >= 2 { 2 } else { 1 };
        let c0 = p * PANEL;
        let tile = Tile {
            panels: &w[p * kp * PANEL..(p + group) * kp * PANEL],
            bias: &bias[c0..(p + group) * PANEL],
            act,
            width: (group * PANEL).min(n - c0),
            kp,
        };
        let mut r = 0;
        while r < rows {
            let (a, out) = (&a[r * kp..], &mut out[r * ldo + c0..]);
            // SAFETY: the caller's promise of the CPU; the tile checks its own ranges.
            r += unsafe {
                match (group, rows - r) {
                    (2, ROWS..) => tile.run::<ROWS, 2>(a, out, ldo),
                    (2, 4..ROWS) => tile.run::<4, 2>(a, out, ldo),
                    (2, 2 | 3) => tile.run::<2, 2>(a, out, ldo),
                    (2, _) => tile.run::<1, 2>(a, out, ldo),
                    (_, ROWS..) => tile.run::<ROWS, 1>(a, out, ldo),
                    (_, 4..ROWS) => tile.run::<4, 1>(a, out, ldo),
                    (_, 2 | 3) => tile.run::<2, 1>(a, out, ldo),
                    _ => tile.run::<1, 1>(a, out, ldo),
                }
            };
        }
        p += group;
    }
}

/// The operands of one tile's columns: one or two panels side by side.
struct Tile<'a> {
    /// The panels' pairs, one panel (`kp * PANEL`) after another.
    panels: &'a [u32],
    /// The panels' biases, `PANEL` each.
    bias: &'a [f32],
    act: Act,
    /// Output columns of the panels that exist.
    width: usize,
    /// Input pairs.
    kp: usize,
}

impl Tile<'_> {
    /// `R` rows of input pairs from `a` on against `P` panels, into `out` (row `r` at
    /// `out[r * ldo..]`); returns `R`.
    ///
    /// # Safety
    /// The CPU must run the bf16 products.
    #[inline]
    #[target_feature(enable = "avx2,fma,avx512f,avx512bf16")]
    unsafe fn run<const R: usize, const P: usize>(
        &self,
        a: &[u32],
        out: &mut [f32],
        ldo: usize,
    ) -> usize {
        let kp = self.kp;
        assert!(a.len() >= R * kp, "tile rows");
        assert!(self.panels.len() >= P * kp * PANEL, "panels");
        assert!(self.bias.len() >= P * PANEL, "biases");
        assert!(self.width > (P - 1) * PANEL, "a column in every panel");
        assert!(out.len() >= (R - 1) * ldo + self.width, "tile outputs");
        let (ap, bp) = (a.as_ptr(), self.panels.as_ptr());
        let mut acc: [[__m512; P]; R] = [[_mm512_setzero_ps(); P]; R];
        for i in 0..kp {
            // SAFETY: `i < kp`, `q < P` and `r < R`: within the ranges asserted above; a
            // pair of bf16 is the same 32 bits as one `u32`, so the integer vectors are the
            // bf16 vectors `vdpbf16ps` reads.
            unsafe {
                let b: [__m512bh; P] = std::array::from_fn(|q| {
                    std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(
                        bp.add((q * kp + i) * PANEL) as *const __m512i,
                    ))
                });
                for (r, sums) in acc.iter_mut().enumerate() {
                    let x = std::mem::transmute::<__m512i, __m512bh>(_mm512_set1_epi32(
                        *ap.add(r * kp + i) as i32,
                    ));
                    for (sum, &b) in sums.iter_mut().zip(&b) {
                        *sum = _mm512_dpbf16_ps(*sum, x, b);
                    }
                }
            }
        }
        for q in 0..P {
            let bias = &self.bias[q * PANEL..];
            let (b0, b1) = (Avx2::load(&bias[..8]), Avx2::load(&bias[8..PANEL]));
            let width = (self.width - q * PANEL).min(PANEL);
            for (r, sums) in acc.iter().enumerate() {
                let sum = sums[q];
                // The two halves of the sums straight from the register: a round trip
                // through memory, and a copy of a length known only at run time (a call to
                // `memcpy` per row), were a tenth of the tiny net's pass.
                let (lo, hi) = (
                    _mm512_castps512_ps256(sum),
                    _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(sum))),
                );
                let v0 = self.act.lanes(Avx2(lo).add(b0));
                let v1 = self.act.lanes(Avx2(hi).add(b1));
                store_panel_row(&mut out[r * ldo + q * PANEL..], v0, v1, width);
            }
        }
        R
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernels::mish;
    use super::*;

    /// The vector rounding of a row equals the one-pair-at-a-time rounding, ties included,
    /// over a width with two vectors and an odd tail.
    #[test]
    fn a_row_rounds_to_the_same_pairs_by_vector_and_by_pair() {
        if !supported() {
            eprintln!("skipped: this CPU lacks AVX-512 BF16");
            return;
        }
        // Ties between two bf16 (1 + 2^-8, 1 + 3 * 2^-8) round to the even one.
        let mut row: Vec<f32> = (0..71).map(|i| (i as f32 * 0.731).sin() * 3.7).collect();
        row[3] = 1.0 + 1.0 / 256.0;
        row[40] = -(1.0 + 3.0 / 256.0);
        let mut vector = vec![u32::MAX; 36];
        // SAFETY: checked above.
        unsafe { round_row(&row, &mut vector) };
        let by_pair: Vec<u32> = (0..36)
            .map(|i| pair(row[2 * i], row.get(2 * i + 1).copied().unwrap_or(0.0)))
            .collect();
        assert_eq!(vector, by_pair);
        assert_eq!(
            vector[1] >> 16,
            u32::from(half::bf16::from_f32(1.0).to_bits())
        );
        assert_eq!(
            vector[20] & 0xffff,
            u32::from(half::bf16::from_f32(-1.0 - 2.0 / 128.0).to_bits())
        );
    }

    /// One head's weighted values against the sums of the bf16-rounded operands in f64, for
    /// one, two and three panels of channels, with strides wider than the head.
    #[test]
    fn weighted_values_match_the_rounded_sums() {
        if !supported() {
            eprintln!("skipped: this CPU lacks AVX-512 BF16");
            return;
        }
        let round = |x: f32| half::bf16::from_f32(x).to_f64();
        let mut scratch = ValuePairs::default();
        for dh in [16, 32, 48] {
            let (stride, ldo) = (dh + 5, dh + 3);
            let a: Vec<f32> = (0..4096)
                .map(|i| ((i * 37) % 101) as f32 / 4096.0)
                .collect();
            let v: Vec<f32> = (0..64 * stride)
                .map(|i| ((i * 13) % 29) as f32 * 0.19 - 2.6)
                .collect();
            let mut out = vec![f32::NAN; 64 * ldo];
            // SAFETY: checked above.
            unsafe {
                for (row, pairs) in a
                    .chunks_exact(64)
                    .zip(scratch.weights_mut().chunks_exact_mut(32))
                {
                    round_row(row, pairs);
                }
                weighted_values(&mut out, ldo, &v, stride, dh, &mut scratch);
            }
            for i in 0..64 {
                for c in 0..dh {
                    let terms = (0..64).map(|j| round(a[i * 64 + j]) * round(v[j * stride + c]));
                    let scale: f64 = terms.clone().map(f64::abs).sum::<f64>() + 1.0;
                    let want = terms.sum::<f64>();
                    let got = out[i * ldo + c] as f64;
                    assert!(
                        (got - want).abs() <= 1e-6 * scale,
                        "{dh}: ({i}, {c}) {got} {want}"
                    );
                }
                // Nothing written between a query's channels and the next query's.
                assert!(
                    out[i * ldo + dh..(i * ldo + ldo).min(64 * ldo)]
                        .iter()
                        .all(|x| x.is_nan())
                );
            }
        }
    }

    /// A product of awkward sizes (an odd input width, a partial panel, every tile height)
    /// against the same sums of the bf16-rounded operands in f64, and against f32.
    #[test]
    fn bf16_dense_matches_the_rounded_product_and_stays_near_f32() {
        if !supported() {
            eprintln!("skipped: this CPU lacks AVX-512 BF16");
            return;
        }
        // An odd input width and a partial panel; then two vectors of inputs and an odd
        // tail, and whole panels.
        for (k, n, stride) in [(7, 21, 10), (71, 48, 75)] {
            product_matches(k, n, stride);
        }
    }

    fn product_matches(k: usize, n: usize, stride: usize) {
        let w: Vec<f32> = (0..k * n)
            .map(|i| ((i * 7) % 11) as f32 * 0.23 - 1.1)
            .collect();
        let bias: Vec<f32> = (0..n).map(|i| i as f32 * 0.1 - 1.0).collect();
        let round = |x: f32| half::bf16::from_f32(x).to_f64();
        for (b, act) in [(None, Act::Identity), (Some(&bias[..]), Act::Mish)] {
            let mut dw = DenseW::new(&w, b, k, n);
            dw.use_bf16();
            for rows in 1..=19 {
                let src: Vec<f32> = (0..rows * stride)
                    .map(|i| ((i * 5) % 13) as f32 * 0.37 - 2.2)
                    .collect();
                let mut dst = vec![f32::NAN; rows * n];
                // SAFETY: checked above.
                unsafe { dense(&mut dst, (&src, stride), &dw, rows, act) };
                for r in 0..rows {
                    let mut alone = vec![0f32; n];
                    // SAFETY: checked above.
                    unsafe { dense(&mut alone, (&src[r * stride..], k), &dw, 1, act) };
                    for c in 0..n {
                        let x = &src[r * stride..][..k];
                        let terms = (0..k).map(|i| round(x[i]) * round(w[c * k + i]));
                        let scale: f64 = terms.clone().map(f64::abs).sum::<f64>() + 1.0;
                        let sum = terms.sum::<f64>() + b.map_or(0.0, |b| b[c] as f64);
                        let exact = (0..k)
                            .map(|i| x[i] as f64 * w[c * k + i] as f64)
                            .sum::<f64>()
                            + b.map_or(0.0, |b| b[c] as f64);
                        let f = |v: f64| {
                            if act == Act::Mish {
                                mish(v as f32) as f64
                            } else {
                                v
                            }
                        };
                        let got = dst[r * n + c] as f64;
                        assert!(
                            (got - f(sum)).abs() <= 1e-6 * scale,
                            "rows {rows}, ({r}, {c}): {got} against the rounded {}",
                            f(sum)
                        );
                        assert!(
                            (got - f(exact)).abs() <= scale / 128.0,
                            "rows {rows}, ({r}, {c}): {got} against f32 {}",
                            f(exact)
                        );
                        assert_eq!(alone[c].to_bits(), dst[r * n + c].to_bits(), "row {r}");
                    }
                }
            }
        }
    }
}
