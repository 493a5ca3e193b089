//! lc0-compatible network input and policy index (docs/METHODS.md §1).
//!
//! - [`planes`]: the 112 input planes (lc0's `INPUT_CLASSICAL_112_PLANE`).
//! - [`tokens`]: the same planes as 64 square tokens of 112 features, for the Chessformer.
//! - [`move_index`](mod@move_index): the 1858-entry policy index and its UCI strings.
//! - [`attention`]: where each policy entry sits in the attention head's 4288 logits.
//! - [`mirror`]: a sample mirrored left to right, for positions where no side can castle.

pub mod attention;
pub mod mirror;
pub mod move_index;
pub mod planes;
pub mod tokens;

pub use attention::attention_gather;
pub use move_index::{PolicyMove, legal_move_for_index, move_index, move_strings, policy_move};
pub use planes::{InputPlanes, encode_planes, encode_planes_filled};
pub use tokens::{TOKEN_FLOATS, encode_tokens, encode_tokens_filled};

/// Number of input planes (features per square token).
pub const PLANES: usize = 112;

/// Number of entries of the policy vector.
pub const POLICY_SIZE: usize = 1858;

/// Number of logits of the attention policy head: 64x64 from-to pairs plus 8x8x3 promotions.
pub const ATTENTION_POLICY_SIZE: usize = 64 * 64 + 8 * 8 * 3;

/// First of the four castling planes (ours queen side, ours king side, theirs queen side,
/// theirs king side), all ones where the right exists.
pub const CASTLING_PLANE: usize = 104;

/// Plane of the halfmove clock.
pub const HALFMOVE_PLANE: usize = 109;

/// The network sees the halfmove clock divided by this (lc0 feeds the raw count).
pub const HALFMOVE_SCALE: f32 = 99.0;
