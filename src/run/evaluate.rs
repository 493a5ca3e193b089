//! Evaluation matches during a run: the new net against generation 0, a random mover and a
//! 1-ply material-greedy mover.

use std::sync::atomic::AtomicBool;

use anyhow::Result;
use cfzero_chess::ChessState;
use cfzero_eval::arena::{
    ArenaError, GreedyPlayer, MatchScore, Player, RandomPlayer, SearchPlayer, StoppablePlayer,
    play_match,
};
use cfzero_network::{InferenceHandle, InferenceServer, Net};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::config::Config;
use crate::error::user_error;

/// Scores of the new net in the evaluation matches.
#[derive(Debug, Clone, Copy)]
pub struct EvalSummary {
    /// Against the first generation.
    pub vs_first: MatchScore,
    /// Against a uniformly random mover.
    pub vs_random: MatchScore,
    /// Against the 1-ply material-greedy mover.
    pub vs_greedy: MatchScore,
}

/// Plays `candidate` against `first`, a random mover and the greedy mover, every opening with
/// both colours. `None` if `stop` was set before the matches ended: they end within a move
/// of it, so that a deadline or Ctrl-C is not held up by an evaluation.
pub fn evaluate(
    config: &Config,
    candidate: Net,
    first: Net,
    openings: &[String],
    seed: u64,
    stop: &AtomicBool,
) -> Result<Option<EvalSummary>> {
    let opts = config.run.inference_options(candidate.device());
    config.run.use_inference_threads();
    let a: InferenceHandle<ChessState> =
        InferenceServer::spawn(candidate, opts).map_err(user_error)?;
    let b: InferenceHandle<ChessState> = InferenceServer::spawn(first, opts).map_err(user_error)?;
    let sims = config.run.eval_simulations;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let max_plies = config.selfplay.max_plies;
    // Strongest play (the openings and the baseline movers give the variety).
    let search = config.search.for_play();
    let mut new = SearchPlayer::new("new", &a, search.clone(), sims);
    let mut old = SearchPlayer::new("gen-0000", &b, search, sims);
    let mut play = |opponent: &mut dyn Player| -> Result<Option<MatchScore>> {
        let mut candidate = StoppablePlayer::new(&mut new, stop);
        let mut opponent = StoppablePlayer::new(opponent, stop);
        match play_match(&mut candidate, &mut opponent, openings, max_plies, &mut rng) {
            Ok((score, _)) => Ok(Some(score)),
            Err(ArenaError::Stopped) => Ok(None),
            Err(e) => Err(e.into()),
        }
    };
    let Some(vs_first) = play(&mut old)? else {
        return Ok(None);
    };
    let Some(vs_random) = play(&mut RandomPlayer::default())? else {
        return Ok(None);
    };
    let Some(vs_greedy) = play(&mut GreedyPlayer)? else {
        return Ok(None);
    };
    Ok(Some(EvalSummary {
        vs_first,
        vs_random,
        vs_greedy,
    }))
}
