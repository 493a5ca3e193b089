//! What the commands that play a net share: its inference server and its search constants.

use std::path::Path;

use anyhow::Result;
use cfzero_chess::ChessState;
use cfzero_eval::arena::ArenaError;
use cfzero_inference::backend::BackendChoice;
use cfzero_inference::{DEFAULT_MAX_BATCH, InferenceHandle, InferenceServer};
use cfzero_mcts::SearchConfig;
use cfzero_network::Precision;
use cfzero_network::checkpoint::load_net;

use crate::config::{Config, inference_options};
use crate::error::user_error;
use crate::user_bail;

/// Loads the net at `path` onto `device` and starts its inference server in `precision` on
/// `backend` (a missing or broken file, or a backend that cannot serve it, is the user's
/// error).
pub fn serve_net(
    path: &Path,
    device: tch::Device,
    precision: Precision,
    backend: BackendChoice,
) -> Result<InferenceHandle<ChessState>> {
    let net = load_net(path, device).map_err(user_error)?;
    let options = inference_options(precision, backend, device, DEFAULT_MAX_BATCH);
    InferenceServer::spawn(net, options).map_err(user_error)
}

/// How a command that plays a net searches: the search constants set for play and the
/// simulations a move.
#[derive(Debug, Clone)]
pub struct PlaySearch {
    /// The `[search]` table of the config (the defaults of docs/METHODS.md §3 without one),
    /// set for play ([`SearchConfig::for_play`]).
    pub search: SearchConfig,
    /// Simulations a move.
    pub simulations: u32,
}

/// The one resolver of a playing command's search (`match`, `puzzles`, `uci`, `ladder`,
/// `bench learn`'s matches): the constants of `config`'s `[search]` table (its defaults
/// without one), and as simulations the flag `flag_name` when given, else that table's
/// `simulations`: one default for every command that plays a net. Zero simulations is the
/// user's error.
pub fn play_search(
    config: Option<&Path>,
    flag: Option<u32>,
    flag_name: &str,
) -> Result<PlaySearch> {
    let search = match config {
        Some(path) => Config::load(path)?.search,
        None => SearchConfig::default(),
    };
    let simulations = flag.unwrap_or(search.simulations);
    if simulations == 0 {
        user_bail!("{flag_name} must be at least 1");
    }
    Ok(PlaySearch {
        search: search.for_play(),
        simulations,
    })
}

/// An error of a match or a puzzle run: a failed search is the program's fault; a bad
/// opening or a misbehaving engine is the user's (exit code 2).
pub fn arena_error(e: ArenaError) -> anyhow::Error {
    match e {
        ArenaError::Search(e) => anyhow::Error::new(e).context("a net's search failed"),
        other => user_error(other),
    }
}
