//! Illegal-move masking of policy logits.

use tch::{Device, Kind, Tensor};

use crate::encoding::POLICY_SIZE;

/// Logit given to illegal moves in the loss: finite, so that `0 * log_softmax` stays 0,
/// but low enough that its probability underflows to exactly 0 in float32.
pub const ILLEGAL_LOGIT: f64 = -1e9;

/// `logits` `[B, 1858]` with every move that is not legal (`legal` false or 0) set to `fill`.
pub fn mask_logits(logits: &Tensor, legal: &Tensor, fill: f64) -> Tensor {
    let illegal = legal
        .to_device(logits.device())
        .to_kind(Kind::Bool)
        .logical_not();
    logits.masked_fill(&illegal, fill)
}

/// Sets illegal logits to -inf, for a softmax over the legal moves only.
pub fn mask_illegal(logits: &Tensor, legal: &Tensor) -> Tensor {
    mask_logits(logits, legal, f64::NEG_INFINITY)
}

/// Softmax over the legal moves only: illegal moves get probability exactly 0.
pub fn masked_softmax(logits: &Tensor, legal: &Tensor) -> Tensor {
    mask_illegal(logits, legal).softmax(-1, Kind::Float)
}

/// A boolean legal mask `[B, 1858]` from each position's legal policy indices.
pub fn legal_mask_from_indices<I: AsRef<[usize]>>(legal: &[I], device: Device) -> Tensor {
    let mut flat = vec![0u8; legal.len() * POLICY_SIZE];
    for (b, moves) in legal.iter().enumerate() {
        for &m in moves.as_ref() {
            flat[b * POLICY_SIZE + m] = 1;
        }
    }
    Tensor::from_slice(&flat)
        .view([legal.len() as i64, POLICY_SIZE as i64])
        .to_kind(Kind::Bool)
        .to_device(device)
}
