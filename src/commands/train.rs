//! `cfzero train`: the main job. Each generation plays games with the newest net, adds
//! them to the replay window, trains, and publishes the next net.

use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::Result;
use cfzero_network::checkpoint::load_net;
use cfzero_selfplay::openings::read_openings;

use crate::error::user_error;
use crate::run::selfplay_phase;
use crate::run::session::{RunArgs, Session, count_records, stop_on_ctrl_c};

/// Runs the training loop.
pub fn run(args: &RunArgs) -> Result<()> {
    let mut session = Session::open(args)?;
    let config = session.config.clone();
    let openings = match &config.selfplay.openings {
        Some(p) => read_openings(p).map_err(user_error)?,
        None => Vec::new(),
    };
    let stop = stop_on_ctrl_c();
    let started = Instant::now();
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
        let sp = selfplay_phase::play(&config, net, &games_dir, next, todo, &openings, "", &stop)?;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        selfplay_phase::write_pgn(&games_dir, &session.dir.pgn(next), next)?;
        session.log_selfplay(next, &sp)?;
        session.load_new_games()?;

        let Some(lp) = session.train_and_publish(&stop)? else {
            break;
        };
        let eval_text = session.evaluate_if_due()?;
        let line = format!(
            "gen {next:4} | {:.0}s | selfplay {sp} | window {} | {lp}{eval_text}",
            gen_start.elapsed().as_secs_f64(),
            session.window_positions(),
        );
        session.log_line(&line)?;
    }
    session.report_stop();
    Ok(())
}
