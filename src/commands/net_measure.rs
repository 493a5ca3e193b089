//! What `bench learn` and `bench curve` measure a net with, the same way: fixed matches from an
//! opening suite, each opening with both colours (against the random and greedy movers and a
//! UCI engine at the `[eval]` settings), and the share of a puzzle file solved.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};
use cfzero_chess::ChessState;
use cfzero_eval::arena::{
    ArenaError, ArenaGame, GreedyPlayer, MatchOptions, Player, RandomPlayer, SearchPlayer,
    StoppablePlayer, run_match,
};
use cfzero_eval::puzzles::{Puzzle, read_puzzles};
use cfzero_inference::InferenceHandle;
use cfzero_selfplay::openings::read_openings;
use clap::Args;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::match_cmd::{MatchReport, progress_message};
use super::net_play::{PlaySearch, arena_error};
use super::puzzles::SolvedShare;
use crate::config::EvalConfig;
use crate::error::user_error;
use crate::run::evaluate::Anchor;
use crate::run::progress::bar;
use crate::user_bail;

/// Engine processes started for a match against the engine: games at the same time ask
/// them in parallel.
const ENGINE_INSTANCES: usize = 8;

/// Puzzles solved at the same time (their searches share forward passes), as `cfzero
/// puzzles` solves them by default.
const PUZZLE_CONCURRENCY: usize = 64;

/// How a benchmark's nets are measured, besides the number of games.
#[derive(Debug, Args)]
pub struct MeasureFlags {
    /// A UCI engine to play besides the movers (a bare name is looked for on `PATH`, then in
    /// /usr/games), set as the config's `[eval]` engine options and nodes say (by default
    /// Stockfish's Skill Level 0, one thread, 16 MB of hash, 100 nodes a move).
    #[arg(long, value_name = "COMMAND")]
    pub engine: Option<String>,
    /// A Lichess puzzle CSV for each net to solve.
    #[arg(long)]
    pub puzzles: Option<PathBuf>,
    /// Opening suite of the matches (EPD or FEN lines, or a `.pgn` file).
    #[arg(long, default_value = "configs/openings/4mvs_+90_+99.epd")]
    pub openings: PathBuf,
    /// Simulations per move of the net in the matches and puzzles (default: the config's
    /// `[search] simulations`, what `cfzero match` and `cfzero uci` play with; the in-run
    /// evaluation's `[eval] simulations` is smaller, for speed).
    #[arg(long)]
    pub sims: Option<u32>,
    /// Match games reaching this many plies are adjudicated a draw.
    #[arg(long, default_value_t = cfzero_eval::arena::MATCH_MAX_PLIES)]
    pub max_plies: u32,
}

/// Games of a match played at the same time (their searches share forward passes).
const MATCH_CONCURRENCY: usize = 64;

/// How a benchmark's matches are played: `games` games (each opening with both colours, in
/// file order), [`MATCH_CONCURRENCY`] at a time, a draw at `max_plies` plies.
pub(crate) fn match_options(games: usize, max_plies: u32) -> MatchOptions {
    MatchOptions {
        games,
        concurrency: games.min(MATCH_CONCURRENCY),
        max_plies,
    }
}

/// What the nets of a benchmark are measured against, read and checked once before anything
/// is trained or played.
pub(crate) struct Opponents {
    /// The opening suite.
    pub openings: Vec<String>,
    /// A UCI engine and its label (its name, budget and the options it took).
    pub engine: Option<(Anchor, String)>,
    /// A puzzle file's puzzles.
    pub puzzles: Option<Vec<Puzzle>>,
}

