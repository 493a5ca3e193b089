//! `cfzero bench learn`: how strong a config gets in a given wall-clock time. It trains from
//! zero for `--minutes` with the loop of `cfzero train`, into a fresh run directory, then
//! plays fixed matches of the final net against the random mover and the 1-ply greedy mover
//! (and a UCI engine with `--engine`) from an opening suite, both colours, solves `--puzzles`,
//! and reports each score and Elo with its 95% interval. Runs of one config differ by more
//! than a match's interval says, so `--runs N` trains N replicates (seeds `run.seed`,
//! `run.seed + 1`, ...) and reports each measure's mean over them with a t interval, and
//! `--against CONFIG` trains a second config's replicates, each right after the first's of
//! the same seed, and reports the mean difference of the pairs. The two final nets of each
//! pair also play each other: at equal strength a match between them decides a smaller
//! difference than two matches against a third player do.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};
use cfzero_eval::arena::SearchPlayer;
use cfzero_eval::replicates::mean_interval;
use clap::Args;
use serde::Serialize;

use super::match_cmd::MatchReport;
use super::net_measure::{MeasureFlags, NetMeasure, NetScores, Opponents, match_options};
use super::net_play::{PlaySearch, play_search, serve_net};
use super::train::{TrainOutcome, train};
use crate::config::Config;
use crate::error::user_error;
use crate::flags::DeviceFlag;
use crate::run::deadline::parse_minutes;
use crate::run::dir::RunDir;
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
    /// resumable run. With `--runs` above 1 or `--against`, the runs are `a-01`, `a-02`, ...
    /// (and `b-01`, ... for `--against`) inside it.
    #[arg(long)]
    pub run: Option<PathBuf>,
    /// Replicate trainings from zero of the config (and of `--against`'s), run `i` with the
    /// seed `run.seed + i - 1`; the report adds each measure's mean over them with its 95%
    /// interval (Student's t).
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// A second config trained and measured the same way, each of its runs right after the
    /// first config's run of the same seed (so that a drift of the machine falls on both);
    /// the report adds each measure's mean difference over the pairs with its 95% interval,
    /// and each pair's final nets play each other (`--games` games). The matches play with
    /// the first config's `[search]`, so that both are measured alike.
    #[arg(long, value_name = "CONFIG")]
    pub against: Option<PathBuf>,
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
    #[command(flatten)]
    pub measure: MeasureFlags,
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

/// The report of one training run.
#[derive(Debug, Serialize)]
struct LearnReport {
    /// Which config of the benchmark: 0 the first, 1 `--against`'s.
    #[serde(skip)]
    side: usize,
    config: String,
    run: String,
    /// The run's seed.
    seed: u64,
    training: TrainingReport,
    /// How the matches were played.
    openings: String,
    games_per_opponent: usize,
    /// Simulations per move of the net (no root noise).
    simulations: u32,
    max_plies: u32,
    /// Against the random and greedy movers, `--engine`, on `--puzzles`.
    #[serde(flatten)]
    scores: NetScores,
    /// The final net, where the run keeps it.
    net: PathBuf,
}

impl LearnReport {
    /// Each measure's name and value (a score or the share of puzzles solved, in [0, 1]).
    fn measures(&self) -> Vec<(String, f64)> {
        let s = &self.scores;
        let matches = [
            s.vs_random.as_ref(),
            Some(&s.vs_greedy),
            s.vs_engine.as_ref(),
        ];
        let mut out: Vec<(String, f64)> = matches
            .into_iter()
            .flatten()
            .map(|m| (m.opponent().to_string(), m.score_interval().1))
            .collect();
        if let Some(p) = &s.puzzles {
            out.push(("puzzles".to_string(), p.share));
        }
        out
    }
}

/// A measure over replicate runs: each run's value, the mean and its 95% interval.
#[derive(Debug, Serialize)]
struct MeasureSummary {
    /// The config (or, for a difference, `B - A`).
    of: String,
    /// What was measured.
    measure: String,
    /// Each run's value (or each pair's difference).
    values: Vec<f64>,
    mean: f64,
    low: f64,
    high: f64,
}

/// The report of replicate runs.
#[derive(Debug, Serialize)]
struct ReplicatesReport {
    runs: Vec<LearnReport>,
    /// Each config's measures over its runs.
    summary: Vec<MeasureSummary>,
    /// With `--against`: each measure's difference, the second config's run less the first's
    /// of the same seed.
    differences: Vec<MeasureSummary>,
    /// With `--against`: each pair's match of the second config's net against the first's.
    head_to_head: Vec<MatchReport>,
    /// The second config's score in those matches over the pairs.
    head_to_head_summary: Option<MeasureSummary>,
}

/// One training of the plan.
struct PlannedRun {
    /// Which config: 0 the first, 1 `--against`.
    config: usize,
    /// Where it trains, as given and locally.
    run: PathBuf,
    local: PathBuf,
    seed: u64,
}

/// The most replicate runs of a config: each takes its `--minutes`.
const MAX_RUNS: usize = 100;

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

