//! `cfzero selfplay`: a self-play worker. It plays games with the newest net of a run
//! directory and writes them there, for a `cfzero learn` trainer (on this machine or on
//! another one that shares the directory). Between rounds of games it switches to the
//! newest published net.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;
use cfzero_network::checkpoint::load_net;
use cfzero_network::parse_device;
use clap::Args;

use crate::config::Config;
use crate::error::user_error;
use crate::run::dir::RunDir;
use crate::run::progress::spinner;
use crate::run::selfplay_phase;
use crate::run::session::stop_on_ctrl_c;
use crate::user_bail;

/// How often the run directory is checked for a first net.
const POLL: Duration = Duration::from_secs(2);

/// Arguments of `cfzero selfplay`.
#[derive(Debug, Args)]
pub struct SelfplayArgs {
    /// Run directory, created by `cfzero learn` (its frozen config.toml is used).
    #[arg(long)]
    pub run: PathBuf,
    /// Name of this worker, unique among the workers of the run (default: host and process id).
    #[arg(long)]
    pub worker: Option<String>,
    /// Stop after this many games (default: no limit).
    #[arg(long)]
    pub games: Option<usize>,
    /// Stop after the round of games that ends past this many minutes.
    #[arg(long)]
    pub minutes: Option<f64>,
    /// Device: cpu, cuda, cuda:N or auto.
    #[arg(long, default_value = "auto")]
    pub device: String,
}

/// Plays rounds of games with the newest net until the limits or Ctrl-C.
pub fn run(args: &SelfplayArgs) -> Result<()> {
    let dir = RunDir::new(&args.run);
    if !dir.config().exists() {
        user_bail!(
            "{} holds no run (no config.toml): start it with `cfzero learn --config FILE --run {}`",
            dir.root().display(),
            dir.root().display()
        );
    }
    let config = Config::load(&dir.config())?;
    let device = parse_device(&args.device).map_err(user_error)?;
    let worker = match &args.worker {
        Some(w) if valid_worker_name(w) => w.clone(),
        Some(w) => user_bail!("worker name {w:?}: use letters, digits, '_' and '.' only"),
        None => default_worker_name(),
    };
    let openings = match &config.selfplay.openings {
        Some(p) => selfplay_phase::read_selfplay_book(p)?,
        None => Vec::new(),
    };
    let stop = stop_on_ctrl_c();
    let started = Instant::now();
    let round = (config.selfplay.actors.max(1) * config.selfplay.games_per_actor.max(1)).max(1);
    let mut played = 0;
    eprintln!("worker {worker}: run {}", dir.root().display());
    loop {
        let remaining = args.games.map_or(usize::MAX, |g| g.saturating_sub(played));
        if remaining == 0
            || args
                .minutes
                .is_some_and(|m| started.elapsed().as_secs_f64() >= m * 60.0)
            || stop.load(Ordering::Relaxed)
        {
            break;
        }
        let Some(generation) = newest_net(&dir, &stop)? else {
            break;
        };
        let net = load_net(&dir.net(generation), device)?;
        let games_dir = dir.games(generation + 1);
        let sp = selfplay_phase::play(
            &config,
            net,
            &games_dir,
            generation + 1,
            round.min(remaining),
            &openings,
            &worker,
            &stop,
        )?;
        played += sp.games as usize;
        selfplay_phase::write_pgn(
            &games_dir,
            &dir.worker_pgn(generation + 1, &worker),
            generation + 1,
            Some(&worker),
        )?;
        println!("worker {worker} | net gen {generation} | {sp} | {played} games in all");
    }
    eprintln!("worker {worker}: stopped after {played} games");
    Ok(())
}

/// The newest published generation, waiting for the first one; `None` if stopped first.
fn newest_net(dir: &RunDir, stop: &std::sync::atomic::AtomicBool) -> Result<Option<u32>> {
    let mut waiting = None;
    loop {
        if let Some(&g) = dir.published()?.last() {
            if let Some(w) = waiting {
                indicatif::ProgressBar::finish_and_clear(&w);
            }
            return Ok(Some(g));
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        waiting.get_or_insert_with(|| spinner("waiting for the run's first net".to_string()));
        std::thread::sleep(POLL);
    }
}

fn valid_worker_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// `HOST.PID`, with characters outside the allowed set replaced.
fn default_worker_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "worker".to_string());
    let host: String = host
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{host}.{}", std::process::id())
}
