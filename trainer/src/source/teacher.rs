//! Positions labelled by a UCI engine (`cfzero label`) as a sample source.
//!
//! Targets (docs/METHODS.md, "Teacher"):
//! - policy: a softmax of the moves' action values at [`TeacherLimits::temperature`]
//!   (the teacher's best move has the largest share, moves within a few points of it keep
//!   a real one, blunders none);
//! - winner: the teacher's W/D/L of the position (its best move's);
//! - q and st: that W/D/L's expectation `W - L`;
//! - moves left: the plies to the end of the game the position came from, NaN (no
//!   moves-left loss) for a position from a book.
//!
//! The input is the position as the game reached it when the label carries the game's last
//! plies (labels of self-play and PGN positions), so the history planes hold real boards as in
//! play; else the FEN with the net's history fill (books, Lc0 data, label files of kind 0,
//! which carry no history).
//!
//! Labels are checked when the source opens: a label whose FEN does not parse, whose moves
//! are not exactly the position's legal moves or whose history does not replay to its FEN is
//! counted and left out.

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use rand_chacha::ChaCha8Rng;

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_labels::label_file::{
    Label, LabelEntry, LabelFileError, LabelHistory, LabelReader, LabelSplit,
};
use cfzero_network::encoding::{POLICY_SIZE, TOKEN_FLOATS, encode_tokens_filled, move_index};
use shakmaty::Position as _;

use super::held::{HeldSets, held_out};
use super::{SampleSource, SourceError, Split};
use crate::sample::{HostBatch, SampleScratch, TargetOptions};

/// The policy target's default temperature, in action-value (win probability) units: near
/// an even position a move 22 centipawns below the best gets `1/e` of its share and one 100
/// below 1%; ten pawns up, one three pawns below the best 10% (docs/METHODS.md §9 gives the
/// measurements behind it).
pub const DEFAULT_TEMPERATURE: f32 = 0.02;

/// How much of the labels is read, held out, and how the policy target is made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TeacherLimits {
    /// Stop reading after this many labels (files in name order).
    pub max_positions: usize,
    /// Training labels kept: the newest this many (a run's teacher labels all run long, and
    /// the labels of its first generations' near-random games age out as the window's do).
    pub window: usize,
    /// Held-out labels kept: the newest this many.
    pub validation_window: usize,
    /// Share of labels held out for validation, every `1 / share`-th, in files whose header
    /// names no split; a file of a run's teacher is on one side as a whole (its header's
    /// [`LabelSplit`]), as the games its positions come from are.
    pub validation_share: f64,
    /// Temperature of the softmax over expected scores that makes the policy target.
    pub temperature: f32,
}

/// What the labels read hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeacherStats {
    /// Label files read.
    pub files: usize,
    /// Labels kept.
    pub labels: usize,
    /// Positions the teacher did not label (mates, stalemates, engine failures).
    pub skipped: usize,
    /// Labels left out because they do not fit their position.
    pub invalid: usize,
    /// Files that ended in a partial entry at the last read (a labelling run killed
    /// mid-write, or a writer in the middle of an entry).
    pub torn: usize,
}

#[derive(Debug)]
struct Position {
    fen: Box<str>,
    /// The game's plies before the position, when the label has them.
    history: Option<LabelHistory>,
    plies_left: Option<u16>,
    wdl: [f32; 3],
    /// (policy index, target probability) of every legal move.
    policy: Box<[(u16, f32)]>,
}

/// Why a label does not fit its position.
fn check(label: &Label, temperature: f32) -> Option<Position> {
    let state = ChessState::from_fen(&label.fen, HistoryFill::No).ok()?;
    if let Some(h) = &label.history
        && h.replay(HistoryFill::No)?.fen() != label.fen
    {
        return None;
    }
    let position = state.position();
    if position.legal_moves().len() != label.moves.len() {
        return None;
    }
    let turn = state.turn();
    let top = label
        .moves
        .iter()
        .map(|&(_, p)| p)
        .fold(f32::NEG_INFINITY, f32::max);
    let mut policy = Vec::with_capacity(label.moves.len());
    let mut total = 0.0;
    for &(mv, p) in &label.moves {
        let mv = mv.to_move(position)?;
        let index = move_index(&mv, turn) as u16;
        if policy.iter().any(|&(i, _)| i == index) {
            return None;
        }
        let weight = ((p - top) / temperature).exp();
        total += weight;
        policy.push((index, weight));
    }
    for (_, w) in &mut policy {
        *w /= total;
    }
    Some(Position {
        fen: label.fen.clone().into_boxed_str(),
        history: label.history.clone(),
        plies_left: label.plies_left,
        wdl: label.wdl,
        policy: policy.into_boxed_slice(),
    })
}

