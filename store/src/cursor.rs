//! The trainer's cursor over the chunks: which it has consumed, exactly, and where its quick
//! polls start.
//!
//! Consumption is counted per stream ([`ChunkName::stream`]): an uploader's incarnation
//! numbers its chunks 1, 2, 3, ... and uploads them in order, so a stream is a floor (every
//! chunk up to it consumed) and the few consumed above it. The floor moves only over
//! chunks the cursor has seen itself, never because a listing seemed to be complete: a
//! paginated listing is no snapshot, and a chunk that lands in a page already read is simply
//! found by a later poll. A chunk above a hole waits there; a hole older than the wait the
//! caller gives ([`ChunkCursor::check_holes`]) is reported and stepped over, and its chunks
//! are still read if they come after all.
//!
//! Time only makes polls cheap: a quick poll ([`ChunkCursor::poll`]) lists the keys named
//! after the newest upload time seen, less the grace window, and never after this machine's
//! own clock less the grace (so a worker whose clock runs fast cannot move the window past
//! the others). A key named before the window (a worker whose clock runs slow, an upload
//! slower than the window) is found by the next sweep of the streams' heads
//! ([`ChunkCursor::sweep_heads`], [`crate::heads`]), whose cost grows with the number of
//! uploaders, not of chunks; a listing of every chunk ([`ChunkCursor::poll_all`]) is needed
//! only at the start of a trainer without a cursor (or with chunks of older versions) and
//! for a stream further ahead of the cursor than its head reaches.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::chunks::{Bundle, CHUNKS, ChunkName, now_ms};
use crate::heads::{HEADS, StreamHead, parse_head_key};
use crate::{RunStore, StoreError};

/// What a trainer has consumed of the chunks, and where its quick polls start. Serialisable,
/// so a trainer's successor goes on where it stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkCursor {
    /// The newest upload time seen, milliseconds since the Unix epoch (uploaders' clocks).
    newest_ms: u64,
    /// The grace window in milliseconds.
    grace_ms: u64,
    /// Numbered streams, by [`ChunkName::stream`].
    #[serde(default)]
    streams: BTreeMap<String, Stream>,
    /// Timed chunks (of older versions), per worker: every bundle up to this one consumed.
    #[serde(default)]
    bundles: BTreeMap<String, u64>,
    /// Timed chunks, per worker: the bundles consumed above its floor in `bundles`.
    #[serde(default)]
    consumed: BTreeMap<String, BTreeSet<u64>>,
}

/// What is consumed of one numbered stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Stream {
    /// Every chunk up to this number is consumed, or was skipped as a hole.
    floor: u64,
    /// The chunks consumed above `floor` (all above a hole).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    above: BTreeSet<u64>,
    /// When the hole below `above` was first seen, by this machine's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hole_since_ms: Option<u64>,
    /// The holes stepped over, as inclusive ranges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<(u64, u64)>,
    /// Chunks of skipped holes that came after all and were consumed.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    late: BTreeSet<u64>,
}

impl Stream {
    fn consumed(&self, seq: u64) -> bool {
        if seq <= self.floor {
            !self.in_skipped(seq) || self.late.contains(&seq)
        } else {
            self.above.contains(&seq)
        }
    }

    fn in_skipped(&self, seq: u64) -> bool {
        self.skipped.iter().any(|&(a, b)| (a..=b).contains(&seq))
    }

    fn consume(&mut self, seq: u64) {
        if seq <= self.floor {
            if self.in_skipped(seq) {
                self.late.insert(seq);
            }
            return;
        }
        self.above.insert(seq);
        self.settle();
    }

    /// Moves the floor over the consumed chunks right above it.
    fn settle(&mut self) {
        while self.above.first() == Some(&(self.floor + 1)) {
            self.above.pop_first();
            self.floor += 1;
        }
        if self.above.is_empty() {
            self.hole_since_ms = None;
        }
    }

    /// Whether every chunk up to `top` is consumed (a skipped hole's chunks only if they came
    /// after all).
    fn complete_through(&self, top: u64) -> bool {
        self.floor >= top
            && self.above.is_empty()
            && self
                .skipped
                .iter()
                .all(|&(a, b)| self.late.range(a..=b).count() as u64 == b - a + 1)
    }

