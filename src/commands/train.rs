//! `cfzero train`: the main job. Each generation plays games with the newest net, adds
//! them to the replay window, trains, and publishes the next net.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use anyhow::{Context, Result};
use cfzero_network::checkpoint::{load_net, save_net};
use cfzero_network::{Net, parse_device};
use cfzero_selfplay::openings::read_openings;
use cfzero_selfplay::window::ReplayWindow;
use cfzero_trainer::{EventWriter, Learner};
use clap::Args;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::config::Config;
use crate::error::user_error;
use crate::run::dir::RunDir;
use crate::run::{evaluate, learn_phase, selfplay_phase};
use crate::user_bail;

/// Arguments of `cfzero train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Config file (TOML).
    #[arg(long, default_value = "configs/tiny.toml")]
    pub config: PathBuf,
    /// Run directory: nets, games, logs and state go there.
    #[arg(long)]
    pub run: PathBuf,
    /// Continue the run in `--run` where it stopped.
    #[arg(long)]
    pub resume: bool,
    /// With --resume: accept a config that differs from the run's frozen one (and freeze the new one).
    #[arg(long)]
    pub force: bool,
    /// Stop after this many generations in total (default: no limit).
    #[arg(long)]
    pub generations: Option<u32>,
    /// Stop after the first generation that ends past this many minutes.
    #[arg(long)]
    pub minutes: Option<f64>,
    /// Device: cpu, cuda, cuda:N or auto.
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// Start from this net (e.g. an imported Lc0 net) instead of random weights.
    #[arg(long)]
    pub init_from: Option<PathBuf>,
}

/// Runs the training loop.
pub fn run(args: &TrainArgs) -> Result<()> {
    let config = Config::load(&args.config)?;
    let device = parse_device(&args.device).map_err(user_error)?;
    if config.run.torch_threads > 0 {
        tch::set_num_threads(config.run.torch_threads as i32);
    }
    let dir = RunDir::new(&args.run);
    let frozen = dir.config();
    if frozen.exists() {
        if !args.resume {
            user_bail!(
                "run directory {} already holds a run: pass --resume to continue it",
                dir.root().display()
            );
        }
        let old = Config::load(&frozen)?;
        if old != config && !args.force {
            user_bail!(
                "{} differs from the config the run was started with ({}): pass --force to continue with it",
                args.config.display(),
                frozen.display()
            );
        }
    }
    dir.create()?;
    if !frozen.exists() || args.force {
        cfzero_network::checkpoint::write_file_atomically(&frozen, config.to_toml().as_bytes())
            .with_context(|| format!("writing {}", frozen.display()))?;
    }
    let selfplay_openings = match &config.selfplay.openings {
        Some(p) => read_openings(p).map_err(user_error)?,
        None => Vec::new(),
    };
    let eval_openings = match &config.run.eval_openings {
        Some(p) => {
            let mut all = read_openings(p).map_err(user_error)?;
            all.shuffle(&mut ChaCha8Rng::seed_from_u64(config.run.seed));
            all.truncate(config.run.eval_openings_count.max(1));
            all
        }
        None => Vec::new(),
    };

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                eprintln!(
                    "\nsecond Ctrl-C: exiting now (the run resumes from the last published net)"
                );
                std::process::exit(130);
            }
            eprintln!("\nCtrl-C: finishing cleanly; press again to exit at once");
        });
    }

    // The last published net is the commit point of a generation.
    let published = dir.published()?;
    let mut generation = match published.last() {
        Some(&g) => g,
        None => {
            let net = match &args.init_from {
                Some(p) => load_net(p, device).map_err(user_error)?,
                None => {
                    tch::manual_seed(config.run.seed as i64);
                    Net::new(&config.network, device).map_err(user_error)?
                }
            };
            save_net(&net, &dir.net(0))?;
            0
        }
    };
    let first_net = dir.net(0);
    let net = load_net(&dir.net(generation), device)?;
    if net.config != config.network {
        user_bail!(
            "the run's nets do not have the shape of [network] in {}",
            args.config.display()
        );
    }
    let mut learner = Learner::new(net, config.train.clone());
    let (weights, optim) = dir.trainer_state(generation);
    if weights.exists() && optim.exists() {
        learner
            .load_state(&weights, &optim)
            .context("loading the trainer state")?;
    } else if generation > 0 {
        eprintln!(
            "note: no trainer state for generation {generation}; training continues from the published net with a fresh optimizer"
        );
    }

    let window = Arc::new(RwLock::new(ReplayWindow::new(config.window.clone())));
    {
        let mut w = window.write().expect("fresh lock");
        let (games, skipped) = w.load_new_files(&dir.all_games())?;
        for s in skipped {
            eprintln!("warning: skipping {}", s.error);
        }
        if games > 0 {
            eprintln!(
                "resume: {games} games, {} positions in the replay window",
                w.positions()
            );
        }
    }
    let mut tb = EventWriter::create(&dir.tensorboard())?;
    let started = Instant::now();
    eprintln!(
        "run {}: generation {generation}, {} parameters, device {device:?}",
        dir.root().display(),
        learner.net().parameter_count()
    );

    loop {
        if let Some(max) = args.generations
            && generation >= max
        {
            break;
        }
        if args
            .minutes
            .is_some_and(|m| started.elapsed().as_secs_f64() >= m * 60.0)
        {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let next = generation + 1;
        let gen_start = Instant::now();

        // 1. Self-play with the newest net; games already written for this generation count.
        let games_dir = dir.games(next);
        let have = count_records(&games_dir);
        let todo = config.run.games_per_generation.saturating_sub(have);
        let net = load_net(&dir.net(generation), device)?;
        let sp = selfplay_phase::play(
            &config,
            net,
            &games_dir,
            next,
            todo,
            &selfplay_openings,
            &stop,
        )?;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        selfplay_phase::write_pgn(&games_dir, &dir.pgn(next), next)?;
        log_selfplay(&mut tb, next, &sp)?;

        // 2. New games into the window.
        {
            let mut w = window.write().expect("the window lock is never poisoned");
            let (_, skipped) = w.load_new_files(&dir.all_games())?;
            for s in skipped {
                eprintln!("warning: skipping {}", s.error);
            }
        }

        // 3. Train.
        let lp = learn_phase::train(
            &config,
            &mut learner,
            &window,
            config.run.steps_per_generation,
            &mut tb,
            &stop,
        )?;
        if stop.load(Ordering::Relaxed) {
            break;
        }

        // 4. Publish: trainer state first, the net last (the commit point).
        let (w, o) = dir.trainer_state(next);
        learner.save_state(&w, &o)?;
        learner.publish(&dir.net(next))?;
        dir.prune_trainer_states(next);
        generation = next;

        // 5. Evaluate.
        let mut eval_text = String::new();
        if config.run.eval_every > 0 && generation % config.run.eval_every == 0 {
            let candidate = load_net(&dir.net(generation), device)?;
            let first = load_net(&first_net, device)?;
            let e = evaluate::evaluate(
                &config,
                candidate,
                first,
                &eval_openings,
                config.run.seed ^ u64::from(generation),
            )?;
            let step = learner.steps();
            tb.scalar("eval/score_vs_gen0", step, e.vs_first.score())?;
            tb.scalar("eval/score_vs_random", step, e.vs_random.score())?;
            tb.flush()?;
            eval_text = format!(
                " | vs gen0 {:.0}% (+{} ={} -{}) vs random {:.0}% (+{} ={} -{})",
                100.0 * e.vs_first.score(),
                e.vs_first.wins,
                e.vs_first.draws,
                e.vs_first.losses,
                100.0 * e.vs_random.score(),
                e.vs_random.wins,
                e.vs_random.draws,
                e.vs_random.losses
            );
        }
        let positions = window
            .read()
            .expect("the window lock is never poisoned")
            .positions();
        let line = format!(
            "gen {generation:4} | {:.0}s | selfplay {} games, {:.1} plies, {:.0} pos/s, batch {:.1}, W/D/L {}/{}/{} | window {} | train {} steps, loss {:.3}, acc {:.2}, {:.0} samples/s{eval_text}",
            gen_start.elapsed().as_secs_f64(),
            sp.games,
            sp.mean_length(),
            sp.positions as f64 / sp.seconds.max(1e-9),
            sp.inference.average_batch(),
            sp.results[0],
            sp.results[1],
            sp.results[2],
            positions,
            lp.steps,
            lp.mean_loss,
            lp.mean_accuracy,
            lp.samples_per_second
        );
        println!("{line}");
        append_log(&dir, &line)?;
    }
    eprintln!(
        "run {}: stopped at generation {generation} (resume with --resume)",
        dir.root().display()
    );
    Ok(())
}

