//! Each stream's newest chunks, written beside them, so that a trainer finds the chunks its
//! quick polls missed without listing every chunk of the run.
//!
//! After each chunk of a numbered stream ([`ChunkName::stream`]) an uploader writes the
//! stream's **head**, `heads/<worker>/<incarnation>/<seq>` (the chunk's number, zero-padded),
//! holding the keys of the stream's newest [`HEAD_KEYS`] chunks, and removes the head it
//! replaces. Listing `heads/` therefore costs a request per thousand streams (uploader
//! starts), however many chunks the run holds, and its keys alone say how far each stream
//! has come: the trainer reads a head only for a stream that has chunks it has not consumed,
//! and takes their keys from it. Only a stream more than [`HEAD_KEYS`] chunks ahead of the
//! trainer (a trainer stopped for long) needs a listing of every chunk again.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::chunks::{Bundle, ChunkName};
use crate::{RunStore, StoreError};

/// The prefix of the streams' heads.
pub const HEADS: &str = "heads";

/// How many of its newest chunk keys a stream's head holds.
pub const HEAD_KEYS: usize = 64;

/// What a head holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamHead {
    /// The keys of the stream's newest chunks, oldest first.
    pub keys: Vec<String>,
}

/// Where a stream stands, as the key of its head says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadKey {
    /// The stream, `<worker>/<incarnation>` as [`ChunkName::stream`] writes it.
    pub stream: String,
    /// The number of its newest chunk.
    pub seq: u64,
}

/// The prefix of the heads of `worker`'s `incarnation`.
fn stream_prefix(worker: &str, incarnation: u32) -> String {
    format!("{HEADS}/{worker}/{incarnation:06}")
}

/// The key of the head written after chunk `seq` of `worker`'s `incarnation`.
pub fn head_key(worker: &str, incarnation: u32, seq: u64) -> String {
    format!("{}/{seq:012}", stream_prefix(worker, incarnation))
}

/// Reads a key written by [`head_key`]; `None` for anything else.
pub fn parse_head_key(key: &str) -> Option<HeadKey> {
    let rest = key.strip_prefix(HEADS)?.strip_prefix('/')?;
    let mut parts = rest.split('/');
    let worker = parts.next()?;
    let incarnation: u32 = parts.next()?.parse().ok()?;
    let seq: u64 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || !crate::chunks::valid_worker_name(worker) || seq == 0 {
        return None;
    }
    Some(HeadKey {
        stream: format!("{worker}/{incarnation}"),
        seq,
    })
}

/// Records on `store` that the chunk `name` (uploaded as `key`) is there: writes its
/// stream's new head with the newest [`HEAD_KEYS`] keys, then removes the heads it replaces.
/// A timed chunk (of an older version) has no stream and no head. A head written for a
/// number below the stream's newest (a retried upload of an older chunk) adds its key to
/// the newest head instead. This one-off form lists and reads the stream's heads first; an
/// uploader of many chunks keeps a [`HeadWriter`].
pub fn record_upload(store: &dyn RunStore, name: &ChunkName, key: &str) -> Result<(), StoreError> {
    HeadWriter::default().record_upload(store, name, key)
}

/// Writes the heads of the streams one uploader uploads to, remembering the head it wrote
/// last for each: a stream's later chunks then cost two requests each (the new head and the
/// old one's removal) instead of four (a listing and a read besides). A stream it has not
/// written in this process (chunks bundled before a restart, under an older incarnation),
/// or whose last write failed part way, is listed and read again, which also removes the
/// heads a killed uploader left.
#[derive(Debug, Default)]
pub struct HeadWriter {
    /// Each stream's last written head: its key and what it holds.
    written: HashMap<String, (String, StreamHead)>,
}

