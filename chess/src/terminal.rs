//! Adjudication: how and whether a chess game is over.

use std::fmt;

/// Why a chess game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TerminalReason {
    /// The side to move is in check and has no legal move: it lost.
    Checkmate,
    /// The side to move is not in check and has no legal move: draw.
    Stalemate,
    /// Neither side can possibly mate: draw.
    InsufficientMaterial,
    /// 100 plies without a capture or pawn move: draw (checkmate on the 100th ply still wins).
    FiftyMoveRule,
    /// The position occurred for the third time: draw.
    ThreefoldRepetition,
    /// The game reached the configured maximum number of plies: draw.
    MaxPlies,
}

impl TerminalReason {
    /// Every reason, in the order of their codes (records store `reason as u8`).
    pub const ALL: [TerminalReason; 6] = [
        TerminalReason::Checkmate,
        TerminalReason::Stalemate,
        TerminalReason::InsufficientMaterial,
        TerminalReason::FiftyMoveRule,
        TerminalReason::ThreefoldRepetition,
        TerminalReason::MaxPlies,
    ];

    /// A short human description, e.g. "threefold repetition".
    pub fn describe(self) -> &'static str {
        match self {
            TerminalReason::Checkmate => "checkmate",
            TerminalReason::Stalemate => "stalemate",
            TerminalReason::InsufficientMaterial => "insufficient material",
            TerminalReason::FiftyMoveRule => "fifty-move rule",
            TerminalReason::ThreefoldRepetition => "threefold repetition",
            TerminalReason::MaxPlies => "adjudication: maximum length",
        }
    }
}

impl fmt::Display for TerminalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}