/// The local directory of the run at `run`, which must hold nothing yet.
fn fresh_run(run: &Path) -> Result<PathBuf> {
    let location = RunLocation::parse(&run.to_string_lossy()).map_err(user_error)?;
    match &location {
        RunLocation::Local(p) => {
            if !is_fresh(p) {
                user_bail!(
                    "run directory {} is not empty: bench learn trains from zero",
                    p.display()
                );
            }
            Ok(p.clone())
        }
        RunLocation::Object(url) => {
            let store = cfzero_store::open(&location).map_err(user_error)?;
            if store.get("config.toml")?.is_some() || !store.list_after("nets", None)?.is_empty() {
                user_bail!("{url} holds a run already: bench learn trains from zero");
            }
            // The final net is read from the run's cache.
            Ok(cache_dir(None, url))
        }
    }
}

/// Runs the benchmark.
pub fn run(args: &LearnBenchArgs) -> Result<()> {
    parse_minutes(args.minutes)?;
    if args.games == 0 {
        user_bail!("--games must be at least 1");
    }
    if !(1..=MAX_RUNS).contains(&args.runs) {
        user_bail!("--runs must be from 1 to {MAX_RUNS}");
    }
    let paths: Vec<PathBuf> = std::iter::once(args.config.clone())
        .chain(args.against.clone())
        .collect();
    let configs = paths
        .iter()
        .map(|p| Config::load(p))
        .collect::<Result<Vec<Config>>>()?;
    let play = play_search(Some(&args.config), args.measure.sims, "--sims")?;
    let opponents = Opponents::load(&args.measure, &configs[0].eval)?;

    let base = args.run.clone().unwrap_or_else(default_run_dir);
    let single = args.runs == 1 && args.against.is_none();
    let mut plan = Vec::new();
    for i in 0..args.runs {
        for (c, config) in configs.iter().enumerate() {
            let run = if single {
                base.clone()
            } else {
                PathBuf::from(format!("{}/{}-{:02}", base.display(), ["a", "b"][c], i + 1))
            };
            let local = fresh_run(&run)?;
            plan.push(PlannedRun {
                config: c,
                run,
                local,
                seed: config.run.seed.wrapping_add(i as u64),
            });
        }
    }

    let stop = stop_on_ctrl_c();
    let mut reports: Vec<LearnReport> = Vec::new();
    let mut head_to_head = Vec::new();
    for (k, planned) in plan.iter().enumerate() {
        if !single {
            eprintln!(
                "bench learn: run {} of {}: {} with seed {} into {}",
                k + 1,
                plan.len(),
                paths[planned.config].display(),
                planned.seed,
                planned.run.display()
            );
        }
        let report = learn_once(
            args,
            &paths[planned.config],
            &configs[planned.config],
            planned,
            (&play, &opponents),
            stop.clone(),
        )?;
        if !single && !args.json {
            print_run_line(&report);
        }
        if let Some(first) = reports.last().filter(|_| planned.config == 1) {
            let game = head_to_head_match(
                args,
                &configs[0],
                (first, &report),
                (&play, &opponents),
                &stop,
            )?;
            if !args.json {
                game.print();
            }
            head_to_head.push(game);
        }
        reports.push(report);
    }

    if single {
        let report = &reports[0];
        if args.json {
            println!("{}", serde_json::to_string_pretty(report)?);
        } else {
            print_report(report);
        }
        return Ok(());
    }
    let report = replicates_report(reports, head_to_head, &paths);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_replicates(&report);
    }
    Ok(())
}

/// Trains `planned` from zero for the budget and measures its final net.
fn learn_once(
    args: &LearnBenchArgs,
    config_path: &Path,
    config: &Config,
    planned: &PlannedRun,
    (play, opponents): (&PlaySearch, &Opponents),
    stop: Arc<AtomicBool>,
) -> Result<LearnReport> {
    let run_args = RunArgs {
        config: config_path.to_owned(),
        run: planned.run.clone(),
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
        seed: Some(planned.seed),
    };
    eprintln!(
        "bench learn: training {} from zero for {} minutes into {}",
        config_path.display(),
        args.minutes,
        planned.run.display()
    );
    let outcome = train(&run_args, stop.clone(), true)?;
    if !outcome.deadline_reached {
        bail!(
            "interrupted before the time limit (the run in {} resumes with `cfzero train --resume`)",
            planned.run.display()
        );
    }
    // The limit set the stop flag; from here on only Ctrl-C sets it.
    stop.store(false, Ordering::SeqCst);

    let net_path = RunDir::new(&planned.local).net(outcome.generation);
    config.inference.use_threads();
    let device = args.device.parse()?;
    let handle = serve_net(
        &net_path,
        device,
        config.inference.precision,
        config.inference.backend,
    )?;
    let label = format!("gen-{:04} ({} sims)", outcome.generation, play.simulations);
    let measure = NetMeasure {
        handle: &handle,
        play,
        label: &label,
        options: match_options(args.games, args.measure.max_plies),
        seed: config.run.seed,
        stop: &stop,
    };
    let scores = measure.scores(opponents, true)?;
    Ok(LearnReport {
        side: planned.config,
        config: config_path.display().to_string(),
        run: planned.run.display().to_string(),
        seed: planned.seed,
        training: training_report(args.minutes, &outcome),
        openings: args.measure.openings.display().to_string(),
        games_per_opponent: args.games,
        simulations: play.simulations,
        max_plies: args.measure.max_plies,
        scores,
        net: net_path,
    })
}

