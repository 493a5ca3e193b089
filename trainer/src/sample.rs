//! Turning a recorded position into network inputs and training targets.

use cfzero_chess::HistoryFill;
use cfzero_mcts::Game;
use cfzero_network::encoding::mirror::{can_mirror, mirror_policy, mirror_tokens};
use cfzero_network::encoding::{POLICY_SIZE, TOKEN_FLOATS, encode_tokens_filled, move_index};
use cfzero_selfplay::record::dequantize_probability;
use cfzero_selfplay::replay::{ReplayError, replay_prefix};
use cfzero_selfplay::{GameRecord, Termination};

use crate::config::QTarget;

/// How a recorded position becomes a training sample: its value targets and augmentation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TargetOptions {
    /// The search value that trains the q head.
    pub q_target: QTarget,
    /// Share of the WDL target taken from that search value (with the root's draw
    /// probability) instead of the game's result.
    pub q_ratio: f32,
    /// `q_ratio` for the positions of games adjudicated at the game-length cap
    /// ([`Termination::MAX_PLIES`]), whose draw is no result of the game.
    pub capped_q_ratio: f32,
    /// TD(lambda) over the search values that follow a position in place of the game's
    /// result in the WDL target ([`td_wdl`]); `None`, the result alone.
    pub td_lambda: Option<f32>,
    /// How the input history before a game's FEN start is filled: the net's convention
    /// (`NetworkConfig::history_fill`).
    pub history_fill: HistoryFill,
    /// Whether the loader mirrors each training sample left to right with probability 1/2
    /// where no side can castle (`train.mirror`; [`HostBatch::mirror`]). Held-out samples are
    /// never mirrored.
    pub mirror: bool,
}

impl TargetOptions {
    /// The share of the WDL target that the search's value gives in positions of `game`.
    pub fn q_ratio_of(&self, game: &GameRecord) -> f32 {
        if game.termination == Termination::MAX_PLIES {
            self.capped_q_ratio
        } else {
            self.q_ratio
        }
    }

    /// The draw share that goes with [`TargetOptions::q`]: the chosen move's for the value of
    /// best play (Lc0 takes `best_q` and `best_d` together), the root's for the root mean.
    pub fn d(&self, record: &cfzero_selfplay::PositionRecord) -> f32 {
        match self.q_target {
            QTarget::Best | QTarget::Policy => record.best_d,
            QTarget::Root => record.root_d,
        }
    }

    /// The q target of `record`.
    pub fn q(&self, record: &cfzero_selfplay::PositionRecord) -> f32 {
        match self.q_target {
            QTarget::Best => record.best_q,
            QTarget::Policy => record.policy_q,
            QTarget::Root => record.root_q,
        }
    }
}

/// A WDL distribution with expectation `q` and draw share `d` (`d` is reduced where
/// `|q| + d` would exceed 1, so that no probability is negative).
pub fn wdl_of(q: f32, d: f32) -> [f32; 3] {
    let q = q.clamp(-1.0, 1.0);
    let d = d.clamp(0.0, 1.0 - q.abs());
    [(1.0 + q - d) / 2.0, d, (1.0 - q - d) / 2.0]
}

/// The W/D/L target: the game's result `result`, with a share `q_ratio` (clamped to [0, 1])
/// taken from the search's `searched` (every sample source mixes the same way).
pub fn mixed_wdl(result: [f32; 3], searched: [f32; 3], q_ratio: f32) -> [f32; 3] {
    let r = q_ratio.clamp(0.0, 1.0);
    std::array::from_fn(|i| (1.0 - r) * result[i] + r * searched[i])
}

/// The W/D/L that a TD(lambda) return gives position `ply` of `game`, for its side to move,
/// whose game result is `result` (for that side):
/// each later position `ply + k` weighs `(1 - lambda) * lambda^(k - 1)` with the W/D/L of its
/// search value (`targets.q`, `targets.d`; win and loss swapped on the other side's plies),
/// and the game's result the rest, `lambda^(n - 1 - ply)` for a game of `n` positions. Lambda 1
/// is the result alone; 0 the next position's search value alone. The result still ends every
/// return, so a game's last positions learn from how it ended and earlier ones from what the
/// search saw later in it, with less of the noise that the blunders of weak self-play leave in
/// a result many plies away.
pub fn td_wdl(
    game: &GameRecord,
    ply: usize,
    result: [f32; 3],
    lambda: f32,
    targets: &TargetOptions,
) -> [f32; 3] {
    let lambda = lambda.clamp(0.0, 1.0);
    let mut acc = [0.0f32; 3];
    let mut weight = 1.0 - lambda;
    let mut rest = 1.0f32;
    for (k, record) in game.positions.iter().enumerate().skip(ply + 1) {
        let [w, d, l] = wdl_of(targets.q(record), targets.d(record));
        let wdl = if (k - ply) % 2 == 1 {
            [l, d, w]
        } else {
            [w, d, l]
        };
        for (a, v) in acc.iter_mut().zip(wdl) {
            *a += weight * v;
        }
        rest -= weight;
        weight *= lambda;
    }
    let rest = rest.max(0.0);
    std::array::from_fn(|i| acc[i] + rest * result[i])
}

