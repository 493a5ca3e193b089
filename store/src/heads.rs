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
/// the newest head instead.
pub fn record_upload(store: &dyn RunStore, name: &ChunkName, key: &str) -> Result<(), StoreError> {
    let Bundle::Numbered { incarnation, seq } = name.bundle else {
        return Ok(());
    };
    let prefix = stream_prefix(&name.worker, incarnation);
    let existing: Vec<(u64, String)> = store
        .list_after(&prefix, None)?
        .into_iter()
        .filter_map(|k| parse_head_key(&k).map(|h| (h.seq, k)))
        .collect();
    let newest = existing.iter().max_by_key(|(s, _)| *s).cloned();
    let mut head = match &newest {
        Some((_, k)) => match store.get(k)? {
            Some(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
            None => StreamHead::default(),
        },
        None => StreamHead::default(),
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
    let top = newest.as_ref().map_or(seq, |(s, _)| (*s).max(seq));
    let bytes = serde_json::to_vec(&head).expect("a head serialises");
    let written = head_key(&name.worker, incarnation, top);
    store.put(&written, &bytes)?;
    for (_, k) in existing {
        if k != written {
            store.delete(&k)?;
        }
    }
    Ok(())
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
}