impl HeadWriter {
    /// [`record_upload`] for this uploader: see there.
    pub fn record_upload(
        &mut self,
        store: &dyn RunStore,
        name: &ChunkName,
        key: &str,
    ) -> Result<(), StoreError> {
        let Bundle::Numbered { incarnation, seq } = name.bundle else {
            return Ok(());
        };
        let stream = name.stream();
        // Taken out while the store is written: a failed write leaves nothing remembered,
        // so that the next chunk of the stream lists its heads again.
        let (existing, newest_seq, mut head) = match self.written.remove(&stream) {
            Some((written, head)) => {
                let top = parse_head_key(&written).map(|h| h.seq);
                (vec![written], top, head)
            }
            None => read_heads(store, &name.worker, incarnation)?,
        };
        // A chunk uploaded twice keeps one key in the head: the newest upload's.
        let stem = name.stem();
        head.keys
            .retain(|k| ChunkName::parse(k).is_none_or(|n| n.stem() != stem));
        head.keys.push(key.to_owned());
        head.keys
            .sort_by_key(|k| ChunkName::parse(k).map(|n| n.bundle));
        let excess = head.keys.len().saturating_sub(HEAD_KEYS);
        head.keys.drain(..excess);
        let top = newest_seq.map_or(seq, |s| s.max(seq));
        let bytes = serde_json::to_vec(&head).expect("a head serialises");
        let written = head_key(&name.worker, incarnation, top);
        store.put(&written, &bytes)?;
        for k in existing {
            if k != written {
                store.delete(&k)?;
            }
        }
        self.written.insert(stream, (written, head));
        Ok(())
    }
}

