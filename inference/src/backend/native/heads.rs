//! The heads the search reads, for one position: the attention policy (from-to logits, the
//! promotion offsets, gathered into Lc0's 1858-move order) and the winner or `q` value.

use super::kernels::{dot, softmax_row};
use super::weights::{PolicyW, ValueW};
use cfzero_network::encoding::{POLICY_SIZE, attention_gather};

/// Writes one position's 1858 policy logits into `out` from its from-to logits `c`
/// (`[64, 64]`, already divided by `sqrt(d_pol)`) and its policy keys `keys` (`[64, d_pol]`):
/// the promotion offsets `o = K[rank 8] W_promo^T` are added unscaled, the knight's to those
/// of the queen, rook and bishop (Lc0's semantics).
#[inline(always)]
pub fn policy_logits(c: &[f32], keys: &[f32], policy: &PolicyW, out: &mut [f32]) {
    let dp = policy.q.d_out();
    // o[piece][to_file], pieces q, r, b, n.
    let mut o = [[0f32; 8]; 4];
    for (piece, row) in o.iter_mut().enumerate() {
        let w = &policy.promo[piece * dp..(piece + 1) * dp];
        for (file, v) in row.iter_mut().enumerate() {
            let sq = 56 + file;
            *v = dot(&keys[sq * dp..(sq + 1) * dp], w);
        }
    }
    for (slot, &g) in out[..POLICY_SIZE].iter_mut().zip(attention_gather()) {
        *slot = if g < 4096 {
            c[g]
        } else {
            let k = g - 4096;
            let (from_file, to_file, piece) = (k / 24, (k / 3) % 8, k % 3);
            c[(48 + from_file) * 64 + 56 + to_file] + (o[piece][to_file] + o[3][to_file])
        };
    }
}

/// One position's W/D/L and value from its value features `hidden` (after `fc1` and Mish).
#[inline(always)]
pub fn value_outputs(hidden: &[f32], value: &ValueW, wdl: &mut [f32], v: &mut f32) {
    let h = hidden.len();
    if value.winner {
        let mut logits = [0f32; 3];
        for (k, l) in logits.iter_mut().enumerate() {
            *l = dot(hidden, &value.out[k * h..(k + 1) * h]) + value.out_b[k];
        }
        softmax_row(&mut logits);
        wdl.copy_from_slice(&logits);
    } else {
        let q = (dot(hidden, &value.out[..h]) + value.out_b[0]).tanh();
        wdl.copy_from_slice(&[(1.0 + q) / 2.0, 0.0, (1.0 - q) / 2.0]);
    }
    *v = wdl[0] - wdl[2];
}
