//! Chunks of games on a store: how uploaders name them and claim the names.
//!
//! A worker uploads its finished games in chunks, one object each, under
//! `chunks/<ms>-g<gen>-<worker>-i<incarnation>s<seq>-n<games>-p<positions>.cfzg`
//! ([`ChunkName`]): `ms` is the upload's start by the worker's clock (milliseconds since the
//! Unix epoch, 13 digits, so keys sort by time when clocks agree: the trainer's quick polls
//! list only the newest), and `i<incarnation>s<seq>` says which chunk it is, exactly
//! ([`Bundle::Numbered`]):
//!
//! - An **incarnation** is one start of an uploader, claimed on the store with a
//!   create-if-absent write of `workers/<worker>/<incarnation>` ([`claim_incarnation`]). Two
//!   processes that share a worker name (a cloned cache, a reused `--worker`) never share an
//!   incarnation, so their chunks never share a name.
//! - The **sequence number** counts an incarnation's chunks from 1, without holes: a chunk
//!   takes its number before its first upload try and keeps it through every retry, and
//!   an uploader uploads its chunks one at a time, in order. A chunk uploaded twice (a
//!   retry, a worker killed between its upload and its spool's cleanup) carries one number
//!   and is read once; a hole in a stream says a chunk is still on its way
//!   ([`crate::cursor::ChunkCursor`]).
//!
//! Chunks of older versions carry their bundle time in place of the numbers
//! ([`Bundle::Timed`]) and are read, each once, as before.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::{RunStore, StoreError};

/// The prefix of every chunk.
pub const CHUNKS: &str = "chunks";

/// The prefix of the uploaders' incarnation claims.
pub const WORKERS: &str = "workers";

/// How many taken incarnations [`claim_incarnation`] steps over before it gives up (each
/// step is a claim that another uploader made between this one's listing and its write).
const CLAIM_TRIES: u32 = 64;

/// Which chunk of its uploader a chunk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bundle {
    /// The `seq`th chunk (from 1) of the uploader's `incarnation`.
    Numbered {
        /// The uploader's start that made it ([`claim_incarnation`]).
        incarnation: u32,
        /// Its place among that start's chunks, from 1, without holes.
        seq: u64,
    },
    /// A chunk of an older version, named by when its worker bundled it (milliseconds since
    /// the Unix epoch, unique per worker).
    Timed(u64),
}

impl std::fmt::Display for Bundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bundle::Numbered { incarnation, seq } => write!(f, "i{incarnation}s{seq}"),
            Bundle::Timed(ms) => write!(f, "{ms}"),
        }
    }
}

impl std::str::FromStr for Bundle {
    type Err = ();

    fn from_str(s: &str) -> Result<Bundle, ()> {
        if let Some(rest) = s.strip_prefix('i') {
            let (incarnation, seq) = rest.split_once('s').ok_or(())?;
            let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
            if !digits(incarnation) || !digits(seq) {
                return Err(());
            }
            let seq: u64 = seq.parse().map_err(|_| ())?;
            if seq == 0 {
                return Err(());
            }
            Ok(Bundle::Numbered {
                incarnation: incarnation.parse().map_err(|_| ())?,
                seq,
            })
        } else if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse().map(Bundle::Timed).map_err(|_| ())
        } else {
            Err(())
        }
    }
}

