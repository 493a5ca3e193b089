//! Building blocks: dense layers with DeepNorm-aware initialisation and the two norms.

use tch::{Tensor, nn};

use crate::config::Norm;

/// Epsilon of the encoder norms (Lc0 uses 1e-6 for its PE_MAP attention bodies).
pub const NORM_EPS: f64 = 1e-6;

/// Fewest rows a matrix product is given: smaller inputs are padded with zero rows.
/// libtorch's CPU products take other paths for one to three rows, which round differently,
/// and a position's outputs would then depend on how many others share its forward pass
/// (seen in `with_a_fixed_form_a_position_evaluates_the_same_in_any_batch`: rows 1, 2 and 3
/// each differed, 4 to 9 agreed). Reproducible self-play needs them not to.
pub const MIN_ROWS: i64 = 8;

/// `x` (`[rows, ...]`) with zero rows appended up to [`MIN_ROWS`].
pub fn pad_rows(x: &Tensor) -> Tensor {
    let mut size = x.size();
    let rows = size[0];
    if rows >= MIN_ROWS {
        return x.shallow_clone();
    }
    size[0] = MIN_ROWS - rows;
    Tensor::cat(&[x, &Tensor::zeros(&size, (x.kind(), x.device()))], 0)
}

/// A dense layer `y = x W^T + b`, weight `[out, in]` (row-major, like Lc0's files).
#[derive(Debug)]
pub struct Dense {
    /// Weight `[out, in]`.
    pub w: Tensor,
    /// Bias `[out]`, if the layer has one.
    pub b: Option<Tensor>,
}

impl Dense {
    /// A layer with Glorot-normal weights scaled by `gain` and zero bias. Variables are
    /// `<path>.w` and `<path>.b`.
    pub fn new(path: nn::Path, d_in: usize, d_out: usize, bias: bool, gain: f64) -> Dense {
        let std = gain * (2.0 / (d_in + d_out) as f64).sqrt();
        let w = path.var(
            "w",
            &[d_out as i64, d_in as i64],
            nn::Init::Randn {
                mean: 0.0,
                stdev: std,
            },
        );
        let b = bias.then(|| path.var("b", &[d_out as i64], nn::Init::Const(0.0)));
        Dense { w, b }
    }

    /// Applies the layer to the last dimension of `x`. A matrix `[B, in]` of fewer than
    /// [`MIN_ROWS`] rows is padded first, so that each row's result does not depend on `B`.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        match x.size()[..] {
            [rows, _] if rows < MIN_ROWS => pad_rows(x)
                .linear(&self.w, self.b.as_ref())
                .narrow(0, 0, rows),
            _ => x.linear(&self.w, self.b.as_ref()),
        }
    }
}

/// RMSNorm or LayerNorm over the last dimension, with a learned gain (and bias for LayerNorm).
#[derive(Debug)]
pub struct NormLayer {
    kind: Norm,
    eps: f64,
    /// Gain `[d]`, init 1.
    pub gain: Tensor,
    /// Bias `[d]` (LayerNorm only), init 0.
    pub bias: Option<Tensor>,
}

impl NormLayer {
    /// A norm of width `d`. Variables are `<path>.gain` and, for LayerNorm, `<path>.bias`.
    pub fn new(path: nn::Path, kind: Norm, d: usize, eps: f64) -> NormLayer {
        let gain = path.var("gain", &[d as i64], nn::Init::Const(1.0));
        let bias =
            (kind == Norm::Layer).then(|| path.var("bias", &[d as i64], nn::Init::Const(0.0)));
        NormLayer {
            kind,
            eps,
            gain,
            bias,
        }
    }

    /// Normalises the last dimension of `x`.
    pub fn forward(&self, x: &Tensor) -> Tensor {
        let d = *x.size().last().expect("norm input has a last dimension");
        match self.kind {
            Norm::Rms => x.rms_norm([d], Some(&self.gain), self.eps),
            Norm::Layer => x.layer_norm([d], Some(&self.gain), self.bias.as_ref(), self.eps, false),
        }
    }
}
