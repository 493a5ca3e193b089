//! `cfzero selfplay`: a self-play worker. It plays games with the newest net of a run and
//! hands them to the run's `cfzero learn` trainer. Between rounds of games it switches to the
//! newest published net.
//!
//! On a directory (local, or shared over NFS) it writes its games into the run directory.
//! On object storage (`--run s3://...`) it plays into a local spool and a thread uploads
//! them in chunks (every `--chunk-games` games or `--chunk-seconds`), fetches new nets into
//! the cache, and keeps playing while the store is unreachable (up to `--spool-mb` of
//! chunks), uploading when it comes back; a worker restarted on the same machine uploads
//! what a killed one left (see `run/spool.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use cfzero_network::checkpoint::load_net;
use cfzero_network::parse_device;
use cfzero_store::chunks::valid_worker_name;
use cfzero_store::{ObjectRunStore, RunLocation, RunStore};
use clap::Args;
use url::Url;

use crate::config::Config;
use crate::error::{is_user_error, user_error};
use crate::run::dir::RunDir;
use crate::run::progress::spinner;
use crate::run::selfplay_phase::{self, GamesOut};
use crate::run::session::stop_on_ctrl_c;
use crate::run::spool::{Spool, backoff};
use crate::run::stored_run::{OWN_WORKER, StoredRun, cache_dir};
use crate::run::uploader::{SyncOptions, sync_loop};
use crate::user_bail;
use cfzero_network::backend::BackendChoice;

/// How often the run directory is checked for a first net.
const POLL: Duration = Duration::from_secs(2);

/// Arguments of `cfzero selfplay`.
#[derive(Debug, Args)]
pub struct SelfplayArgs {
    /// The run, created by `cfzero learn` (its frozen config.toml is used): a directory or
    /// object storage (`s3://BUCKET/PREFIX`, `gs://...`, `az://...`).
    #[arg(long)]
    pub run: PathBuf,
    /// Name of this worker, unique among the workers of the run: letters, digits, `_` and
    /// `.` (default: host and process id; on object storage the host and a random part
    /// chosen once per cache and kept in its `worker-id`, with `.2`, `.3`, ... for further
    /// workers on one machine, so that two machines of one name never share a name).
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
    /// Backend of this worker's inference servers (auto, tch, native), instead of the run
    /// config's `run.backend` (the worker's machine may differ from the trainer's).
    #[arg(long)]
    pub backend: Option<BackendChoice>,
    /// Object storage: the local cache (nets, config, the spool of games not uploaded yet);
    /// default `~/.cache/cfzero/runs/<run>`, or under `$CFZERO_CACHE`.
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Object storage: games in a chunk.
    #[arg(long, default_value_t = 32)]
    pub chunk_games: usize,
    /// Object storage: the most seconds a finished game waits for its chunk.
    #[arg(long, default_value_t = 120.0)]
    pub chunk_seconds: f64,
    /// Object storage: the most megabytes of chunks kept while the store is unreachable;
    /// the worker pauses when its spool holds more.
    #[arg(long, default_value_t = 2048)]
    pub spool_mb: u64,
    /// Object storage: minutes a stopping worker keeps trying to upload its spool (what is
    /// left is uploaded at its next start).
    #[arg(long, default_value_t = 10.0)]
    pub flush_minutes: f64,
}

/// Plays rounds of games with the newest net until the limits or Ctrl-C.
pub fn run(args: &SelfplayArgs) -> Result<()> {
    if let Some(w) = &args.worker
        && (!valid_worker_name(w) || w == OWN_WORKER)
    {
        user_bail!(
            "worker name {w:?}: use letters, digits, '_' and '.' only (at most 64, not {OWN_WORKER:?})"
        );
    }
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if args.chunk_games == 0
        || !positive(args.chunk_seconds)
        || args.spool_mb == 0
        || !(args.flush_minutes.is_finite() && args.flush_minutes >= 0.0)
    {
        user_bail!(
            "--chunk-games, --chunk-seconds and --spool-mb must be positive, --flush-minutes not negative"
        );
    }
    match RunLocation::parse(&args.run.to_string_lossy()).map_err(user_error)? {
        RunLocation::Local(p) => run_on_directory(args, &p),
        RunLocation::Object(url) => run_on_object_store(args, &url),
    }
}

/// Whether a limit or Ctrl-C ends the worker before another round.
fn finished(args: &SelfplayArgs, played: usize, started: Instant, stop: &AtomicBool) -> bool {
    args.games.is_some_and(|g| played >= g)
        || args
            .minutes
            .is_some_and(|m| started.elapsed().as_secs_f64() >= m * 60.0)
        || stop.load(Ordering::Relaxed)
}

