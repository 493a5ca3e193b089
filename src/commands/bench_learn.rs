//! `cfzero bench learn`: how strong a config gets in a given wall-clock time. It trains from
//! zero for `--minutes` with the loop of `cfzero train`, into a fresh run directory, then
//! plays fixed matches of the final net against the random mover and the 1-ply greedy mover
//! from an opening suite, both colours, and reports each score and Elo with its 95% interval.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};
use cfzero_chess::ChessState;
use cfzero_eval::arena::{
    ArenaError, ArenaGame, GreedyPlayer, MatchOptions, Player, RandomPlayer, SearchPlayer,
    StoppablePlayer, run_match,
};
use cfzero_inference::InferenceHandle;
use cfzero_mcts::SearchConfig;
use cfzero_selfplay::openings::read_openings;
use clap::Args;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::match_cmd::{MatchReport, progress_message};
use super::net_play::{arena_error, play_search, serve_net};
use super::train::{TrainOutcome, train};
use crate::config::Config;
use crate::error::user_error;
use crate::flags::DeviceFlag;
use crate::run::deadline::parse_minutes;
use crate::run::dir::RunDir;
use crate::run::progress::bar;
use crate::run::session::{RunArgs, stop_on_ctrl_c};
use crate::run::stored_run::cache_dir;
use crate::user_bail;
use cfzero_store::RunLocation;

/// Arguments of `cfzero bench learn`.
#[derive(Debug, Args)]
pub struct LearnBenchArgs {
    /// Config to train from zero.
    #[arg(long, default_value = "configs/tiny.toml")]
    pub config: PathBuf,
    /// Training budget in minutes of wall clock (fractions allowed), as `cfzero train --minutes`.
    #[arg(long, allow_negative_numbers = true)]
    pub minutes: f64,
    /// The run of the training, a directory or a URL (`s3://BUCKET/PREFIX`, ...); it must
    /// not hold anything yet (default: `runs/bench-learn-<unix time>`). It stays a normal,
    /// resumable run.
    #[arg(long)]
    pub run: Option<PathBuf>,
    /// A UCI engine that labels a share of the self-play positions during the training (see
    /// `cfzero train --teacher`; the config's `[teacher]` table says how).
    #[arg(long, value_name = "COMMAND")]
    pub teacher: Option<String>,
    /// Precision of the training steps (auto, f32, or bf16 autocast), instead of the config's.
    #[arg(long, value_name = "PRECISION")]
    pub train_precision: Option<cfzero_trainer::TrainPrecision>,
    /// Games against each opponent (each opening with both colours, in file order).
    #[arg(long, default_value_t = 100)]
    pub games: usize,
    /// Opening suite of the matches (EPD or FEN lines, or a `.pgn` file).
    #[arg(long, default_value = "configs/openings/4mvs_+90_+99.epd")]
    pub openings: PathBuf,
    /// Simulations per move of the net in the matches (default: the config's
    /// `[search] simulations`, what `cfzero match` and `cfzero uci` play with; the in-run
    /// evaluation's `[eval] simulations` is smaller, for speed).
    #[arg(long)]
    pub sims: Option<u32>,
    /// Match games reaching this many plies are adjudicated a draw.
    #[arg(long, default_value_t = 400)]
    pub max_plies: u32,
    #[command(flatten)]
    pub device: DeviceFlag,
    /// Print the report as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// The training half of the report.
#[derive(Debug, Serialize)]
struct TrainingReport {
    /// The budget in minutes.
    minutes: f64,
    /// Wall time of the training loop (the budget plus the time to stop cleanly).
    seconds: f64,
    /// The final net's generation.
    generations: u32,
    /// Self-play games and positions played.
    selfplay_games: u64,
    selfplay_positions: u64,
    /// Self-play positions per second of self-play.
    positions_per_second: f64,
    /// Self-play positions per second of the whole budget (training and evaluation included).
    positions_per_second_overall: f64,
    /// Training steps of the published generations.
    train_steps: u64,
}

/// The whole report.
#[derive(Debug, Serialize)]
struct LearnReport {
    config: String,
    run: String,
    training: TrainingReport,
    /// How the matches were played.
    openings: String,
    games_per_opponent: usize,
    /// Simulations per move of the net (no root noise).
    simulations: u32,
    max_plies: u32,
    vs_random: MatchReport,
    vs_greedy: MatchReport,
}

/// The default run directory: `runs/bench-learn-<unix seconds>`.
fn default_run_dir() -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from(format!("runs/bench-learn-{secs}"))
}

/// Whether `dir` is missing or empty.
fn is_fresh(dir: &Path) -> bool {
    std::fs::read_dir(dir).map_or(true, |mut entries| entries.next().is_none())
}

