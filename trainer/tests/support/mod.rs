//! Shared helpers of the trainer tests: real, replayable game records, the micro net and
//! a training config.
#![allow(dead_code)]

use cfzero_chess::ChessState;
use cfzero_mcts::Game;
use cfzero_network::optim::schedule::LrSchedule;
use cfzero_network::{LossWeights, Net, NetworkConfig};
use cfzero_selfplay::record::quantize_probability;
use cfzero_selfplay::window::WindowConfig;
use cfzero_selfplay::{GameRecord, GameResult, PositionRecord, Termination};
use cfzero_trainer::sample::{SampleScratch, TargetOptions, fill_position};
use cfzero_trainer::{HostBatch, QTarget, TrainConfig, TrainPrecision};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tch::Device;

/// A game of random legal moves from the start position, at most `max_plies` long, with
/// the targets a search would record: a policy that favours the played move and values in
/// [-1, 1]. Every position is trainable. The result follows the rules where the game ended
/// by them, else a draw by the length cap.
pub fn random_game(seed: u64, max_plies: usize) -> GameRecord {
    random_game_from(None, seed, max_plies)
}

/// [`random_game`] from `start_fen` (`None`: the start position).
pub fn random_game_from(start_fen: Option<&str>, seed: u64, max_plies: usize) -> GameRecord {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut state = match start_fen {
        Some(fen) => ChessState::from_fen(fen, Default::default()).expect("a legal FEN"),
        None => ChessState::new(),
    };
    let mut legal = Vec::new();
    let mut positions = Vec::new();
    let (mut result, mut termination) = (GameResult::Draw, Termination::MAX_PLIES);
    while positions.len() < max_plies {
        if let Some(reason) = state.terminal_reason() {
            result = GameResult::from_terminal(reason, state.turn());
            termination = reason.into();
            break;
        }
        state.legal_moves(&mut legal);
        let played = rng.random_range(0..legal.len());
        let others = 0.5 / (legal.len() - 1).max(1) as f32;
        let policy = (0..legal.len())
            .map(|i| quantize_probability(if i == played { 0.5 } else { others }))
            .collect();
        // Multiples of 1/32767, so that the stored values are exactly these.
        let mut value = || (rng.random_range(-1.0f32..1.0) * 32767.0).round() / 32767.0;
        positions.push(PositionRecord {
            played: u8::try_from(played).expect("at most 218 legal moves"),
            policy,
            network_q: value(),
            root_q: value(),
            root_d: 0.25,
            best: u8::try_from(played).expect("at most 218 legal moves"),
            best_d: 0.125,
            best_q: value(),
            played_q: value(),
            policy_q: value(),
            st: value(),
            surprise: 0.0,
        });
        state.play(legal[played]);
    }
    GameRecord {
        start_fen: start_fen.map(str::to_owned),
        result,
        termination,
        generation: 0,
        positions,
    }
}

/// A window of 10,000 positions from the first game on, none held out, drawn uniformly.
pub fn window_config() -> WindowConfig {
    WindowConfig {
        min_positions: 10_000,
        max_positions: 10_000,
        validation_share: 0.0,
        validation_positions: 0,
        ..WindowConfig::default()
    }
}

/// The `[network]` table of configs/micro.toml.
pub fn micro_config() -> NetworkConfig {
    let path = format!("{}/../configs/micro.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    NetworkConfig::from_toml_file_text(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A micro net on the CPU with weights drawn from `seed`.
pub fn micro_net(seed: i64) -> Net {
    let _seeded = cfzero_network::seeded(seed);
    Net::new(&micro_config(), Device::Cpu).unwrap()
}

/// A training config with a constant learning rate `lr` and SWA every `swa_every` steps.
pub fn train_config(lr: f64, swa_every: u64) -> TrainConfig {
    TrainConfig {
        batch_size: 16,
        lr: LrSchedule {
            peak: lr,
            warmup_steps: 0,
            decay_steps: Vec::new(),
            decay_factor: 0.1,
        },
        grad_clip: 10.0,
        weight_decay: 0.0,
        swa_every,
        swa_max: 10,
        loader_threads: 1,
        loss: LossWeights::default(),
        q_target: QTarget::Best,
        q_ratio: 0.0,
        capped_q_ratio: None,
        td_lambda: None,
        mirror: false,
        precision: TrainPrecision::F32,
    }
}

/// A batch of the first `len` positions of the random games from seed 1 on, built as the
/// loader builds batches.
pub fn fixed_batch(len: usize) -> HostBatch {
    let mut batch = HostBatch::default();
    batch.reset(len);
    let mut scratch = SampleScratch::default();
    let targets = TargetOptions::default();
    let mut slot = 0;
    for seed in 1.. {
        let game = random_game(seed, 12);
        for ply in 0..game.positions.len() {
            if slot == len {
                return batch;
            }
            fill_position(&game, ply, &mut batch, slot, &mut scratch, &targets).unwrap();
            slot += 1;
        }
    }
    unreachable!("the seeds never run out")
}
