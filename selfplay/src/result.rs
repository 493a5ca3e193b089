//! How a game ended: the result and the reason.

use cfzero_chess::TerminalReason;
use shakmaty::Color;

/// The result of a finished game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GameResult {
    /// White won.
    WhiteWin,
    /// Drawn.
    Draw,
    /// Black won.
    BlackWin,
}

impl GameResult {
    /// The result with the given side as the winner.
    pub fn win_for(color: Color) -> GameResult {
        match color {
            Color::White => GameResult::WhiteWin,
            Color::Black => GameResult::BlackWin,
        }
    }

    /// The result of a game that ended by `reason` with `turn` to move in the final
    /// position: a checkmate is a win for the other side, every other ending a draw.
    pub fn from_terminal(reason: TerminalReason, turn: Color) -> GameResult {
        match reason {
            TerminalReason::Checkmate => GameResult::win_for(!turn),
            _ => GameResult::Draw,
        }
    }

    /// The game's value for `color`: 1 win, 0 draw, -1 loss.
    pub fn value_for(self, color: Color) -> f32 {
        match (self, color) {
            (GameResult::Draw, _) => 0.0,
            (GameResult::WhiteWin, Color::White) | (GameResult::BlackWin, Color::Black) => 1.0,
            _ => -1.0,
        }
    }

    /// The PGN result tag: `1-0`, `1/2-1/2` or `0-1`.
    pub fn pgn(self) -> &'static str {
        match self {
            GameResult::WhiteWin => "1-0",
            GameResult::Draw => "1/2-1/2",
            GameResult::BlackWin => "0-1",
        }
    }

    pub(crate) fn to_byte(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_byte(b: u8) -> Option<GameResult> {
        [GameResult::WhiteWin, GameResult::Draw, GameResult::BlackWin]
            .get(usize::from(b))
            .copied()
    }
}

/// Why a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Termination {
    /// The side to move was checkmated.
    Checkmate,
    /// The side to move had no legal move and was not in check.
    Stalemate,
    /// Neither side can mate.
    InsufficientMaterial,
    /// 100 plies without a capture or a pawn move.
    FiftyMoveRule,
    /// The same position for the third time.
    ThreefoldRepetition,
    /// The game reached the configured maximum length and was adjudicated a draw.
    MaxPlies,
    /// A side resigned because the search judged its position lost.
    Resignation,
}

impl From<TerminalReason> for Termination {
    fn from(reason: TerminalReason) -> Termination {
        match reason {
            TerminalReason::Checkmate => Termination::Checkmate,
            TerminalReason::Stalemate => Termination::Stalemate,
            TerminalReason::InsufficientMaterial => Termination::InsufficientMaterial,
            TerminalReason::FiftyMoveRule => Termination::FiftyMoveRule,
            TerminalReason::ThreefoldRepetition => Termination::ThreefoldRepetition,
            TerminalReason::MaxPlies => Termination::MaxPlies,
        }
    }
}

impl Termination {
    const ALL: [Termination; 7] = [
        Termination::Checkmate,
        Termination::Stalemate,
        Termination::InsufficientMaterial,
        Termination::FiftyMoveRule,
        Termination::ThreefoldRepetition,
        Termination::MaxPlies,
        Termination::Resignation,
    ];

    /// Words for the PGN `Termination` tag and for logs.
    pub fn describe(self) -> &'static str {
        match self {
            Termination::Checkmate => "checkmate",
            Termination::Stalemate => "stalemate",
            Termination::InsufficientMaterial => "insufficient material",
            Termination::FiftyMoveRule => "fifty-move rule",
            Termination::ThreefoldRepetition => "threefold repetition",
            Termination::MaxPlies => "adjudication: maximum length",
            Termination::Resignation => "resignation",
        }
    }

    pub(crate) fn to_byte(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_byte(b: u8) -> Option<Termination> {
        Self::ALL.get(usize::from(b)).copied()
    }
}
