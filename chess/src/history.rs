//! The last eight boards that the network input shows, and what stands in for the
//! positions before the first one (lc0's `HistoryFill`).

use shakmaty::{Board, Color, Role, Square};

use super::zobrist::board_hash;

/// Number of history steps in the network input (t = 0 is the current position).
pub const HISTORY_STEPS: usize = 8;

/// How the input history before the first known position is filled, as lc0's `--history-fill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
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

/// The board that stands in for steps before the first position, and for how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fill {
    /// The stand-in board (its repetition flag is always off).
    pub(crate) step: Step,
    /// Whether it fills every missing step (`FenOnly`) or just the first (`No` with ep).
    pub(crate) repeat: bool,
}

/// Decides the fill for a first position with `board`, side to move `turn` and the FEN's
/// en-passant square (kept as given, as lc0 does), under `mode`.
pub(crate) fn fill_for(
    board: &Board,
    turn: Color,
    ep_square: Option<Square>,
    is_standard_start: bool,
    mode: HistoryFill,
) -> Option<Fill> {
    let before = ep_square.map(|ep| pawn_moved_back(board, turn, ep));
    match mode {
        HistoryFill::No => before.map(|b| Fill {
            step: Step::new(b, 0),
            repeat: false,
        }),
        HistoryFill::FenOnly if is_standard_start => None,
        HistoryFill::FenOnly => {
            let b = before.unwrap_or_else(|| board.clone());
            Some(Fill {
                step: Step::new(b, 0),
                repeat: true,
            })
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
    if let (Some(at), Some(from)) = (pawn_at, pawn_from) {
        if board.by_piece(Role::Pawn.of(pusher)).contains(at) {
            before.discard_piece_at(at);
            before.set_piece_at(from, Role::Pawn.of(pusher));
        }
    }
    before
}
