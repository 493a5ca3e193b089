//! What the commands that play a net share: its inference server and its search constants.

use std::path::Path;

use anyhow::Result;
use cfzero_chess::ChessState;
use cfzero_mcts::SearchConfig;
use cfzero_network::backend::BackendChoice;
use cfzero_network::checkpoint::load_net;
use cfzero_network::{InferenceHandle, InferenceServer, Precision};
use cfzero_selfplay::arena::ArenaError;

use crate::config::{Config, inference_options};
use crate::error::user_error;

/// Largest batch of the servers of commands that play a net outside a run.
pub const PLAY_MAX_BATCH: usize = 256;

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
    let options = inference_options(precision, backend, device, PLAY_MAX_BATCH);
    InferenceServer::spawn(net, options).map_err(user_error)
}

/// The search constants for play: the `[search]` table of `config` (the defaults of
/// docs/METHODS.md §3 without one), set for play ([`SearchConfig::for_play`]).
pub fn play_search(config: Option<&Path>) -> Result<SearchConfig> {
    let search = match config {
        Some(path) => Config::load(path)?.search,
        None => SearchConfig::default(),
    };
    Ok(search.for_play())
}

/// An error of a match or a puzzle run: a failed search is the program's fault; a bad
/// opening or a misbehaving engine is the user's (exit code 2).
pub fn arena_error(e: ArenaError) -> anyhow::Error {
    match e {
        ArenaError::Search(e) => anyhow::Error::new(e).context("a net's search failed"),
        other => user_error(other),
    }
}
