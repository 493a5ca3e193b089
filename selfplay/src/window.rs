//! The replay window: the most recent games' trainable positions, sampled uniformly (or,
//! within a game, partly by how much the search's policy surprised the network), and, where
//! asked, their cheap searches' positions for the value heads alone.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cfzero_settings::InvalidSetting;
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::record::{GameRecord, RECORD_EXTENSION, RecordError, read_records};
use crate::record_scan::RecordScan;

/// The `[window]` table: how many positions the window holds as games accumulate.
///
/// The window grows like KataGo's: with `N` trainable positions seen so far and
/// `c = min_positions`, it holds all of them while `N <= c`, then
/// `c * (1 + beta * ((N / c)^alpha - 1) / alpha)`, capped at `max_positions`.
///
/// A key left out, or the whole `[window]` table, takes [`WindowConfig::default`]'s value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WindowConfig {
    /// Positions before the window starts to drop old games.
    pub min_positions: usize,
    /// The most positions it ever holds.
    pub max_positions: usize,
    /// Exponent of the growth (KataGo: 0.75).
    pub alpha: f64,
    /// Scale of the growth (KataGo: 0.4).
    pub beta: f64,
    /// Share of games held out of training, to measure how well the net generalises to
    /// games it never saw (validation losses beside the training ones show overfitting).
    pub validation_share: f64,
    /// The most trainable positions of held-out games kept (the newest).
    pub validation_positions: usize,
    /// KataGo's policy-surprise weighting: this share of each training game's sampling
    /// weight goes to its positions in proportion to their surprise
    /// ([`crate::record::PositionRecord::surprise`]), the rest evenly; a game is still drawn
    /// as often as its number of positions says. 0 draws every position alike.
    pub surprise_share: f64,
    /// Share of the training draws that take a position without a policy target (a cheap
    /// search's), uniformly among the window's, to train the value heads alone: the game's
    /// result labels every position it played, while only the full searches label a policy.
    /// 0 draws only positions with a policy target.
    pub value_only_share: f64,
}

impl Default for WindowConfig {
    /// KataGo's growth from 20,000 positions up to 500,000; one game in 20 held out, the
    /// newest 20,000 of their positions kept.
    fn default() -> WindowConfig {
        WindowConfig {
            min_positions: 20_000,
            max_positions: 500_000,
            alpha: 0.75,
            beta: 0.4,
            validation_share: 0.05,
            validation_positions: 20_000,
            surprise_share: 0.0,
            value_only_share: 0.0,
        }
    }
}

impl WindowConfig {
    /// Checks every setting's range and the relations between them: the growth formula
    /// divides by `alpha`, and a window that holds no position, or that holds every game
    /// out for validation, would leave the learner waiting forever.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        InvalidSetting::at_least("min_positions", self.min_positions as u64, 1)?;
        if self.max_positions < self.min_positions {
            return Err(InvalidSetting::new(
                "max_positions",
                format!(
                    "({}) must be at least `min_positions` ({})",
                    self.max_positions, self.min_positions
                ),
            ));
        }
        InvalidSetting::in_range("alpha", self.alpha, 0.0, true, f64::INFINITY)?;
        InvalidSetting::in_range("beta", self.beta, 0.0, false, f64::INFINITY)?;
        InvalidSetting::below_one("validation_share", self.validation_share)?;
        InvalidSetting::in_range("surprise_share", self.surprise_share, 0.0, false, 1.0)?;
        // A share of 1 would train no policy at all, and the steps that keep the trainable
        // positions' reuse would be infinite.
        InvalidSetting::below_one("value_only_share", self.value_only_share)
    }

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

/// Games in a window, oldest first, with the counts that make sampling cheap.
#[derive(Debug, Default)]
struct GameQueue {
    games: VecDeque<Arc<GameRecord>>,
    /// Trainable positions of each game in `games`, and their total.
    trainable: VecDeque<usize>,
    /// Each game's cumulative sampling weights of its trainable positions, in ply order,
    /// ending at its count of them ([`surprise_weights`]); empty where they are even.
    weights: VecDeque<Box<[f32]>>,
    positions: usize,
    /// Positions of the games in `games` without a policy target (each game's is its
    /// length less its trainable positions).
    value_only_positions: usize,
}

