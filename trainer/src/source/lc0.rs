//! Lc0's V6 training data as a sample source: `.gz` chunks (one game each, as Lc0 writes
//! them), `.tar` files of such chunks (as Lc0 publishes them), or directories of either.
//!
//! Records are decoded once, when the source opens, into a compact form (the planes, the
//! policy over the legal moves only, the targets): about 1.1 KB a position, bounded by
//! [`Lc0Limits::max_positions`]. A chunk that does not decode is skipped with its reason;
//! positions the rescorer marked for deletion are left out.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use rand_chacha::ChaCha8Rng;

use cfzero_network::encoding::{InputPlanes, POLICY_SIZE, TOKEN_FLOATS};

use super::held::{HeldSets, held_out};
use super::{SampleSource, SourceError, Split};
use crate::config::QTarget;
use crate::lc0_v6::{
    HISTORY_PLANES, MAX_CHUNK_BYTES, V6Error, V6Record, decode_chunk, input_planes_of,
};
use crate::sample::{HostBatch, SampleScratch, TargetOptions, mixed_wdl, wdl_of};

/// How much of a data set is read, and how much is held out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lc0Limits {
    /// Stop reading after this many positions (chunks in name order).
    pub max_positions: usize,
    /// Share of games (chunks) held out for validation: every `1 / share`-th.
    pub validation_share: f64,
}

/// One position, as much of a V6 record as training uses.
#[derive(Debug, Clone)]
struct Position {
    planes: [u64; HISTORY_PLANES],
    castling: [u8; 4],
    black_to_move: bool,
    rule50: u8,
    /// (policy index, probability) of every legal move.
    policy: Box<[(u16, f32)]>,
    result_q: f32,
    result_d: f32,
    root_q: f32,
    best_q: f32,
    best_d: f32,
    plies_left: f32,
}

impl Position {
    fn of(r: &V6Record) -> Position {
        Position {
            planes: r.planes,
            castling: r.castling,
            black_to_move: r.black_to_move(),
            rule50: r.rule50_count,
            policy: r
                .probabilities
                .iter()
                .enumerate()
                .filter(|&(_, &p)| p >= 0.0)
                .map(|(i, &p)| (i as u16, p))
                .collect(),
            result_q: r.result_q,
            result_d: r.result_d,
            root_q: r.root_q,
            best_q: r.best_q,
            best_d: r.best_d,
            plies_left: r.plies_left,
        }
    }

    /// The input planes, built in place (a sample allocates nothing).
    fn input_planes(&self) -> InputPlanes {
        input_planes_of(
            &self.planes,
            self.castling,
            u8::from(self.black_to_move),
            self.rule50,
        )
    }

    /// Writes the position's inputs and targets into slot `slot` of `batch`.
    fn write(&self, batch: &mut HostBatch, slot: usize, targets: &TargetOptions) {
        let p = self;
        p.input_planes()
            .write_tokens(&mut batch.inputs[slot * TOKEN_FLOATS..(slot + 1) * TOKEN_FLOATS]);
        let policy = &mut batch.policy[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE];
        let legal = &mut batch.legal[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE];
        let total: f32 = p.policy.iter().map(|&(_, x)| x).sum();
        let uniform = 1.0 / p.policy.len() as f32;
        for &(i, x) in p.policy.iter() {
            legal[usize::from(i)] = 1.0;
            policy[usize::from(i)] = if total > 0.0 { x / total } else { uniform };
        }
        // Lc0 records no root-mean/improved-policy split: best_q stands in for both.
        let q = match targets.q_target {
            QTarget::Root => p.root_q,
            QTarget::Best | QTarget::Policy => p.best_q,
        };
        let wdl = mixed_wdl(
            wdl_of(p.result_q, p.result_d),
            wdl_of(q, p.best_d),
            targets.q_ratio,
        );
        batch.wdl[slot * 3..slot * 3 + 3].copy_from_slice(&wdl);
        batch.q[slot] = q;
        // V6 has no short-term value: the search's value of best play is the closest.
        batch.st[slot] = p.best_q;
        batch.moves_left[slot] = p.plies_left;
    }
}

/// Writes `record`'s inputs and targets into slot `slot` of `batch`, exactly as an
/// [`Lc0Source`] holding it would.
pub fn fill_record(record: &V6Record, batch: &mut HostBatch, slot: usize, targets: &TargetOptions) {
    Position::of(record).write(batch, slot, targets);
}