/// The games a round plays: one per actor slot, at most what the limit leaves.
fn round_size(config: &Config, args: &SelfplayArgs, played: usize) -> usize {
    let round = (config.selfplay.actors.max(1) * config.selfplay.games_per_actor.max(1)).max(1);
    round.min(args.games.map_or(usize::MAX, |g| g.saturating_sub(played)))
}

/// The worker on a run directory.
fn run_on_directory(args: &SelfplayArgs, root: &Path) -> Result<()> {
    let dir = RunDir::new(root);
    if !dir.config().exists() {
        user_bail!(
            "{} holds no run (no config.toml): start it with `cfzero learn --config FILE --run {}`",
            dir.root().display(),
            dir.root().display()
        );
    }
    let mut config = Config::load(&dir.config())?;
    if let Some(b) = args.backend {
        config.run.backend = b;
    }
    let device = parse_device(&args.device).map_err(user_error)?;
    let worker = args
        .worker
        .clone()
        .unwrap_or_else(|| format!("{}.{}", host_worker_name(), std::process::id()));
    let openings = match &config.selfplay.openings {
        Some(p) => selfplay_phase::read_selfplay_book(p)?,
        None => Vec::new(),
    };
    let stop = stop_on_ctrl_c();
    let started = Instant::now();
    let mut played = 0;
    eprintln!("worker {worker}: run {}", dir.root().display());
    loop {
        if finished(args, played, started, &stop) {
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
            &GamesOut {
                dir: &games_dir,
                generation: generation + 1,
                worker: &worker,
                first_index: None,
            },
            round_size(&config, args, played),
            &openings,
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

/// This machine's name as a worker name (characters outside the allowed set replaced).
fn host_worker_name() -> String {
    let host = cfzero_fsutil::host_name().unwrap_or_else(|| "worker".to_string());
    host.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(48)
        .collect()
}

/// The worker name of the run cached in `cache` when none is given: the host name and a
/// random part, chosen once and kept in the cache (`worker-id`), so that two machines of the
/// same name never share a name (the trainer tells bundles apart by worker) while a worker
/// restarted on the same cache keeps its name and its spool. A cache of an older version,
/// whose spool is named after the host alone, keeps that name.
fn default_worker_name(cache: &Path) -> Result<String> {
    let file = cache.join("worker-id");
    let read = |f: &Path| {
        std::fs::read_to_string(f)
            .ok()
            .map(|t| t.trim().to_owned())
            .filter(|n| valid_worker_name(n) && n.len() <= 58)
    };
    if let Some(name) = read(&file) {
        return Ok(name);
    }
    let host = host_worker_name();
    let name = if cache.join("spool").join(&host).is_dir() {
        host
    } else {
        format!("{host}_{:08x}", rand::random::<u32>())
    };
    std::fs::create_dir_all(cache).with_context(|| format!("creating {}", cache.display()))?;
    // Created only if absent (a hard link of a finished file), so that two workers starting
    // together on one cache agree on the name.
    let tmp = cfzero_fsutil::temporary_path(&file);
    std::fs::write(&tmp, format!("{name}\n"))
        .with_context(|| format!("writing {}", tmp.display()))?;
    let linked = std::fs::hard_link(&tmp, &file);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(name),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read(&file).with_context(|| format!("{} holds no worker name", file.display()))
        }
        Err(e) => Err(e).with_context(|| format!("creating {}", file.display())),
    }
}

/// The worker on object storage: plays into its spool, a thread uploads.
fn run_on_object_store(args: &SelfplayArgs, url: &Url) -> Result<()> {
    // No request yet: a worker with a cache plays on while the store is down.
    let store: Arc<dyn RunStore> = Arc::new(ObjectRunStore::open_offline(url).map_err(user_error)?);
    let cache = cache_dir(args.cache.as_deref(), url);
    let remote = StoredRun::new(store, &cache);
    let dir = remote.dir().clone();
    match remote.pull(&dir.config()) {
        Ok(true) => {}
        Ok(false) => user_bail!(
            "{url} holds no run (no config.toml): start it with `cfzero learn --config FILE --run {url}`"
        ),
        // Wrong credentials or no such bucket: playing on would only fill the spool.
        Err(e) if is_user_error(&e) => return Err(e),
        Err(e) if dir.config().exists() => eprintln!(
            "warning: {url} is unreachable ({e:#}): playing with the cached config and nets, uploading later"
        ),
        Err(e) => {
            return Err(e).with_context(|| {
                format!("reaching {url} (this worker has no cached copy of the run yet)")
            });
        }
    }
    let mut config = Config::load(&dir.config())?;
    if let Some(b) = args.backend {
        config.run.backend = b;
    }
    let device = parse_device(&args.device).map_err(user_error)?;
    let (worker, spool) = open_spool(args, &cache)?;
    let openings = match &config.selfplay.openings {
        Some(p) => selfplay_phase::read_selfplay_book(p)?,
        None => Vec::new(),
    };
    let stop = stop_on_ctrl_c();
    eprintln!("worker {worker}: run {url}, cache {}", cache.display());
    let Some(mut generation) = first_net(&remote, &stop)? else {
        eprintln!("worker {worker}: stopped before the run's first net");
        return Ok(());
    };
    let spool = Arc::new(spool);
    let stopping = Arc::new(AtomicBool::new(false));
    let sync = {
        let (spool, stopping) = (spool.clone(), stopping.clone());
        let options = SyncOptions {
            chunk_games: args.chunk_games,
            chunk_age: Duration::from_secs_f64(args.chunk_seconds),
            flush: Duration::from_secs_f64(args.flush_minutes * 60.0),
        };
        std::thread::Builder::new()
            .name("upload".into())
            .spawn(move || sync_loop(&remote, &spool, &stopping, &options))
            .context("starting the upload thread")?
    };
    let started = Instant::now();
    let mut played = 0;
    let spool_limit = args.spool_mb.saturating_mul(1 << 20);
    while !finished(args, played, started, &stop) {
        if spool.outbox_bytes() > spool_limit {
            let waiting = spinner(format!(
                "spool full ({} MB of chunks the store has not taken): waiting for it",
                spool.outbox_bytes() >> 20
            ));
            while spool.outbox_bytes() > spool_limit && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(POLL);
            }
            waiting.finish_and_clear();
            continue;
        }
        // An upload thread that ended early met a store that refuses this worker.
        if sync.is_finished() {
            break;
        }
        // The newest net the upload thread has fetched.
        if let Some(&g) = dir.published()?.last() {
            generation = generation.max(g);
        }
        let net = load_net(&dir.net(generation), device)?;
        let games = round_size(&config, args, played);
        let first = spool.reserve(games)?;
        let sp = selfplay_phase::play(
            &config,
            net,
            &GamesOut {
                dir: &spool.games_dir(generation + 1),
                generation: generation + 1,
                worker: &worker,
                first_index: Some(first),
            },
            games,
            &openings,
            &stop,
        )?;
        played += sp.games as usize;
        println!("worker {worker} | net gen {generation} | {sp} | {played} games in all");
    }
    stopping.store(true, Ordering::Relaxed);
    let uploaded = sync
        .join()
        .map_err(|_| anyhow::anyhow!("the upload thread panicked"))??;
    eprintln!("worker {worker}: stopped after {played} games ({uploaded} chunk(s) uploaded)");
    Ok(())
}

