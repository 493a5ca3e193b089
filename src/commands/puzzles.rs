//! `cfzero puzzles`: a net's accuracy on Lichess puzzles, overall and by rating band.

use std::path::PathBuf;

use anyhow::Result;
use cfzero_eval::arena::{Player, SearchPlayer};
use cfzero_eval::puzzles::{
    BANDS, Puzzle, PuzzleOutcome, PuzzleTally, read_puzzles, solve_puzzles,
};
use clap::Args;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::net_play::{arena_error, play_search, serve_net};
use crate::error::user_error;
use crate::flags::{DeviceFlag, PlayFlags};
use crate::run::progress::bar;
use crate::user_bail;

/// Arguments of `cfzero puzzles`.
#[derive(Debug, Args)]
pub struct PuzzlesArgs {
    /// The net.
    #[arg(long)]
    pub net: PathBuf,
    /// A Lichess puzzle CSV (`PuzzleId,FEN,Moves,Rating,...`).
    #[arg(long)]
    pub file: PathBuf,
    /// Simulations per move (default: the `--config`'s `[search] simulations`, else that table's default).
    #[arg(long)]
    pub sims: Option<u32>,
    /// Only the first K puzzles of the file.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Puzzles solved at the same time (their searches share forward passes).
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// The search constants: the `[search]` table of this config (default: docs/METHODS.md §3).
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub device: DeviceFlag,
    #[command(flatten)]
    pub play: PlayFlags,
    /// Print the tally and every outcome as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Solves `puzzles` with `player` (the net's search), `concurrency` at the same time, with a
/// progress bar; the same seed every time, so that a net's tally is repeatable.
pub(crate) fn solve(
    puzzles: &[Puzzle],
    player: &mut dyn Player,
    concurrency: usize,
) -> Result<Vec<PuzzleOutcome>> {
    let progress = bar(puzzles.len() as u64, "puzzles", "puzzles");
    let mut solved = 0;
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let outcomes = solve_puzzles(puzzles, player, concurrency, &mut rng, &mut |o| {
        solved += usize::from(o.solved);
        progress.inc(1);
        progress.set_message(format!("{solved} solved"));
    })
    .map_err(arena_error)?;
    progress.finish_and_clear();
    Ok(outcomes)
}

/// How many of `outcomes` were solved, and the share solved with its 95% interval (Wilson's).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub(crate) struct SolvedShare {
    /// Puzzles solved.
    pub solved: usize,
    /// Puzzles tried.
    pub total: usize,
    /// The share solved.
    pub share: f64,
    /// Its 95% interval.
    pub low: f64,
    pub high: f64,
}

impl SolvedShare {
    /// The share of `outcomes` solved.
    pub(crate) fn of(outcomes: &[PuzzleOutcome]) -> SolvedShare {
        let sample = cfzero_eval::elo::ScoreSample::new(
            outcomes
                .iter()
                .map(|o| if o.solved { 1.0 } else { 0.0 })
                .collect(),
        );
        let (low, high) = sample.score_interval();
        SolvedShare {
            solved: outcomes.iter().filter(|o| o.solved).count(),
            total: outcomes.len(),
            share: sample.mean(),
            low,
            high,
        }
    }
}

/// Solves the puzzles and prints the accuracy.
pub fn run(args: &PuzzlesArgs) -> Result<()> {
    let play = play_search(args.config.as_deref(), args.sims, "--sims")?;
    if args.limit == Some(0) {
        user_bail!("--limit must be at least 1");
    }
    let set = read_puzzles(&args.file, args.limit).map_err(user_error)?;
    if let Some(warning) = set.skipped_warning(&args.file) {
        eprintln!("warning: {warning}");
    }
    let puzzles = set.puzzles;
    let device = args.device.parse()?;
    let handle = serve_net(&args.net, device, args.play.precision, args.play.backend)?;
    let name = args.net.file_stem().unwrap_or_default().to_string_lossy();
    let mut player = SearchPlayer::new(name, &handle, play.search, play.simulations);
    let outcomes = solve(&puzzles, &mut player, args.concurrency)?;
    let tally = PuzzleTally::of(&outcomes);
    if args.json {
        let report = serde_json::json!({
            "net": args.net,
            "simulations": play.simulations,
            "tally": tally,
            "bands": BANDS,
            "outcomes": outcomes,
            "skipped": set.skipped.len(),
        });
        println!("{report}");
        return Ok(());
    }
    let pct = |(s, n): (usize, usize)| {
        if n == 0 {
            "-".to_string()
        } else {
            format!("{:.1}%", 100.0 * s as f64 / n as f64)
        }
    };
    let skipped = match set.skipped.len() {
        0 => String::new(),
        n => format!(" ({n} skipped: game already over)"),
    };
    println!(
        "{}: {} of {} puzzles solved ({}), {} simulations a move{skipped}",
        args.net.display(),
        tally.all.0,
        tally.all.1,
        pct(tally.all),
        play.simulations
    );
    for (name, counts) in BANDS.iter().zip(tally.bands) {
        println!(
            "  {name:>10}: {:>5} of {:>5}  {:>6}",
            counts.0,
            counts.1,
            pct(counts)
        );
    }
    Ok(())
}
