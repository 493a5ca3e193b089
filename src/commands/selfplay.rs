//! `cfzero selfplay`: a self-play worker. It plays games with the newest net of a run and
//! hands them to the run's `cfzero learn` trainer. Between rounds of games it switches to the
//! newest published net.
//!
//! Every run, in a directory (local, or shared over NFS) or on object storage (`--run
//! s3://...`), is played the same way through the run's store ([`StoredRun`]): the worker
//! plays into a local spool (`spool/<worker>/` in the run directory or the cache) and a
//! thread uploads the games in chunks (at the end of each round, and every `--chunk-games`
//! games or `--chunk-seconds` within one), fetches new nets into the cache, and keeps playing
//! while the store is unreachable (up to `--spool-mb` of chunks), uploading when it comes
//! back; a worker restarted on the same machine uploads what a killed one left (see
//! `run/spool.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use cfzero_network::checkpoint::load_net;
use cfzero_store::chunks::valid_worker_name;
use cfzero_store::{ObjectRunStore, RunLocation, RunStore};
use clap::Args;

use crate::config::Config;
use crate::error::{is_user_error, user_error};
use crate::flags::DeviceFlag;
use crate::run::progress::spinner;
use crate::run::selfplay_phase::{self, GamesOut};
use crate::run::session::stop_on_ctrl_c;
use crate::run::spool::{Spool, backoff};
use crate::run::stored_run::{OWN_WORKER, StoredRun, cache_dir};
use crate::run::uploader::{SyncOptions, sync_loop};
use crate::user_bail;
use cfzero_inference::backend::BackendChoice;

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
    /// `.` (default: the host and a random part chosen once per cache, or run directory, and
    /// kept in its `worker-id`, with `.2`, `.3`, ... for further workers of it).
    #[arg(long)]
    pub worker: Option<String>,
    /// Stop after this many games (default: no limit).
    #[arg(long)]
    pub games: Option<usize>,
    /// Stop after the round of games that ends past this many minutes.
    #[arg(long)]
    pub minutes: Option<f64>,
    #[command(flatten)]
    pub device: DeviceFlag,
    /// Backend of this worker's inference servers (auto, tch, native), instead of the run
    /// config's `[inference] backend` (the worker's machine may differ from the trainer's).
    #[arg(long)]
    pub backend: Option<BackendChoice>,
    /// Object storage: the local cache (nets, config, the spool of games not uploaded yet);
    /// default `~/.cache/cfzero/runs/<run>`, or under `$CFZERO_CACHE`. Refused for a run in
    /// a directory, which is its own cache (its spools are in `spool/`).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// The most games in a chunk (a round's last games go at its end).
    #[arg(long, default_value_t = 32)]
    pub chunk_games: usize,
    /// The most seconds a finished game waits for its chunk.
    #[arg(long, default_value_t = 120.0)]
    pub chunk_seconds: f64,
    /// The most megabytes of chunks kept while the store is unreachable; the worker pauses
    /// when its spool holds more.
    #[arg(long, default_value_t = 2048)]
    pub spool_mb: u64,
    /// Minutes a stopping worker keeps trying to upload its spool (what is left is uploaded
    /// at its next start).
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
    let location = RunLocation::parse(&args.run.to_string_lossy()).map_err(user_error)?;
    let (run, shown) = open_run(args, &location)?;
    let dir = run.dir().clone();
    match run.pull(&dir.config()) {
        Ok(true) => {}
        Ok(false) => user_bail!(
            "{shown} holds no run (no config.toml): start it with `cfzero learn --config FILE --run {shown}`"
        ),
        // Wrong credentials or no such bucket: playing on would only fill the spool.
        Err(e) if is_user_error(&e) => return Err(e),
        Err(e) if dir.config().exists() => eprintln!(
            "warning: {shown} is unreachable ({e:#}): playing with the cached config and nets, uploading later"
        ),
        Err(e) => {
            return Err(e).with_context(|| {
                format!("reaching {shown} (this worker has no cached copy of the run yet)")
            });
        }
    }
    let mut config = Config::load(&dir.config())?;
    if let Some(b) = args.backend {
        config.inference.backend = b;
    }
    let device = args.device.parse()?;
    eprintln!(
        "{}",
        crate::sizing::size(&mut config, crate::sizing::Machine::detect(device))
    );
    let openings = match &config.selfplay.openings {
        Some(p) => selfplay_phase::read_selfplay_book(p)?,
        None => Vec::new(),
    };
    let stop = stop_on_ctrl_c();
    let mut outbox = Outbox::open(args, &run)?;
    let worker = outbox.worker().to_owned();
    let Some(mut generation) = first_net(&run, &stop)? else {
        eprintln!("worker {worker}: stopped before the run's first net");
        return Ok(());
    };
    outbox.start(args, run)?;
    let started = Instant::now();
    let mut played = 0;
    // The games a round leaves unfinished, with `[selfplay] carry_over`: the next round plays
    // them on with the newest net.
    let mut in_flight = Vec::new();
    while !finished(args, played, started, &stop) {
        // A wait for room in the spool may outlast the time limit.
        if !outbox.has_room(&stop) || finished(args, played, started, &stop) {
            break;
        }
        // The newest net: in the run directory itself, or fetched into the cache by the
        // upload thread.
        if let Some(&g) = dir.published()?.last() {
            generation = generation.max(g);
        }
        let net = load_net(&dir.net(generation), device)?;
        let games = round_size(&config, args, played);
        let (games_dir, first_index) = outbox.place(generation + 1, games)?;
        let sp = selfplay_phase::play(
            &config,
            net,
            &GamesOut {
                dir: &games_dir,
                generation: generation + 1,
                worker: &worker,
                first_index,
            },
            games,
            &openings,
            &stop,
            config.selfplay.carry_over.then_some(&mut in_flight),
        )?;
        played += sp.games as usize;
        outbox.round_played();
        println!("worker {worker} | net gen {generation} | {sp} | {played} games in all");
    }
    let uploaded = outbox.close()?;
    eprintln!("worker {worker}: stopped after {played} games{uploaded}");
    Ok(())
}