/// A batch of positions on the host, as flat buffers in the layout of
/// [`cfzero_network::TrainingBatch`]; reused from batch to batch.
#[derive(Debug, Clone, Default)]
pub struct HostBatch {
    /// Positions in the batch.
    pub len: usize,
    /// Inputs, `[len, 64, 112]`.
    pub inputs: Vec<f32>,
    /// Policy targets, `[len, 1858]`.
    pub policy: Vec<f32>,
    /// Legal-move masks, `[len, 1858]` as 0/1.
    pub legal: Vec<f32>,
    /// Game results for the side to move, `[len, 3]`.
    pub wdl: Vec<f32>,
    /// Root search values, `[len]`.
    pub q: Vec<f32>,
    /// Short-term values, `[len]`.
    pub st: Vec<f32>,
    /// Plies left, `[len]`.
    pub moves_left: Vec<f32>,
}

impl HostBatch {
    /// Clears and sizes the buffers for `len` positions (all zero).
    pub fn reset(&mut self, len: usize) {
        fn zero(v: &mut Vec<f32>, n: usize) {
            v.clear();
            v.resize(n, 0.0);
        }
        self.len = len;
        zero(&mut self.inputs, len * TOKEN_FLOATS);
        zero(&mut self.policy, len * POLICY_SIZE);
        zero(&mut self.legal, len * POLICY_SIZE);
        zero(&mut self.wdl, len * 3);
        zero(&mut self.q, len);
        zero(&mut self.st, len);
        zero(&mut self.moves_left, len);
    }

    /// Mirrors the sample in slot `slot` left to right (inputs, policy target and legal mask;
    /// the value targets stay) if no side can castle in it (`cfzero_network::encoding::mirror`).
    /// Returns whether it did.
    pub fn mirror(&mut self, slot: usize) -> bool {
        let inputs = &mut self.inputs[slot * TOKEN_FLOATS..(slot + 1) * TOKEN_FLOATS];
        if !can_mirror(inputs) {
            return false;
        }
        mirror_tokens(inputs);
        mirror_policy(&mut self.policy[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE]);
        mirror_policy(&mut self.legal[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE]);
        true
    }
}

/// Reusable buffers for [`fill_position`].
#[derive(Debug, Default)]
pub struct SampleScratch {
    legal: Vec<shakmaty::Move>,
}

/// Writes position `ply` of `game` into slot `slot` of `batch`: the input planes, the
/// policy target over the legal moves (renormalised after quantisation; a row of zeros for a
/// position without one, a cheap search's, which the loss then trains for its value alone),
/// the legal mask, and the value, short-term and moves-left targets (see [`TargetOptions`]).
pub fn fill_position(
    game: &GameRecord,
    ply: usize,
    batch: &mut HostBatch,
    slot: usize,
    scratch: &mut SampleScratch,
    targets: &TargetOptions,
) -> Result<(), ReplayError> {
    let state = replay_prefix(game, ply, &mut scratch.legal, |_, _, _, _| {})?;
    let record = &game.positions[ply];
    state.legal_moves(&mut scratch.legal);
    if record.is_trainable() && record.policy.len() != scratch.legal.len() {
        return Err(ReplayError::BadPolicy {
            ply,
            entries: record.policy.len(),
            legal: scratch.legal.len(),
        });
    }
    encode_tokens_filled(
        &state,
        targets.history_fill,
        &mut batch.inputs[slot * TOKEN_FLOATS..(slot + 1) * TOKEN_FLOATS],
    );

    let turn = state.turn();
    let policy = &mut batch.policy[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE];
    let legal = &mut batch.legal[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE];
    let total: f32 = record
        .policy
        .iter()
        .map(|&q| dequantize_probability(q))
        .sum();
    let uniform = 1.0 / scratch.legal.len() as f32;
    for (k, mv) in scratch.legal.iter().enumerate() {
        let i = move_index(mv, turn);
        legal[i] = 1.0;
        if let Some(&q) = record.policy.get(k) {
            policy[i] = if total > 0.0 {
                dequantize_probability(q) / total
            } else {
                uniform
            };
        }
    }
    let z = game.result.value_for(turn);
    let q = targets.q(record);
    let mut result = wdl_of(z, if z == 0.0 { 1.0 } else { 0.0 });
    if let Some(lambda) = targets.td_lambda {
        result = td_wdl(game, ply, result, lambda, targets);
    }
    let wdl = mixed_wdl(
        result,
        wdl_of(q, targets.d(record)),
        targets.q_ratio_of(game),
    );
    batch.wdl[slot * 3..slot * 3 + 3].copy_from_slice(&wdl);
    batch.q[slot] = q;
    batch.st[slot] = record.st;
    batch.moves_left[slot] = (game.positions.len() - ply) as f32;
    Ok(())
}
