//! Chunks of games on a store: how workers name them and how a trainer finds the new ones.
//!
//! A worker uploads its finished games in chunks, one object each, under
//! `chunks/<ms>-g<gen>-<worker>-<bundle>-n<games>-p<positions>.cfzg` ([`ChunkName`]): `ms` is
//! the upload's start by the worker's clock (milliseconds since the Unix epoch, 13 digits, so
//! keys sort by time when clocks agree), `bundle` the moment the worker bundled the games
//! (unique and increasing per worker, kept when an upload is retried later). Names never
//! collide: a worker name is unique in a run (the default one carries a random part) and a
//! worker bundles at most one chunk a millisecond.
//!
//! The trainer's [`ChunkCursor`] consumes each worker's bundles exactly once, whatever the
//! clocks say. Its quick polls list only the keys of the last grace window (one request,
//! however many chunks the run holds); a full listing at least once a minute finds whatever
//! the quick polls cannot see (a slow clock, an upload slower than the window), so nothing a
//! worker uploads is ever skipped.

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

/// The environment variable that moves this process's chunk clock ([`now_ms`]) by a signed
/// number of milliseconds. For tests only: it makes a worker behave as one on a machine whose
/// clock is wrong.
pub const CLOCK_OFFSET_VAR: &str = "CFZERO_TEST_CLOCK_OFFSET_MS";

/// Milliseconds since the Unix epoch, now, by this machine's clock (moved by
/// [`CLOCK_OFFSET_VAR`] if set).
pub fn now_ms() -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let offset: i64 = std::env::var(CLOCK_OFFSET_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    now.saturating_add_signed(offset)
}

/// What a trainer has consumed of the chunks, and where its quick polls start. Serialisable,
/// so a trainer's successor goes on where it stopped.
///
/// What is consumed is exact: each worker's bundles, by name (a bundle uploaded twice, by a
/// worker killed between its upload and its spool's cleanup, is consumed once). Time only
/// makes polls cheap: a quick poll ([`ChunkCursor::poll`]) lists the keys named after the
/// newest upload time seen, less the grace window, and never after this machine's own clock
/// less the grace (so a worker whose clock runs fast cannot move the window past the others).
/// A key named before the window (a worker whose clock runs slow, an upload slower than the
/// window) is missed by quick polls and found by the next full listing
/// ([`ChunkCursor::poll_all`]), which lists every chunk and cannot skip one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkCursor {
    /// The newest upload time seen, milliseconds since the Unix epoch (uploaders' clocks).
    newest_ms: u64,
    /// The grace window in milliseconds.
    grace_ms: u64,
    /// Per worker, every bundle up to this one is consumed (or never was on the store): set
    /// by a full listing that found them all consumed, and by cursors of older versions (which
    /// kept only each worker's newest bundle).
    #[serde(default)]
    bundles: BTreeMap<String, u64>,
    /// Per worker, the bundles consumed after its floor in `bundles`.
    #[serde(default)]
    consumed: BTreeMap<String, BTreeSet<u64>>,
}

/// What a full listing found ([`ChunkCursor::poll_all`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullListing {
    /// Every chunk key of the run, ascending.
    pub all: Vec<String>,
    /// Those not consumed yet.
    pub new: Vec<String>,
    /// How many of `new` lie before the quick polls' window.
    pub behind: usize,
}

impl ChunkCursor {
    /// A cursor before every chunk, with `grace` for uploads that land late (quick polls
    /// find uploads later than that only at the next full listing).
    pub fn new(grace: Duration) -> ChunkCursor {
        ChunkCursor {
            newest_ms: 0,
            grace_ms: grace.as_millis() as u64,
            bundles: BTreeMap::new(),
            consumed: BTreeMap::new(),
        }
    }

    /// The grace window.
    pub fn grace(&self) -> Duration {
        Duration::from_millis(self.grace_ms)
    }

    /// The key a quick poll lists after: the grace window before the newest upload time seen
    /// or before now, whichever is earlier (`None` before any chunk).
    pub fn list_from(&self) -> Option<String> {
        (self.newest_ms > 0).then(|| {
            let anchor = self.newest_ms.min(now_ms());
            format!("{CHUNKS}/{:013}", anchor.saturating_sub(self.grace_ms))
        })
    }

    /// Whether `key`'s bundle was consumed already (under this key or another).
    pub fn consumed(&self, key: &str) -> bool {
        ChunkName::parse(key).is_some_and(|n| {
            self.bundles
                .get(&n.worker)
                .is_some_and(|&floor| n.bundle <= floor)
                || self
                    .consumed
                    .get(&n.worker)
                    .is_some_and(|set| set.contains(&n.bundle))
        })
    }

    /// Marks `key` consumed and moves the window on.
    pub fn consume(&mut self, key: &str) {
        if let Some(name) = ChunkName::parse(key) {
            self.newest_ms = self.newest_ms.max(name.uploaded_ms);
            if !self.consumed(key) {
                self.consumed
                    .entry(name.worker)
                    .or_default()
                    .insert(name.bundle);
            }
        }
    }

