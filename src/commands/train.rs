//! `cfzero train`: the main job. Each generation plays games with the newest net, adds
//! them to the replay window, trains, and publishes the next net.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use cfzero_network::checkpoint::load_net;
use cfzero_selfplay::GameRecord;
use cfzero_selfplay::resign::ResignCalibration;
use cfzero_trainer::SampleSource;
use cfzero_trainer::source::Split;
use cfzero_trainer::source::teacher::{TeacherLimits, TeacherSource};

use crate::run::deadline::{Deadline, parse_minutes};
use crate::run::learn_phase;
use crate::run::selfplay_phase::{self, GamesOut};
use crate::run::session::{RunArgs, Session, count_records, stop_on_ctrl_c};
use crate::run::teacher_feed::{TeacherEngines, TeacherFeed};

/// What a call of [`train`] did.
#[derive(Debug, Clone, Copy, Default)]
pub struct TrainOutcome {
    /// The newest published generation at the end.
    pub generation: u32,
    /// Self-play games played by this call (a stopped phase's complete games included).
    pub selfplay_games: u64,
    /// Self-play positions (moves) played by this call.
    pub selfplay_positions: u64,
    /// Wall time of the self-play phases.
    pub selfplay_seconds: f64,
    /// Training steps of the published generations.
    pub train_steps: u64,
    /// Wall time of the loop, from the start of the time limit to the end.
    pub seconds: f64,
    /// Whether `--minutes` ended the run.
    pub deadline_reached: bool,
}

/// Runs the training loop.
pub fn run(args: &RunArgs) -> Result<()> {
    train(args, stop_on_ctrl_c(), false).map(|_| ())
}

/// The training loop of `cfzero train` (and `bench learn`) until the generation or time limit
/// or until `stop` is set; with `lines_to_stderr`, the per-generation lines go to stderr.
pub fn train(args: &RunArgs, stop: Arc<AtomicBool>, lines_to_stderr: bool) -> Result<TrainOutcome> {
    // A bad limit must not leave a new run directory behind.
    if let Some(m) = args.minutes {
        parse_minutes(m)?;
    }
    // The teacher's engines start first: a command that does not run is an error before
    // the run is opened or anything written.
    let engines = {
        let mut config = crate::config::Config::load(&args.config)?;
        if let Some(engine) = &args.teacher {
            config.teacher.engine = engine.clone();
        }
        match config.teacher.enabled() {
            true => Some(TeacherEngines::start(&config.teacher)?),
            false => None,
        }
    };
    let mut session = Session::open(args)?;
    session.lines_to_stderr = lines_to_stderr;
    let mut outcome = TrainOutcome::default();
    // The resignation threshold in `config` is recalibrated after every self-play phase.
    let mut config = session.config.clone();
    let mut calibration = ResignCalibration::new();
    let openings = match &config.selfplay.openings {
        Some(p) => selfplay_phase::read_selfplay_book(p)?,
        None => Vec::new(),
    };
    let mut teacher = match engines {
        Some(e) => Some(TeacherFeed::start(
            e,
            &session.dir.teacher(),
            config.run.seed,
        )?),
        None => None,
    };
    let started = Instant::now();
    // Sets `stop` at the limit: self-play and training see it within a move or a step.
    let deadline = Deadline::start_minutes(args.minutes, &stop)?;
    loop {
        if args.should_stop(session.generation, started, &stop) {
            break;
        }
        let next = session.generation + 1;
        let gen_start = Instant::now();

        // Self-play with the newest net; games already written for this generation count.
        let games_dir = session.dir.games(next);
        let todo = config
            .run
            .games_per_generation
            .saturating_sub(count_records(&games_dir));
        let net = load_net(&session.dir.net(session.generation), session.device)?;
        let sp = selfplay_phase::play(
            &config,
            net,
            &GamesOut {
                dir: &games_dir,
                generation: next,
                worker: "",
                first_index: None,
            },
            todo,
            &openings,
            &stop,
        )?;
        outcome.selfplay_games += sp.games;
        outcome.selfplay_positions += sp.positions;
        outcome.selfplay_seconds += sp.seconds;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        selfplay_phase::write_pgn(&games_dir, &session.dir.pgn(next), next, None)?;
        session.upload_own_games(next)?;
        if let Some(t) = &mut teacher {
            t.offer(&read_generation(&games_dir)?, next);
        }
        session.log_selfplay(next, &sp)?;
        if let Some(current) = config.selfplay.resign_threshold {
            calibration.extend(sp.resign_samples.iter().copied());
            let target = f64::from(config.selfplay.resign_false_positive_target);
            let c = calibration.threshold(current, target);
            config.selfplay.resign_threshold = Some(c.threshold);
            let g = u64::from(next);
            session
                .tb
                .scalar("selfplay/resign_threshold", g, f64::from(current))?;
            session
                .tb
                .scalar("selfplay/resign_threshold_next", g, f64::from(c.threshold))?;
            session.tb.scalar(
                "selfplay/resign_rate",
                g,
                sp.resignations as f64 / sp.games.max(1) as f64,
            )?;
            session.tb.scalar(
                "selfplay/resign_calibrated_false_positive_rate",
                g,
                c.false_positive_rate(),
            )?;
        }
        session.load_new_games()?;
        let labels = match &teacher {
            Some(t) => Some(teacher_labels(&mut session, t, next)?),
            None => None,
        };

        let Some(lp) = session.train_and_publish(&stop)? else {
            break;
        };
        outcome.train_steps += lp.steps;
        let teacher_text = match (&teacher, labels) {
            (Some(t), Some(labels)) => log_teacher(&mut session, t, labels, next)?,
            _ => String::new(),
        };
        let eval_text = session.evaluate_if_due(&stop)?;
        let line = format!(
            "gen {next:4} | {:.0}s | selfplay {sp} | window {} | {lp}{teacher_text}{eval_text}",
            gen_start.elapsed().as_secs_f64(),
            session.window_positions(),
        );
        session.log_line(&line)?;
    }
    drop(teacher);
    outcome.seconds = started.elapsed().as_secs_f64();
    outcome.deadline_reached = deadline.as_ref().is_some_and(Deadline::fired);
    drop(deadline);
    outcome.generation = session.generation;
    session.report_stop();
    Ok(outcome)
}

