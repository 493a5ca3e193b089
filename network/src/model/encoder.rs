//! One post-LN encoder layer with DeepNorm residual scaling.

use tch::{Tensor, nn};

use super::attention::{Attention, AttentionContext};
use super::layers::{Dense, NORM_EPS, NormLayer};
use crate::config::NetworkConfig;

/// `x = Norm(x + alpha * MHA(x)); x = Norm(x + alpha * FFN(x))`.
#[derive(Debug)]
pub struct EncoderLayer {
    /// Self-attention.
    pub attn: Attention,
    /// Norm after attention.
    pub norm1: NormLayer,
    /// FFN first dense `[dff, d]` (Mish after it).
    pub ffn1: Dense,
    /// FFN second dense `[d, dff]`.
    pub ffn2: Dense,
    /// Norm after the FFN.
    pub norm2: NormLayer,
    alpha: f64,
}

impl EncoderLayer {
    /// Variables under `path`: `attn`, `norm1`, `ffn1`, `ffn2`, `norm2`.
    pub fn new(path: &nn::Path, cfg: &NetworkConfig) -> EncoderLayer {
        let n = cfg.layers as f64;
        let alpha = (2.0 * n).powf(-0.25);
        let beta = (8.0 * n).powf(-0.25);
        EncoderLayer {
            attn: Attention::new(&(path / "attn"), cfg, beta),
            norm1: NormLayer::new(path / "norm1", cfg.norm, cfg.d_model, NORM_EPS),
            ffn1: Dense::new(path / "ffn1", cfg.d_model, cfg.dff, true, beta),
            ffn2: Dense::new(path / "ffn2", cfg.dff, cfg.d_model, true, beta),
            norm2: NormLayer::new(path / "norm2", cfg.norm, cfg.d_model, NORM_EPS),
            alpha,
        }
    }

    /// Applies the layer to tokens `[B, 64, d]`.
    pub fn forward(&self, x: &Tensor, ctx: &AttentionContext) -> Tensor {
        let x = self
            .norm1
            .forward(&(x + self.attn.forward(x, ctx) * self.alpha));
        let f = self.ffn2.forward(&self.ffn1.forward(&x).mish());
        self.norm2.forward(&(&x + f * self.alpha))
    }
}