/// The keys of the heads of `worker`'s `incarnation` on `store`, the newest one's number and
/// what it holds (empty if there is none, or it cannot be read).
fn read_heads(
    store: &dyn RunStore,
    worker: &str,
    incarnation: u32,
) -> Result<(Vec<String>, Option<u64>, StreamHead), StoreError> {
    let existing: Vec<(u64, String)> = store
        .list_after(&stream_prefix(worker, incarnation), None)?
        .into_iter()
        .filter_map(|k| parse_head_key(&k).map(|h| (h.seq, k)))
        .collect();
    let newest = existing.iter().max_by_key(|(s, _)| *s).cloned();
    let head = match &newest {
        Some((_, k)) => match store.get(k)? {
            Some(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
            None => StreamHead::default(),
        },
        None => StreamHead::default(),
    };
    Ok((
        existing.into_iter().map(|(_, k)| k).collect(),
        newest.map(|(s, _)| s),
        head,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LocalStore;

    fn chunk(seq: u64, ms: u64) -> ChunkName {
        ChunkName {
            uploaded_ms: ms,
            generation: 2,
            worker: "w1".into(),
            bundle: Bundle::Numbered {
                incarnation: 3,
                seq,
            },
            games: 4,
            positions: 400,
        }
    }

    fn heads(store: &LocalStore) -> Vec<String> {
        store.list_after(HEADS, None).unwrap()
    }

    fn read(store: &LocalStore, key: &str) -> StreamHead {
        serde_json::from_slice(&store.get(key).unwrap().unwrap()).unwrap()
    }

    #[test]
    fn head_keys_round_trip_and_odd_keys_are_refused() {
        let k = head_key("w1", 3, 17);
        assert_eq!(k, "heads/w1/000003/000000000017");
        assert_eq!(
            parse_head_key(&k),
            Some(HeadKey {
                stream: "w1/3".into(),
                seq: 17
            })
        );
        assert_eq!(parse_head_key(&k).unwrap().stream, chunk(1, 1).stream());
        for bad in [
            "heads/w1/000003",
            "heads/w1/x/000000000017",
            "heads/w-1/000003/000000000017",
            "heads/w1/000003/000000000000",
            "heads/w1/000003/000000000017/x",
            "chunks/w1/000003/000000000017",
        ] {
            assert_eq!(parse_head_key(bad), None, "{bad}");
        }
    }

    #[test]
    fn one_head_a_stream_holds_its_newest_keys_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path());
        for seq in 1..=HEAD_KEYS as u64 + 5 {
            let c = chunk(seq, 1000 + seq);
            record_upload(&store, &c, &c.key()).unwrap();
        }
        let top = HEAD_KEYS as u64 + 5;
        assert_eq!(heads(&store), vec![head_key("w1", 3, top)]);
        let head = read(&store, &head_key("w1", 3, top));
        assert_eq!(head.keys.len(), HEAD_KEYS);
        assert_eq!(head.keys.first(), Some(&chunk(6, 1006).key()));
        assert_eq!(head.keys.last(), Some(&chunk(top, 1000 + top).key()));
        // An older chunk uploaded again (a retry under a new time) replaces its key and
        // leaves the head at the newest number.
        let again = chunk(top - 1, 9999);
        record_upload(&store, &again, &again.key()).unwrap();
        assert_eq!(heads(&store), vec![head_key("w1", 3, top)]);
        let head = read(&store, &head_key("w1", 3, top));
        assert_eq!(head.keys.len(), HEAD_KEYS);
        assert!(head.keys.contains(&again.key()));
        assert!(!head.keys.contains(&chunk(top - 1, 1000 + top - 1).key()));
        assert_eq!(head.keys.last(), Some(&chunk(top, 1000 + top).key()));
        // A timed chunk has no stream.
        let timed = ChunkName {
            bundle: Bundle::Timed(5),
            ..chunk(1, 1)
        };
        record_upload(&store, &timed, &timed.key()).unwrap();
        assert_eq!(heads(&store).len(), 1);
    }

    #[test]
    fn a_head_left_by_a_killed_uploader_is_replaced_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path());
        let c = chunk(1, 1);
        record_upload(&store, &c, &c.key()).unwrap();
        // Killed between writing head 2 and removing head 1: both are there.
        store
            .put(
                &head_key("w1", 3, 2),
                &serde_json::to_vec(&StreamHead {
                    keys: vec![c.key(), chunk(2, 2).key()],
                })
                .unwrap(),
            )
            .unwrap();
        let c3 = chunk(3, 3);
        record_upload(&store, &c3, &c3.key()).unwrap();
        assert_eq!(heads(&store), vec![head_key("w1", 3, 3)]);
        assert_eq!(
            read(&store, &head_key("w1", 3, 3)).keys,
            vec![c.key(), chunk(2, 2).key(), c3.key()]
        );
    }

    #[test]
    fn a_head_writer_lists_a_stream_once_then_writes_and_removes() {
        let dir = tempfile::tempdir().unwrap();
        let local = LocalStore::new(dir.path());
        let store = crate::CountingStore::new(std::sync::Arc::new(local.clone()));
        // A head a killed predecessor left under this incarnation: found by the first listing.
        let left = chunk(1, 1);
        record_upload(&local, &left, &left.key()).unwrap();
        let mut writer = HeadWriter::default();
        let c2 = chunk(2, 2);
        writer.record_upload(&store, &c2, &c2.key()).unwrap();
        let first = store.take();
        assert_eq!((first.lists, first.gets), (1, 1), "{first:?}");
        for seq in 3..=HEAD_KEYS as u64 + 3 {
            let c = chunk(seq, seq);
            writer.record_upload(&store, &c, &c.key()).unwrap();
            let asked = store.take();
            assert_eq!(
                asked,
                crate::RequestCounts {
                    puts: 1,
                    deletes: 1,
                    ..crate::RequestCounts::default()
                },
                "chunk {seq}"
            );
        }
        // The head in memory is what a fresh reader of the store finds.
        let top = HEAD_KEYS as u64 + 3;
        assert_eq!(heads(&local), vec![head_key("w1", 3, top)]);
        let head = read(&local, &head_key("w1", 3, top));
        assert_eq!(head.keys.len(), HEAD_KEYS);
        assert_eq!(head.keys.first(), Some(&chunk(4, 4).key()));
        assert_eq!(head.keys.last(), Some(&chunk(top, top).key()));
        // Another writer (a restart) of the same stream lists it again and agrees.
        let again = chunk(top + 1, top + 1);
        HeadWriter::default()
            .record_upload(&store, &again, &again.key())
            .unwrap();
        assert_eq!(store.take().lists, 1);
        assert_eq!(heads(&local), vec![head_key("w1", 3, top + 1)]);
        assert_eq!(
            read(&local, &head_key("w1", 3, top + 1)).keys[..HEAD_KEYS - 1],
            head.keys[1..]
        );
    }
}
