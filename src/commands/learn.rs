//! `cfzero learn`: the trainer half of a run on its own. It trains on the games that
//! `cfzero selfplay` workers write into the run (a directory, or chunks on object storage)
//! and publishes a net each time enough new games have arrived; the workers pick the new net
//! up from the same run.
//!
//! With a teacher (`--teacher` or `[teacher]`) its engines label a share of the workers'
//! games as they arrive, as `cfzero train`'s do (`run/teacher_phase.rs`).
//!
//! With `--data` (Lc0 V6 data, PGN games) it trains on those sources instead of waiting
//! for games, mixed with whatever self-play games the run has, and publishes a generation
//! every `--steps-per-generation` steps.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;
use cfzero_trainer::Split;
use cfzero_trainer::source::pgn::PgnFilters;
use clap::Args;

use crate::error::user_error;
use crate::run::data::{self, DataOptions, DataSpec};
use crate::run::deadline::{Deadline, parse_minutes};
use crate::run::progress::spinner;
use crate::run::session::{RunArgs, Session, stop_on_ctrl_c};
use crate::run::teacher_phase;
use crate::user_bail;

/// Arguments of `cfzero learn`.
#[derive(Debug, Args)]
pub struct LearnArgs {
    /// The run.
    #[command(flatten)]
    pub run: RunArgs,
    /// Train on this data besides the run's own games (repeatable): `lc0:PATH` (Lc0 V6
    /// chunks `.gz`, a `.tar` of them or a directory), `teacher:PATH` (label files of
    /// `cfzero label`, a `.cfl` or a directory) or `pgn:PATH` (`.pgn`, `.pgn.zst`,
    /// `.pgn.gz`, `.pgn.bz2`).
    #[arg(long, value_name = "SOURCE")]
    pub data: Vec<DataSpec>,
    /// Relative weight of each `--data` source, in order (default 1 each).
    #[arg(long, value_delimiter = ',')]
    pub weights: Vec<f64>,
    /// Weight of the run's own self-play games in the mixture with `--data`.
    #[arg(long, default_value_t = 1.0)]
    pub selfplay_weight: f64,
    /// With `--data`: stop after this many training steps in total (this session's).
    #[arg(long)]
    pub steps: Option<u64>,
    /// With `--data`: stop after this many passes over the data's training positions.
    #[arg(long)]
    pub epochs: Option<f64>,
    /// With `--data`: steps between published generations (default: the config's
    /// `run.steps_per_generation`).
    #[arg(long)]
    pub steps_per_generation: Option<u64>,
    /// With `--data`: the most positions read from each source.
    #[arg(long, default_value_t = 2_000_000)]
    pub max_positions: usize,
    /// PGN: keep games whose players are both rated at least this.
    #[arg(long, default_value_t = 0)]
    pub min_rating: u32,
    /// PGN: keep games whose base time is at least this many seconds.
    #[arg(long, default_value_t = 0)]
    pub min_base_seconds: u32,
}

/// How often the run directory is scanned for new games while waiting.
const POLL: Duration = Duration::from_secs(2);

/// Runs the trainer until the generation or time limit, or Ctrl-C.
pub fn run(learn: &LearnArgs) -> Result<()> {
    let args = &learn.run;
    // A bad limit must not leave a new run directory behind.
    if let Some(m) = args.minutes {
        parse_minutes(m)?;
    }
    if !learn.data.is_empty() {
        if args.teacher.is_some() {
            user_bail!(
                "--teacher labels the self-play games as they arrive; with --data, label positions with `cfzero label` and train on them with --data teacher:FILE"
            );
        }
        return run_on_data(learn);
    }
    // The teacher's engines start first: one that does not start leaves no run behind.
    let engines = teacher_phase::engines(args)?;
    let mut session = Session::open(args)?;
    let mut teacher = teacher_phase::start(engines, &mut session)?;
    let stop = stop_on_ctrl_c();
    // Sets `stop` at the limit: waiting and training see it within seconds.
    let _deadline = Deadline::start_minutes(args.minutes, &stop)?;
    let per_generation = session.config.run.games_per_generation.max(1);
    eprintln!(
        "waiting for games: start workers with `cfzero selfplay --run {}`",
        session.location
    );
    loop {
        if args.should_stop(session.generation, &stop) {
            break;
        }
        let gen_start = Instant::now();
        let next = session.generation + 1;
        let waiting = spinner(format!("gen {next}: waiting for games"));
        let mut arrived = 0;
        while arrived < per_generation && !stop.load(Ordering::Relaxed) {
            arrived += session.load_new_games()?;
            waiting.set_message(format!(
                "gen {next}: {arrived}/{per_generation} new games, window {} positions",
                session.window_positions()
            ));
            if arrived < per_generation {
                std::thread::sleep(POLL);
            }
        }
        waiting.finish_and_clear();
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(t) = &mut teacher {
            teacher_phase::offer_and_mix_in(&mut session, t, next)?;
        }
        let held = teacher_phase::hold_while_training(teacher.as_ref(), &session);
        let Some(lp) = session.train_and_publish(&stop)? else {
            break;
        };
        drop(held);
        let teacher_text = match &teacher {
            Some(t) => teacher_phase::log(&mut session, t, next)?,
            None => String::new(),
        };
        let eval_text = session.evaluate_if_due(&stop)?;
        let line = format!(
            "gen {next:4} | {:.0}s | {arrived} new games | window {} | {lp}{teacher_text}{eval_text}",
            gen_start.elapsed().as_secs_f64(),
            session.window_positions(),
        );
        session.log_line(&line)?;
    }
    teacher_phase::stop(teacher, &session);
    session.report_stop();
    Ok(())
}