/// The worker's name and its spool: `--worker`'s, or the first free of HOST, HOST.2, ...
fn open_spool(args: &SelfplayArgs, cache: &Path) -> Result<(String, Spool)> {
    let base = match &args.worker {
        Some(w) => w.clone(),
        None => default_worker_name(cache)?,
    };
    for i in 1..=64 {
        let name = if i == 1 {
            base.clone()
        } else {
            format!("{base}.{i}")
        };
        let root = cache.join("spool").join(&name);
        if let Some(spool) = Spool::open(&root, &name)? {
            return Ok((name, spool));
        }
        if args.worker.is_some() {
            user_bail!(
                "worker {name} runs already on this machine (its spool {} is locked): give each worker its own --worker",
                root.display()
            );
        }
    }
    user_bail!("64 workers of this run run already on this machine")
}

/// The newest net, downloaded into the cache (or the newest cached one while the store is
/// unreachable), waiting for the run's first; `None` if stopped first.
fn first_net(remote: &StoredRun, stop: &AtomicBool) -> Result<Option<u32>> {
    let mut waiting = None;
    let mut failures = 0;
    loop {
        match remote.newest_net() {
            Ok(Some(g)) if remote.pull_net(g)? => {
                if let Some(w) = waiting {
                    indicatif::ProgressBar::finish_and_clear(&w);
                }
                return Ok(Some(g));
            }
            Ok(_) => {
                waiting.get_or_insert_with(|| spinner("waiting for the run's first net".into()));
            }
            Err(e) => {
                if let Some(&g) = remote.dir().published()?.last() {
                    return Ok(Some(g));
                }
                failures += 1;
                eprintln!("warning: no net cached and the store is unreachable: {e:#}");
            }
        }
        let until = Instant::now() + backoff(failures).max(POLL);
        while Instant::now() < until {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