impl GameQueue {
    /// Adds a game with `n` trainable positions, its positions weighted by a share
    /// `surprise_share` of surprise, then drops the oldest games while the others hold at
    /// least `limit` positions (one game always stays).
    fn push(&mut self, game: Arc<GameRecord>, n: usize, limit: usize, surprise_share: f64) {
        self.positions += n;
        self.value_only_positions += game.positions.len() - n;
        self.weights
            .push_back(surprise_weights(&game, surprise_share));
        self.games.push_back(game);
        self.trainable.push_back(n);
        while self.games.len() > 1 && self.positions - self.trainable[0] >= limit.max(1) {
            let n = self.trainable.pop_front().expect("non-empty");
            let game = self.games.pop_front().expect("non-empty");
            self.positions -= n;
            self.value_only_positions -= game.positions.len() - n;
            self.weights.pop_front();
        }
    }

    /// A drawn trainable position: the game and the ply. A game is drawn in proportion to
    /// its trainable positions, a position of it evenly or by its weights. `None` when
    /// empty.
    fn sample(&self, rng: &mut impl Rng) -> Option<(Arc<GameRecord>, usize)> {
        if self.positions == 0 {
            return None;
        }
        let (i, mut k) = locate(
            self.trainable.iter().copied(),
            rng.random_range(0..self.positions),
        )?;
        let (game, n, weights) = (&self.games[i], self.trainable[i], &self.weights[i]);
        if !weights.is_empty() {
            // A point in [0, n) whose integer part is k; the weights cut [0, n) into one
            // interval a position.
            let at = k as f32 + rng.random::<f32>();
            k = weights.partition_point(|&w| w <= at).min(n - 1);
        }
        Some((game.clone(), nth_ply(game, k, true)?))
    }

    /// A drawn position without a policy target, uniformly among the queue's: the game and
    /// the ply. `None` when there is none.
    fn sample_value_only(&self, rng: &mut impl Rng) -> Option<(Arc<GameRecord>, usize)> {
        if self.value_only_positions == 0 {
            return None;
        }
        let value_only = self
            .games
            .iter()
            .zip(&self.trainable)
            .map(|(game, &n)| game.positions.len() - n);
        let (i, k) = locate(value_only, rng.random_range(0..self.value_only_positions))?;
        let game = &self.games[i];
        Some((game.clone(), nth_ply(game, k, false)?))
    }
}

/// Where the `k`-th of a queue's positions lies, its games holding `counts` of them in
/// order: the game's index and `k` within that game. `None` past the last.
fn locate(counts: impl Iterator<Item = usize>, mut k: usize) -> Option<(usize, usize)> {
    for (i, n) in counts.enumerate() {
        if k < n {
            return Some((i, k));
        }
        k -= n;
    }
    None
}

/// The ply of the `k`-th position of `game` that has a policy target (`trainable`), or that
/// has none.
fn nth_ply(game: &GameRecord, k: usize, trainable: bool) -> Option<usize> {
    game.positions
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_trainable() == trainable)
        .nth(k)
        .map(|(ply, _)| ply)
}

/// The cumulative sampling weights of a game's trainable positions in ply order, summing
/// to their count: `1 - share` each, plus `share` times its surprise over the game's mean
/// surprise (KataGo's policy-surprise weighting, within a game). Empty (even weights) for a
/// share of 0 or a game whose positions surprised nothing.
fn surprise_weights(game: &GameRecord, share: f64) -> Box<[f32]> {
    let surprises: Vec<f64> = game
        .positions
        .iter()
        .filter(|p| p.is_trainable())
        .map(|p| f64::from(p.surprise.max(0.0)))
        .collect();
    let total: f64 = surprises.iter().sum();
    if share <= 0.0 || total <= 0.0 || !total.is_finite() {
        return Box::default();
    }
    let mean = total / surprises.len() as f64;
    let mut sum = 0.0;
    surprises
        .iter()
        .map(|s| {
            sum += (1.0 - share) + share * s / mean;
            sum as f32
        })
        .collect()
}

/// The training games of the window and the held-out validation games.
#[derive(Debug)]
pub struct ReplayWindow {
    config: WindowConfig,
    train: GameQueue,
    validation: GameQueue,
    /// Games ever added (training and validation).
    added: u64,
    seen: usize,
    /// The record files read, and what each directory held when last listed.
    scan: RecordScan,
}