    /// The hole below the consumed chunks above the floor, if any.
    fn hole(&self) -> Option<(u64, u64)> {
        self.above.first().map(|&first| (self.floor + 1, first - 1))
    }
}

/// A hole in a stream: chunks numbered `first..=last` not seen while a later one was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hole {
    /// The stream ([`ChunkName::stream`]: `<worker>/<incarnation>`).
    pub stream: String,
    /// The first missing chunk's number.
    pub first: u64,
    /// The last missing chunk's number.
    pub last: u64,
    /// How long it has been waited for.
    pub waited: Duration,
}

/// What [`ChunkCursor::check_holes`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoleEvent {
    /// A new hole: its chunks are waited for.
    Waiting(Hole),
    /// A hole waited for as long as allowed, now stepped over (its chunks are still read if
    /// they come).
    Skipped(Hole),
}

/// What a full listing found ([`ChunkCursor::poll_all`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullListing {
    /// How many chunk keys the run holds.
    pub listed: usize,
    /// Those not consumed yet, ascending.
    pub new: Vec<String>,
    /// How many of `new` lie before the quick polls' window.
    pub behind: usize,
}

/// What a sweep of the streams' heads found ([`ChunkCursor::sweep_heads`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeadSweep {
    /// Streams whose heads were listed.
    pub streams: usize,
    /// Heads read: those of streams with chunks the cursor has not consumed.
    pub read: usize,
    /// The unconsumed chunk keys the heads named, ascending.
    pub new: Vec<String>,
    /// Streams with an unconsumed chunk older than their head's oldest key: only a listing
    /// of every chunk finds it.
    pub beyond: Vec<String>,
}

impl ChunkCursor {
    /// A cursor before every chunk, with `grace` for uploads that land late (quick polls
    /// find uploads later than that only at the next sweep of the heads).
    pub fn new(grace: Duration) -> ChunkCursor {
        ChunkCursor {
            grace_ms: grace.as_millis() as u64,
            ..ChunkCursor::default()
        }
    }

