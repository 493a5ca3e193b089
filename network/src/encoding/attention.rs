//! The attention policy head's 4288 logits and where each of the 1858 policy entries
//! takes its logit from.
//!
//! Logits 0..4096 are from*64+to pairs (side-to-move coordinates); 4096.. are promotion
//! logits at 4096 + from_file*24 + to_file*3 + piece, with piece q=0, r=1, b=2.

use std::sync::OnceLock;

use super::POLICY_SIZE;
use super::move_index::entry;

/// For each policy entry, the position of its logit in the attention head's output
/// (length [`POLICY_SIZE`], values below [`super::ATTENTION_POLICY_SIZE`]).
pub fn attention_gather() -> &'static [usize] {
    static GATHER: OnceLock<Vec<usize>> = OnceLock::new();
    GATHER.get_or_init(|| {
        (0..POLICY_SIZE)
            .map(|i| match entry(i) {
                (from, to, None) => from * 64 + to,
                (from, to, Some(piece)) => 4096 + (from % 8) * 24 + (to % 8) * 3 + piece,
            })
            .collect()
    })
}
