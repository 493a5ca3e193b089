//! A 1-ply material-greedy player: a baseline a step above the random mover, for matches and
//! the in-run evaluation.
//!
//! It mates when it can, otherwise it plays the move that leaves it the most material
//! (P 1, N 3, B 3, R 5, Q 9), breaking ties uniformly at random. It never looks at the
//! opponent's replies, so it happily hangs its queen for a pawn: a net that beats it has
//! learnt at least to keep its pieces and take the ones offered.

use cfzero_chess::{ChessState, piece_value};
use rand::Rng;
use shakmaty::{Move, Position, Role};

use crate::arena::{ArenaError, GameLine, Player};

/// How much the mover's material balance grows by `mv`: the captured piece (the pawn for en
/// passant) plus what a promotion's new piece is worth over the pawn it replaces.
pub const fn material_gain(mv: Move) -> i32 {
    let captured = match mv.capture() {
        Some(role) => piece_value(role),
        None => 0,
    };
    let promoted = match mv.promotion() {
        Some(role) => piece_value(role) - piece_value(Role::Pawn),
        None => 0,
    };
    captured + promoted
}

/// Ranks a checkmate above any material gain (the most is a capture-promotion: 9 + 8).
const MATE: i32 = i32::MAX;

/// Plays a checkmate if there is one, otherwise the move with the largest
/// [`material_gain`]; among equal moves one uniformly at random (with the match's RNG, so a
/// seeded match replays exactly).
#[derive(Debug, Default, Clone, Copy)]
pub struct GreedyPlayer;

impl GreedyPlayer {
    /// The move `GreedyPlayer` plays in `position`, `None` if it has no legal move.
    pub fn choose(position: &shakmaty::Chess, rng: &mut dyn rand::RngCore) -> Option<Move> {
        let mut best = i32::MIN;
        let mut tied = 0u32;
        let mut chosen = None;
        // Reservoir sampling over the best moves so far: uniform among the ties without
        // collecting them (no heap memory; the move list lives on the stack).
        for mv in position.legal_moves() {
            let value = if gives_mate(position, mv) {
                MATE
            } else {
                material_gain(mv)
            };
            if value > best {
                best = value;
                tied = 1;
                chosen = Some(mv);
            } else if value == best {
                tied += 1;
                if rng.random_range(0..tied) == 0 {
                    chosen = Some(mv);
                }
            }
        }
        chosen
    }
}

/// Whether `mv` checkmates. Only a checking move can, so the opponent's move generation runs
/// for checks alone.
fn gives_mate(position: &shakmaty::Chess, mv: Move) -> bool {
    let mut after = position.clone();
    after.play_unchecked(mv);
    after.is_check() && after.legal_moves().is_empty()
}

impl Player for GreedyPlayer {
    fn name(&self) -> String {
        "greedy".into()
    }

    fn pick(
        &mut self,
        states: &[ChessState],
        _lines: &[GameLine<'_>],
        rng: &mut dyn rand::RngCore,
        out: &mut Vec<Move>,
    ) -> Result<(), ArenaError> {
        for s in states {
            let mv = GreedyPlayer::choose(s.position(), rng)
                .expect("the arena asks for moves only in unfinished games");
            out.push(mv);
        }
        Ok(())
    }
}
