//! `cfzero ladder`: ratings of every published generation of a run. Each generation plays
//! its predecessor and generation 0; the games of all pairs are fitted together
//! ([`cfzero_eval::ratings`]), written to `ladder/ratings.csv` and drawn in
//! `ladder/elo.png`. Results are kept in `ladder/results.json` with the simulations they were
//! played at, so a later call only plays the games that are missing (new generations, more
//! games per pair, or another `--sims`, whose games are kept and rated apart).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cfzero_eval::arena::{MatchOptions, MatchScore, SearchPlayer, run_match};
use cfzero_eval::ratings::{PairResult, fit_ratings};
use cfzero_fsutil::write_file_atomically;
use cfzero_selfplay::openings::read_openings;
use cfzero_store::RunLocation;
use clap::Args;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::net_play::{arena_error, play_search, serve_net};
use crate::config::Config;
use crate::error::user_error;
use crate::flags::{DeviceFlag, PlayFlags};
use crate::plot::{EloPoint, elo_plot};
use crate::run::dir::RunDir;
use crate::run::progress::bar;
use crate::run::stored_run::StoredRun;
use crate::user_bail;

/// Arguments of `cfzero ladder`.
#[derive(Debug, Args)]
pub struct LadderArgs {
    /// The run: a directory, or object storage (`s3://BUCKET/PREFIX`, ...; its nets are
    /// downloaded into the cache, the ladder's files uploaded under `ladder/`).
    #[arg(long)]
    pub run: PathBuf,
    /// With a run on object storage: the local cache directory (default
    /// `~/.cache/cfzero/runs/<run>`).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Games per pair of generations (even: each opening with both colours).
    #[arg(long, default_value_t = 10)]
    pub games: usize,
    /// Simulations per move (default: the run's `[eval] simulations`, as its in-run evaluation).
    #[arg(long)]
    pub sims: Option<u32>,
    /// Opening suite (default: the run's `[eval] openings`).
    #[arg(long)]
    pub openings: Option<PathBuf>,
    /// Games reaching this many plies are draws (default: the run's `max_plies`).
    #[arg(long)]
    pub max_plies: Option<u32>,
    /// Games of a pair played at the same time.
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    #[command(flatten)]
    pub device: DeviceFlag,
    #[command(flatten)]
    pub play: PlayFlags,
}

/// The games played between two generations so far, at one number of simulations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct PairRecord {
    /// The newer generation.
    a: u32,
    /// The older one.
    b: u32,
    /// Simulations a move of both nets: a ladder at another count plays its own games and
    /// keeps these apart (a file of an older cfzero, which did not record it, was played at
    /// its default of 16).
    #[serde(default = "legacy_simulations")]
    sims: u32,
    /// A's wins, draws and losses.
    wins: u32,
    draws: u32,
    losses: u32,
}

/// The simulations of a pair recorded before `sims` was: the old `--sims` default.
fn legacy_simulations() -> u32 {
    16
}

impl PairRecord {
    fn games(&self) -> usize {
        (self.wins + self.draws + self.losses) as usize
    }
}

/// The pairs each generation plays: its predecessor and generation 0 (once if they are the same).
fn schedule(generations: &[u32]) -> Vec<(u32, u32)> {
    let mut pairs = Vec::new();
    for w in generations.windows(2) {
        pairs.push((w[1], w[0]));
        if w[0] != generations[0] {
            pairs.push((w[1], generations[0]));
        }
    }
    pairs
}

fn load_results(path: &Path) -> Result<Vec<PairRecord>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        user_error(format!(
            "{}: not a ladder results file: {e}",
            path.display()
        ))
    })
}