/// A game as it entered the window.
#[derive(Debug, Clone)]
pub struct Arrival {
    /// The game.
    pub game: Arc<GameRecord>,
    /// Whether the window holds it out of training (validation only).
    pub held_out: bool,
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
            train: GameQueue::default(),
            validation: GameQueue::default(),
            added: 0,
            seen: 0,
            scan: RecordScan::new(),
        }
    }

    /// Adds a game (newest) and drops the oldest games beyond the window's size. Every
    /// `1 / validation_share`-th game (by the order of adding, which is the files' name
    /// order, so a resumed run splits the same way) is held out for validation instead;
    /// returns whether this one was.
    pub fn add(&mut self, game: Arc<GameRecord>) -> bool {
        let n = game.positions.iter().filter(|p| p.is_trainable()).count();
        let share = self.config.validation_share.clamp(0.0, 1.0);
        let i = self.added as f64;
        self.added += 1;
        if ((i + 1.0) * share).floor() > (i * share).floor() {
            let limit = self.config.validation_positions;
            // Held-out games measure the net on positions as they come: evenly.
            self.validation.push(game, n, limit, 0.0);
            return true;
        }
        self.seen += n;
        let limit = self.config.size_after(self.seen);
        // One game always stays, so there is something to sample once anything was added.
        self.train.push(game, n, limit, self.config.surprise_share);
        false
    }

    /// Reads record files under `dir` (recursively, in name order with numbers compared by
    /// value, [`natural_cmp`]) that this window has not read yet (listing again only the
    /// directories that changed, [`RecordScan`]); unreadable or corrupt files are skipped and
    /// returned, never trained on.
    /// Every game is checked as it enters ([`crate::replay::validate`]): a file with a game
    /// that passes its checksum but does not replay is quarantined, renamed to
    /// `NAME.cfzg.quarantined` (kept for inspection, never read again, also after a resume)
    /// and returned with the skipped files. Returns the number of games added.
    pub fn load_new_files(&mut self, dir: &Path) -> std::io::Result<(usize, Vec<SkippedFile>)> {
        self.load_new_files_into(dir, None)
    }

    /// [`ReplayWindow::load_new_files`], also pushing each game added onto `arrived` with
    /// the side of the split it went to (for a teacher that labels the games as they arrive,
    /// whose labels of a held-out game must be held out too).
    pub fn load_new_files_into(
        &mut self,
        dir: &Path,
        mut arrived: Option<&mut Vec<Arrival>>,
    ) -> std::io::Result<(usize, Vec<SkippedFile>)> {
        let files = self.scan.unread(dir)?;
        let mut added = 0;
        let mut skipped = Vec::new();
        for path in files {
            match read_records(&path).and_then(|games| validate_all(&path, games)) {
                Ok(games) => {
                    added += games.len();
                    for g in games {
                        let game = Arc::new(g);
                        let held_out = self.add(game.clone());
                        if let Some(a) = arrived.as_deref_mut() {
                            a.push(Arrival { game, held_out });
                        }
                    }
                    self.scan.mark_read(path);
                }
                Err(error @ RecordError::Invalid { .. }) => {
                    let mut quarantined = path.clone().into_os_string();
                    quarantined.push(".quarantined");
                    // Failing to rename only means it is skipped again after a resume.
                    let _ = std::fs::rename(&path, &quarantined);
                    self.scan.mark_read(path.clone());
                    skipped.push(SkippedFile { path, error });
                }
                Err(error) => {
                    self.scan.mark_read(path.clone());
                    skipped.push(SkippedFile { path, error });
                }
            }
        }
        Ok((added, skipped))
    }

    /// Trainable positions currently in the window (held-out games not counted).
    pub fn positions(&self) -> usize {
        self.train.positions
    }

    /// Trainable positions ever added for training.
    pub fn positions_seen(&self) -> usize {
        self.seen
    }

    /// Games currently in the window (held-out games not counted).
    pub fn games(&self) -> usize {
        self.train.games.len()
    }

    /// The generation of the oldest net that played a game the window holds (training or
    /// held out); `None` while it holds none.
    pub fn oldest_generation(&self) -> Option<u32> {
        self.train
            .games
            .iter()
            .chain(&self.validation.games)
            .map(|g| g.generation)
            .min()
    }

    /// Trainable positions of the held-out games kept for validation.
    pub fn validation_positions(&self) -> usize {
        self.validation.positions
    }

    /// A uniformly drawn trainable position of a held-out game. `None` when none is held.
    pub fn sample_validation(&self, rng: &mut impl Rng) -> Option<(Arc<GameRecord>, usize)> {
        self.validation.sample(rng)
    }

    /// A drawn position of a training game: the game and the ply. With probability
    /// `value_only_share` (while the window holds such positions) one without a policy
    /// target, uniformly; else a trainable one, uniformly or as `surprise_share` weighs them.
    /// `None` when empty.
    pub fn sample(&self, rng: &mut impl Rng) -> Option<(Arc<GameRecord>, usize)> {
        let share = self.config.value_only_share;
        // A share of 0 draws no number here, so a seed's draws stay those it always gave.
        if share > 0.0 && self.train.value_only_positions > 0 && rng.random::<f64>() < share {
            return self.train.sample_value_only(rng);
        }
        self.train.sample(rng)
    }
}

