//! A sample mirrored left to right (file a <-> file h), the one symmetry of chess, for training
//! augmentation.
//!
//! Where no side can castle, the rules are the same on a board mirrored left to right: a
//! position and its mirror image have the same value and mirrored best moves (castling is the
//! only rule that tells the king's side from the queen's). A position's input tokens and its
//! policy vector are mirrored in place, without replaying the game: the square tokens trade
//! places file by file and each policy entry trades with its mirrored move's. The history
//! boards are mirrored with the present one; a castling move among them becomes a king move no
//! rule allows, which is rare once both sides have lost their rights and is left as it is.

pub use super::move_index::mirrored_index;
use super::{CASTLING_PLANE, PLANES, POLICY_SIZE, TOKEN_FLOATS};

/// Whether the position of `tokens` (one position's [`TOKEN_FLOATS`]) may be mirrored: no
/// castling plane is set.
pub fn can_mirror(tokens: &[f32]) -> bool {
    // The castling planes are all ones or all zeros: the first square tells.
    tokens[CASTLING_PLANE..CASTLING_PLANE + 4]
        .iter()
        .all(|&v| v == 0.0)
}

/// Mirrors one position's tokens left to right: square `sq` trades with `sq ^ 7`.
///
/// # Panics
/// If `tokens` is shorter than [`TOKEN_FLOATS`].
pub fn mirror_tokens(tokens: &mut [f32]) {
    let tokens = &mut tokens[..TOKEN_FLOATS];
    for rank in 0..8 {
        for file in 0..4 {
            let a = rank * 8 + file;
            let b = a ^ 7;
            // a < b: the first token ends before the second starts.
            let (low, high) = tokens.split_at_mut(b * PLANES);
            low[a * PLANES..(a + 1) * PLANES].swap_with_slice(&mut high[..PLANES]);
        }
    }
}

/// Mirrors one position's policy vector (or legal mask) left to right: each entry trades with
/// the entry of its mirrored move.
///
/// # Panics
/// If `policy` is shorter than [`POLICY_SIZE`].
pub fn mirror_policy(policy: &mut [f32]) {
    for i in 0..POLICY_SIZE {
        let j = mirrored_index(i);
        if i < j {
            policy.swap(i, j);
        }
    }
}
