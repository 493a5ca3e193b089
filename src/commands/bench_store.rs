//! `cfzero bench store`: how many self-play workers one trainer's ingest keeps up with on a
//! store, and what its listings cost as the run grows. Simulated workers (threads) upload
//! chunks of games at a worker's rate, each followed by its stream's head, as `cfzero
//! selfplay` does; a simulated trainer polls the keys after its cursor (less the grace window,
//! for uploads that land late), sweeps the streams' heads every `--sweep-seconds` (or, with
//! `--full-listing`, lists every chunk instead, as older versions did) and downloads each new
//! chunk, as `cfzero learn` does. `--existing N` first fills the store with N chunks of
//! earlier streams, consumed by the trainer's cursor, as a long run's would be. Reports what
//! was uploaded and ingested, the trainer's capacity (chunks and positions a second of its
//! busy time), listing requests (S3 pages of 1,000 keys) per minute, what a restarting
//! trainer's listings cost, and the slowest poll and sweep.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use cfzero_store::chunks::{CHUNKS, now_ms};
use cfzero_store::heads::{HEAD_KEYS, HeadWriter, StreamHead, head_key};
use cfzero_store::{Bundle, ChunkCursor, ChunkName, CountingStore, RunLocation, RunStore};
use clap::Args;

use crate::error::user_error;
use crate::run::progress::bar;
use crate::run::stored_run::{CHUNK_GRACE, StoredRun};
use crate::user_bail;

