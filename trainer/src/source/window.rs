//! The replay window as a sample source: self-play records (and PGN games, which become
//! records) are replayed to the sampled ply and encoded.

use std::sync::RwLock;

use rand_chacha::ChaCha8Rng;

use cfzero_selfplay::window::ReplayWindow;

use super::{SampleSource, SourceError, Split};
use crate::sample::{HostBatch, SampleScratch, TargetOptions, fill_position};

impl SampleSource for RwLock<ReplayWindow> {
    fn describe(&self) -> String {
        "self-play window".into()
    }

    fn positions(&self, split: Split) -> usize {
        let w = self.read().expect("the window lock is never poisoned");
        match split {
            Split::Training => w.positions(),
            Split::Validation => w.validation_positions(),
        }
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
        // The lock is held only to draw: replaying and encoding run beside other loaders.
        let drawn = {
            let w = self.read().expect("the window lock is never poisoned");
            match split {
                Split::Training => w.sample(rng),
                Split::Validation => w.sample_validation(rng),
            }
        };
        let Some((game, ply)) = drawn else {
            return Ok(false);
        };
        fill_position(&game, ply, batch, slot, scratch, targets)?;
        Ok(true)
    }
}
