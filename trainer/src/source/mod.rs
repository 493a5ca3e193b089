//! Where training samples come from: the seam between the loader and the data.
//!
//! A [`SampleSource`] writes one sample (inputs and every target) into a slot of a
//! [`HostBatch`], drawn uniformly from its training or its held-out positions. The loader and
//! the validation pass know nothing else about the data. Implementations:
//! - the replay window of a run's own self-play games ([`window`]);
//! - Lc0's V6 training data ([`lc0::Lc0Source`]);
//! - games in PGN, human or engine ([`pgn`]: games become records in a window of their own);
//! - positions labelled by a UCI engine ([`teacher::TeacherSource`]);
//! - a weighted [`Mixture`] of any of these.

mod held;
pub mod lc0;
pub mod mixture;
pub mod pgn;
pub mod teacher;
pub mod window;

use rand_chacha::ChaCha8Rng;
use thiserror::Error;

use cfzero_selfplay::replay::ReplayError;

use crate::sample::{HostBatch, SampleScratch, TargetOptions};

pub use mixture::Mixture;

/// Which positions of a source a sample is drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// The positions trained on.
    Training,
    /// Held-out positions, for validation losses.
    Validation,
}

/// A sample that could not be written.
#[derive(Debug, Error)]
pub enum SourceError {
    /// A self-play or PGN record that does not replay.
    #[error("game record does not replay: {0}")]
    Replay(#[from] ReplayError),
    /// A teacher's label that no longer parses.
    #[error("label does not parse: {0}")]
    Label(String),
}

/// A supply of training samples (see the module docs).
pub trait SampleSource: Send + Sync {
    /// What the source reads, for logs (`lc0:DIR`, `pgn:FILE`, `self-play window`).
    fn describe(&self) -> String;

    /// Positions that [`SampleSource::fill`] can draw from `split` now.
    fn positions(&self, split: Split) -> usize;

    /// Writes a position drawn uniformly from `split` into slot `slot` of `batch`: inputs,
    /// policy target, legal mask and value, short-term and moves-left targets, the value
    /// targets made as `targets` says. Returns `Ok(false)` when `split` is empty.
    fn fill(
        &self,
        split: Split,
        rng: &mut ChaCha8Rng,
        batch: &mut HostBatch,
        slot: usize,
        scratch: &mut SampleScratch,
        targets: &TargetOptions,
    ) -> Result<bool, SourceError>;
}