/// Arguments of `cfzero bench store`.
#[derive(Debug, Args)]
pub struct StoreBenchArgs {
    /// Where to write: a directory or an object store URL (`s3://BUCKET/PREFIX`, with
    /// `AWS_ENDPOINT_URL` for MinIO or a local S3 server) that holds no chunks yet;
    /// `memory://bench` for the trainer's own costs on a store that answers at once and lists
    /// after a key as S3 does (a million chunks fill it in seconds, where a local S3 server
    /// lists every key it holds for each request).
    #[arg(long)]
    pub store: String,
    /// Simulated workers, one thread each.
    #[arg(long, default_value_t = 50)]
    pub workers: usize,
    /// Chunks each worker uploads a second.
    #[arg(long, default_value_t = 0.2)]
    pub chunk_rate: f64,
    /// Games in a chunk.
    #[arg(long, default_value_t = 32)]
    pub chunk_games: usize,
    /// Positions in a game (for the positions/s figures).
    #[arg(long, default_value_t = 150)]
    pub positions_per_game: usize,
    /// Bytes a position takes in a chunk (cfzero's zstd records: about 60).
    #[arg(long, default_value_t = 60)]
    pub bytes_per_position: usize,
    /// Seconds the workers upload.
    #[arg(long, default_value_t = 30.0)]
    pub seconds: f64,
    /// Seconds between the trainer's polls.
    #[arg(long, default_value_t = 2.0)]
    pub poll_seconds: f64,
    /// Seconds between the trainer's sweeps of the streams' heads (or full listings).
    #[arg(long, default_value_t = 60.0)]
    pub sweep_seconds: f64,
    /// List every chunk at each sweep instead of the streams' heads (how older versions
    /// found late chunks), for a before/after.
    #[arg(long)]
    pub full_listing: bool,
    /// Chunks of earlier streams written (and consumed by the trainer's cursor) before the
    /// workers start, as a long run holds.
    #[arg(long, default_value_t = 0)]
    pub existing: usize,
    /// Streams (uploader starts) the `--existing` chunks belong to.
    #[arg(long, default_value_t = 100)]
    pub existing_streams: usize,
    /// Chunks a second the `--existing` chunks were uploaded at (their names' times are that
    /// far apart, ending a minute ago), as the run's workers uploaded them.
    #[arg(long, default_value_t = 100.0)]
    pub existing_rate: f64,
    /// Positions of the replay window a restarting trainer refills.
    #[arg(long, default_value_t = cfzero_selfplay::window::WindowConfig::default().max_positions)]
    pub window_positions: usize,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// What the simulated trainer measured.
#[derive(Debug, Default, serde::Serialize)]
struct Ingest {
    polls: u64,
    list_requests: u64,
    get_requests: u64,
    chunks: u64,
    bytes: u64,
    busy_seconds: f64,
    max_poll_seconds: f64,
    /// New chunk keys the polls found.
    listed_keys: u64,
    /// Sweeps of the heads (or full listings).
    sweeps: u64,
    /// Their listing requests.
    sweep_list_requests: u64,
    /// Heads read by the sweeps.
    head_reads: u64,
    max_sweep_seconds: f64,
    /// What the trainer keeps of its ingest at the end: its cursor, serialised (as it is
    /// published under `state/`).
    cursor_bytes: usize,
}

/// Listing requests of a listing that returned `keys` keys: S3 answers 1,000 a page.
fn pages(keys: usize) -> u64 {
    cfzero_store::counting::list_pages(keys as u64)
}

/// How the simulated trainer finds what its quick polls miss.
struct Sweeps {
    every: Duration,
    full_listing: bool,
}

/// Polls until `stop`, then once more with a sweep; what it took.
fn trainer(
    store: &dyn RunStore,
    poll: Duration,
    sweeps: &Sweeps,
    mut cursor: ChunkCursor,
    stop: &AtomicBool,
) -> Result<Ingest> {
    let mut ingest = Ingest::default();
    let mut last_sweep = Instant::now();
    loop {
        let last = stop.load(Ordering::Relaxed);
        let started = Instant::now();
        let listed = store.list_after(CHUNKS, cursor.list_from().as_deref())?;
        ingest.list_requests += pages(listed.len());
        let mut keys: Vec<String> = listed.into_iter().filter(|k| !cursor.consumed(k)).collect();
        ingest.listed_keys += keys.len() as u64;
        if last || last_sweep.elapsed() >= sweeps.every {
            let sweep_started = Instant::now();
            let mut full = sweeps.full_listing;
            if !full {
                let sweep = cursor.sweep_heads(store)?;
                ingest.sweep_list_requests += pages(sweep.streams);
                ingest.head_reads += sweep.read as u64;
                ingest.get_requests += sweep.read as u64;
                keys.extend(sweep.new);
                full = !sweep.beyond.is_empty();
            }
            if full {
                let all = store.list_after(CHUNKS, None)?;
                ingest.sweep_list_requests += pages(all.len());
                keys.extend(all.into_iter().filter(|k| !cursor.consumed(k)));
            }
            ingest.sweeps += 1;
            ingest.max_sweep_seconds = ingest
                .max_sweep_seconds
                .max(sweep_started.elapsed().as_secs_f64());
            last_sweep = Instant::now();
        }
        keys.sort();
        keys.dedup();
        for key in keys {
            let bytes = store.get(&key)?.unwrap_or_default();
            ingest.get_requests += 1;
            ingest.chunks += 1;
            ingest.bytes += bytes.len() as u64;
            cursor.consume(&key);
        }
        let took = started.elapsed().as_secs_f64();
        ingest.polls += 1;
        ingest.busy_seconds += took;
        ingest.max_poll_seconds = ingest.max_poll_seconds.max(took);
        if last {
            ingest.cursor_bytes = serde_json::to_vec(&cursor)?.len();
            return Ok(ingest);
        }
        std::thread::sleep(poll.saturating_sub(started.elapsed()));
    }
}

/// Writes `n` one-byte chunks of `streams` earlier streams (named `rate` a second, ending a
/// minute ago, with their heads) and returns a cursor that consumed them all, as a long run's
/// trainer holds; 8 threads write.
fn fill(
    store: &Arc<dyn RunStore>,
    n: usize,
    streams: usize,
    rate: f64,
    positions: u64,
) -> Result<ChunkCursor> {
    let streams = streams.clamp(1, n.max(1));
    let spacing_ms = (1000.0 / rate).max(1.0) as u64;
    let base = now_ms().saturating_sub(60_000 + n as u64 * spacing_ms);
    let progress = bar(n as u64, "filling", "chunks");
    let written = Arc::new(AtomicU64::new(0));
    let name = move |stream: usize, seq: u64| ChunkName {
        uploaded_ms: base + ((seq - 1) * streams as u64 + stream as u64) * spacing_ms,
        generation: 1,
        worker: format!("old{stream:05}"),
        bundle: Bundle::Numbered {
            incarnation: 1,
            seq,
        },
        games: 1,
        positions,
    };
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (store, written) = (store.clone(), written.clone());
            std::thread::spawn(move || -> Result<()> {
                for stream in (t..streams).step_by(8) {
                    let count = (n / streams + usize::from(stream < n % streams)) as u64;
                    let mut head = StreamHead::default();
                    for seq in 1..=count {
                        let key = name(stream, seq).key();
                        store.put(&key, b"x")?;
                        written.fetch_add(1, Ordering::Relaxed);
                        if seq + HEAD_KEYS as u64 > count {
                            head.keys.push(key);
                        }
                    }
                    if count > 0 {
                        let bytes = serde_json::to_vec(&head)?;
                        store.put(&head_key(&format!("old{stream:05}"), 1, count), &bytes)?;
                    }
                }
                Ok(())
            })
        })
        .collect();
    let mut cursor = ChunkCursor::new(CHUNK_GRACE);
    while threads.iter().any(|t| !t.is_finished()) {
        std::thread::sleep(Duration::from_millis(250));
        progress.set_position(written.load(Ordering::Relaxed));
    }
    for t in threads {
        t.join().expect("a filling thread does not panic")?;
    }
    progress.finish_and_clear();
    for stream in 0..streams {
        let count = (n / streams + usize::from(stream < n % streams)) as u64;
        for seq in 1..=count {
            cursor.consume(&name(stream, seq).key());
        }
    }
    Ok(cursor)
}