fn count_records(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(|e| e.ok())
                .filter(|e| {
                    e.path()
                        .extension()
                        .is_some_and(|x| x == cfzero_selfplay::record::RECORD_EXTENSION)
                })
                .count()
        })
        .unwrap_or(0)
}

fn log_selfplay(
    tb: &mut EventWriter,
    generation: u32,
    sp: &selfplay_phase::SelfplaySummary,
) -> Result<()> {
    let g = u64::from(generation);
    let secs = sp.seconds.max(1e-9);
    tb.scalar("selfplay/games", g, sp.games as f64)?;
    tb.scalar("selfplay/game_length", g, sp.mean_length())?;
    tb.scalar("selfplay/white_wins", g, sp.results[0] as f64)?;
    tb.scalar("selfplay/draws", g, sp.results[1] as f64)?;
    tb.scalar("selfplay/black_wins", g, sp.results[2] as f64)?;
    tb.scalar(
        "selfplay/positions_per_second",
        g,
        sp.positions as f64 / secs,
    )?;
    tb.scalar("selfplay/nodes_per_second", g, sp.simulations as f64 / secs)?;
    tb.scalar("selfplay/avg_batch", g, sp.inference.average_batch())?;
    tb.scalar(
        "selfplay/inference_busy",
        g,
        sp.inference.busy_seconds / secs,
    )?;
    if sp.positions > 0 {
        tb.scalar(
            "selfplay/bytes_per_position",
            g,
            sp.record_bytes as f64 / sp.positions as f64,
        )?;
    }
    if sp.resign_checked > 0 {
        tb.scalar(
            "selfplay/resign_false_positive_rate",
            g,
            sp.resign_false_positives as f64 / sp.resign_checked as f64,
        )?;
    }
    tb.flush()?;
    Ok(())
}

fn append_log(dir: &RunDir, line: &str) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.log())?;
    writeln!(f, "{line}")?;
    Ok(())
}
