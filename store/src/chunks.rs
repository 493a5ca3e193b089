//! Chunks of games on a store: how workers name them and how a trainer finds the new ones.
//!
//! A worker uploads its finished games in chunks, one object each, under
//! `chunks/<ms>-g<gen>-<worker>-<bundle>-n<games>-p<positions>.cfzg` ([`ChunkName`]): `ms` is
//! the upload's start (milliseconds since the Unix epoch, 13 digits, so keys sort by time),
//! `bundle` the moment the worker bundled the games (unique and increasing per worker, kept
//! when an upload is retried later). Names never collide: a worker name is unique in a run
//! and a worker bundles at most one chunk a millisecond.
//!
//! The trainer lists only the keys after its cursor ([`ChunkCursor`]), less a grace window:
//! an upload that started before a key the trainer has seen can land after it, and the
//! window (and the keys seen inside it) keeps it from being missed or read twice. A poll
//! therefore costs one listing of the keys of the last [`ChunkCursor::grace`], however many
//! chunks the run already holds.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::{RunStore, StoreError};

/// The prefix of every chunk.
pub const CHUNKS: &str = "chunks";

/// What a chunk's key says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkName {
    /// When its upload started, milliseconds since the Unix epoch.
    pub uploaded_ms: u64,
    /// The generation of its games (`games/gen-N`: played by net N-1).
    pub generation: u32,
    /// The worker that played them (letters, digits, `_` and `.`).
    pub worker: String,
    /// When the worker bundled them, milliseconds since the Unix epoch.
    pub bundle: u64,
    /// Games in it.
    pub games: u32,
    /// Positions in those games.
    pub positions: u64,
}

/// Whether `name` is a valid worker name: letters, digits, `_` and `.` (no `-`, which
/// separates the fields of a chunk's key, and nothing a URL or a file name would mangle).
pub fn valid_worker_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

impl ChunkName {
    /// The object key.
    pub fn key(&self) -> String {
        format!(
            "{CHUNKS}/{:013}-g{:04}-{}-{}-n{}-p{}.cfzg",
            self.uploaded_ms, self.generation, self.worker, self.bundle, self.games, self.positions
        )
    }

    /// `<ms>-<worker>-<bundle>`: what names the chunk's games in a trainer's cache and its PGN.
    pub fn stem(&self) -> String {
        format!("{}-{}-{}", self.uploaded_ms, self.worker, self.bundle)
    }

    /// The key of the chunk's PGN: `pgn/gen-NNNN/<stem>.pgn`.
    pub fn pgn_key(&self) -> String {
        format!("pgn/gen-{:04}/{}.pgn", self.generation, self.stem())
    }

    /// Reads a key written by [`ChunkName::key`]; `None` for anything else.
    pub fn parse(key: &str) -> Option<ChunkName> {
        let stem = key.strip_prefix(CHUNKS)?.strip_prefix('/')?;
        let stem = stem.strip_suffix(".cfzg")?;
        let mut parts = stem.split('-');
        let uploaded_ms = parts.next()?.parse().ok()?;
        let generation = parts.next()?.strip_prefix('g')?.parse().ok()?;
        let worker = parts.next()?.to_owned();
        let bundle = parts.next()?.parse().ok()?;
        let games = parts.next()?.strip_prefix('n')?.parse().ok()?;
        let positions = parts.next()?.strip_prefix('p')?.parse().ok()?;
        if parts.next().is_some() || !valid_worker_name(&worker) {
            return None;
        }
        Some(ChunkName {
            uploaded_ms,
            generation,
            worker,
            bundle,
            games,
            positions,
        })
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Where a trainer's polls of the chunks start, and the keys it has consumed inside the
/// grace window. Serialisable, so a trainer's successor goes on where it stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkCursor {
    /// The newest upload time seen, milliseconds since the Unix epoch.
    newest_ms: u64,
    /// Keys consumed whose upload time lies inside the grace window before `newest_ms`.
    seen: BTreeSet<String>,
    /// The grace window in milliseconds.
    grace_ms: u64,
    /// Each worker's newest bundle consumed: a worker uploads its bundles in order, so an
    /// older or equal one is a chunk uploaded twice (killed between the upload and the
    /// removal from its spool, it uploads the chunk again at its next start).
    #[serde(default)]
    bundles: BTreeMap<String, u64>,
}

impl ChunkCursor {
    /// A cursor before every chunk, with `grace` for uploads that land late (it must exceed
    /// the longest upload plus the clock differences between the workers' machines).
    pub fn new(grace: Duration) -> ChunkCursor {
        ChunkCursor {
            newest_ms: 0,
            seen: BTreeSet::new(),
            grace_ms: grace.as_millis() as u64,
            bundles: BTreeMap::new(),
        }
    }

