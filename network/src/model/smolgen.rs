//! Smolgen, with Lc0's exact semantics: a position-dependent attention bias generated from a
//! compressed copy of the layer's input, through a generator matrix shared by all layers.

use tch::{Tensor, nn};

use super::layers::Dense;
use crate::config::AttentionConfig;

/// Epsilon of smolgen's two LayerNorms (Lc0's value).
pub const SMOLGEN_EPS: f64 = 1e-3;

/// One layer's smolgen: compress (no bias) -> flatten -> dense1 + swish -> LayerNorm ->
/// dense2 + swish -> LayerNorm -> per head, times the global generator `smolgen_w`.
#[derive(Debug)]
pub struct Smolgen {
    /// Per-square compression `[compress, d]`, no bias.
    pub compress: Dense,
    /// `[hidden, 64 * compress]` with bias.
    pub dense1: Dense,
    /// LayerNorm after dense1 (`ln1.gain`, `ln1.bias`).
    pub ln1: (Tensor, Tensor),
    /// `[heads * gen, hidden]` with bias.
    pub dense2: Dense,
    /// LayerNorm after dense2, over all `heads * gen` values.
    pub ln2: (Tensor, Tensor),
    heads: i64,
    gen_size: i64,
}

impl Smolgen {
    /// Variables under `path`: `compress`, `dense1`, `ln1`, `dense2`, `ln2`.
    pub fn new(path: &nn::Path, cfg: &AttentionConfig, d_model: usize, heads: usize) -> Smolgen {
        let ln = |p: nn::Path, n: usize| {
            (
                p.var("gain", &[n as i64], nn::Init::Const(1.0)),
                p.var("bias", &[n as i64], nn::Init::Const(0.0)),
            )
        };
        let c = cfg.smolgen_compress;
        Smolgen {
            compress: Dense::new(path / "compress", d_model, c, false, 1.0),
            dense1: Dense::new(path / "dense1", 64 * c, cfg.smolgen_hidden, true, 1.0),
            ln1: ln(path / "ln1", cfg.smolgen_hidden),
            dense2: Dense::new(
                path / "dense2",
                cfg.smolgen_hidden,
                heads * cfg.smolgen_gen,
                true,
                1.0,
            ),
            ln2: ln(path / "ln2", heads * cfg.smolgen_gen),
            heads: heads as i64,
            gen_size: cfg.smolgen_gen as i64,
        }
    }

    /// The attention bias `[B, H, 64, 64]` (query, key) for the layer input `x` `[B, 64, d]`;
    /// `generator` is the global `smolgen_w` `[4096, gen]`.
    pub fn forward(&self, x: &Tensor, generator: &Tensor) -> Tensor {
        let b = x.size()[0];
        // Square-major flattening: index = compress * square + channel, as in Lc0.
        let c = self.compress.forward(x).reshape([b, -1]);
        let norm = |x: Tensor, (gain, bias): &(Tensor, Tensor)| {
            x.layer_norm([x.size()[1]], Some(gain), Some(bias), SMOLGEN_EPS, false)
        };
        let h = norm(self.dense1.forward(&c).silu(), &self.ln1);
        let g = norm(self.dense2.forward(&h).silu(), &self.ln2);
        let g = g.view([b, self.heads, self.gen_size]);
        g.matmul(&generator.transpose(0, 1))
            .view([b, self.heads, 64, 64])
    }
}
