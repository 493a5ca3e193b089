//! The [`Game`] trait: what the search needs to know about a game.

use std::fmt::Debug;

/// How a finished game ended, seen from the side to move in the final position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Terminal {
    /// The side to move has lost (e.g. it is checkmated).
    Loss,
    /// The game is drawn.
    Draw,
    /// The side to move has won.
    Win,
}

impl Terminal {
    /// The exact value of the position for the side to move: -1, 0 or 1.
    pub fn value(self) -> f32 {
        match self {
            Terminal::Loss => -1.0,
            Terminal::Draw => 0.0,
            Terminal::Win => 1.0,
        }
    }

    /// The same outcome seen from the other side.
    pub fn flip(self) -> Terminal {
        match self {
            Terminal::Loss => Terminal::Win,
            Terminal::Draw => Terminal::Draw,
            Terminal::Win => Terminal::Loss,
        }
    }
}

/// A two-player, alternating, zero-sum game with perfect information.
///
/// Values are always from the side to move. The search keeps no game states in its
/// tree: it replays moves on a scratch state, so `Clone::clone_from` should reuse memory.
pub trait Game: Clone + Send + Sync + 'static {
    /// A move. Cheap to copy.
    type Move: Copy + Eq + Debug + Send + Sync + 'static;

    /// Clears `out` and fills it with the legal moves, in an order that depends only on the position.
    fn legal_moves(&self, out: &mut Vec<Self::Move>);

    /// Plays `mv`, which must be one of [`Game::legal_moves`].
    fn play(&mut self, mv: Self::Move);

    /// Whether the game is over, given this position's legal moves (as returned by
    /// [`Game::legal_moves`]), and how it ended for the side to move.
    fn terminal(&self, legal: &[Self::Move]) -> Option<Terminal>;

    /// The index in `legal` of a move that wins at once (checkmate), if the game can tell
    /// without searching. The solver then proves the position a win in one ply without
    /// evaluating it, so a reply that allows a mate is refuted by its first visit instead
    /// of after a visit to each of its moves. The default knows no such move.
    fn immediate_win(&self, legal: &[Self::Move]) -> Option<usize> {
        let _ = legal;
        None
    }

    /// Key of the evaluation cache: two states with equal keys must get equal evaluations
    /// (for chess: position, castling, en passant, and the history the network sees).
    fn cache_key(&self) -> u64;
}
