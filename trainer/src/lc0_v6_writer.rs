//! cfzero's games as Lc0 V6 training records, for Lc0's trainer and rescorer.
//!
//! Each trainable position (one with a policy target) becomes a record: the planes as
//! cfzero's encoder builds them (the game's own history), the improved policy over the legal
//! moves (-1 elsewhere), the result, the search values, the plies left and the played and
//! best moves. What V6 has no field for is dropped (cfzero's short-term value); what cfzero
//! does not record is written as Lc0 writes an unknown (moves-left estimates 0, the net's
//! draw and moves-left NaN, visits 0). Positions searched with the cheap budget carry no
//! policy target and are left out, as cfzero's own trainer leaves them out.

use cfzero_chess::HistoryFill;
use cfzero_network::encoding::{encode_planes_filled, move_index};
use cfzero_selfplay::record::dequantize_probability;
use cfzero_selfplay::replay::{ReplayError, replay};
use cfzero_selfplay::{GameRecord, GameResult, Termination};

use crate::lc0_v6::V6Record;

/// `invariance_info` bit: the game was adjudicated (resignation, the length cap, the tables or
/// material).
const ADJUDICATED: u8 = 1 << 5;
/// `invariance_info` bit: the game reached the maximum length.
const MAX_LENGTH_EXCEEDED: u8 = 1 << 4;

/// The V6 records of `game`'s trainable positions, in order, the history before a FEN start
/// filled as `fill` says (the net's convention; Lc0's own data uses `FenOnly`).
pub fn game_to_v6(game: &GameRecord, fill: HistoryFill) -> Result<Vec<V6Record>, ReplayError> {
    let mut out = Vec::new();
    let total = game.positions.len();
    let flags = match game.termination {
        Termination::MAX_PLIES => ADJUDICATED | MAX_LENGTH_EXCEEDED,
        // A material win may come before the cap (`material_adjudication_plies`).
        Termination::Resignation | Termination::Tablebase | Termination::Material => ADJUDICATED,
        Termination::Rule(_) => 0,
    };
    replay(game, |ply, state, legal, played| {
        let pos = &game.positions[ply];
        if !pos.is_trainable() {
            return;
        }
        let turn = state.turn();
        let mut r = V6Record::empty();
        r.set_input_planes(&encode_planes_filled(state, fill));
        let sum: f32 = pos.policy.iter().map(|&q| dequantize_probability(q)).sum();
        for (mv, &q) in legal.iter().zip(&pos.policy) {
            let i = move_index(mv, turn);
            let p = if sum > 0.0 {
                dequantize_probability(q) / sum
            } else {
                1.0 / legal.len() as f32
            };
            r.probabilities[i] = p;
        }
        let z = game.result.value_for(turn);
        r.result_q = z;
        r.result_d = if game.result == GameResult::Draw {
            1.0
        } else {
            0.0
        };
        r.root_q = pos.root_q;
        r.best_q = pos.best_q;
        r.root_d = pos.root_d;
        r.best_d = pos.best_d;
        r.played_q = pos.played_q;
        // The record keeps the draw share of the chosen move only: the played move's where
        // they are the same, else the root's.
        r.played_d = if pos.played == pos.best {
            pos.best_d
        } else {
            pos.root_d
        };
        r.plies_left = (total - ply) as f32;
        r.orig_q = pos.network_q;
        r.played_idx = move_index(&played, turn) as u16;
        // The move the search chose (Lc0's `best_idx`), not the improved policy's argmax.
        let chosen = legal.get(usize::from(pos.best)).copied().unwrap_or(played);
        r.best_idx = move_index(&chosen, turn) as u16;
        r.invariance_info = flags;
        out.push(r);
    })?;
    Ok(out)
}