/// Runs the benchmark.
pub fn run(args: &LearnBenchArgs) -> Result<()> {
    parse_minutes(args.minutes)?;
    if args.games == 0 {
        user_bail!("--games must be at least 1");
    }
    let config = Config::load(&args.config)?;
    let play = play_search(Some(&args.config), args.sims, "--sims")?;
    let sims = play.simulations;
    let openings = read_openings(&args.openings).map_err(user_error)?;
    if openings.is_empty() {
        user_bail!(
            "openings {}: no position in the file",
            args.openings.display()
        );
    }
    let run_dir = args.run.clone().unwrap_or_else(default_run_dir);
    // The run may be a URL, like every run: the final net is then read from its cache.
    let location = RunLocation::parse(&run_dir.to_string_lossy()).map_err(user_error)?;
    let local_dir = match &location {
        RunLocation::Local(p) => {
            if !is_fresh(p) {
                user_bail!(
                    "run directory {} is not empty: bench learn trains from zero",
                    p.display()
                );
            }
            p.clone()
        }
        RunLocation::Object(url) => {
            let store = cfzero_store::open(&location).map_err(user_error)?;
            if store.get("config.toml")?.is_some() || !store.list_after("nets", None)?.is_empty() {
                user_bail!("{url} holds a run already: bench learn trains from zero");
            }
            cache_dir(None, url)
        }
    };
    let search = play.search;

    let run_args = RunArgs {
        config: args.config.clone(),
        run: run_dir.clone(),
        cache: None,
        lease_seconds: 60.0,
        resume: false,
        force: false,
        generations: None,
        minutes: Some(args.minutes),
        device: args.device.clone(),
        init_from: None,
        teacher: args.teacher.clone(),
        eval_engine: None,
        train_precision: args.train_precision,
    };
    eprintln!(
        "bench learn: training {} from zero for {} minutes into {}",
        args.config.display(),
        args.minutes,
        run_dir.display()
    );
    let stop = stop_on_ctrl_c();
    let outcome = train(&run_args, stop.clone(), true)?;
    if !outcome.deadline_reached {
        bail!(
            "interrupted before the time limit (the run in {} resumes with `cfzero train --resume`)",
            run_dir.display()
        );
    }
    // The limit set the stop flag; from here on only Ctrl-C sets it.
    stop.store(false, Ordering::SeqCst);

    let net_path = RunDir::new(&local_dir).net(outcome.generation);
    config.inference.use_threads();
    let device = args.device.parse()?;
    let handle = serve_net(
        &net_path,
        device,
        config.inference.precision,
        config.inference.backend,
    )?;
    let label = format!("gen-{:04} ({sims} sims)", outcome.generation);
    let matches = Matches {
        handle: &handle,
        search: &search,
        sims,
        label: &label,
        openings: &openings,
        options: MatchOptions {
            games: args.games,
            concurrency: args.games.min(64),
            max_plies: args.max_plies,
        },
        seed: config.run.seed,
        stop: &stop,
    };
    let vs_random = matches.play(&mut RandomPlayer::default())?;
    let vs_greedy = matches.play(&mut GreedyPlayer)?;

    let report = LearnReport {
        config: args.config.display().to_string(),
        run: run_dir.display().to_string(),
        training: training_report(args.minutes, &outcome),
        openings: args.openings.display().to_string(),
        games_per_opponent: args.games,
        simulations: sims,
        max_plies: args.max_plies,
        vs_random,
        vs_greedy,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(())
}

fn training_report(minutes: f64, o: &TrainOutcome) -> TrainingReport {
    TrainingReport {
        minutes,
        seconds: o.seconds,
        generations: o.generation,
        selfplay_games: o.selfplay_games,
        selfplay_positions: o.selfplay_positions,
        positions_per_second: o.selfplay_positions as f64 / o.selfplay_seconds.max(1e-9),
        positions_per_second_overall: o.selfplay_positions as f64 / o.seconds.max(1e-9),
        train_steps: o.train_steps,
    }
}

/// The fixed matches of the final net: the same openings, options and seed for each opponent.
struct Matches<'a> {
    handle: &'a InferenceHandle<ChessState>,
    search: &'a SearchConfig,
    sims: u32,
    label: &'a str,
    openings: &'a [String],
    options: MatchOptions,
    seed: u64,
    stop: &'a std::sync::atomic::AtomicBool,
}

impl Matches<'_> {
    /// Plays the net against `opponent`, with a progress bar.
    fn play(&self, opponent: &mut dyn Player) -> Result<MatchReport> {
        let name = opponent.name();
        let mut net = SearchPlayer::new(self.label, self.handle, self.search.clone(), self.sims);
        let mut net = StoppablePlayer::new(&mut net, self.stop);
        let progress = bar(self.options.games as u64, &format!("vs {name}"), "games");
        let mut finished: Vec<ArenaGame> = Vec::with_capacity(self.options.games);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let played = run_match(
            &mut net,
            opponent,
            self.openings,
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

fn print_report(r: &LearnReport) {
    let t = &r.training;
    println!(
        "bench learn: {} from zero for {} minutes ({:.0} s with the clean stop), run {}",
        r.config, t.minutes, t.seconds, r.run
    );
    println!(
        "training: generation {}, {} games, {} positions, {:.0} positions/s in self-play ({:.0}/s over the budget), {} training steps",
        t.generations,
        t.selfplay_games,
        t.selfplay_positions,
        t.positions_per_second,
        t.positions_per_second_overall,
        t.train_steps
    );
    println!(
        "matches: {} games per opponent from {}, both colours, {} simulations a move without root noise, draw at {} plies",
        r.games_per_opponent, r.openings, r.simulations, r.max_plies
    );
    for m in [&r.vs_random, &r.vs_greedy] {
        println!();
        m.print();
    }
}
