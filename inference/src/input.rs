//! What the inference server needs from a game: its network input and the policy index of a move.

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_mcts::Game;

use cfzero_network::encoding::{encode_tokens_filled, move_index};

/// Floats of one position's input: 64 tokens of 112 features.
pub const INPUT_FLOATS: usize = cfzero_network::encoding::TOKEN_FLOATS;

/// A game state the network can evaluate.
pub trait NetInput: Game {
    /// Writes the position's `[64][112]` token-major input to `out` (length [`INPUT_FLOATS`]),
    /// the history before a FEN's position filled as `fill` says (the net's convention).
    fn encode(&self, fill: HistoryFill, out: &mut [f32]);
    /// Index of legal move `mv` in the 1858-entry policy vector.
    fn policy_index(&self, mv: &Self::Move) -> usize;
}

impl NetInput for ChessState {
    fn encode(&self, fill: HistoryFill, out: &mut [f32]) {
        encode_tokens_filled(self, fill, out);
    }

    fn policy_index(&self, mv: &Self::Move) -> usize {
        move_index(mv, self.turn())
    }
}
