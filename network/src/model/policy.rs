//! The attention policy head: from-to logits from queries and keys of the squares, plus
//! promotion offsets, gathered into the 1858-move order.

use tch::{Tensor, nn};

use super::layers::Dense;

/// Policy head. Semantics follow Lc0 (so imported nets evaluate identically): the 64x64 logits
/// are `Q K^T / sqrt(d_pol)`; promotion offsets `o = K[rank 8] W_promo^T` are added unscaled,
/// and the knight offset is added to those of q, r and b.
#[derive(Debug)]
pub struct PolicyHead {
    /// Token embedding `[d_pol, d]` with bias, Mish after it.
    pub embed: Dense,
    /// Queries `[d_pol, d_pol]` with bias.
    pub q: Dense,
    /// Keys `[d_pol, d_pol]` with bias.
    pub k: Dense,
    /// Promotion offsets `[4, d_pol]`, rows q, r, b, n; no bias.
    pub promo: Dense,
    d_pol: usize,
}

impl PolicyHead {
    /// Variables under `path`: `embed`, `q`, `k`, `promo`.
    pub fn new(path: &nn::Path, d_model: usize, d_pol: usize) -> PolicyHead {
        PolicyHead {
            embed: Dense::new(path / "embed", d_model, d_pol, true, 1.0),
            q: Dense::new(path / "q", d_pol, d_pol, true, 1.0),
            k: Dense::new(path / "k", d_pol, d_pol, true, 1.0),
            promo: Dense::new(path / "promo", d_pol, 4, false, 1.0),
            d_pol,
        }
    }

    /// The attention-policy logits `[B, 4288]`: 64*64 from-to pairs (index from*64+to), then
    /// 8x8x3 promotions (index 4096 + from_file*24 + to_file*3 + piece, piece q=0, r=1, b=2).
    pub fn attention_logits(&self, x: &Tensor) -> Tensor {
        let b = x.size()[0];
        let e = self.embed.forward(x).mish();
        let (qp, kp) = (self.q.forward(&e), self.k.forward(&e));
        let c = qp.matmul(&kp.transpose(-2, -1)) / (self.d_pol as f64).sqrt();
        // Offsets [B, 4 pieces, 8 to-files] from the keys of rank 8.
        let o = self.promo.forward(&kp.narrow(1, 56, 8)).transpose(1, 2);
        let offsets = o.narrow(1, 0, 3) + o.narrow(1, 3, 1); // [B, 3, 8]
        let base = c.narrow(1, 48, 8).narrow(2, 56, 8); // [B, from_file, to_file]
        let promotions = base.unsqueeze(-1) + offsets.permute([0, 2, 1]).unsqueeze(1); // [B, 8, 8, 3]
        Tensor::cat(&[c.reshape([b, 4096]), promotions.reshape([b, 192])], 1)
    }

    /// The 1858 policy logits, gathering with `gather` (`[1858]` indices into the 4288 vector).
    pub fn forward(&self, x: &Tensor, gather: &Tensor) -> Tensor {
        self.attention_logits(x).index_select(1, gather)
    }
}