/// `learn --data`: trains on the data sources (and the run's games) without waiting.
fn run_on_data(learn: &LearnArgs) -> Result<()> {
    let args = &learn.run;
    if !learn.weights.is_empty() && learn.weights.len() != learn.data.len() {
        return Err(user_error(format!(
            "--weights gives {} weights for {} --data sources",
            learn.weights.len(),
            learn.data.len()
        )));
    }
    if learn
        .weights
        .iter()
        .chain([&learn.selfplay_weight])
        .any(|w| !w.is_finite() || *w < 0.0)
        || learn.weights.iter().all(|w| *w == 0.0) && !learn.weights.is_empty()
    {
        return Err(user_error(
            "--weights and --selfplay-weight must be finite and non-negative, and some --data weight positive",
        ));
    }
    if learn.epochs.is_some_and(|e| !e.is_finite() || e <= 0.0) {
        return Err(user_error("--epochs must be a positive number"));
    }
    if learn.max_positions == 0 || learn.steps_per_generation == Some(0) {
        return Err(user_error(
            "--max-positions and --steps-per-generation must be at least 1",
        ));
    }
    // The sources open first: a bad one must not leave a new run directory behind.
    let config = crate::config::Config::load(&args.config)?;
    let options = DataOptions {
        max_positions: learn.max_positions,
        validation_share: config.window.validation_share,
        filters: PgnFilters {
            min_rating: learn.min_rating,
            min_base_seconds: learn.min_base_seconds,
        },
        teacher_temperature: config.teacher.temperature as f32,
    };
    let mut sources = Vec::new();
    for (i, spec) in learn.data.iter().enumerate() {
        let weight = learn.weights.get(i).copied().unwrap_or(1.0);
        sources.push((data::open(spec, &options)?, weight));
    }
    let mut session = Session::open(args)?;
    let data_positions: usize = sources
        .iter()
        .map(|(s, _)| s.positions(Split::Training))
        .sum();
    session.add_data_sources(sources, learn.selfplay_weight);
    let batch = session.config.train.batch_size.max(1) as f64;
    let total = match (learn.steps, learn.epochs) {
        (Some(s), _) => Some(s),
        (None, Some(e)) => Some(((e * data_positions as f64) / batch).ceil().max(1.0) as u64),
        (None, None) => None,
    };
    let per_generation = learn
        .steps_per_generation
        .unwrap_or(session.config.run.steps_per_generation)
        .max(1);
    let stop = stop_on_ctrl_c();
    let _deadline = Deadline::start_minutes(args.minutes, &stop)?;
    eprintln!(
        "training on {} ({} steps a generation{})",
        session.source().describe(),
        per_generation,
        total.map_or(String::new(), |t| format!(", {t} steps in all"))
    );
    let mut done = 0u64;
    loop {
        if args.should_stop(session.generation, &stop) || total.is_some_and(|t| done >= t) {
            break;
        }
        let gen_start = Instant::now();
        let next = session.generation + 1;
        let arrived = session.load_new_games()?;
        let steps = total.map_or(per_generation, |t| per_generation.min(t - done));
        let Some(lp) = session.train_steps_and_publish(steps, &stop)? else {
            break;
        };
        done += lp.steps;
        let eval_text = session.evaluate_if_due(&stop)?;
        let line = format!(
            "gen {next:4} | {:.0}s | {arrived} new games, window {} | {lp}{eval_text}",
            gen_start.elapsed().as_secs_f64(),
            session.window_positions(),
        );
        session.log_line(&line)?;
    }
    session.report_stop();
    Ok(())
}
