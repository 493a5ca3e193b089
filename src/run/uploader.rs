//! A self-play worker's upload thread: it bundles finished games into chunks, uploads them
//! with backoff while the store is unreachable, and fetches new nets into the cache, so that
//! play never waits on the store.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;

use cfzero_store::chunks::now_ms;
use cfzero_store::claim_incarnation;

use crate::error::is_user_error;
use crate::run::spool::{Spool, backoff};
use crate::run::stored_run::StoredRun;

/// How often the thread looks for a new net.
const NET_POLL: Duration = Duration::from_secs(20);

/// When the upload thread bundles and how long it flushes.
pub struct SyncOptions {
    /// Bundle once this many games are finished.
    pub chunk_games: usize,
    /// Bundle once the oldest finished game is this old.
    pub chunk_age: Duration,
    /// How long a stopping worker keeps trying to upload.
    pub flush: Duration,
}

/// The upload thread: bundles finished games into chunks (also as soon as `rounds_played`
/// moves on: a round's last games need not wait for a full chunk), uploads them (backing off while the store is unreachable) and
/// fetches new nets, until `stopping` is set and the spool is empty or the flush time is
/// up. Returns the chunks uploaded.
pub fn sync_loop(
    remote: &StoredRun,
    spool: &Spool,
    stopping: &AtomicBool,
    rounds_played: &AtomicU64,
    options: &SyncOptions,
) -> Result<u64> {
    let store = remote.store().as_ref();
    let mut uploaded = 0u64;
    let mut failures = 0u32;
    let mut next_try = Instant::now();
    let mut last_net_check = Instant::now();
    let mut flush_until: Option<Instant> = None;
    // The rounds whose last games are bundled already.
    let mut rounds_bundled = 0u64;
    // Chunks are numbered in this process's own incarnation, claimed once the store answers.
    let mut incarnation: Option<u32> = None;
    let note = format!(
        "worker {} pid {} started {} ms",
        spool.worker(),
        std::process::id(),
        now_ms()
    );
    loop {
        let stop = stopping.load(Ordering::Relaxed);
        if stop && flush_until.is_none() {
            flush_until = Some(Instant::now() + options.flush);
        }
        // Read before the spool is: a round's games are all written when the count moves.
        let rounds = rounds_played.load(Ordering::Acquire);
        let round_ended = rounds != rounds_bundled;
        let (pending, oldest) = spool.pending()?;
        let old = oldest
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= options.chunk_age);
        if let Some(i) = incarnation
            && pending > 0
            && (stop || old || round_ended || pending >= options.chunk_games)
        {
            spool.bundle(i)?;
            rounds_bundled = rounds;
        } else if pending == 0 {
            rounds_bundled = rounds;
        }
        if Instant::now() >= next_try {
            let mut reachable = true;
            let mut attempt = |result: Result<()>| -> Result<bool> {
                match result {
                    Ok(()) => Ok(true),
                    // Retrying cannot fix credentials or a missing bucket: the worker ends.
                    Err(e) if is_user_error(&e) => Err(e.context(format!(
                        "{} refuses this worker's uploads; its games stay in the spool",
                        store.location()
                    ))),
                    Err(e) => {
                        if failures == 0 {
                            eprintln!(
                                "warning: uploading to {}: {e:#}; games stay in the spool until the store answers",
                                store.location()
                            );
                        }
                        failures += 1;
                        next_try = Instant::now() + backoff(failures);
                        Ok(false)
                    }
                }
            };
            if incarnation.is_none() {
                match claim_incarnation(store, spool.worker(), &note) {
                    Ok(i) => incarnation = Some(i),
                    Err(e) => reachable = attempt(Err(e.into()))?,
                }
            }
            if reachable {
                for chunk in spool.outbox()? {
                    if attempt(spool.upload(store, &chunk).map(|_| ()))? {
                        uploaded += 1;
                    } else {
                        reachable = false;
                        break;
                    }
                }
            }
            if reachable {
                if failures > 0 {
                    eprintln!(
                        "{} answers again: the spooled chunks are uploaded",
                        store.location()
                    );
                }
                failures = 0;
                if last_net_check.elapsed() >= NET_POLL {
                    last_net_check = Instant::now();
                    // A transient failure here is the store going away again: the uploads
                    // notice. A refusal ends the worker: it would play a stale net for good.
                    match remote.newest_net() {
                        Ok(Some(g)) => {
                            let _ = remote.pull_net(g);
                        }
                        Err(e) if is_user_error(&e) => {
                            return Err(e.context(format!(
                                "{} refuses this worker a listing of the run's nets",
                                store.location()
                            )));
                        }
                        _ => {}
                    }
                }
            }
        }
        if stop {
            let empty = spool.outbox()?.is_empty() && spool.pending()?.0 == 0;
            if empty {
                return Ok(uploaded);
            }
            if flush_until.is_some_and(|t| Instant::now() >= t) {
                eprintln!(
                    "warning: {} chunk(s) and {} game(s) stay in the spool: this worker uploads them when it next starts",
                    spool.outbox()?.len(),
                    spool.pending()?.0
                );
                return Ok(uploaded);
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}
