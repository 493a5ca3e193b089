//! `--data` specifications: which training data sources a command reads, opened with a
//! report of what they hold.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use cfzero_trainer::SampleSource;
use cfzero_trainer::source::Split;
use cfzero_trainer::source::lc0::{Lc0Limits, Lc0Source};
use cfzero_trainer::source::pgn::{PgnFilters, PgnLimits, PgnSource};
use cfzero_trainer::source::teacher::{TeacherLimits, TeacherSource};

use crate::error::user_error;

/// One `--data` value: `lc0:PATH`, `pgn:PATH` or `teacher:PATH`.
#[derive(Debug, Clone, PartialEq)]
pub enum DataSpec {
    /// Lc0 V6 training data: a chunk, a tar of chunks or a directory.
    Lc0(PathBuf),
    /// A PGN file, plain or `.zst`/`.gz`/`.bz2`.
    Pgn(PathBuf),
    /// Label files of `cfzero label`: a `.cfl` file or a directory of them.
    Teacher(PathBuf),
}

impl std::str::FromStr for DataSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<DataSpec, String> {
        match s.split_once(':') {
            Some(("lc0", p)) if !p.is_empty() => Ok(DataSpec::Lc0(p.into())),
            Some(("pgn", p)) if !p.is_empty() => Ok(DataSpec::Pgn(p.into())),
            Some(("teacher", p)) if !p.is_empty() => Ok(DataSpec::Teacher(p.into())),
            _ => Err(format!(
                "`{s}` is not a data source: write lc0:PATH (Lc0 V6 chunks, .tar or directory), pgn:PATH or teacher:PATH (label files of `cfzero label`)"
            )),
        }
    }
}

/// What bounds the data read into memory, and how it is split.
#[derive(Debug, Clone, Copy)]
pub struct DataOptions {
    /// The most positions read from each source.
    pub max_positions: usize,
    /// Share of games held out for validation.
    pub validation_share: f64,
    /// PGN game filters.
    pub filters: PgnFilters,
    /// Temperature of the policy target of `teacher:` sources (`[teacher] temperature`).
    pub teacher_temperature: f32,
}

/// Opens `spec`, printing what it holds and how fast it was read; a source that cannot be
/// opened or holds no training position is a user error (exit 2).
pub fn open(spec: &DataSpec, options: &DataOptions) -> Result<Arc<dyn SampleSource>> {
    let start = Instant::now();
    let source: Arc<dyn SampleSource> = match spec {
        DataSpec::Lc0(path) => {
            let limits = Lc0Limits {
                max_positions: options.max_positions,
                validation_share: options.validation_share,
            };
            let (source, skipped) = Lc0Source::open(path, limits)
                .map_err(|e| user_error(format!("lc0:{}: {e}", path.display())))?;
            for s in skipped.iter().take(5) {
                eprintln!("warning: skipped {}: {}", s.path.display(), s.reason);
            }
            if skipped.len() > 5 {
                eprintln!("warning: skipped {} more chunks", skipped.len() - 5);
            }
            eprintln!("lc0:{}: {} chunks read", path.display(), source.chunks());
            Arc::new(source)
        }
        DataSpec::Pgn(path) => {
            let limits = PgnLimits {
                max_positions: options.max_positions,
                validation_share: options.validation_share,
            };
            let source = PgnSource::open(path, options.filters, limits)
                .map_err(|e| user_error(format!("pgn:{}: {e}", path.display())))?;
            let s = source.stats();
            eprintln!(
                "pgn:{}: {} games kept; skipped {} with an unknown result, {} without a move, {} filtered, {} invalid",
                path.display(),
                s.games,
                s.unknown_result,
                s.empty,
                s.filtered,
                s.invalid
            );
            Arc::new(source)
        }
        DataSpec::Teacher(path) => {
            let limits = TeacherLimits {
                window: usize::MAX,
                validation_window: usize::MAX,
                max_positions: options.max_positions,
                validation_share: options.validation_share,
                temperature: options.teacher_temperature,
            };
            let source = TeacherSource::open(path, limits)
                .map_err(|e| user_error(format!("teacher:{}: {e}", path.display())))?;
            let s = source.stats();
            eprintln!(
                "teacher:{}: {} labels from {} files; {} positions without a label, {} labels that do not fit their position, {} files ending in a partial entry; policy targets at temperature {}",
                path.display(),
                s.labels,
                s.files,
                s.skipped,
                s.invalid,
                s.torn,
                options.teacher_temperature
            );
            Arc::new(source)
        }
    };
    let (train, val) = (
        source.positions(Split::Training),
        source.positions(Split::Validation),
    );
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    eprintln!(
        "{}: {train} training and {val} held-out positions, read in {secs:.1} s ({:.0} positions/s)",
        source.describe(),
        (train + val) as f64 / secs
    );
    if train == 0 {
        return Err(user_error(format!(
            "{}: no position to train on",
            source.describe()
        )));
    }
    Ok(source)
}