/// `games` if every one of them replays ([`crate::replay::validate`]), else the first
/// failure as [`RecordError::Invalid`].
fn validate_all(path: &Path, games: Vec<GameRecord>) -> Result<Vec<GameRecord>, RecordError> {
    for (game, record) in games.iter().enumerate() {
        crate::replay::validate(record).map_err(|reason| RecordError::Invalid {
            path: path.to_path_buf(),
            game,
            reason,
        })?;
    }
    Ok(games)
}

/// The record files under `dir` (recursively; a missing `dir` has none) in the order they
/// are read: numbers by value ([`natural_cmp`]), so gen-10000 comes after gen-9999.
pub fn sorted_record_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    collect_record_files(dir, &mut files)?;
    files.sort_by(|a, b| natural_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
    Ok(files)
}

/// Appends the record files under `dir` (recursively; a missing `dir` has none) to `out`,
/// in no particular order.
pub fn collect_record_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
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

/// Compares two names with their runs of digits compared as numbers (`gen-9999` before
/// `gen-10000`), the rest byte by byte: the order in which generations and games were written,
/// which a plain text sort breaks once a number outgrows its zero padding.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let run = |s: &[u8], k: usize| {
                let end = k + s[k..].iter().take_while(|c| c.is_ascii_digit()).count();
                let start = k + s[k..end].iter().take_while(|&&c| c == b'0').count();
                (start, end)
            };
            let ((sa, ea), (sb, eb)) = (run(a, i), run(b, j));
            // Without leading zeros, a longer run is a larger number.
            let order = (ea - sa)
                .cmp(&(eb - sb))
                .then_with(|| a[sa..ea].cmp(&b[sb..eb]));
            if order != Ordering::Equal {
                return order;
            }
            (i, j) = (ea, eb);
        } else {
            if a[i] != b[j] {
                return a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (a.len() - i).cmp(&(b.len() - j))
}

#[cfg(test)]
mod tests {
    use super::{ReplayWindow, WindowConfig, natural_cmp};
    use crate::record::{GameRecord, PositionRecord};
    use crate::{GameResult, Termination};
    use rand::SeedableRng;
    use std::cmp::Ordering;
    use std::sync::Arc;

    /// A game whose plies have these surprises (`None`: no policy target).
    fn game(surprises: &[Option<f32>]) -> Arc<GameRecord> {
        let positions = surprises
            .iter()
            .map(|s| PositionRecord {
                policy: if s.is_some() { vec![65535] } else { Vec::new() },
                surprise: s.unwrap_or(0.0),
                ..PositionRecord::default()
            })
            .collect();
        Arc::new(GameRecord {
            start_fen: None,
            result: GameResult::Draw,
            termination: Termination::MAX_PLIES,
            generation: 1,
            positions,
        })
    }

    /// How often each (game, ply) is drawn from a window of `games` in `draws` draws, with
    /// `config` (no game held out).
    fn shares(games: &[Arc<GameRecord>], config: WindowConfig, draws: usize) -> Vec<Vec<f64>> {
        let mut window = ReplayWindow::new(WindowConfig {
            validation_share: 0.0,
            ..config
        });
        for g in games {
            window.add(g.clone());
        }
        let mut counts: Vec<Vec<f64>> =
            games.iter().map(|g| vec![0.0; g.positions.len()]).collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..draws {
            let (g, ply) = window.sample(&mut rng).unwrap();
            let i = games.iter().position(|x| Arc::ptr_eq(x, &g)).unwrap();
            counts[i][ply] += 1.0 / draws as f64;
        }
        counts
    }

    fn assert_near(got: &[f64], want: &[f64]) {
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 0.01, "{got:?} against {want:?}");
        }
    }

    #[test]
    fn surprising_positions_are_drawn_more_and_each_game_as_often_as_before() {
        // Surprises 0, 0 and 3 on the trainable plies 0, 2 and 3 (mean 1); a second game
        // whose two positions surprised nothing.
        let a = game(&[Some(0.0), None, Some(0.0), Some(3.0)]);
        let b = game(&[Some(0.0), Some(0.0)]);
        let games = [a, b];
        // Evenly: each of the five trainable positions a fifth of the time.
        let surprise = |surprise_share| WindowConfig {
            surprise_share,
            ..WindowConfig::default()
        };
        let even = shares(&games, surprise(0.0), 100_000);
        assert_near(&even[0], &[0.2, 0.0, 0.2, 0.2]);
        assert_near(&even[1], &[0.2, 0.2]);
        // Half by surprise: weights 0.5, 0.5 and 2 within the first game, which is still
        // drawn three fifths of the time; the second game is as it was.
        let half = shares(&games, surprise(0.5), 100_000);
        assert_near(&half[0], &[0.1, 0.0, 0.1, 0.4]);
        assert_near(&half[1], &[0.2, 0.2]);
        // All by surprise: the first game's draws all go to its surprising position.
        let all = shares(&games, surprise(1.0), 100_000);
        assert_near(&all[0], &[0.0, 0.0, 0.0, 0.6]);
        assert_near(&all[1], &[0.2, 0.2]);
        assert_eq!(all[0][0], 0.0);
    }

    #[test]
    fn a_value_only_share_draws_the_cheap_searches_positions_that_often() {
        // Trainable plies 0 and 2 of the first game and 0 of the second; four positions
        // without a policy target.
        let a = game(&[Some(0.0), None, Some(0.0), None, None]);
        let b = game(&[Some(0.0), None]);
        let games = [a, b];
        let value_only = |value_only_share| WindowConfig {
            value_only_share,
            ..WindowConfig::default()
        };
        // 0: only the three trainable positions, a third each.
        let none = shares(&games, value_only(0.0), 100_000);
        assert_near(&none[0], &[1.0 / 3.0, 0.0, 1.0 / 3.0, 0.0, 0.0]);
        assert_near(&none[1], &[1.0 / 3.0, 0.0]);
        assert_eq!(
            (none[0][1], none[0][3], none[0][4], none[1][1]),
            (0.0, 0.0, 0.0, 0.0)
        );
        // 0.4: six tenths over the trainable three, four tenths over the other four.
        let some = shares(&games, value_only(0.4), 100_000);
        assert_near(&some[0], &[0.2, 0.1, 0.2, 0.1, 0.1]);
        assert_near(&some[1], &[0.2, 0.1]);
        // A window whose games have no such position draws its trainable ones at any share.
        let full = [game(&[Some(0.0), Some(0.0)])];
        assert_near(&shares(&full, value_only(0.9), 10_000)[0], &[0.5, 0.5]);
    }

    #[test]
    fn value_only_positions_leave_with_their_game() {
        // The window keeps two trainable positions: each new game of two pushes the oldest out.
        let mut window = ReplayWindow::new(WindowConfig {
            min_positions: 2,
            max_positions: 2,
            validation_share: 0.0,
            value_only_share: 0.5,
            ..WindowConfig::default()
        });
        let old = game(&[Some(0.0), None, None, Some(0.0)]);
        let new = game(&[Some(0.0), Some(0.0)]);
        window.add(old.clone());
        window.add(new.clone());
        assert_eq!(window.games(), 1);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for _ in 0..1000 {
            let (g, _) = window.sample(&mut rng).unwrap();
            assert!(Arc::ptr_eq(&g, &new), "a dropped game's position was drawn");
        }
    }

    #[test]
    fn a_value_only_share_outside_zero_to_one_is_refused() {
        for bad in [-0.1, 1.0, f64::NAN] {
            let config = WindowConfig {
                value_only_share: bad,
                ..WindowConfig::default()
            };
            let err = config.validate().unwrap_err().to_string();
            assert!(err.contains("value_only_share"), "{bad}: {err}");
        }
        let fine = WindowConfig {
            value_only_share: 0.5,
            ..WindowConfig::default()
        };
        assert!(fine.validate().is_ok());
    }

    #[test]
    fn a_surprise_share_outside_zero_to_one_is_refused() {
        for bad in [-0.1, 1.5, f64::NAN] {
            let config = WindowConfig {
                surprise_share: bad,
                ..WindowConfig::default()
            };
            let err = config.validate().unwrap_err().to_string();
            assert!(err.contains("surprise_share"), "{bad}: {err}");
        }
    }

    #[test]
    fn numbers_compare_by_value() {
        assert_eq!(
            natural_cmp("gen-9999/g00001.cfzg", "gen-10000/g00000.cfzg"),
            Ordering::Less
        );
        assert_eq!(
            natural_cmp("w-g99999.cfzg", "w-g100000.cfzg"),
            Ordering::Less
        );
        assert_eq!(natural_cmp("gen-0003", "gen-0003"), Ordering::Equal);
        assert_eq!(natural_cmp("gen-0003/a", "gen-0003/b"), Ordering::Less);
        assert_eq!(natural_cmp("gen-0010", "gen-0009"), Ordering::Greater);
        assert_eq!(natural_cmp("a", "a1"), Ordering::Less);
        let mut names = vec!["gen-10000", "gen-0002", "gen-9999", "gen-0010"];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(names, ["gen-0002", "gen-0010", "gen-9999", "gen-10000"]);
    }
}
