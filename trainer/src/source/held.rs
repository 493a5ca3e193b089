//! Positions in memory in two sets, trained on and held out, as the in-memory sources
//! ([`super::lc0::Lc0Source`], [`super::teacher::TeacherSource`]) keep them.

use std::collections::VecDeque;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::Split;

/// Whether item `i` (from 0) of a sequence is held out when a share `share` (clamped to
/// [0, 1]) of it is: every `1 / share`-th item.
pub(crate) fn held_out(i: usize, share: f64) -> bool {
    let (i, share) = (i as f64, share.clamp(0.0, 1.0));
    ((i + 1.0) * share).floor() > (i * share).floor()
}

/// A training and a held-out set of positions, each keeping at most its newest `limit`.
#[derive(Debug)]
pub(crate) struct HeldSets<T> {
    train: VecDeque<T>,
    validation: VecDeque<T>,
    limits: [usize; 2],
}

impl<T> HeldSets<T> {
    /// Two empty sets without a limit.
    pub(crate) fn new() -> Self {
        Self::newest(usize::MAX, usize::MAX)
    }

    /// Two empty sets that keep their newest `train` and `validation` positions: a position
    /// added beyond the limit drops the oldest of its set.
    pub(crate) fn newest(train: usize, validation: usize) -> Self {
        HeldSets {
            train: VecDeque::new(),
            validation: VecDeque::new(),
            limits: [train.max(1), validation.max(1)],
        }
    }

    /// Positions in both sets.
    pub(crate) fn len(&self) -> usize {
        self.train.len() + self.validation.len()
    }

    /// Adds `item` to the held-out set when `held_out`, else to the training set, dropping
    /// that set's oldest beyond its limit.
    pub(crate) fn push(&mut self, held_out: bool, item: T) {
        let (set, limit) = if held_out {
            (&mut self.validation, self.limits[1])
        } else {
            (&mut self.train, self.limits[0])
        };
        if set.len() >= limit {
            set.pop_front();
        }
        set.push_back(item);
    }

    /// Positions in `split`.
    pub(crate) fn positions(&self, split: Split) -> usize {
        self.set(split).len()
    }

    /// A position of `split` drawn uniformly; `None` when it is empty.
    pub(crate) fn draw(&self, split: Split, rng: &mut ChaCha8Rng) -> Option<&T> {
        let set = self.set(split);
        (!set.is_empty()).then(|| &set[rng.random_range(0..set.len())])
    }

    fn set(&self, split: Split) -> &VecDeque<T> {
        match split {
            Split::Training => &self.train,
            Split::Validation => &self.validation,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// A set at its limit keeps the newest positions; the other set keeps its own.
    #[test]
    fn a_set_at_its_limit_drops_its_oldest() {
        let mut sets = HeldSets::newest(3, 2);
        for i in 0..10 {
            sets.push(i % 2 == 1, i);
        }
        assert_eq!(sets.train, [4, 6, 8]);
        assert_eq!(sets.validation, [7, 9]);
        assert_eq!(sets.len(), 5);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..50 {
            let drawn = *sets.draw(Split::Training, &mut rng).unwrap();
            assert!([4, 6, 8].contains(&drawn));
        }
    }
}
