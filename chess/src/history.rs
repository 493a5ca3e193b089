//! The last eight boards that the network input shows, and what stands in for the
//! positions before the first one (lc0's `HistoryFill`).

use serde::{Deserialize, Serialize};
use shakmaty::{Board, Color, Role, Square};

use super::zobrist::board_hash;

/// Number of history steps in the network input (t = 0 is the current position).
pub const HISTORY_STEPS: usize = 8;

/// How the input history before the first known position is filled, as lc0's `--history-fill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryFill {
    /// Missing steps are empty, except that a FEN with an en-passant square gets one
    /// extra step: the FEN position with the double-pushed pawn moved back.
    No,
    /// lc0's default: every missing step is a copy of the FEN position (with the
    /// double-pushed pawn moved back if the FEN has an en-passant square), with no
    /// repetition flag. Not applied when the FEN is the standard start position.
    #[default]
    FenOnly,
}

impl HistoryFill {
    /// The name configs and Lc0's `--history-fill` use: `"no"` or `"fen_only"`.
    pub fn name(self) -> &'static str {
        match self {
            HistoryFill::No => "no",
            HistoryFill::FenOnly => "fen_only",
        }
    }
}

/// One history step: the board (in absolute coordinates) and its lc0 repetition count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) board: Board,
    pub(crate) hash: u64,
    pub(crate) repetitions: u32,
}

impl Step {
    pub(crate) fn new(board: Board, repetitions: u32) -> Step {
        let hash = board_hash(&board);
        Step {
            board,
            hash,
            repetitions,
        }
    }
}

/// What a position set up from a FEN keeps to fill the history before it, in either
/// [`HistoryFill`] mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FenStart {
    /// The stand-in board: the FEN's board, with the double-pushed pawn moved back if the
    /// FEN has an en-passant square (its repetition flag is always off).
    stand_in: Step,
    /// Whether the FEN has an en-passant square.
    ep: bool,
    /// Whether the FEN is the standard start position (which `FenOnly` does not fill).
    standard_start: bool,
}

impl FenStart {
    /// The fill of a first position with `board`, side to move `turn` and the FEN's
    /// en-passant square (kept as given, as lc0 does).
    pub(crate) fn new(
        board: &Board,
        turn: Color,
        ep_square: Option<Square>,
        is_standard_start: bool,
    ) -> FenStart {
        let stand_in = match ep_square {
            Some(ep) => pawn_moved_back(board, turn, ep),
            None => board.clone(),
        };
        FenStart {
            stand_in: Step::new(stand_in, 0),
            ep: ep_square.is_some(),
            standard_start: is_standard_start,
        }
    }

    /// The step that stands in for a missing history step under `mode`; `first_missing`
    /// says whether it is the step just before the first position.
    pub(crate) fn stand_in(&self, mode: HistoryFill, first_missing: bool) -> Option<&Step> {
        match mode {
            HistoryFill::No => (self.ep && first_missing).then_some(&self.stand_in),
            HistoryFill::FenOnly => (!self.standard_start).then_some(&self.stand_in),
        }
    }
}

/// The board before the double push that created en-passant square `ep`, made by the
/// side not to move: the pawn goes back two ranks.
fn pawn_moved_back(board: &Board, turn: Color, ep: Square) -> Board {
    let pusher = !turn;
    // The pushed pawn stands one rank past the ep square and came from one rank before it.
    let (pawn_at, pawn_from) = match pusher {
        Color::White => (ep.offset(8), ep.offset(-8)),
        Color::Black => (ep.offset(-8), ep.offset(8)),
    };
    let mut before = board.clone();
    if let (Some(at), Some(from)) = (pawn_at, pawn_from)
        && board.by_piece(Role::Pawn.of(pusher)).contains(at)
    {
        before.discard_piece_at(at);
        before.set_piece_at(from, Role::Pawn.of(pusher));
    }
    before
}
