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

/// The files under `dir` (recursively) whose extension is one of `extensions`, in natural
/// name order (`chunk2` before `chunk10`): how every directory source lists its files.
pub fn files_under(
    dir: &std::path::Path,
    extensions: &[&str],
) -> std::io::Result<Vec<std::path::PathBuf>> {
    fn walk(
        dir: &std::path::Path,
        extensions: &[&str],
        out: &mut Vec<std::path::PathBuf>,
    ) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(&path, extensions, out)?;
            } else if path
                .extension()
                .is_some_and(|e| extensions.iter().any(|x| e == *x))
            {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, extensions, &mut out)?;
    out.sort_by(|a, b| {
        cfzero_selfplay::window::natural_cmp(&a.to_string_lossy(), &b.to_string_lossy())
    });
    Ok(out)
}