/// The match of a pair's nets, the second config's (`b`) against the first's (`a`), both
/// searching as the other matches do, from the same openings and seed.
fn head_to_head_match(
    args: &LearnBenchArgs,
    config: &Config,
    (a, b): (&LearnReport, &LearnReport),
    (play, opponents): (&PlaySearch, &Opponents),
    stop: &AtomicBool,
) -> Result<MatchReport> {
    let device = args.device.parse()?;
    let serve = |r: &LearnReport| {
        serve_net(
            &r.net,
            device,
            config.inference.precision,
            config.inference.backend,
        )
    };
    let (a_handle, b_handle) = (serve(a)?, serve(b)?);
    let name = |side: &str, r: &LearnReport| {
        format!(
            "{side} gen-{:04} seed {} ({} sims)",
            r.training.generations, r.seed, play.simulations
        )
    };
    let (a_name, b_name) = (name("a", a), name("b", b));
    let measure = NetMeasure {
        handle: &b_handle,
        play,
        label: &b_name,
        options: match_options(args.games, args.measure.max_plies),
        seed: config.run.seed,
        stop,
    };
    let mut first = SearchPlayer::new(&a_name, &a_handle, play.search.clone(), play.simulations);
    measure.play(&opponents.openings, &mut first)
}

/// Each config's measures over its runs, and with two configs the pairs' differences.
fn replicates_report(
    runs: Vec<LearnReport>,
    head_to_head: Vec<MatchReport>,
    paths: &[PathBuf],
) -> ReplicatesReport {
    let summarise = |of: String, measure: String, values: Vec<f64>| {
        let (low, mean, high) = mean_interval(&values).unwrap_or((0.0, 0.0, 0.0));
        MeasureSummary {
            of,
            measure,
            values,
            mean,
            low,
            high,
        }
    };
    let of_side =
        |side: usize| -> Vec<&LearnReport> { runs.iter().filter(|r| r.side == side).collect() };
    let mut summary = Vec::new();
    let mut differences = Vec::new();
    let first = of_side(0);
    let names: Vec<String> = first
        .first()
        .map(|r| r.measures().into_iter().map(|(n, _)| n).collect())
        .unwrap_or_default();
    for (side, p) in paths.iter().enumerate() {
        let mine = of_side(side);
        for (i, name) in names.iter().enumerate() {
            let values = mine.iter().map(|r| r.measures()[i].1).collect();
            summary.push(summarise(p.display().to_string(), name.clone(), values));
        }
    }
    if let Some(b) = paths.get(1) {
        let second = of_side(1);
        for (i, name) in names.iter().enumerate() {
            let values = first
                .iter()
                .zip(&second)
                .map(|(a, b)| b.measures()[i].1 - a.measures()[i].1)
                .collect();
            let of = format!("{} - {}", b.display(), paths[0].display());
            differences.push(summarise(of, name.clone(), values));
        }
    }
    let head_to_head_summary = paths.get(1).map(|b| {
        let of = format!("{} against {}", b.display(), paths[0].display());
        let scores = head_to_head.iter().map(|m| m.score_interval().1).collect();
        summarise(of, "head to head".to_string(), scores)
    });
    ReplicatesReport {
        runs,
        summary,
        differences,
        head_to_head,
        head_to_head_summary,
    }
}

/// One line of a run among replicates.
fn print_run_line(r: &LearnReport) {
    let measures: Vec<String> = r
        .measures()
        .iter()
        .map(|(n, v)| format!("{n} {:.1}%", 100.0 * v))
        .collect();
    println!(
        "{} (seed {}): generation {}, {} training steps | {}",
        r.run,
        r.seed,
        r.training.generations,
        r.training.train_steps,
        measures.join(" | ")
    );
}

/// The summary of replicate runs as text.
fn print_replicates(r: &ReplicatesReport) {
    println!();
    for s in r
        .summary
        .iter()
        .chain(&r.differences)
        .chain(&r.head_to_head_summary)
    {
        let values: Vec<String> = s
            .values
            .iter()
            .map(|v| format!("{:.1}", 100.0 * v))
            .collect();
        println!(
            "{}: {} {:+.1} points [{:+.1}, {:+.1}] (95%, t over {} runs: {})",
            s.of,
            s.measure,
            100.0 * s.mean,
            100.0 * s.low,
            100.0 * s.high,
            s.values.len(),
            values.join(", ")
        );
    }
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
    let s = &r.scores;
    for m in [
        s.vs_random.as_ref(),
        Some(&s.vs_greedy),
        s.vs_engine.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        println!();
        m.print();
    }
    if let Some(p) = &s.puzzles {
        println!();
        println!(
            "puzzles: {} of {} solved, {:.1}% [{:.1}%, {:.1}%]",
            p.solved,
            p.total,
            100.0 * p.share,
            100.0 * p.low,
            100.0 * p.high
        );
    }
}
