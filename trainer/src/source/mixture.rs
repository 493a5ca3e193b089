//! Several sources mixed by weight.

use std::sync::Arc;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{SampleSource, SourceError, Split};
use crate::sample::{HostBatch, SampleScratch, TargetOptions};

/// Sources drawn from in proportion to their weights; a source with no positions in the
/// split drawn from is left out of the draw (so a run's window that has no games yet does
/// not stall a mixture with data).
pub struct Mixture {
    parts: Vec<(Arc<dyn SampleSource>, f64)>,
}

impl Mixture {
    /// A mixture of `parts` (source, weight); weights are relative, non-positive ones
    /// leave their source out.
    pub fn new(parts: Vec<(Arc<dyn SampleSource>, f64)>) -> Mixture {
        Mixture {
            parts: parts.into_iter().filter(|(_, w)| *w > 0.0).collect(),
        }
    }

    /// The sources and their weights.
    pub fn parts(&self) -> &[(Arc<dyn SampleSource>, f64)] {
        &self.parts
    }
}

impl SampleSource for Mixture {
    fn describe(&self) -> String {
        self.parts
            .iter()
            .map(|(s, w)| format!("{} x{w}", s.describe()))
            .collect::<Vec<_>>()
            .join(" + ")
    }

    fn positions(&self, split: Split) -> usize {
        self.parts.iter().map(|(s, _)| s.positions(split)).sum()
    }

    fn fill(
        &self,
        split: Split,
        rng: &mut ChaCha8Rng,
        batch: &mut HostBatch,
        slot: usize,
        scratch: &mut SampleScratch,
        targets: &TargetOptions,
    ) -> Result<bool, SourceError> {
        let total: f64 = self
            .parts
            .iter()
            .filter(|(s, _)| s.positions(split) > 0)
            .map(|(_, w)| w)
            .sum();
        if total <= 0.0 {
            return Ok(false);
        }
        let mut x = rng.random_range(0.0..total);
        let mut chosen = None;
        for (s, w) in self.parts.iter().filter(|(s, _)| s.positions(split) > 0) {
            chosen = Some(s);
            if x < *w {
                break;
            }
            x -= w;
        }
        match chosen {
            Some(s) => s.fill(split, rng, batch, slot, scratch, targets),
            None => Ok(false),
        }
    }
}
