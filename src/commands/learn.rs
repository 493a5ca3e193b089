//! `cfzero learn`: the trainer half of a run on its own. It trains on the games that
//! `cfzero selfplay` workers write into the run directory and publishes a net each time
//! enough new games have arrived; the workers pick the new net up from the same directory.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::run::deadline::{Deadline, parse_minutes};
use crate::run::progress::spinner;
use crate::run::session::{RunArgs, Session, stop_on_ctrl_c};

/// How often the run directory is scanned for new games while waiting.
const POLL: Duration = Duration::from_secs(2);

/// Runs the trainer until the generation or time limit, or Ctrl-C.
pub fn run(args: &RunArgs) -> Result<()> {
    // A bad limit must not leave a new run directory behind.
    if let Some(m) = args.minutes {
        parse_minutes(m)?;
    }
    let mut session = Session::open(args)?;
    let stop = stop_on_ctrl_c();
    let started = Instant::now();
    // Sets `stop` at the limit: waiting and training see it within seconds.
    let _deadline = Deadline::start_minutes(args.minutes, &stop)?;
    let per_generation = session.config.run.games_per_generation.max(1);
    eprintln!(
        "waiting for games: start workers with `cfzero selfplay --run {}`",
        session.dir.root().display()
    );
    loop {
        if args.should_stop(session.generation, started, &stop) {
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
        let Some(lp) = session.train_and_publish(&stop)? else {
            break;
        };
        let eval_text = session.evaluate_if_due(&stop)?;
        let line = format!(
            "gen {next:4} | {:.0}s | {arrived} new games | window {} | {lp}{eval_text}",
            gen_start.elapsed().as_secs_f64(),
            session.window_positions(),
        );
        session.log_line(&line)?;
    }
    session.report_stop();
    Ok(())
}
