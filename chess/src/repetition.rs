//! Repetition counting exactly as lc0's `PositionHistory` does it.
//!
//! lc0 counts a repetition only when the position's halfmove clock is at least 4, looks
//! back at the positions 4, 6, 8, ... plies earlier (same side to move), and stops after
//! looking at a position whose clock is below 2. On a match the count is one more than
//! the matched position's count, so a count of 2 means the third occurrence.

/// One position since the last zeroing move, as repetition counting needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    /// Pieces, side to move, castling rights and lc0's en-passant flag.
    key: u64,
    /// The halfmove clock of the position.
    clock: u32,
    /// lc0's repetition count of the position.
    repetitions: u32,
}

/// The positions since the last zeroing move (capture or pawn move), oldest first.
///
/// Older positions can never be reached by lc0's backward scan: it stops at a position
/// whose clock is below 2 at the latest, and a zeroing move leaves clock 0.
#[derive(Debug, Default)]
pub(crate) struct RepetitionTracker {
    entries: Vec<Entry>,
}

impl Clone for RepetitionTracker {
    fn clone(&self) -> Self {
        RepetitionTracker {
            entries: self.entries.clone(),
        }
    }

    // Reuses the allocation: the search clones states once per simulation.
    fn clone_from(&mut self, source: &Self) {
        self.entries.clone_from(&source.entries);
    }
}

impl RepetitionTracker {
    /// Starts with a first position, which has no repetitions by definition.
    pub(crate) fn reset(&mut self, key: u64, clock: u32) {
        self.entries.clear();
        self.entries.push(Entry {
            key,
            clock,
            repetitions: 0,
        });
    }

    /// Records the position reached by a move and returns its repetition count.
    pub(crate) fn push(&mut self, key: u64, clock: u32) -> u32 {
        if clock == 0 {
            self.entries.clear();
        }
        let repetitions = self.count(key, clock);
        self.entries.push(Entry {
            key,
            clock,
            repetitions,
        });
        repetitions
    }

    fn count(&self, key: u64, clock: u32) -> u32 {
        if clock < 4 {
            return 0;
        }
        let n = self.entries.len();
        let mut back = 4;
        while back <= n {
            let earlier = &self.entries[n - back];
            if earlier.key == key {
                return earlier.repetitions + 1;
            }
            if earlier.clock < 2 {
                return 0;
            }
            back += 2;
        }
        0
    }
}
