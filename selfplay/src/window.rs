//! The replay window: the most recent games' trainable positions, sampled uniformly.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::record::{GameRecord, RECORD_EXTENSION, RecordError, read_records};

/// The `[window]` table: how many positions the window holds as games accumulate.
///
/// The window grows like KataGo's: with `N` trainable positions seen so far and
/// `c = min_positions`, it holds all of them while `N <= c`, then
/// `c * (1 + beta * ((N / c)^alpha - 1) / alpha)`, capped at `max_positions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowConfig {
    /// Positions before the window starts to drop old games.
    pub min_positions: usize,
    /// The most positions it ever holds.
    pub max_positions: usize,
    /// Exponent of the growth (KataGo: 0.75).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Scale of the growth (KataGo: 0.4).
    #[serde(default = "default_beta")]
    pub beta: f64,
}

fn default_alpha() -> f64 {
    0.75
}
fn default_beta() -> f64 {
    0.4
}

impl WindowConfig {
    /// Window size, in trainable positions, after `seen` trainable positions.
    pub fn size_after(&self, seen: usize) -> usize {
        let c = self.min_positions.max(1) as f64;
        let n = seen as f64;
        let size = if n <= c {
            n
        } else {
            c * (1.0 + self.beta * ((n / c).powf(self.alpha) - 1.0) / self.alpha)
        };
        (size.floor() as usize).min(self.max_positions)
    }
}

/// Games in the window, oldest first, with the counts that make uniform sampling cheap.
#[derive(Debug)]
pub struct ReplayWindow {
    config: WindowConfig,
    games: VecDeque<Arc<GameRecord>>,
    /// Trainable positions of each game in `games`, and their total.
    trainable: VecDeque<usize>,
    in_window: usize,
    seen: usize,
    loaded_files: HashSet<PathBuf>,
}

/// A file that could not be read and was skipped.
#[derive(Debug)]
pub struct SkippedFile {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub error: RecordError,
}

impl ReplayWindow {
    /// An empty window.
    pub fn new(config: WindowConfig) -> Self {
        ReplayWindow {
            config,
            games: VecDeque::new(),
            trainable: VecDeque::new(),
            in_window: 0,
            seen: 0,
            loaded_files: HashSet::new(),
        }
    }

    /// Adds a game (newest) and drops the oldest games beyond the window's size.
    pub fn add(&mut self, game: Arc<GameRecord>) {
        let n = game.positions.iter().filter(|p| p.is_trainable()).count();
        self.seen += n;
        self.in_window += n;
        self.games.push_back(game);
        self.trainable.push_back(n);
        let limit = self.config.size_after(self.seen);
        // Keep at least one game so there is always something to sample once anything was added.
        while self.games.len() > 1 && self.in_window - self.trainable[0] >= limit.max(1) {
            self.in_window -= self.trainable.pop_front().expect("non-empty");
            self.games.pop_front();
        }
    }

    /// Reads record files under `dir` (recursively, in name order) that this window has
    /// not read yet; unreadable or corrupt files are skipped and returned, never trained on.
    /// Returns the number of games added.
    pub fn load_new_files(&mut self, dir: &Path) -> std::io::Result<(usize, Vec<SkippedFile>)> {
        let mut files = Vec::new();
        collect_record_files(dir, &mut files)?;
        files.sort();
        let mut added = 0;
        let mut skipped = Vec::new();
        for path in files {
            if self.loaded_files.contains(&path) {
                continue;
            }
            match read_records(&path) {
                Ok(games) => {
                    added += games.len();
                    for g in games {
                        self.add(Arc::new(g));
                    }
                    self.loaded_files.insert(path);
                }
                Err(error) => {
                    self.loaded_files.insert(path.clone());
                    skipped.push(SkippedFile { path, error });
                }
            }
        }
        Ok((added, skipped))
    }

    /// Trainable positions currently in the window.
    pub fn positions(&self) -> usize {
        self.in_window
    }

    /// Trainable positions ever added.
    pub fn positions_seen(&self) -> usize {
        self.seen
    }

    /// Games currently in the window.
    pub fn games(&self) -> usize {
        self.games.len()
    }

    /// A uniformly drawn trainable position: the game and the ply. `None` when empty.
    pub fn sample(&self, rng: &mut impl Rng) -> Option<(Arc<GameRecord>, usize)> {
        if self.in_window == 0 {
            return None;
        }
        let mut k = rng.random_range(0..self.in_window);
        for (game, &n) in self.games.iter().zip(&self.trainable) {
            if k < n {
                let ply = game
                    .positions
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.is_trainable())
                    .nth(k)?
                    .0;
                return Some((game.clone(), ply));
            }
            k -= n;
        }
        None
    }
}

fn collect_record_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            collect_record_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == RECORD_EXTENSION) {
            out.push(path);
        }
    }
    Ok(())
}