/// What a restarting trainer's listings cost.
struct RestartCost {
    seconds: f64,
    /// Listing requests (S3 pages of 1,000 keys).
    list_requests: u64,
    keys_listed: u64,
}

/// A trainer starting again on the filled store with `cursor`: with `--full-listing` the
/// listing of every chunk older versions made; else what `cfzero learn` does, the refill of
/// its window ([`StoredRun::newest_chunks`]) and its first ingest (a quick poll and a sweep
/// of the heads), through a store that counts the requests.
fn restart_cost(
    store: &Arc<dyn RunStore>,
    cursor: &ChunkCursor,
    args: &StoreBenchArgs,
) -> Result<RestartCost> {
    let counted = Arc::new(CountingStore::new(store.clone()));
    let started = Instant::now();
    if args.full_listing {
        cursor.poll_all(counted.as_ref())?;
    } else {
        // Every existing chunk is consumed: nothing is downloaded into this cache.
        let cache = std::env::temp_dir().join(format!("cfzero-bench-store-{}", std::process::id()));
        let mut run = StoredRun::new(counted.clone(), &cache);
        run.set_cursor(cursor.clone());
        run.newest_chunks(args.window_positions)?;
        run.ingest(None)?;
        let _ = std::fs::remove_dir_all(&cache);
    }
    let seconds = started.elapsed().as_secs_f64();
    let c = counted.counts();
    Ok(RestartCost {
        seconds,
        list_requests: c.list_pages,
        keys_listed: c.keys_listed,
    })
}