    /// The same cursor with `grace` as its window: the window is the reader's choice, not
    /// the state of what was consumed, so a cursor stored by another version reads with the
    /// reader's own.
    pub fn with_grace(mut self, grace: Duration) -> ChunkCursor {
        self.grace_ms = grace.as_millis() as u64;
        self
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

    /// The newest upload time seen, milliseconds since the Unix epoch by the uploaders'
    /// clocks (0 before any chunk).
    pub fn newest_ms(&self) -> u64 {
        self.newest_ms
    }

    /// Whether the quick poll and a sweep of the streams' heads find every chunk this cursor
    /// has not consumed (short of a stream further ahead than its head reaches, which the
    /// sweep reports), so that a trainer's start needs no listing of every chunk: once it
    /// has consumed chunks, none of them timed (the chunks of older versions have no heads).
    pub fn covered_by_heads(&self) -> bool {
        self.newest_ms > 0 && self.bundles.is_empty() && self.consumed.is_empty()
    }

    /// Whether `key`'s chunk was consumed already (under this key or another).
    pub fn consumed(&self, key: &str) -> bool {
        ChunkName::parse(key).is_some_and(|n| self.consumed_name(&n))
    }

    fn consumed_name(&self, n: &ChunkName) -> bool {
        match n.bundle {
            Bundle::Numbered { seq, .. } => self
                .streams
                .get(&n.stream())
                .is_some_and(|s| s.consumed(seq)),
            Bundle::Timed(bundle) => {
                self.bundles
                    .get(&n.worker)
                    .is_some_and(|&floor| bundle <= floor)
                    || self
                        .consumed
                        .get(&n.worker)
                        .is_some_and(|set| set.contains(&bundle))
            }
        }
    }

    /// Marks `key` consumed and moves the window on.
    pub fn consume(&mut self, key: &str) {
        let Some(name) = ChunkName::parse(key) else {
            return;
        };
        self.newest_ms = self.newest_ms.max(name.uploaded_ms);
        if self.consumed_name(&name) {
            return;
        }
        match name.bundle {
            Bundle::Numbered { seq, .. } => {
                self.streams.entry(name.stream()).or_default().consume(seq);
            }
            Bundle::Timed(bundle) => {
                self.consumed.entry(name.worker).or_default().insert(bundle);
            }
        }
    }

    /// Looks at the holes of every stream at `now_ms` (this machine's clock): a new one is
    /// [`HoleEvent::Waiting`]; one seen `wait` or longer ago is stepped over
    /// ([`HoleEvent::Skipped`]). Call it after each poll; an empty answer is the usual one.
    pub fn check_holes(&mut self, now_ms: u64, wait: Duration) -> Vec<HoleEvent> {
        let mut events = Vec::new();
        for (name, stream) in &mut self.streams {
            let Some((first, last)) = stream.hole() else {
                continue;
            };
            let hole = |since: u64| Hole {
                stream: name.clone(),
                first,
                last,
                waited: Duration::from_millis(now_ms.saturating_sub(since)),
            };
            match stream.hole_since_ms {
                None => {
                    stream.hole_since_ms = Some(now_ms);
                    events.push(HoleEvent::Waiting(hole(now_ms)));
                }
                Some(since) if now_ms.saturating_sub(since) >= wait.as_millis() as u64 => {
                    events.push(HoleEvent::Skipped(hole(since)));
                    stream.skipped.push((first, last));
                    stream.floor = last;
                    stream.settle();
                    // A further hole higher up is waited for from now.
                    stream.hole_since_ms = stream.hole().map(|_| now_ms);
                }
                Some(_) => {}
            }
        }
        events
    }

    /// A quick poll: the chunk keys after [`ChunkCursor::list_from`] not consumed yet,
    /// ascending (one listing request). The caller consumes each once it has what it needs
    /// of it.
    pub fn poll(&self, store: &dyn RunStore) -> Result<Vec<String>, StoreError> {
        let keys = store.list_after(CHUNKS, self.list_from().as_deref())?;
        Ok(self.new_among(keys))
    }

    /// A full listing: the chunk keys of the run not consumed yet, ascending, and how many of
    /// these lie before [`ChunkCursor::list_from`] (missed by the quick polls). Costs a
    /// listing request per thousand chunks of the run.
    pub fn poll_all(&self, store: &dyn RunStore) -> Result<FullListing, StoreError> {
        let all = store.list_after(CHUNKS, None)?;
        let listed = all.len();
        let from = self.list_from();
        let new = self.new_among(all);
        let behind = new
            .iter()
            .filter(|k| from.as_deref().is_some_and(|f| k.as_str() <= f))
            .count();
        Ok(FullListing {
            listed,
            new,
            behind,
        })
    }

    /// A sweep of the streams' heads ([`crate::heads`]): one listing of `heads/` (a request
    /// per thousand streams), then a read of the head of each stream with chunks not
    /// consumed. Returns the unconsumed keys the heads name and the streams that need more.
    pub fn sweep_heads(&self, store: &dyn RunStore) -> Result<HeadSweep, StoreError> {
        let mut tops: BTreeMap<String, (u64, String)> = BTreeMap::new();
        for key in store.list_after(HEADS, None)? {
            if let Some(h) = parse_head_key(&key) {
                let top = tops.entry(h.stream).or_insert((0, String::new()));
                if h.seq >= top.0 {
                    *top = (h.seq, key);
                }
            }
        }
        let mut sweep = HeadSweep {
            streams: tops.len(),
            ..HeadSweep::default()
        };
        for (stream, (top, key)) in tops {
            let known = self.streams.get(&stream);
            if known.is_some_and(|s| s.complete_through(top)) {
                continue;
            }
            // Replaced since the listing: the next sweep reads its successor.
            let Some(bytes) = store.get(&key)? else {
                continue;
            };
            sweep.read += 1;
            // A head that does not parse names nothing: the stream needs the full listing.
            let head: StreamHead = serde_json::from_slice(&bytes).unwrap_or_default();
            let mut reach = top + 1;
            for k in head.keys {
                let Some(name) = ChunkName::parse(&k) else {
                    continue;
                };
                let Bundle::Numbered { seq, .. } = name.bundle else {
                    continue;
                };
                if name.stream() != stream {
                    continue;
                }
                reach = reach.min(seq);
                if !self.consumed_name(&name) {
                    sweep.new.push(k);
                }
            }
            if known.map_or(0, |s| s.floor) + 1 < reach {
                sweep.beyond.push(stream);
            }
        }
        sweep.new.sort();
        sweep.new.dedup();
        Ok(sweep)
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

    fn numbered(ms: u64, worker: &str, incarnation: u32, seq: u64) -> String {
        ChunkName {
            uploaded_ms: ms,
            generation: 3,
            worker: worker.to_owned(),
            bundle: Bundle::Numbered { incarnation, seq },
            games: 32,
            positions: 4711,
        }
        .key()
    }

    fn timed(ms: u64, worker: &str, bundle: u64) -> String {
        ChunkName {
            uploaded_ms: ms,
            generation: 3,
            worker: worker.to_owned(),
            bundle: Bundle::Timed(bundle),
            games: 32,
            positions: 4711,
        }
        .key()
    }

    #[test]
    fn each_chunk_is_consumed_once_and_the_floor_moves_only_over_consumed_ones() {
        let mut c = ChunkCursor::new(Duration::from_secs(10));
        assert_eq!(c.list_from(), None);
        let a1 = numbered(1_000_000, "a", 1, 1);
        let a2 = numbered(1_001_000, "a", 1, 2);
        let a3 = numbered(1_002_000, "a", 1, 3);
        c.consume(&a1);
        c.consume(&a3);
        assert!(c.consumed(&a1) && c.consumed(&a3) && !c.consumed(&a2));
        assert_eq!(c.streams["a/1"].floor, 1);
        // The same chunk uploaded again later, and another incarnation's chunk 2.
        assert!(c.consumed(&numbered(1_005_000, "a", 1, 3)));
        assert!(!c.consumed(&numbered(1_005_000, "a", 2, 2)));
        c.consume(&a2);
        assert_eq!(c.streams["a/1"].floor, 3);
        assert!(c.streams["a/1"].above.is_empty());
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<ChunkCursor>(&json).unwrap(), c);
    }

    #[test]
    fn a_hole_is_waited_for_then_reported_skipped_and_still_read_if_it_comes() {
        let mut c = ChunkCursor::new(Duration::from_secs(10));
        let wait = Duration::from_secs(600);
        c.consume(&numbered(1_000_000, "w", 1, 1));
        assert!(c.check_holes(5_000_000, wait).is_empty());
        c.consume(&numbered(1_003_000, "w", 1, 4));
        let hole = Hole {
            stream: "w/1".into(),
            first: 2,
            last: 3,
            waited: Duration::ZERO,
        };
        assert_eq!(
            c.check_holes(5_000_000, wait),
            vec![HoleEvent::Waiting(hole.clone())]
        );
        assert!(c.check_holes(5_000_000 + 599_999, wait).is_empty());
        assert!(!c.consumed(&numbered(1_001_000, "w", 1, 2)));
        assert_eq!(
            c.check_holes(5_600_000, wait),
            vec![HoleEvent::Skipped(Hole {
                waited: wait,
                ..hole
            })]
        );
        assert_eq!(c.streams["w/1"].floor, 4);
        assert!(c.check_holes(9_000_000, wait).is_empty());
        // Chunk 3 comes after all: read once.
        let late = numbered(1_002_000, "w", 1, 3);
        assert!(!c.consumed(&late));
        c.consume(&late);
        assert!(c.consumed(&late));
        assert!(!c.consumed(&numbered(1_001_000, "w", 1, 2)));
        // Chunks above the floor keep coming as before.
        c.consume(&numbered(1_004_000, "w", 1, 5));
        assert_eq!(c.streams["w/1"].floor, 5);
    }

    #[test]
    fn a_sweep_of_the_heads_finds_the_chunks_the_quick_polls_missed() {
        use crate::heads::{HEAD_KEYS, head_key, record_upload};
        let dir = tempfile::tempdir().unwrap();
        let store = crate::LocalStore::new(dir.path());
        let upload = |ms: u64, worker: &str, seq: u64| {
            let key = numbered(ms, worker, 1, seq);
            let name = ChunkName::parse(&key).unwrap();
            store.put(&key, b"games").unwrap();
            record_upload(&store, &name, &key).unwrap();
            key
        };
        let now = now_ms();
        let mut c = ChunkCursor::new(Duration::from_secs(300));
        let a1 = upload(now, "a", 1);
        let a2 = upload(now + 1, "a", 2);
        // Worker b's clock is an hour slow: its chunks lie before the quick polls' window.
        let b1 = upload(now - 3_600_000, "b", 1);
        let b2 = upload(now - 3_599_000, "b", 2);
        c.consume(&a1);
        c.consume(&a2);
        assert!(
            c.poll(&store).unwrap().is_empty(),
            "b lies before the window"
        );
        let sweep = c.sweep_heads(&store).unwrap();
        assert_eq!(sweep.streams, 2);
        assert_eq!(sweep.read, 1, "a's head is not read: all of a is consumed");
        assert_eq!(sweep.new, vec![b1.clone(), b2.clone()]);
        assert!(sweep.beyond.is_empty());
        c.consume(&b1);
        c.consume(&b2);
        assert_eq!(c.sweep_heads(&store).unwrap().read, 0);
        // A stream further ahead than its head reaches needs the full listing.
        for seq in 3..=HEAD_KEYS as u64 + 5 {
            upload(now - 3_500_000 + seq, "b", seq);
        }
        let sweep = c.sweep_heads(&store).unwrap();
        assert_eq!(sweep.new.len(), HEAD_KEYS);
        assert_eq!(sweep.beyond, vec!["b/1".to_string()]);
        let all = c.poll_all(&store).unwrap();
        assert_eq!(all.new.len(), HEAD_KEYS + 3);
        for k in all.new {
            c.consume(&k);
        }
        let sweep = c.sweep_heads(&store).unwrap();
        assert!(sweep.new.is_empty() && sweep.beyond.is_empty());
        assert_eq!(
            store.list_after(HEADS, None).unwrap(),
            vec![head_key("a", 1, 2), head_key("b", 1, HEAD_KEYS as u64 + 5)]
        );
    }

    #[test]
    fn a_fast_clock_does_not_move_the_window_past_now() {
        let now = now_ms();
        let mut c = ChunkCursor::new(Duration::from_secs(300));
        // A worker 10 minutes fast.
        c.consume(&numbered(now + 600_000, "fast", 1, 1));
        let from = c.list_from().unwrap();
        let normal = numbered(now - 1_000, "normal", 1, 1);
        assert!(
            normal.as_str() > from.as_str(),
            "{normal} listed after {from}"
        );
    }

    #[test]
    fn a_stored_cursor_reads_with_the_window_of_its_reader() {
        let now = now_ms();
        let mut c = ChunkCursor::new(Duration::from_secs(300));
        c.consume(&numbered(now - 1_000, "a", 1, 1));
        let stored: ChunkCursor =
            serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(stored.grace(), Duration::from_secs(300));
        let read = stored.with_grace(Duration::from_secs(30));
        assert_eq!(read.grace(), Duration::from_secs(30));
        // The quick poll starts 30 s before the newest upload, not 300 s.
        let from = read.list_from().unwrap();
        let (before, inside) = (
            numbered(now - 61_000, "b", 1, 1),
            numbered(now - 20_000, "b", 1, 2),
        );
        assert!(before.as_str() < from.as_str(), "{before} after {from}");
        assert!(inside.as_str() > from.as_str(), "{inside} before {from}");
        // What was consumed stays consumed.
        assert!(read.consumed(&numbered(now - 1_000, "a", 1, 1)));
        assert!(!read.consumed(&inside));
    }

    #[test]
    fn timed_chunks_of_older_versions_are_consumed_once() {
        let old = r#"{"newest_ms":1000000,"seen":["chunks/0000001000000-g0003-a-999995-n32-p4711.cfzg"],"grace_ms":10000,"bundles":{"a":999995}}"#;
        let mut c: ChunkCursor = serde_json::from_str(old).unwrap();
        assert!(c.consumed(&timed(1_000_000, "a", 999_995)));
        let next = timed(1_000_001, "a", 999_996);
        assert!(!c.consumed(&next));
        c.consume(&next);
        assert!(c.consumed(&next));
        // The same bundle uploaded again later.
        assert!(c.consumed(&timed(1_030_000, "a", 999_996)));
    }
}