/// Labelled positions in memory (see the module docs). [`TeacherSource::refresh`] reads what
/// was appended to the files since, so a run whose teacher labels as it trains reads each
/// label once, not every generation.
#[derive(Debug)]
pub struct TeacherSource {
    path: PathBuf,
    limits: TeacherLimits,
    read: RwLock<Read>,
}

/// What a [`TeacherSource`] has read.
#[derive(Debug)]
struct Read {
    sets: HeldSets<Position>,
    stats: TeacherStats,
    /// Each file read, and the byte its reading reached.
    files: Vec<(PathBuf, u64)>,
}

impl TeacherSource {
    /// Reads `path`: a label file, or a directory of them (`*.cfl`, recursively, in name
    /// order). A file that is damaged (not one a killed writer leaves) is an error.
    pub fn open(path: &Path, limits: TeacherLimits) -> Result<TeacherSource, LabelFileError> {
        let source = TeacherSource {
            path: path.to_path_buf(),
            limits,
            read: RwLock::new(Read {
                sets: HeldSets::newest(limits.window, limits.validation_window),
                stats: TeacherStats::default(),
                files: Vec::new(),
            }),
        };
        source.refresh()?;
        Ok(source)
    }

    /// Reads the entries appended to the files since the last read, and files new since;
    /// returns how many labels it kept. A partial last entry (a writer in the middle of
    /// appending it) is read the next time.
    pub fn refresh(&self) -> Result<usize, LabelFileError> {
        let paths = if self.path.is_dir() {
            super::files_under(&self.path, &["cfl"]).map_err(|source| LabelFileError::Io {
                path: self.path.clone(),
                source,
            })?
        } else {
            vec![self.path.clone()]
        };
        let mut read = self.read.write().expect("never poisoned");
        let Read { sets, stats, files } = &mut *read;
        let before = stats.labels;
        let temperature = self.limits.temperature.max(1e-4);
        stats.torn = 0;
        for path in paths {
            if stats.labels >= self.limits.max_positions {
                break;
            }
            let known = files.iter().position(|(p, _)| *p == path);
            let mut reader = match known {
                Some(k) => LabelReader::open_at(&path, files[k].1)?,
                None => {
                    stats.files += 1;
                    LabelReader::open(&path)?
                }
            };
            while stats.labels < self.limits.max_positions {
                let Some(entry) = reader.next_entry()? else {
                    break;
                };
                let label = match entry {
                    LabelEntry::Label(l) => l,
                    LabelEntry::Skipped { .. } => {
                        stats.skipped += 1;
                        continue;
                    }
                };
                let Some(position) = check(&label, temperature) else {
                    stats.invalid += 1;
                    continue;
                };
                let held_out = match reader.header().split {
                    Some(LabelSplit::Training) => false,
                    Some(LabelSplit::HeldOut) => true,
                    None => held_out(stats.labels, self.limits.validation_share),
                };
                stats.labels += 1;
                sets.push(held_out, position);
            }
            stats.torn += usize::from(reader.torn());
            match known {
                Some(k) => files[k].1 = reader.offset(),
                None => files.push((path, reader.offset())),
            }
        }
        Ok(stats.labels - before)
    }

    /// What the labels read so far hold.
    pub fn stats(&self) -> TeacherStats {
        self.read.read().expect("never poisoned").stats.clone()
    }
}

impl SampleSource for TeacherSource {
    fn describe(&self) -> String {
        format!("teacher:{}", self.path.display())
    }

    fn positions(&self, split: Split) -> usize {
        self.read
            .read()
            .expect("never poisoned")
            .sets
            .positions(split)
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
        let read = self.read.read().expect("never poisoned");
        let Some(p) = read.sets.draw(split, rng) else {
            return Ok(false);
        };
        // Checked when the source opened.
        let state = match &p.history {
            Some(h) => h
                .replay(targets.history_fill)
                .ok_or_else(|| SourceError::Label(format!("{}: history does not replay", p.fen)))?,
            None => ChessState::from_fen(&p.fen, targets.history_fill)
                .map_err(|e| SourceError::Label(format!("{}: {e}", p.fen)))?,
        };
        encode_tokens_filled(
            &state,
            targets.history_fill,
            &mut batch.inputs[slot * TOKEN_FLOATS..(slot + 1) * TOKEN_FLOATS],
        );
        let policy = &mut batch.policy[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE];
        let legal = &mut batch.legal[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE];
        for &(i, x) in p.policy.iter() {
            legal[usize::from(i)] = 1.0;
            policy[usize::from(i)] = x;
        }
        batch.wdl[slot * 3..slot * 3 + 3].copy_from_slice(&p.wdl);
        let q = p.wdl[0] - p.wdl[2];
        batch.q[slot] = q;
        batch.st[slot] = q;
        batch.moves_left[slot] = p.plies_left.map_or(f32::NAN, f32::from);
        Ok(true)
    }
}
