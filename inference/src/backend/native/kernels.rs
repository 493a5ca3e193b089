//! The native backend's element-wise arithmetic around the products of `super::dense`:
//! activations, residual + norm, softmax, and the `exp` they rest on.
//!
//! Every kernel here is `#[inline(always)]` and written as plain loops over slices, so that
//! it is compiled into each instruction-set variant of the forward pass (see
//! `super::NativeBackend::forward`); the activations run in [`Lanes`]. None calls a library
//! `exp`.

use super::simd::Lanes;

/// The constants of [`exp`], shared with its vector form (`super::simd`).
pub mod exp_constants {
    /// `log2(e)`.
    pub const LOG2E: f32 = std::f32::consts::LOG2_E;
    /// `ln 2` split in two for an exact reduction.
    pub const LN2_HI: f32 = 0.693_359_4;
    /// The rest of `ln 2`.
    pub const LN2_LO: f32 = -2.121_944_4e-4;
    /// Arguments are clamped to `[LOW, HIGH]` (the result stays finite and normal).
    pub const LOW: f32 = -87.0;
    /// See [`LOW`].
    pub const HIGH: f32 = 88.0;
    /// Cephes' `expf` polynomial, highest degree first.
    pub const P: [f32; 6] = [
        1.987_569_1e-4,
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        0.166_666_65,
        0.5,
    ];
}

/// `e^x` for `x` in f32, within about 2 ulp (Cephes' `expf` polynomial after reducing by
/// `ln 2`); large arguments saturate instead of overflowing.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    use exp_constants as c;
    let x = x.clamp(c::LOW, c::HIGH);
    let n = (x * c::LOG2E + 0.5).floor();
    let r = (x - n * c::LN2_HI) - n * c::LN2_LO;
    let mut p = c::P[0];
    for &k in &c::P[1..] {
        p = p * r + k;
    }
    let y = (p * r) * r + r + 1.0;
    // 2^n through the exponent bits; n is in [-126, 127] after the clamp.
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    y * scale
}

/// Mish, `x tanh(softplus(x))`, written as `x n / (n + 2)` with `n = e^x (e^x + 2)` (the
/// same function without a logarithm); from `x = 20` on it is `x` in f32, as libtorch's.
/// The pass runs [`mish_lanes`]; this scalar form is what the tests check it against.
#[cfg(test)]
pub fn mish(x: f32) -> f32 {
    let e = exp(x.min(20.0));
    let n = e * (e + 2.0);
    x * n / (n + 2.0)
}

/// SiLU (swish), `x / (1 + e^-x)` (the scalar form, as [`mish`]).
#[cfg(test)]
pub fn silu(x: f32) -> f32 {
    x / (1.0 + exp(-x))
}

/// An activation after a product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// None.
    Identity,
    /// [`mish`].
    Mish,
    /// [`silu`].
    Silu,
}

impl Act {
    /// The activation of each lane.
    #[inline(always)]
    pub fn lanes<L: Lanes>(self, x: L) -> L {
        match self {
            Act::Identity => x,
            Act::Mish => mish_lanes(x),
            Act::Silu => x.div(L::splat(1.0).add(L::zero().sub(x).exp())),
        }
    }
}

/// Mish in lanes (`kernels::mish` gives the formula).
#[inline(always)]
pub fn mish_lanes<L: Lanes>(x: L) -> L {
    let e = x.min(L::splat(20.0)).exp();
    let n = e.mul(e.add(L::splat(2.0)));
    x.mul(n).div(n.add(L::splat(2.0)))
}

/// The normalisation after a residual sum.
#[derive(Debug, Clone)]
pub enum RowNorm {
    /// RMSNorm with a gain.
    Rms {
        /// Gain `[d]`.
        gain: Vec<f32>,
    },
    /// LayerNorm with a gain and a bias.
    Layer {
        /// Gain `[d]`.
        gain: Vec<f32>,
        /// Bias `[d]`.
        bias: Vec<f32>,
    },
}

/// Normalises one row in place with epsilon `eps`.
#[inline(always)]
pub fn norm_row(row: &mut [f32], norm: &RowNorm, eps: f32) {
    let d = row.len() as f32;
    match norm {
        RowNorm::Rms { gain } => {
            let ms = sum(row, |v| v * v) / d;
            let s = 1.0 / (ms + eps).sqrt();
            for (v, g) in row.iter_mut().zip(gain) {
                *v = *v * s * g;
            }
        }
        RowNorm::Layer { gain, bias } => {
            layer_norm_row(row, gain, bias, eps);
        }
    }
}

/// LayerNorm of one row in place (biased variance, as libtorch's).
#[inline(always)]
pub fn layer_norm_row(row: &mut [f32], gain: &[f32], bias: &[f32], eps: f32) {
    let d = row.len() as f32;
    let mean = sum(row, |v| v) / d;
    let var = sum(row, |v| (v - mean) * (v - mean)) / d;
    let s = 1.0 / (var + eps).sqrt();
    for ((v, g), b) in row.iter_mut().zip(gain).zip(bias) {
        *v = (*v - mean) * s * g + b;
    }
}

