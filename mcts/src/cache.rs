//! A bounded evaluation cache keyed by [`Game::cache_key`](crate::Game::cache_key).
//!
//! Preallocated once: a direct-mapped table of slots (value, WDL, where the logits are) and
//! a ring buffer of logits. A new entry overwrites its slot and the oldest logits in the
//! ring; an entry whose logits have been overwritten reads as a miss. Nothing is allocated
//! per entry.

/// Logits kept per slot on average; the ring holds `slots * RING_LOGITS_PER_SLOT` floats.
const RING_LOGITS_PER_SLOT: usize = 48;

#[derive(Debug, Clone, Copy)]
struct Slot {
    key: u64,
    /// Absolute position of the logits in the ring (`u64::MAX` for an empty slot).
    at: u64,
    len: u32,
    value: f32,
    wdl: [f32; 3],
}

const EMPTY: Slot = Slot {
    key: 0,
    at: u64::MAX,
    len: 0,
    value: 0.0,
    wdl: [0.0; 3],
};

/// A cached evaluation.
#[derive(Debug, Clone, Copy)]
pub struct CachedEval<'a> {
    /// Logits over the position's legal moves.
    pub logits: &'a [f32],
    /// Value for the side to move.
    pub value: f32,
    /// WDL for the side to move.
    pub wdl: [f32; 3],
}

/// The cache size of a search that does not choose its own (self-play's `cache_entries`,
/// match players, `bench mcts`): 65,536 positions, about 15 MB with the policies of a
/// middlegame, enough for the trees of a move and the one before it.
pub const DEFAULT_CACHE_ENTRIES: usize = 1 << 16;

/// The cache. A capacity of 0 disables it.
#[derive(Debug, Clone)]
pub struct EvalCache {
    slots: Vec<Slot>,
    ring: Vec<f32>,
    /// Total number of floats ever written to the ring (plus skipped tails).
    written: u64,
}

impl EvalCache {
    /// A cache with room for about `entries` positions (rounded up to a power of two).
    pub fn new(entries: usize) -> Self {
        if entries == 0 {
            return EvalCache {
                slots: Vec::new(),
                ring: Vec::new(),
                written: 0,
            };
        }
        let slots = entries.next_power_of_two();
        EvalCache {
            slots: vec![EMPTY; slots],
            ring: vec![0.0; slots * RING_LOGITS_PER_SLOT],
            written: 0,
        }
    }

    /// Number of slots (0 when disabled).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Forgets every entry, keeping the memory.
    pub fn clear(&mut self) {
        self.slots.fill(EMPTY);
        self.written = 0;
    }

    fn slot_index(&self, key: u64) -> usize {
        // Fibonacci hashing: small or structured keys still spread over the table.
        let bits = self.slots.len().trailing_zeros();
        if bits == 0 {
            return 0;
        }
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// The entry for `key`, if present, intact, and with `moves` logits (a different count
    /// means a key collision with another position).
    pub fn get(&self, key: u64, moves: usize) -> Option<CachedEval<'_>> {
        if self.slots.is_empty() {
            return None;
        }
        let slot = &self.slots[self.slot_index(key)];
        let ring = self.ring.len() as u64;
        if slot.at == u64::MAX || slot.key != key || slot.len as usize != moves {
            return None;
        }
        if self.written - slot.at > ring {
            return None;
        }
        let start = (slot.at % ring) as usize;
        Some(CachedEval {
            logits: &self.ring[start..start + moves],
            value: slot.value,
            wdl: slot.wdl,
        })
    }

    /// Stores an evaluation (ignored if the cache is disabled or the logits do not fit).
    pub fn insert(&mut self, key: u64, logits: &[f32], value: f32, wdl: [f32; 3]) {
        let ring = self.ring.len();
        if self.slots.is_empty() || logits.len() > ring {
            return;
        }
        let mut start = (self.written % ring as u64) as usize;
        if start + logits.len() > ring {
            // Keep each entry contiguous: skip the ring's tail.
            self.written += (ring - start) as u64;
            start = 0;
        }
        self.ring[start..start + logits.len()].copy_from_slice(logits);
        let index = self.slot_index(key);
        self.slots[index] = Slot {
            key,
            at: self.written,
            len: logits.len() as u32,
            value,
            wdl,
        };
        self.written += logits.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_finds() {
        let mut cache = EvalCache::new(4);
        cache.insert(7, &[1.0, 2.0], 0.5, [0.6, 0.3, 0.1]);
        let hit = cache.get(7, 2).unwrap();
        assert_eq!(hit.logits, &[1.0, 2.0]);
        assert_eq!(hit.value, 0.5);
        assert_eq!(hit.wdl, [0.6, 0.3, 0.1]);
        assert!(cache.get(7, 3).is_none(), "wrong move count is a miss");
        assert!(cache.get(8, 2).is_none());
        cache.clear();
        assert!(cache.get(7, 2).is_none());
    }

    #[test]
    fn overwritten_logits_read_as_misses() {
        let mut cache = EvalCache::new(2);
        let ring = cache.ring.len();
        let big = vec![0.25; ring - 1];
        let first = 1;
        let second = (2..)
            .find(|&k| cache.slot_index(k) != cache.slot_index(first))
            .unwrap();
        cache.insert(first, &[3.0; 4], 0.0, [0.0, 1.0, 0.0]);
        assert!(cache.get(first, 4).is_some());
        // Another slot, but its logits wrap around the ring over the first entry's.
        cache.insert(second, &big, 0.0, [0.0, 1.0, 0.0]);
        assert!(cache.get(first, 4).is_none());
        assert_eq!(cache.get(second, ring - 1).unwrap().logits, &big[..]);
    }

    #[test]
    fn disabled_cache_never_hits() {
        let mut cache = EvalCache::new(0);
        cache.insert(1, &[0.0], 0.0, [0.0, 1.0, 0.0]);
        assert!(cache.get(1, 1).is_none());
    }
}