/// What a chunk's key says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkName {
    /// When its upload started, milliseconds since the Unix epoch.
    pub uploaded_ms: u64,
    /// The generation of its games (`games/gen-N`: played by net N-1).
    pub generation: u32,
    /// The worker that played them (letters, digits, `_` and `.`).
    pub worker: String,
    /// Which of the worker's chunks it is.
    pub bundle: Bundle,
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

    /// What names the chunk's games in a trainer's cache and its PGN: `<worker>-<bundle>`
    /// for a numbered chunk, the same whenever it was uploaded (so a chunk uploaded twice is
    /// one file); `<ms>-<worker>-<bundle>` for a timed one, as older versions named them.
    pub fn stem(&self) -> String {
        match self.bundle {
            Bundle::Numbered { .. } => format!("{}-{}", self.worker, self.bundle),
            Bundle::Timed(_) => format!("{}-{}-{}", self.uploaded_ms, self.worker, self.bundle),
        }
    }

    /// The key of the chunk's PGN: `pgn/gen-NNNN/<stem>.pgn`.
    pub fn pgn_key(&self) -> String {
        format!("pgn/gen-{:04}/{}.pgn", self.generation, self.stem())
    }

    /// The stream the chunk belongs to: `<worker>/<incarnation>` for a numbered chunk, the
    /// worker for a timed one (`/` never occurs in a worker name, so the two never meet).
    pub fn stream(&self) -> String {
        match self.bundle {
            Bundle::Numbered { incarnation, .. } => format!("{}/{incarnation}", self.worker),
            Bundle::Timed(_) => self.worker.clone(),
        }
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

/// Claims a new incarnation of `worker` on `store`: the lowest number above every claimed
/// one, taken with a create-if-absent write of `workers/<worker>/<incarnation>` (holding
/// `note`: who claimed it, for people), so that no other process can hold it too.
pub fn claim_incarnation(
    store: &dyn RunStore,
    worker: &str,
    note: &str,
) -> Result<u32, StoreError> {
    let prefix = format!("{WORKERS}/{worker}");
    let first = store
        .list_after(&prefix, None)?
        .iter()
        .filter_map(|k| {
            k.strip_prefix(&prefix)?
                .strip_prefix('/')?
                .parse::<u32>()
                .ok()
        })
        .max()
        .map_or(1, |n| n + 1);
    for next in first..first.saturating_add(CLAIM_TRIES) {
        if store.put_if_absent(&format!("{prefix}/{next:06}"), note.as_bytes())? {
            return Ok(next);
        }
    }
    Err(StoreError::Backend {
        location: format!("{}/{prefix}", store.location()),
        message: format!(
            "{CLAIM_TRIES} incarnations of worker {worker} were claimed by others while this one tried"
        ),
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LocalStore;

    fn name(ms: u64, worker: &str, bundle: Bundle) -> ChunkName {
        ChunkName {
            uploaded_ms: ms,
            generation: 3,
            worker: worker.to_owned(),
            bundle,
            games: 32,
            positions: 4711,
        }
    }

    #[test]
    fn keys_round_trip_and_sort_by_time() {
        let numbered = Bundle::Numbered {
            incarnation: 2,
            seq: 17,
        };
        let a = name(1_700_000_000_000, "host_1.42", numbered);
        assert_eq!(
            a.key(),
            "chunks/1700000000000-g0003-host_1.42-i2s17-n32-p4711.cfzg"
        );
        assert_eq!(ChunkName::parse(&a.key()), Some(a.clone()));
        assert_eq!(a.pgn_key(), "pgn/gen-0003/host_1.42-i2s17.pgn");
        assert_eq!(a.stream(), "host_1.42/2");
        // The same chunk uploaded again later: another key, the same file and stream.
        let again = name(1_700_000_000_900, "host_1.42", numbered);
        assert_ne!(again.key(), a.key());
        assert_eq!((again.stem(), again.stream()), (a.stem(), a.stream()));

        let old = name(
            1_700_000_000_000,
            "host_1.42",
            Bundle::Timed(1_699_999_999_995),
        );
        assert_eq!(
            old.key(),
            "chunks/1700000000000-g0003-host_1.42-1699999999995-n32-p4711.cfzg"
        );
        assert_eq!(ChunkName::parse(&old.key()), Some(old.clone()));
        assert_eq!(
            old.pgn_key(),
            "pgn/gen-0003/1700000000000-host_1.42-1699999999995.pgn"
        );
        assert_eq!(old.stream(), "host_1.42");

        let b = name(1_700_000_000_001, "a", numbered);
        assert!(a.key() < b.key());
        for bad in [
            "chunks/x.cfzg",
            "games/1700000000000-g0003-w-1-n1-p1.cfzg",
            "chunks/1700000000000-g0003-w-x-1-n1-p1.cfzg",
            "chunks/1700000000000-g0003-w-1-n1-p1.pgn",
            "chunks/1700000000000-g0003-w-i2s0-n1-p1.cfzg",
            "chunks/1700000000000-g0003-w-i2s-n1-p1.cfzg",
            "chunks/1700000000000-g0003-w-is3-n1-p1.cfzg",
            "chunks/1700000000000-g0003-w-i2x3-n1-p1.cfzg",
            "chunks/1700000000000-g0003-w-i+2s3-n1-p1.cfzg",
        ] {
            assert_eq!(ChunkName::parse(bad), None, "{bad}");
        }
        assert!(!valid_worker_name("a-b"));
        assert!(!valid_worker_name("a/b"));
        assert!(!valid_worker_name(""));
        assert!(valid_worker_name("gpu_box.7"));
    }

    #[test]
    fn two_claims_of_one_worker_get_two_incarnations() {
        let tmp = tempfile::tempdir().unwrap();
        let store = LocalStore::new(tmp.path());
        assert_eq!(claim_incarnation(&store, "w", "first").unwrap(), 1);
        assert_eq!(claim_incarnation(&store, "w", "clone").unwrap(), 2);
        assert_eq!(claim_incarnation(&store, "other", "x").unwrap(), 1);
        // The next claim is above every claimed one, whoever claimed it.
        store.put_if_absent("workers/w/000003", b"racer").unwrap();
        assert_eq!(claim_incarnation(&store, "w", "late").unwrap(), 4);
        assert_eq!(
            store.get("workers/w/000002").unwrap().as_deref(),
            Some(&b"clone"[..])
        );
    }
}
