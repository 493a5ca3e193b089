//! `cfzero train`: the main job. Each generation plays games with the newest net, adds
//! them to the replay window, trains, and publishes the next net.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::Result;
use cfzero_network::checkpoint::load_net;
use cfzero_selfplay::resign::ResignCalibration;

use crate::run::deadline::{Deadline, parse_minutes};
use crate::run::selfplay_phase::{self, GamesOut};
use crate::run::session::{RunArgs, Session, count_records, stop_on_ctrl_c};
use crate::run::teacher_phase;

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
    let engines = teacher_phase::engines(args)?;
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
    let mut teacher = teacher_phase::start(engines, &mut session)?;
    let started = Instant::now();
    // Sets `stop` at the limit: self-play and training see it within a move or a step.
    let deadline = Deadline::start_minutes(args.minutes, &stop)?;
    // The games a phase leaves unfinished, with `[selfplay] carry_over`: the next phase plays
    // them on with its net.
    let mut in_flight = Vec::new();
    loop {
        if args.should_stop(session.generation, &stop) {
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
            config.selfplay.carry_over.then_some(&mut in_flight),
        )?;
        outcome.selfplay_games += sp.games;
        outcome.selfplay_positions += sp.played;
        outcome.selfplay_seconds += sp.seconds;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        selfplay_phase::write_pgn(&games_dir, &session.dir.pgn(next), next, None)?;
        session.upload_own_games(next)?;
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
        if let Some(t) = &mut teacher {
            teacher_phase::offer_and_mix_in(&mut session, t, next)?;
        }

        let held = teacher_phase::hold_while_training(teacher.as_ref(), &session);
        let Some(lp) = session.train_and_publish(&stop)? else {
            break;
        };
        drop(held);
        outcome.train_steps += lp.steps;
        let teacher_text = match &teacher {
            Some(t) => teacher_phase::log(&mut session, t, next)?,
            None => String::new(),
        };
        let eval_text = session.evaluate_if_due(&stop)?;
        let line = format!(
            "gen {next:4} | {:.0}s | selfplay {sp} | window {} | {lp}{teacher_text}{eval_text}",
            gen_start.elapsed().as_secs_f64(),
            session.window_positions(),
        );
        session.log_line(&line)?;
    }
    teacher_phase::stop(teacher, &session);
    outcome.seconds = started.elapsed().as_secs_f64();
    outcome.deadline_reached = deadline.as_ref().is_some_and(Deadline::fired);
    drop(deadline);
    outcome.generation = session.generation;
    session.report_stop();
    Ok(outcome)
}