/// Writes `text` to `path` atomically (the checkpoints' writer).
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    write_file_atomically(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

/// Plays the missing games, fits the ratings and writes the CSV and the plot.
pub fn run(args: &LadderArgs) -> Result<()> {
    let location = RunLocation::parse(&args.run.to_string_lossy()).map_err(user_error)?;
    let stored = StoredRun::open(&location, args.cache.as_deref(), None)?;
    stored.pull_ladder()?;
    let dir = stored.dir().clone();
    if !dir.config().exists() {
        user_bail!("{} holds no run (no config.toml)", args.run.display());
    }
    ladder(args, &dir)?;
    stored.push_tree(&dir.root().join("ladder"))?;
    Ok(())
}

/// The ladder of the run in `dir`.
fn ladder(args: &LadderArgs, dir: &RunDir) -> Result<()> {
    if args.games == 0 {
        user_bail!("--games must be at least 1");
    }
    let config = Config::load(&dir.config())?;
    let play = play_search(
        Some(&dir.config()),
        Some(args.sims.unwrap_or(config.eval.simulations)),
        "--sims",
    )?;
    let generations = dir.published()?;
    if generations.len() < 2 {
        user_bail!(
            "{}: a ladder needs at least two published nets",
            args.run.display()
        );
    }
    // Play without root noise repeats itself from one start: a suite gives the variety.
    let openings = match args.openings.as_ref().or(config.eval.openings.as_ref()) {
        Some(path) => read_openings(path).map_err(user_error)?,
        None => user_bail!(
            "{}: the run has no [eval] openings; give --openings FILE",
            args.run.display()
        ),
    };
    let max_plies = args.max_plies.unwrap_or(config.selfplay.max_plies);
    let device = args.device.parse()?;
    let (search, sims) = (play.search, play.simulations);
    let ladder_dir = dir.root().join("ladder");
    std::fs::create_dir_all(&ladder_dir)
        .with_context(|| format!("creating {}", ladder_dir.display()))?;
    let results_path = ladder_dir.join("results.json");
    let mut results = load_results(&results_path)?;

    let pairs = schedule(&generations);
    let missing: usize = pairs
        .iter()
        .map(|&(a, b)| {
            let have = results
                .iter()
                .find(|r| (r.a, r.b, r.sims) == (a, b, sims))
                .map_or(0, PairRecord::games);
            args.games.saturating_sub(have)
        })
        .sum();
    let progress = bar(missing as u64, "ladder", "games");
    for &(a, b) in &pairs {
        let index = match results
            .iter()
            .position(|r| (r.a, r.b, r.sims) == (a, b, sims))
        {
            Some(i) => i,
            None => {
                results.push(PairRecord {
                    a,
                    b,
                    sims,
                    wins: 0,
                    draws: 0,
                    losses: 0,
                });
                results.len() - 1
            }
        };
        let have = results[index].games();
        if have >= args.games {
            continue;
        }
        progress.set_message(format!("gen {a} vs gen {b}"));
        // New games start at the openings after those already played.
        let skip = (have / 2) % openings.len();
        let rotated: Vec<String> = openings[skip..]
            .iter()
            .chain(&openings[..skip])
            .cloned()
            .collect();
        let net_a = serve_net(&dir.net(a), device, args.play.precision, args.play.backend)?;
        let net_b = serve_net(&dir.net(b), device, args.play.precision, args.play.backend)?;
        let mut player_a = SearchPlayer::new(format!("gen {a}"), &net_a, search.clone(), sims);
        let mut player_b = SearchPlayer::new(format!("gen {b}"), &net_b, search.clone(), sims);
        let options = MatchOptions {
            games: args.games - have,
            concurrency: args.concurrency,
            max_plies,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(u64::from(a) << 32 | u64::from(b));
        let games = run_match(
            &mut player_a,
            &mut player_b,
            &rotated,
            &options,
            &mut rng,
            &mut |_| {
                progress.inc(1);
                true
            },
        )
        .map_err(arena_error)?;
        let score = MatchScore::of(&games);
        let r = &mut results[index];
        r.wins += score.wins;
        r.draws += score.draws;
        r.losses += score.losses;
        write_atomic(&results_path, &serde_json::to_string_pretty(&results)?)?;
    }
    progress.finish_and_clear();

    // Players are indexed by position in `generations`; generation 0 (the first) is the reference.
    let index_of = |g: u32| generations.iter().position(|&x| x == g);
    let at_sims = || results.iter().filter(|r| r.sims == sims);
    let pair_results: Vec<PairResult> = at_sims()
        .filter_map(|r| {
            Some(PairResult {
                a: index_of(r.a)?,
                b: index_of(r.b)?,
                games: r.games() as f64,
                points_a: f64::from(r.wins) + 0.5 * f64::from(r.draws),
            })
        })
        .collect();
    let ratings = fit_ratings(generations.len(), &pair_results);
    let mut csv = String::from("generation,step,minutes,elo,elo_low,elo_high,games\n");
    let mut points = Vec::new();
    for (&g, rating) in generations.iter().zip(&ratings) {
        let games: usize = at_sims()
            .filter(|r| r.a == g || r.b == g)
            .map(PairRecord::games)
            .sum();
        let point = EloPoint {
            step: (u64::from(g) * config.run.steps_per_generation) as f64,
            minutes: dir.minutes_between(generations[0], g),
            elo: rating.elo,
            low: rating.elo - rating.margin,
            high: rating.elo + rating.margin,
        };
        csv.push_str(&format!(
            "{g},{},{:.1},{:.1},{:.1},{:.1},{games}\n",
            point.step, point.minutes, point.elo, point.low, point.high
        ));
        points.push(point);
        println!(
            "gen {g:>4}: Elo {:>+7.1} ± {:>5.1} ({games} games)",
            rating.elo, rating.margin
        );
    }
    let csv_path = ladder_dir.join("ratings.csv");
    write_atomic(&csv_path, &csv)?;
    let png = ladder_dir.join("elo.png");
    let title = format!(
        "{}: Elo by generation ({} sims, {} games a pair)",
        args.run.display(),
        sims,
        args.games
    );
    elo_plot(&points, &title, "Elo (generation 0 = 0)", &png)?;
    println!("wrote {} and {}", csv_path.display(), png.display());
    Ok(())
}