/// Runs `cfzero bench store`.
pub fn run(args: &StoreBenchArgs) -> Result<()> {
    // NaN fails the checks too.
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if args.workers == 0
        || !positive(args.chunk_rate)
        || !positive(args.seconds)
        || !positive(args.sweep_seconds)
        || !positive(args.existing_rate)
    {
        user_bail!(
            "--workers, --chunk-rate, --seconds, --sweep-seconds and --existing-rate must be positive"
        );
    }
    if args.existing > 10_000_000 {
        user_bail!("--existing {}: at most 10,000,000", args.existing);
    }
    let location = RunLocation::parse(&args.store).map_err(user_error)?;
    let store: Arc<dyn RunStore> = Arc::from(cfzero_store::open(&location).map_err(user_error)?);
    if !store.list_after(CHUNKS, None)?.is_empty() {
        user_bail!(
            "{} holds chunks already: give the benchmark an empty prefix",
            args.store
        );
    }
    let chunk_positions = (args.chunk_games * args.positions_per_game) as u64;
    let cursor = fill(
        &store,
        args.existing,
        args.existing_streams,
        args.existing_rate,
        chunk_positions,
    )?;
    let restart = restart_cost(&store, &cursor, args)?;
    let chunk_bytes = args.chunk_games * args.positions_per_game * args.bytes_per_position;
    // Incompressible bytes, as zstd-compressed records are.
    let payload: Arc<Vec<u8>> = Arc::new((0..chunk_bytes).map(|_| rand::random()).collect());
    let stop_workers = Arc::new(AtomicBool::new(false));
    let stop_trainer = Arc::new(AtomicBool::new(false));
    let uploaded = Arc::new(AtomicU64::new(0));
    let upload_micros = Arc::new(AtomicU64::new(0));
    let interval = Duration::from_secs_f64(1.0 / args.chunk_rate);
    let chunk_games = args.chunk_games as u32;
    let workers: Vec<_> = (0..args.workers)
        .map(|w| {
            let (store, payload, stop) = (store.clone(), payload.clone(), stop_workers.clone());
            let (uploaded, upload_micros) = (uploaded.clone(), upload_micros.clone());
            std::thread::spawn(move || -> Result<()> {
                // Workers start at random phases, as real ones do.
                std::thread::sleep(interval.mul_f64(rand::random::<f64>()));
                let mut seq = 0;
                let mut heads = HeadWriter::default();
                while !stop.load(Ordering::Relaxed) {
                    seq += 1;
                    let started = Instant::now();
                    let now = now_ms();
                    let name = ChunkName {
                        uploaded_ms: now,
                        generation: 1,
                        worker: format!("w{w:04}"),
                        bundle: Bundle::Numbered {
                            incarnation: 1,
                            seq,
                        },
                        games: chunk_games,
                        positions: chunk_positions,
                    };
                    let key = name.key();
                    store.put(&key, &payload)?;
                    heads.record_upload(store.as_ref(), &name, &key)?;
                    uploaded.fetch_add(1, Ordering::Relaxed);
                    upload_micros
                        .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
                    std::thread::sleep(interval.saturating_sub(started.elapsed()));
                }
                Ok(())
            })
        })
        .collect();
    let trainer_thread = {
        let (store, stop) = (store.clone(), stop_trainer.clone());
        let poll = Duration::from_secs_f64(args.poll_seconds.max(0.01));
        let sweeps = Sweeps {
            every: Duration::from_secs_f64(args.sweep_seconds.min(3600.0)),
            full_listing: args.full_listing,
        };
        std::thread::spawn(move || trainer(store.as_ref(), poll, &sweeps, cursor, &stop))
    };
    let seconds = args.seconds.min(3600.0);
    let progress = bar(seconds.ceil() as u64, "bench", "s");
    let started = Instant::now();
    while started.elapsed().as_secs_f64() < seconds {
        std::thread::sleep(Duration::from_millis(250));
        progress.set_position(started.elapsed().as_secs());
        progress.set_message(format!("{} chunks up", uploaded.load(Ordering::Relaxed)));
    }
    progress.finish_and_clear();
    stop_workers.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("a worker thread does not panic")?;
    }
    let upload_seconds = started.elapsed().as_secs_f64();
    stop_trainer.store(true, Ordering::Relaxed);
    let ingest = trainer_thread
        .join()
        .expect("the trainer thread does not panic")?;

    let up = uploaded.load(Ordering::Relaxed);
    let positions_per_chunk = (args.chunk_games * args.positions_per_game) as f64;
    let capacity = ingest.chunks as f64 / ingest.busy_seconds.max(1e-9);
    let report = serde_json::json!({
        "store": args.store,
        "workers": args.workers,
        "chunk_rate_per_worker": args.chunk_rate,
        "chunk_bytes": chunk_bytes,
        "seconds": upload_seconds,
        "uploaded_chunks": up,
        "ingested_chunks": ingest.chunks,
        "offered_chunks_per_s": up as f64 / upload_seconds,
        "mean_upload_ms": upload_micros.load(Ordering::Relaxed) as f64 / up.max(1) as f64 / 1000.0,
        "polls": ingest.polls,
        "requests_per_poll": (ingest.list_requests + ingest.get_requests) as f64 / ingest.polls.max(1) as f64,
        "list_requests_per_poll": ingest.list_requests as f64 / ingest.polls.max(1) as f64,
        "keys_listed_per_poll": ingest.listed_keys as f64 / ingest.polls.max(1) as f64,
        "max_poll_seconds": ingest.max_poll_seconds,
        "existing_chunks": args.existing,
        "sweeps": if args.full_listing { "full listing" } else { "heads" },
        "restart_listing_seconds": restart.seconds,
        "restart_listing_requests": restart.list_requests,
        "restart_keys_listed": restart.keys_listed,
        "list_requests_per_minute": (ingest.list_requests + ingest.sweep_list_requests) as f64 * 60.0 / upload_seconds,
        "head_reads": ingest.head_reads,
        "max_sweep_seconds": ingest.max_sweep_seconds,
        "trainer_cursor_bytes": ingest.cursor_bytes,
        "trainer_busy_share": ingest.busy_seconds / upload_seconds,
        "capacity_chunks_per_s": capacity,
        "capacity_positions_per_s": capacity * positions_per_chunk,
        "capacity_mb_per_s": ingest.bytes as f64 / ingest.busy_seconds.max(1e-9) / 1e6,
    });
    if args.json {
        println!("{report}");
        return Ok(());
    }
    println!(
        "{} workers x {} chunks/s ({} games, {:.0} kB each) for {:.0} s: {up} uploaded (mean {:.1} ms), {} ingested",
        args.workers,
        args.chunk_rate,
        args.chunk_games,
        chunk_bytes as f64 / 1e3,
        upload_seconds,
        report["mean_upload_ms"].as_f64().unwrap_or(0.0),
        ingest.chunks
    );
    println!(
        "trainer: {} polls, {:.2} requests a poll (1 listing of {:.0} keys, the rest downloads), slowest poll {:.2} s, busy {:.0}% of the time",
        ingest.polls,
        report["requests_per_poll"].as_f64().unwrap_or(0.0),
        report["keys_listed_per_poll"].as_f64().unwrap_or(0.0),
        ingest.max_poll_seconds,
        100.0 * ingest.busy_seconds / upload_seconds
    );
    println!(
        "listings: {:.1} requests a minute ({} sweeps of the {}, slowest {:.2} s, {} heads read); \
         a restarting trainer lists {} keys in {} requests, {:.2} s",
        report["list_requests_per_minute"].as_f64().unwrap_or(0.0),
        ingest.sweeps,
        if args.full_listing {
            "chunks"
        } else {
            "streams' heads"
        },
        ingest.max_sweep_seconds,
        ingest.head_reads,
        restart.keys_listed,
        restart.list_requests,
        restart.seconds
    );
    println!(
        "capacity: {capacity:.1} chunks/s = {:.0} positions/s = {:.1} MB/s of one trainer's busy time; its cursor {:.1} kB",
        capacity * positions_per_chunk,
        report["capacity_mb_per_s"].as_f64().unwrap_or(0.0),
        ingest.cursor_bytes as f64 / 1e3
    );
    if ingest.chunks != up {
        user_bail!("the trainer ingested {} of {up} chunks", ingest.chunks);
    }
    Ok(())
}
