//! Evaluation matches during a run: the new net against generation 0 and a random mover.

use anyhow::Result;
use cfzero_mcts::chess::ChessState;
use cfzero_network::{InferenceHandle, InferenceOptions, InferenceServer, Net};
use cfzero_selfplay::arena::{MatchScore, RandomPlayer, SearchPlayer, play_match};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::config::Config;

/// Scores of the new net in the evaluation matches.
#[derive(Debug, Clone, Copy)]
pub struct EvalSummary {
    /// Against the first generation.
    pub vs_first: MatchScore,
    /// Against a uniformly random mover.
    pub vs_random: MatchScore,
}

/// Plays `candidate` against `first` and against a random mover, every opening with both colours.
pub fn evaluate(
    config: &Config,
    candidate: Net,
    first: Net,
    openings: &[String],
    seed: u64,
) -> Result<EvalSummary> {
    let opts = InferenceOptions {
        max_batch: config.run.max_batch,
        ..InferenceOptions::default()
    };
    config.run.use_inference_threads();
    let a: InferenceHandle<ChessState> = InferenceServer::spawn(candidate, opts);
    let b: InferenceHandle<ChessState> = InferenceServer::spawn(first, opts);
    let sims = config.run.eval_simulations;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let max_plies = config.selfplay.max_plies;
    // Strongest play: no root noise (the openings and the random mover give the variety).
    let search = cfzero_mcts::SearchConfig {
        gumbel_scale: 0.0,
        ..config.search.clone()
    };
    let mut new = SearchPlayer::new("new", &a, search.clone(), sims);
    let mut old = SearchPlayer::new("gen-0000", &b, search, sims);
    let (vs_first, _) = play_match(&mut new, &mut old, openings, max_plies, &mut rng)?;
    let mut random = RandomPlayer::default();
    let (vs_random, _) = play_match(&mut new, &mut random, openings, max_plies, &mut rng)?;
    Ok(EvalSummary {
        vs_first,
        vs_random,
    })
}
