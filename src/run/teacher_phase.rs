//! A teacher's part of a generation, for `cfzero train` and `cfzero learn` alike: its engines
//! start before the run opens, the games that enter the replay window are offered to them,
//! their labels so far (one `TeacherSource` for the run that reads only what was appended
//! since) are mixed into the generation's training at the teacher's weight, and the
//! generation's line and TensorBoard get the teacher's figures (labels, weight, agreement).

use std::sync::Arc;

use anyhow::{Context, Result};
use cfzero_trainer::SampleSource;
use cfzero_trainer::source::Split;
use cfzero_trainer::source::teacher::{TeacherLimits, TeacherSource};

use crate::run::learn_phase;
use crate::run::session::{RunArgs, Session};
use crate::run::teacher_feed::{PausedFeed, TeacherEngines, TeacherFeed};

/// The teacher's engines when `args`' config (or `--teacher`) sets one, started: an engine
/// that does not start is an error before the run is opened or anything written.
pub fn engines(args: &RunArgs) -> Result<Option<TeacherEngines>> {
    let mut config = crate::config::Config::load(&args.config)?;
    if let Some(engine) = &args.teacher {
        config.teacher.engine = engine.clone();
    }
    match config.teacher.enabled() {
        true => Ok(Some(TeacherEngines::start(&config.teacher)?)),
        false => Ok(None),
    }
}

/// A teacher beside self-play: the feed of its engines, and the labels they have written,
/// read as they are appended.
#[derive(Debug)]
pub struct Teacher {
    feed: TeacherFeed,
    labels: Arc<TeacherSource>,
}

/// Starts feeding `engines` (or those of the teacher a resumed run keeps) the games that enter
/// `session`'s window from now on, labels into the run's `teacher/` (the labels already there,
/// from before a resume, are read at once).
pub fn start(engines: Option<TeacherEngines>, session: &mut Session) -> Result<Option<Teacher>> {
    let engines = match engines {
        Some(engines) => engines,
        // A resumed run keeps the teacher it was started with (`Session::open` takes it from
        // the frozen config): its engines start now.
        None if session.config.teacher.enabled() => TeacherEngines::start(&session.config.teacher)?,
        None => return Ok(None),
    };
    let feed = TeacherFeed::start(engines, &session.dir.teacher(), session.config.run.seed)?;
    let teacher = &session.config.teacher;
    let limits = TeacherLimits {
        max_positions: usize::MAX,
        window: teacher.window,
        validation_window: session.config.window.validation_positions,
        validation_share: session.config.window.validation_share,
        temperature: teacher.temperature as f32,
    };
    let labels =
        Arc::new(TeacherSource::open(feed.dir(), limits).with_context(|| {
            format!("reading the teacher's labels in {}", feed.dir().display())
        })?);
    session.collect_arrivals();
    Ok(Some(Teacher { feed, labels }))
}

/// Offers the games that entered the window since the last call (generation `g`'s) to the
/// teacher, then mixes its labels so far into `g`'s training at the teacher's weight for
/// `g` (the window keeps the rest). Only the labels written since the last call are read:
/// reading them all again cost about a second a generation after an hour's 460,000.
pub fn offer_and_mix_in(session: &mut Session, t: &mut Teacher, g: u32) -> Result<()> {
    let arrived = session.take_arrivals();
    t.feed
        .offer(arrived.iter().map(|a| (a.game.as_ref(), a.held_out)), g);
    t.labels
        .refresh()
        .with_context(|| format!("reading the teacher's labels in {}", t.feed.dir().display()))?;
    let labels = &t.labels;
    let weight = session.config.teacher.weight_at(g);
    if labels.positions(Split::Training) > 0 && weight > 0.0 {
        session.add_data_sources(
            vec![(labels.clone() as Arc<dyn SampleSource>, weight)],
            1.0 - weight,
        );
    } else {
        session.add_data_sources(Vec::new(), 1.0);
    }
    Ok(())
}

/// Holds the teacher (if any) while `session` trains on the CPU, until the guard drops
/// (see [`TeacherFeed::pause`] and the module docs of `teacher_feed`); on a GPU the engines
/// take nothing from training and go on.
pub fn hold_while_training<'a>(
    teacher: Option<&'a Teacher>,
    session: &Session,
) -> Option<PausedFeed<'a>> {
    teacher
        .filter(|_| session.device == tch::Device::Cpu)
        .map(|t| t.feed.pause())
}

/// Logs the teacher's figures of generation `g` to TensorBoard; the log line's part.
pub fn log(session: &mut Session, t: &Teacher, g: u32) -> Result<String> {
    let (labels, stats) = (&t.labels, t.feed.stats());
    let weight = if labels.positions(Split::Training) > 0 {
        session.config.teacher.weight_at(g)
    } else {
        0.0
    };
    // The published net on the labels of held-out games: agreement (how often its most
    // likely move is the teacher's best) and its loss on the teacher's targets.
    let held_out = learn_phase::validate(&session.config, &session.learner, labels.as_ref())?;
    let step = u64::from(g);
    let tb = &mut session.tb;
    tb.scalar("teacher/labels", step, stats.labels as f64)?;
    tb.scalar("teacher/labels_per_second", step, stats.labels_per_second())?;
    tb.scalar("teacher/weight", step, weight)?;
    tb.scalar("teacher/dropped", step, stats.dropped as f64)?;
    tb.scalar("teacher/waiting", step, stats.waiting as f64)?;
    if let Some(m) = &held_out {
        tb.scalar("teacher/agreement", step, m.policy_accuracy)?;
        tb.scalar("teacher/val_loss", step, m.loss)?;
    }
    Ok(format!(
        " | teacher {} labelled ({:.1}/s), {} trained on at weight {weight:.2}{}{}",
        stats.labels,
        stats.labels_per_second(),
        labels.positions(Split::Training),
        held_out.map_or(String::new(), |m| format!(
            " agree {:.2} val loss {:.3}",
            m.policy_accuracy, m.loss
        )),
        t.feed
            .failed()
            .map_or(String::new(), |_| " (stopped)".to_owned()),
    ))
}

/// Stops the teacher (its thread writes what it has labelled and ends) and puts the labels
/// written since the run's last publication on the store, so that a successor on another
/// machine has every label this trainer made. A store that refuses (the lease lost to a
/// successor, the store down) leaves them in the cache with a warning: the run is stopping.
pub fn stop(teacher: Option<Teacher>, session: &Session) {
    if teacher.is_none() {
        return;
    }
    drop(teacher);
    if let Err(e) = session.push_labels() {
        eprintln!("warning: the teacher's newest labels stay in the cache only: {e:#}");
    }
}