/// The run and how it is named in messages. A directory is its own store and cache; object
/// storage is opened without a request (a worker with a cache plays on while the store is
/// down) and worked on in the cache.
fn open_run(args: &SelfplayArgs, location: &RunLocation) -> Result<(StoredRun, String)> {
    match location {
        RunLocation::Local(path) => Ok((
            StoredRun::open(location, args.cache.as_deref(), None)?,
            path.display().to_string(),
        )),
        RunLocation::Object(url) => {
            let store: Arc<dyn RunStore> =
                Arc::new(ObjectRunStore::open_offline(url).map_err(user_error)?);
            let cache = cache_dir(args.cache.as_deref(), url);
            Ok((StoredRun::new(store, &cache), url.to_string()))
        }
    }
}

/// Where a worker's games go: a spool in the run directory or the cache, uploaded in chunks
/// by the `sync` thread (from [`Outbox::start`] on), which also fetches new nets into the
/// cache.
struct Outbox {
    worker: String,
    spool: Arc<Spool>,
    stopping: Arc<AtomicBool>,
    /// Rounds played so far: when it moves on, the thread bundles the round's last games at
    /// once.
    rounds_played: Arc<AtomicU64>,
    sync: Option<std::thread::JoinHandle<Result<u64>>>,
    limit_bytes: u64,
}

impl Outbox {
    /// The outbox of `run`: its spool (locked: one worker a spool).
    fn open(args: &SelfplayArgs, run: &StoredRun) -> Result<Outbox> {
        let local = run.dir().root();
        let (worker, spool) = open_spool(args, local)?;
        eprintln!(
            "worker {worker}: run {}, spool {}",
            args.run.display(),
            local.join("spool").join(&worker).display()
        );
        Ok(Outbox {
            worker,
            spool: Arc::new(spool),
            stopping: Arc::new(AtomicBool::new(false)),
            rounds_played: Arc::new(AtomicU64::new(0)),
            sync: None,
            limit_bytes: args.spool_mb.saturating_mul(1 << 20),
        })
    }

    /// Starts the upload thread, which owns `run` from then on (once the first net is
    /// there: a worker stopped before it has nothing to flush).
    fn start(&mut self, args: &SelfplayArgs, run: StoredRun) -> Result<()> {
        let (spool, stopping) = (self.spool.clone(), self.stopping.clone());
        let rounds_played = self.rounds_played.clone();
        let options = SyncOptions {
            chunk_games: args.chunk_games,
            chunk_age: Duration::from_secs_f64(args.chunk_seconds),
            flush: Duration::from_secs_f64(args.flush_minutes * 60.0),
        };
        self.sync = Some(
            std::thread::Builder::new()
                .name("upload".into())
                .spawn(move || sync_loop(&run, &spool, &stopping, &rounds_played, &options))
                .context("starting the upload thread")?,
        );
        Ok(())
    }

    /// The worker's name.
    fn worker(&self) -> &str {
        &self.worker
    }

    /// Whether another round may be played: a full spool waits for the store (or Ctrl-C),
    /// and an upload thread that ended early met a store that refuses this worker.
    fn has_room(&self, stop: &AtomicBool) -> bool {
        let spool = &self.spool;
        if spool.waiting_bytes() > self.limit_bytes {
            let waiting = spinner(format!(
                "spool full ({} MB of games the store has not taken): waiting for it",
                spool.waiting_bytes() >> 20
            ));
            while spool.waiting_bytes() > self.limit_bytes && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(POLL);
            }
            waiting.finish_and_clear();
        }
        !self.sync.as_ref().is_some_and(|s| s.is_finished()) && !stop.load(Ordering::Relaxed)
    }

    /// Where a round of `games` games of generation `g` is written, and the number of its
    /// first game (a spool numbers its games, so that they never repeat for this worker).
    fn place(&self, g: u32, games: usize) -> Result<(PathBuf, Option<u64>)> {
        let first = self.spool.reserve(games)?;
        Ok((self.spool.games_dir(g), Some(first)))
    }

    /// After a round: its last games are bundled and uploaded without waiting for a full
    /// chunk, so that the trainer has the whole round.
    fn round_played(&self) {
        self.rounds_played.fetch_add(1, Ordering::Release);
    }

    /// Stops the upload thread after its last flush; what the worker's stop message adds.
    fn close(self) -> Result<String> {
        self.stopping.store(true, Ordering::Relaxed);
        let uploaded = match self.sync {
            Some(s) => s
                .join()
                .map_err(|_| anyhow::anyhow!("the upload thread panicked"))??,
            None => 0,
        };
        Ok(format!(" ({uploaded} chunk(s) uploaded)"))
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
            // A store that refuses this worker's listing stays refused: no stale net is
            // played for it.
            Err(e) if is_user_error(&e) => {
                return Err(e.context(format!(
                    "{} refuses this worker a listing of the run's nets",
                    remote.store().location()
                )));
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