impl Opponents {
    /// Reads the opening suite and the puzzle file of `flags`, and starts its engine once (so
    /// that one that does not run is an error now), set as `eval`'s engine options and nodes
    /// say.
    pub(crate) fn load(flags: &MeasureFlags, eval: &EvalConfig) -> Result<Opponents> {
        let (openings, engine, puzzles) = (
            flags.openings.as_path(),
            flags.engine.as_deref(),
            flags.puzzles.as_deref(),
        );
        let suite = read_openings(openings).map_err(user_error)?;
        if suite.is_empty() {
            user_bail!("openings {}: no position in the file", openings.display());
        }
        let puzzles = match puzzles {
            Some(file) => {
                let set = read_puzzles(file, None).map_err(user_error)?;
                if let Some(warning) = set.skipped_warning(file) {
                    eprintln!("warning: {warning}");
                }
                Some(set.puzzles)
            }
            None => None,
        };
        let engine = match engine {
            Some(command) => {
                let anchor = Anchor::of(&EvalConfig {
                    engine: command.to_owned(),
                    ..eval.clone()
                });
                let label = anchor.player(1)?.label();
                Some((anchor, label))
            }
            None => None,
        };
        Ok(Opponents {
            openings: suite,
            engine,
            puzzles,
        })
    }
}

/// What a net scored: each match's report, and the puzzles.
#[derive(Debug, Serialize)]
pub(crate) struct NetScores {
    /// Against the random mover (`bench learn` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_random: Option<MatchReport>,
    /// Against the greedy mover.
    pub vs_greedy: MatchReport,
    /// Against the engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_engine: Option<MatchReport>,
    /// On the puzzles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub puzzles: Option<SolvedShare>,
}

/// How one net is measured: its server and search, the match options and seed (the same for
/// every opponent).
pub(crate) struct NetMeasure<'a> {
    /// The net's inference server.
    pub handle: &'a InferenceHandle<ChessState>,
    /// Its search constants and simulations a move.
    pub play: &'a PlaySearch,
    /// Its name in the reports.
    pub label: &'a str,
    /// Games, games at the same time, adjudication.
    pub options: MatchOptions,
    /// The seed of the matches' randomness.
    pub seed: u64,
    /// Set by Ctrl-C: a match stops within a move.
    pub stop: &'a AtomicBool,
}

impl NetMeasure<'_> {
    /// The net against every opponent of `against` (the random mover too with
    /// `with_random`), and on its puzzles.
    pub(crate) fn scores(&self, against: &Opponents, with_random: bool) -> Result<NetScores> {
        let vs_random = if with_random {
            Some(self.play(&against.openings, &mut RandomPlayer::default())?)
        } else {
            None
        };
        let vs_greedy = self.play(&against.openings, &mut GreedyPlayer)?;
        let vs_engine = match &against.engine {
            Some((anchor, _)) => {
                let mut engine = anchor.player(ENGINE_INSTANCES.min(self.options.games))?;
                Some(self.play(&against.openings, engine.as_player())?)
            }
            None => None,
        };
        let puzzles = match &against.puzzles {
            Some(puzzles) => {
                let mut player = SearchPlayer::new(
                    self.label,
                    self.handle,
                    self.play.search.clone(),
                    self.play.simulations,
                );
                Some(SolvedShare::of(&super::puzzles::solve(
                    puzzles,
                    &mut player,
                    PUZZLE_CONCURRENCY,
                )?))
            }
            None => None,
        };
        Ok(NetScores {
            vs_random,
            vs_greedy,
            vs_engine,
            puzzles,
        })
    }

    /// Plays the net against `opponent` from `openings`, with a progress bar.
    pub(crate) fn play(
        &self,
        openings: &[String],
        opponent: &mut dyn Player,
    ) -> Result<MatchReport> {
        let name = opponent.name();
        let mut net = SearchPlayer::new(
            self.label,
            self.handle,
            self.play.search.clone(),
            self.play.simulations,
        );
        let mut net = StoppablePlayer::new(&mut net, self.stop);
        let progress = bar(self.options.games as u64, &format!("vs {name}"), "games");
        let mut finished: Vec<ArenaGame> = Vec::with_capacity(self.options.games);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let played = run_match(
            &mut net,
            opponent,
            openings,
            &self.options,
            &mut rng,
            &mut |game| {
                finished.push(game.clone());
                progress.inc(1);
                progress.set_message(progress_message(&finished));
                true
            },
        );
        progress.finish_and_clear();
        let played = match played {
            Ok(games) => games,
            Err(ArenaError::Stopped) => bail!("interrupted during the match against {name}"),
            Err(e) => return Err(arena_error(e)),
        };
        Ok(MatchReport::new(
            self.label.to_string(),
            name,
            &played,
            None,
        ))
    }
}