/// `x = norm(x + alpha * y)` row by row: the residual sum of an encoder layer (`y` the
/// product with its bias) and the norm after it in one pass. `x` and `y` are `[rows, d]`.
#[inline(always)]
pub fn residual_norm(x: &mut [f32], y: &[f32], d: usize, alpha: f32, norm: &RowNorm, eps: f32) {
    for (xr, yr) in x.chunks_exact_mut(d).zip(y.chunks_exact(d)) {
        for (xv, yv) in xr.iter_mut().zip(yr) {
            *xv += alpha * yv;
        }
        norm_row(xr, norm, eps);
    }
}

/// `sum f(v)` over `values` in eight lanes (value `i` into lane `i % 8`), so that it
/// vectorises without reassociating the caller's loop. Walked in whole chunks of eight: an
/// index loop with `i % 8` compiled to one scalar add through memory per value, which made
/// the norms 8% of the native pass.
#[inline(always)]
pub fn sum(values: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0f32; 8];
    let chunks = values.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for (lane, &v) in lanes.iter_mut().zip(c) {
            *lane += f(v);
        }
    }
    for (lane, &v) in lanes.iter_mut().zip(rest) {
        *lane += f(v);
    }
    lanes.iter().sum()
}

/// Softmax of one row in place.
#[inline(always)]
pub fn softmax_row(row: &mut [f32]) {
    let mut max = [f32::NEG_INFINITY; 8];
    for c in row.chunks(8) {
        for (m, &v) in max.iter_mut().zip(c) {
            *m = m.max(v);
        }
    }
    let max = max.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    for v in row.iter_mut() {
        *v = exp(*v - max);
    }
    let inv = 1.0 / sum(row, |v| v);
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// The dot product of two equal-length slices, in eight lanes.
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ar, br) = (ac.remainder(), bc.remainder());
    for (x, y) in ac.zip(bc) {
        for l in 0..8 {
            lanes[l] += x[l] * y[l];
        }
    }
    let tail: f32 = ar.iter().zip(br).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::super::simd::Portable;
    use super::*;

    #[test]
    fn exp_is_within_a_few_ulp_of_the_library_exp() {
        let mut worst = 0f32;
        for i in -8000..8000 {
            let x = i as f32 * 0.01;
            let (got, want) = (exp(x), x.exp());
            worst = worst.max(((got - want) / want).abs());
        }
        assert!(worst < 4e-7, "worst relative error {worst}");
        assert!(exp(-200.0) < 1e-37 && exp(200.0).is_finite());
    }

    #[test]
    fn mish_and_silu_match_their_definitions() {
        for i in -400..400 {
            let x = i as f32 * 0.07;
            let softplus = (1.0 + (x as f64).exp()).ln();
            let want = x as f64 * softplus.tanh();
            assert!(
                (mish(x) as f64 - want).abs() < 1e-6 * (1.0 + want.abs()),
                "mish({x})"
            );
            let want = x as f64 / (1.0 + (-x as f64).exp());
            assert!(
                (silu(x) as f64 - want).abs() < 1e-6 * (1.0 + want.abs()),
                "silu({x})"
            );
            // The lanes' forms, which the pass runs, compute the same values.
            let lane = |act: Act| {
                let mut out = [0f32; 8];
                act.lanes(Portable::splat(x)).store(&mut out);
                out[0]
            };
            assert_eq!(
                lane(Act::Mish).to_bits(),
                mish(x).to_bits(),
                "mish lanes({x})"
            );
            assert!(
                (lane(Act::Silu) - silu(x)).abs() <= 1e-6 * (1.0 + x.abs()),
                "silu lanes({x})"
            );
        }
        assert_eq!(mish(50.0), 50.0);
    }

    #[test]
    fn softmax_and_norms_match_direct_formulas() {
        let mut row: Vec<f32> = (0..64)
            .map(|i| ((i * 37) % 11) as f32 * 0.3 - 1.0)
            .collect();
        let orig = row.clone();
        softmax_row(&mut row);
        let z: f64 = orig.iter().map(|&v| (v as f64).exp()).sum();
        for (p, v) in row.iter().zip(&orig) {
            assert!((*p as f64 - (*v as f64).exp() / z).abs() < 1e-7);
        }
        let gain: Vec<f32> = (0..64).map(|i| 1.0 + i as f32 * 0.01).collect();
        let bias: Vec<f32> = (0..64).map(|i| i as f32 * -0.02).collect();
        let mut ln = orig.clone();
        layer_norm_row(&mut ln, &gain, &bias, 1e-6);
        let mean = orig.iter().map(|&v| v as f64).sum::<f64>() / 64.0;
        let var = orig.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / 64.0;
        for i in 0..64 {
            let want =
                (orig[i] as f64 - mean) / (var + 1e-6).sqrt() * gain[i] as f64 + bias[i] as f64;
            assert!((ln[i] as f64 - want).abs() < 1e-5, "layer norm {i}");
        }
        let mut rms = orig.clone();
        norm_row(&mut rms, &RowNorm::Rms { gain: gain.clone() }, 1e-6);
        let ms = orig.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / 64.0;
        for i in 0..64 {
            let want = orig[i] as f64 / (ms + 1e-6).sqrt() * gain[i] as f64;
            assert!((rms[i] as f64 - want).abs() < 1e-5, "rms norm {i}");
        }
    }
}
