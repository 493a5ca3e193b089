//! Positions in memory in two sets, trained on and held out, as the in-memory sources
//! ([`super::lc0::Lc0Source`], [`super::teacher::TeacherSource`]) keep them.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::Split;

/// Whether item `i` (from 0) of a sequence is held out when a share `share` (clamped to
/// [0, 1]) of it is: every `1 / share`-th item.
pub(crate) fn held_out(i: usize, share: f64) -> bool {
    let (i, share) = (i as f64, share.clamp(0.0, 1.0));
    ((i + 1.0) * share).floor() > (i * share).floor()
}

/// A training and a held-out set of positions.
#[derive(Debug)]
pub(crate) struct HeldSets<T> {
    train: Vec<T>,
    validation: Vec<T>,
}

impl<T> HeldSets<T> {
    /// Two empty sets.
    pub(crate) fn new() -> Self {
        HeldSets {
            train: Vec::new(),
            validation: Vec::new(),
        }
    }

    /// Positions in both sets.
    pub(crate) fn len(&self) -> usize {
        self.train.len() + self.validation.len()
    }

    /// The held-out set when `held_out`, else the training set.
    pub(crate) fn set_mut(&mut self, held_out: bool) -> &mut Vec<T> {
        if held_out {
            &mut self.validation
        } else {
            &mut self.train
        }
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

    fn set(&self, split: Split) -> &Vec<T> {
        match split {
            Split::Training => &self.train,
            Split::Validation => &self.validation,
        }
    }
}