    /// The grace window.
    pub fn grace(&self) -> Duration {
        Duration::from_millis(self.grace_ms)
    }

    /// The key a poll lists after: before every chunk that started uploading within the
    /// grace window of the newest one seen (`None` before any).
    pub fn list_from(&self) -> Option<String> {
        (self.newest_ms > 0).then(|| {
            format!(
                "{CHUNKS}/{:013}",
                self.newest_ms.saturating_sub(self.grace_ms)
            )
        })
    }

    /// Whether `key` was consumed already (or lies before the window, where it was), or is
    /// a second upload of a bundle consumed already.
    pub fn consumed(&self, key: &str) -> bool {
        self.seen.contains(key)
            || self.list_from().is_some_and(|from| key <= from.as_str())
            || ChunkName::parse(key).is_some_and(|n| {
                self.bundles
                    .get(&n.worker)
                    .is_some_and(|&newest| n.bundle <= newest)
            })
    }

    /// Marks `key` consumed and moves the window on.
    pub fn consume(&mut self, key: &str) {
        if let Some(name) = ChunkName::parse(key) {
            self.newest_ms = self.newest_ms.max(name.uploaded_ms);
            let newest = self.bundles.entry(name.worker).or_insert(name.bundle);
            *newest = (*newest).max(name.bundle);
        }
        self.seen.insert(key.to_owned());
        // Keys before the window are never listed again: forget them.
        if let Some(from) = self.list_from() {
            self.seen = self.seen.split_off(&from);
        }
    }

    /// One poll: the chunk keys not consumed yet, ascending (one listing request). The
    /// caller consumes each once it has what it needs of it.
    pub fn poll(&self, store: &dyn RunStore) -> Result<Vec<String>, StoreError> {
        let keys = store.list_after(CHUNKS, self.list_from().as_deref())?;
        Ok(keys
            .into_iter()
            .filter(|k| ChunkName::parse(k).is_some() && !self.consumed(k))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(ms: u64, worker: &str) -> ChunkName {
        ChunkName {
            uploaded_ms: ms,
            generation: 3,
            worker: worker.to_owned(),
            bundle: ms - 5,
            games: 32,
            positions: 4711,
        }
    }

    #[test]
    fn keys_round_trip_and_sort_by_time() {
        let a = name(1_700_000_000_000, "host_1.42");
        assert_eq!(
            a.key(),
            "chunks/1700000000000-g0003-host_1.42-1699999999995-n32-p4711.cfzg"
        );
        assert_eq!(ChunkName::parse(&a.key()), Some(a.clone()));
        assert_eq!(
            a.pgn_key(),
            "pgn/gen-0003/1700000000000-host_1.42-1699999999995.pgn"
        );
        let b = name(1_700_000_000_001, "a");
        assert!(a.key() < b.key());
        for bad in [
            "chunks/x.cfzg",
            "games/1700000000000-g0003-w-1-n1-p1.cfzg",
            "chunks/1700000000000-g0003-w-x-1-n1-p1.cfzg",
            "chunks/1700000000000-g0003-w-1-n1-p1.pgn",
        ] {
            assert_eq!(ChunkName::parse(bad), None, "{bad}");
        }
        assert!(!valid_worker_name("a-b"));
        assert!(!valid_worker_name(""));
        assert!(valid_worker_name("gpu_box.7"));
    }

    #[test]
    fn the_cursor_keeps_late_uploads_and_forgets_old_keys() {
        let mut c = ChunkCursor::new(Duration::from_secs(10));
        assert_eq!(c.list_from(), None);
        let early = name(1_000_000, "a").key();
        let late_but_older = name(995_000, "b").key();
        c.consume(&early);
        assert!(c.consumed(&early));
        // Started 5 s before the newest key seen: inside the window, so not consumed yet.
        assert!(!c.consumed(&late_but_older));
        c.consume(&late_but_older);
        assert!(c.consumed(&late_but_older));
        // 20 s later both are before the window: forgotten from the set, still consumed.
        c.consume(&name(1_020_000, "a").key());
        assert_eq!(c.seen.len(), 1);
        assert!(c.consumed(&early) && c.consumed(&late_but_older));
        // The same bundle uploaded again later (a worker killed before it cleared its spool).
        let mut again = name(1_030_000, "a");
        again.bundle = 1_020_000 - 5;
        assert!(c.consumed(&again.key()));
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<ChunkCursor>(&json).unwrap(), c);
    }
}