/// The games of one generation's directory (files of other generations' names skipped).
fn read_generation(games_dir: &std::path::Path) -> Result<Vec<GameRecord>> {
    let mut games = Vec::new();
    for entry in
        std::fs::read_dir(games_dir).with_context(|| format!("reading {}", games_dir.display()))?
    {
        let path = entry?.path();
        if path
            .extension()
            .is_some_and(|e| e == cfzero_selfplay::record::RECORD_EXTENSION)
        {
            // A torn file is the window's to report; the teacher just offers what reads.
            if let Ok(records) = cfzero_selfplay::record::read_records(&path) {
                games.extend(records);
            }
        }
    }
    Ok(games)
}

/// The teacher's labels so far as a data source, mixed into generation `g`'s training at
/// the teacher's weight for `g` (the window keeps the rest); the labels, whatever their
/// weight, for measuring the net's agreement with the teacher.
fn teacher_labels(session: &mut Session, t: &TeacherFeed, g: u32) -> Result<Arc<TeacherSource>> {
    let teacher = &session.config.teacher;
    let limits = TeacherLimits {
        max_positions: usize::MAX,
        validation_share: session.config.window.validation_share,
        temperature: teacher.temperature as f32,
    };
    let labels = Arc::new(
        TeacherSource::open(t.dir(), limits)
            .with_context(|| format!("reading the teacher's labels in {}", t.dir().display()))?,
    );
    let weight = teacher.weight_at(g);
    if labels.positions(Split::Training) > 0 && weight > 0.0 {
        session.add_data_sources(
            vec![(labels.clone() as Arc<dyn SampleSource>, weight)],
            1.0 - weight,
        );
    } else {
        session.add_data_sources(Vec::new(), 1.0);
    }
    Ok(labels)
}

/// Logs the teacher's figures of generation `g` to TensorBoard; the log line's part.
fn log_teacher(
    session: &mut Session,
    t: &TeacherFeed,
    labels: Arc<TeacherSource>,
    g: u32,
) -> Result<String> {
    let stats = t.stats();
    let weight = if labels.positions(Split::Training) > 0 {
        session.config.teacher.weight_at(g)
    } else {
        0.0
    };
    // Agreement: how often the net's most likely move is the teacher's best, on labels held
    // out of training.
    let agreement = learn_phase::validate(&session.config, &session.learner, labels.as_ref())?
        .map(|m| m.policy_accuracy);
    let step = u64::from(g);
    let tb = &mut session.tb;
    tb.scalar("teacher/labels", step, stats.labels as f64)?;
    tb.scalar("teacher/labels_per_second", step, stats.labels_per_second())?;
    tb.scalar("teacher/weight", step, weight)?;
    tb.scalar("teacher/dropped", step, stats.dropped as f64)?;
    tb.scalar("teacher/waiting", step, stats.waiting as f64)?;
    if let Some(a) = agreement {
        tb.scalar("teacher/agreement", step, a)?;
    }
    Ok(format!(
        " | teacher {} labelled ({:.1}/s), {} trained on at weight {weight:.2}{}{}",
        stats.labels,
        stats.labels_per_second(),
        labels.positions(Split::Training),
        agreement.map_or(String::new(), |a| format!(" agree {a:.2}")),
        t.failed()
            .map_or(String::new(), |_| " (stopped)".to_owned()),
    ))
}