/// A chunk that was not read, and why.
#[derive(Debug)]
pub struct SkippedChunk {
    /// The file (and for a tar member, `FILE/MEMBER`).
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// Lc0 V6 positions in memory (see the module docs).
#[derive(Debug)]
pub struct Lc0Source {
    path: PathBuf,
    sets: HeldSets<Position>,
    chunks: usize,
}

impl Lc0Source {
    /// Reads `path` (a chunk, a tar of chunks or a directory of either, recursively in
    /// name order). Errors only if `path` cannot be read at all; bad chunks are returned.
    pub fn open(path: &Path, limits: Lc0Limits) -> std::io::Result<(Lc0Source, Vec<SkippedChunk>)> {
        let mut files = Vec::new();
        if path.is_dir() {
            files = super::files_under(path, &["gz", "tar"])?;
        } else {
            // Fails here, with the OS's reason, if the file does not exist.
            File::open(path)?;
            files.push(path.to_path_buf());
        }
        let mut source = Lc0Source {
            path: path.to_path_buf(),
            sets: HeldSets::new(),
            chunks: 0,
        };
        let mut skipped = Vec::new();
        for file in files {
            if source.full(&limits) {
                break;
            }
            let is_tar = file.extension().is_some_and(|e| e == "tar");
            let result = if is_tar {
                source.read_tar(&file, &limits, &mut skipped)
            } else {
                File::open(&file).and_then(read_bounded).map(|data| {
                    source.add_chunk(&file, &data, &limits, &mut skipped);
                })
            };
            if let Err(e) = result {
                skipped.push(SkippedChunk {
                    path: file.clone(),
                    reason: e.to_string(),
                });
            }
        }
        Ok((source, skipped))
    }

    fn full(&self, limits: &Lc0Limits) -> bool {
        self.sets.len() >= limits.max_positions
    }

    fn read_tar(
        &mut self,
        file: &Path,
        limits: &Lc0Limits,
        skipped: &mut Vec<SkippedChunk>,
    ) -> std::io::Result<()> {
        let mut archive = tar::Archive::new(File::open(file)?);
        for entry in archive.entries()? {
            if self.full(limits) {
                break;
            }
            let entry = entry?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let name = file.join(&entry.path()?);
            let data = read_bounded(entry)?;
            self.add_chunk(&name, &data, limits, skipped);
        }
        Ok(())
    }

    fn add_chunk(
        &mut self,
        name: &Path,
        data: &[u8],
        limits: &Lc0Limits,
        skipped: &mut Vec<SkippedChunk>,
    ) {
        let records = match decode_chunk(data) {
            Ok(r) => r,
            Err(e) => {
                skipped.push(SkippedChunk {
                    path: name.to_path_buf(),
                    reason: e.to_string(),
                });
                return;
            }
        };
        let held_out = held_out(self.chunks, limits.validation_share);
        self.chunks += 1;
        let room = limits.max_positions.saturating_sub(self.sets.len());
        let positions = records
            .iter()
            .filter(|r| !r.marked_for_deletion())
            .take(room)
            .map(Position::of);
        for position in positions {
            self.sets.push(held_out, position);
        }
    }

    /// Chunks (games) read.
    pub fn chunks(&self) -> usize {
        self.chunks
    }
}

/// Reads a whole chunk, refusing one larger than a chunk can be (compressed or not).
fn read_bounded(r: impl Read) -> std::io::Result<Vec<u8>> {
    let mut data = Vec::new();
    r.take(MAX_CHUNK_BYTES + 1).read_to_end(&mut data)?;
    if data.len() as u64 > MAX_CHUNK_BYTES {
        return Err(std::io::Error::other(V6Error::Gzip(format!(
            "file larger than {} MiB",
            MAX_CHUNK_BYTES >> 20
        ))));
    }
    Ok(data)
}

impl SampleSource for Lc0Source {
    fn describe(&self) -> String {
        format!("lc0:{}", self.path.display())
    }

    fn positions(&self, split: Split) -> usize {
        self.sets.positions(split)
    }

    fn fill(
        &self,
        split: Split,
        rng: &mut ChaCha8Rng,
        batch: &mut HostBatch,
        slot: usize,
        _scratch: &mut SampleScratch,
        targets: &TargetOptions,
    ) -> Result<bool, SourceError> {
        let Some(position) = self.sets.draw(split, rng) else {
            return Ok(false);
        };
        position.write(batch, slot, targets);
        Ok(true)
    }
}
