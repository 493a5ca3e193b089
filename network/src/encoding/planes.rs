//! The 112 input planes, exactly lc0's `INPUT_CLASSICAL_112_PLANE` (docs/METHODS.md §1).
//!
//! For each history step t = 0..7: our P, N, B, R, Q, K, their P, N, B, R, Q, K and a
//! repetition plane (planes 13t..13t+12); then castling (104..107), black to move (108),
//! the halfmove clock (109), zeros (110) and ones (111). Boards are seen from the side to
//! move: for black every board is mirrored vertically.

use cfzero_chess::{ChessState, HISTORY_STEPS, HistoryFill};
use shakmaty::{CastlingSide, Color, Role};

use super::{CASTLING_PLANE, HALFMOVE_PLANE, PLANES};

const ALL: u64 = u64::MAX;

/// Planes per history step: 12 piece planes and a repetition plane.
const STEP_PLANES: usize = 13;

const _: () = assert!(CASTLING_PLANE == HISTORY_STEPS * STEP_PLANES);

/// The input of one position as lc0's `InputPlane`s: plane `p` is `values[p]` on the
/// squares set in `masks[p]` (bit i = square i, a1 = 0) and 0 elsewhere. `values` is 1.0
/// except for plane 109, which holds the raw halfmove clock (with an all-ones mask).
#[derive(Debug, Clone, PartialEq)]
pub struct InputPlanes {
    /// Square mask of each plane.
    pub masks: [u64; PLANES],
    /// Value of each plane on its set squares.
    pub values: [f32; PLANES],
}

impl Default for InputPlanes {
    fn default() -> Self {
        InputPlanes {
            masks: [0; PLANES],
            values: [1.0; PLANES],
        }
    }
}

/// Encodes `state` (with its history, filled before a FEN's position as the state's own
/// [`ChessState::history_fill`] says) into lc0's 112 planes.
pub fn encode_planes(state: &ChessState) -> InputPlanes {
    encode_planes_filled(state, state.history_fill())
}

/// [`encode_planes`] with the history before a FEN's position filled as `fill` says.
pub fn encode_planes_filled(state: &ChessState, fill: HistoryFill) -> InputPlanes {
    let mut planes = InputPlanes::default();
    let us = state.turn();
    let them = !us;
    // Mirroring ranks is a byte swap of the bitboard.
    let orient = |bb: u64| {
        if us == Color::Black {
            bb.swap_bytes()
        } else {
            bb
        }
    };
    for t in 0..HISTORY_STEPS {
        let Some(board) = state.history_board_filled(t, fill) else {
            // Steps are filled from the present backwards: the first empty one ends them.
            break;
        };
        let base = t * STEP_PLANES;
        for (i, role) in Role::ALL.into_iter().enumerate() {
            planes.masks[base + i] = orient(board.by_piece(role.of(us)).0);
            planes.masks[base + 6 + i] = orient(board.by_piece(role.of(them)).0);
        }
        if state.history_repeated(t) {
            planes.masks[base + 12] = ALL;
        }
    }
    let castles = state.castles();
    let flag = |b: bool| if b { ALL } else { 0 };
    let aux = CASTLING_PLANE;
    planes.masks[aux] = flag(castles.has(us, CastlingSide::QueenSide));
    planes.masks[aux + 1] = flag(castles.has(us, CastlingSide::KingSide));
    planes.masks[aux + 2] = flag(castles.has(them, CastlingSide::QueenSide));
    planes.masks[aux + 3] = flag(castles.has(them, CastlingSide::KingSide));
    planes.masks[aux + 4] = flag(us == Color::Black);
    planes.masks[HALFMOVE_PLANE] = ALL;
    planes.values[HALFMOVE_PLANE] = state.halfmove_clock() as f32;
    planes.masks[PLANES - 1] = ALL;
    planes
}