    /// A quick poll: the chunk keys after [`ChunkCursor::list_from`] not consumed yet,
    /// ascending (one listing request). The caller consumes each once it has what it needs
    /// of it.
    pub fn poll(&self, store: &dyn RunStore) -> Result<Vec<String>, StoreError> {
        let keys = store.list_after(CHUNKS, self.list_from().as_deref())?;
        Ok(self.new_among(keys))
    }

    /// A full listing: every chunk key of the run (for [`ChunkCursor::compact`]), those not
    /// consumed yet, ascending, and how many of these lie before [`ChunkCursor::list_from`]
    /// (missed by the quick polls). Costs a listing request per thousand chunks of the run.
    pub fn poll_all(&self, store: &dyn RunStore) -> Result<FullListing, StoreError> {
        let all = store.list_after(CHUNKS, None)?;
        let from = self.list_from();
        let new = self.new_among(all.clone());
        let behind = new
            .iter()
            .filter(|k| from.as_deref().is_some_and(|f| k.as_str() <= f))
            .count();
        Ok(FullListing { all, new, behind })
    }

    /// After a full listing (`listed`, every chunk key of the run): each worker's floor moves up to
    /// its newest bundle below which the listing held none unconsumed, so that the cursor
    /// stays small however long the run. A worker uploads its bundles in order, one at a
    /// time, so no bundle of it below one on the store can still arrive (only again).
    pub fn compact(&mut self, listed: &[String]) {
        let mut by_worker: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for n in listed.iter().filter_map(|k| ChunkName::parse(k)) {
            by_worker.entry(n.worker).or_default().push(n.bundle);
        }
        for (worker, mut bundles) in by_worker {
            bundles.sort_unstable();
            let Some(set) = self.consumed.get_mut(&worker) else {
                continue;
            };
            let floor = self.bundles.get(&worker).copied();
            let mut new_floor = floor;
            for b in bundles {
                if floor.is_some_and(|f| b <= f) || set.contains(&b) {
                    new_floor = Some(new_floor.map_or(b, |f| f.max(b)));
                } else {
                    break;
                }
            }
            if let Some(f) = new_floor {
                self.bundles.insert(worker.clone(), f);
                *set = set.split_off(&(f + 1));
            }
        }
        self.consumed.retain(|_, set| !set.is_empty());
    }

    /// The parsed, unconsumed keys of `keys`, ascending.
    fn new_among(&self, keys: Vec<String>) -> Vec<String> {
        keys.into_iter()
            .filter(|k| ChunkName::parse(k).is_some() && !self.consumed(k))
            .collect()
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
    fn the_cursor_consumes_each_bundle_once_and_stays_small() {
        let mut c = ChunkCursor::new(Duration::from_secs(10));
        assert_eq!(c.list_from(), None);
        let early = name(1_000_000, "a").key();
        let late_but_older = name(995_000, "b").key();
        c.consume(&early);
        assert!(c.consumed(&early));
        assert!(!c.consumed(&late_but_older));
        c.consume(&late_but_older);
        assert!(c.consumed(&late_but_older));
        // A key long before the window is not consumed because of where it lies.
        let very_late = name(500_000, "c").key();
        assert!(!c.consumed(&very_late));
        // The same bundle uploaded again later (a worker killed before it cleared its spool).
        let mut again = name(1_030_000, "a");
        again.bundle = 1_000_000 - 5;
        assert!(c.consumed(&again.key()));
        // A full listing that found everything consumed folds each worker's bundles into a
        // floor; what lies above an unconsumed one stays listed.
        let a2 = name(1_040_000, "a").key();
        let a3 = name(1_050_000, "a").key();
        c.consume(&a3);
        c.compact(&[
            early.clone(),
            a2.clone(),
            a3.clone(),
            late_but_older.clone(),
        ]);
        assert_eq!(c.bundles.get("a"), Some(&(1_000_000 - 5)));
        assert_eq!(c.bundles.get("b"), Some(&(995_000 - 5)));
        assert!(c.consumed(&early) && c.consumed(&a3) && !c.consumed(&a2));
        c.consume(&a2);
        c.compact(&[
            early.clone(),
            a2.clone(),
            a3.clone(),
            late_but_older.clone(),
        ]);
        assert_eq!(c.bundles.get("a"), Some(&(1_050_000 - 5)));
        assert!(c.consumed.is_empty(), "{:?}", c.consumed);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<ChunkCursor>(&json).unwrap(), c);
    }

    #[test]
    fn a_fast_clock_does_not_move_the_window_past_now() {
        let now = now_ms();
        let mut c = ChunkCursor::new(Duration::from_secs(300));
        // A worker 10 minutes fast.
        c.consume(&name(now + 600_000, "fast").key());
        let from = c.list_from().unwrap();
        let normal = name(now - 1_000, "normal").key();
        assert!(
            normal.as_str() > from.as_str(),
            "{normal} listed after {from}"
        );
    }

    #[test]
    fn a_cursor_of_an_older_version_reads_as_floors() {
        let old = r#"{"newest_ms":1000000,"seen":["chunks/0000001000000-g0003-a-999995-n32-p4711.cfzg"],"grace_ms":10000,"bundles":{"a":999995}}"#;
        let c: ChunkCursor = serde_json::from_str(old).unwrap();
        assert!(c.consumed(&name(1_000_000, "a").key()));
        assert!(!c.consumed(&name(1_000_001, "a").key()));
    }
}
