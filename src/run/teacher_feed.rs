//! A teacher beside self-play (`cfzero train` or `learn` with `[teacher]` or `--teacher`): a
//! pool of UCI engine processes labels a share of each generation's self-play positions as they arrive,
//! on its own thread, into `RUN/teacher/labels-NN.cfl`; training reads the labels through the
//! `teacher:` data source ([`cfzero_trainer::source::teacher::TeacherSource`]). Positions of
//! the games the replay window holds out are labelled into `RUN/teacher/held-out-NN.cfl`,
//! whose header says so: validation only, never trained on, so that a held-out game reaches
//! training through the teacher no more than through the window.
//!
//! Self-play never waits for the engines: positions go into a queue, the newest first to the
//! engines, and when the engines fall behind by more than [`MAX_BACKLOG`] positions the oldest
//! queued ones are dropped (counted).
//! While the trainer trains on the CPU the feed is held ([`TeacherFeed::pause`]): no new
//! position goes to the engines until training ends, so an engine never takes a core from
//! libtorch's training threads, which slow far more than self-play does when a core is taken
//! (a teacher busy through training took the tiny net's training from about 310-400 to
//! 100-130 samples/s; docs/history/benchmarks-2026-11.md, "A teacher during self-play").
//! Labels are appended as they come (one framed entry each, as `cfzero label` writes them), so a
//! trainer killed at any point keeps every whole label; a resumed run appends to the newest
//! file when the teacher's settings are the same and starts a new file when they changed.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use cfzero_selfplay::GameRecord;
use cfzero_selfplay::replay::replay;
use cfzero_teacher::label_file::{
    GameHistory, LabelEntry, LabelFileError, LabelHeader, LabelSplit, LabelWriter,
};
use cfzero_teacher::pool::{EnginePool, Job, PoolEvent, PoolOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{TEACHER_OPTIONS, TeacherConfig};
use crate::error::user_error;
use cfzero_eval::uci_client::{UciEngine, options_text, resolve_command};

/// Positions waiting for an engine beyond which the oldest are dropped.
pub const MAX_BACKLOG: usize = 20_000;
/// Positions handed to the pool at once per engine process (the rest wait in the backlog).
const IN_FLIGHT_PER_PROCESS: usize = 4;
/// How often the label file is flushed to disk.
const SYNC_EVERY: Duration = Duration::from_secs(10);

/// What the teacher has done since the trainer started.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FeedStats {
    /// Positions handed to the teacher.
    pub queued: u64,
    /// Labels written.
    pub labels: u64,
    /// Positions the engine gave up on (written as skipped).
    pub skipped: u64,
    /// Positions dropped because the engines were behind.
    pub dropped: u64,
    /// Engine restarts and other handled faults.
    pub warnings: u64,
    /// Positions waiting (queued, not yet answered).
    pub waiting: u64,
    /// Seconds since the teacher started.
    pub seconds: f64,
}

impl FeedStats {
    /// Labels (and skipped positions) per second since the start.
    pub fn labels_per_second(&self) -> f64 {
        (self.labels + self.skipped) as f64 / self.seconds.max(1e-9)
    }
}

/// The engines and the thread that feeds them and writes their labels.
#[derive(Debug)]
pub struct TeacherFeed {
    jobs: Option<Sender<Vec<Offered>>>,
    stats: Arc<Mutex<FeedStats>>,
    failed: Arc<Mutex<Option<String>>>,
    stop: Arc<AtomicBool>,
    paused: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    dir: PathBuf,
    share: f64,
    seed: u64,
    next_index: u64,
}

/// The teacher's engines, started (before the run is opened, so that a command that does not
/// run leaves nothing behind).
#[derive(Debug)]
pub struct TeacherEngines {
    pool: EnginePool,
    header: LabelHeader,
    processes: usize,
    share: f64,
}

impl TeacherEngines {
    /// Starts the engines of `config`; one that does not start is a user error (exit 2).
    pub fn start(config: &TeacherConfig) -> Result<TeacherEngines> {
        let command = resolve_command(&config.engine);
        let refused =
            |e: &dyn std::fmt::Display| user_error(format!("the teacher ({}): {e}", config.engine));
        // One engine's handshake says which of the default options it has.
        let offered = UciEngine::launch(&command).map_err(|e| refused(&e))?;
        let mut options: Vec<(String, String)> = config
            .options
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (name, value) in TEACHER_OPTIONS {
            let set = options.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
            if !set && offered.offers(name) {
                options.push((name.to_string(), value.to_string()));
            }
        }
        drop(offered);
        let pool_options = PoolOptions {
            command,
            options,
            limit: config.limit(),
            method: config.method,
            processes: config.processes,
            timeout: Duration::from_secs(config.timeout_seconds),
            attempts: config.attempts,
        };
        let pool = EnginePool::start(&pool_options).map_err(|e| refused(&e))?;
        Ok(TeacherEngines {
            pool,
            header: pool_options.header("cfzero train: self-play positions"),
            processes: config.processes,
            share: config.share,
        })
    }
}

impl TeacherFeed {
    /// Starts feeding `engines` from a thread, writing labels under `dir`.
    pub fn start(engines: TeacherEngines, dir: &Path, seed: u64) -> Result<TeacherFeed> {
        let TeacherEngines {
            pool,
            header,
            processes,
            share,
        } = engines;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let writers = [LabelSplit::Training, LabelSplit::HeldOut].map(|split| {
            let header = LabelHeader {
                split: Some(split),
                ..header.clone()
            };
            open_writer(dir, split, &header)
        });
        let [writer, held_writer] = writers;
        let writers = [writer?, held_writer?];
        eprintln!(
            "teacher: {} ({}, {:?}, {processes} process(es), options [{}]) labels {:.0}% of the self-play positions into {}",
            pool.name(),
            header.limit,
            header.method,
            options_text(header.options.iter().map(|(k, v)| (k, v))),
            share * 100.0,
            dir.display()
        );
        let (jobs, receiver) = channel();
        let stats = Arc::new(Mutex::new(FeedStats::default()));
        let failed = Arc::new(Mutex::new(None));
        let stop = Arc::new(AtomicBool::new(false));
        let paused = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stats, failed) = (stats.clone(), failed.clone());
            let (stop, paused) = (stop.clone(), paused.clone());
            let in_flight = processes * IN_FLIGHT_PER_PROCESS;
            std::thread::Builder::new()
                .name("teacher".into())
                .spawn(move || {
                    let mut feeder = Feeder {
                        pool,
                        writers,
                        held: HashSet::new(),
                        receiver,
                        backlog: VecDeque::new(),
                        in_flight: 0,
                        max_in_flight: in_flight,
                        stats,
                        started: Instant::now(),
                    };
                    if let Err(e) = feeder.run(&stop, &paused) {
                        eprintln!("warning: the teacher stopped: {e:#}; training goes on with the labels written so far");
                        *failed.lock().expect("never poisoned") = Some(format!("{e:#}"));
                    }
                })
                .context("starting the teacher's thread")?
        };
        Ok(TeacherFeed {
            jobs: Some(jobs),
            stats,
            failed,
            stop,
            paused,
            thread: Some(thread),
            dir: dir.to_owned(),
            share,
            seed,
            next_index: 0,
        })
    }

    /// Where the labels are written (a `teacher:` source reads the directory).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Hands the teacher its share of the positions of `games`, the games of generation
    /// `generation` (chosen by a generator seeded by the run's seed and the generation, so a
    /// rerun chooses the same), each with whether the window holds it out: the labels of a
    /// held-out game go to the held-out file. Never waits for the engines.
    pub fn offer<'a>(
        &mut self,
        games: impl IntoIterator<Item = (&'a GameRecord, bool)>,
        generation: u32,
    ) {
        let mut rng = ChaCha8Rng::seed_from_u64(
            self.seed ^ 0x7465_6163_6865_7200 ^ u64::from(generation).rotate_left(32),
        );
        let mut batch = Vec::new();
        for (game, held_out) in games {
            let len = game.positions.len();
            let mut history = GameHistory::default();
            // A game that does not replay has no position to offer; the window refuses it too.
            let _ = replay(game, |ply, state, _, mv| {
                if rng.random::<f64>() < self.share {
                    let job = Job {
                        index: self.next_index,
                        fen: state.fen(),
                        plies_left: Some(u16::try_from(len - ply).unwrap_or(u16::MAX - 1)),
                        history: Some(history.of(state)),
                    };
                    batch.push(Offered { job, held_out });
                    self.next_index += 1;
                }
                history.push(state, &mv);
            });
        }
        if let Some(jobs) = &self.jobs
            && !batch.is_empty()
        {
            // Fails only when the thread has ended, which `failed` reports.
            let _ = jobs.send(batch);
        }
    }

    /// Holds the feed until the returned guard is dropped: the engines finish the positions
    /// they have (a few per process) and get no new one; positions offered meanwhile wait.
    pub fn pause(&self) -> PausedFeed<'_> {
        self.paused.store(true, Ordering::Relaxed);
        PausedFeed { feed: self }
    }

    /// What the teacher has done so far.
    pub fn stats(&self) -> FeedStats {
        *self.stats.lock().expect("never poisoned")
    }

    /// Why the teacher stopped, if it did (every engine failed, or its file could not be
    /// written).
    pub fn failed(&self) -> Option<String> {
        self.failed.lock().expect("never poisoned").clone()
    }
}

/// A held [`TeacherFeed`]; dropping it lets the engines go on.
#[derive(Debug)]
pub struct PausedFeed<'a> {
    feed: &'a TeacherFeed,
}

impl Drop for PausedFeed<'_> {
    fn drop(&mut self) {
        self.feed.paused.store(false, Ordering::Relaxed);
    }
}

impl Drop for TeacherFeed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A position offered to the teacher, and whether its game is held out.
#[derive(Debug)]
struct Offered {
    job: Job,
    held_out: bool,
}

/// Opens the newest label file of `split` in `dir` (`labels-NN.cfl`, `held-out-NN.cfl`) if it
/// was written with `header`, else the next.
fn open_writer(dir: &Path, split: LabelSplit, header: &LabelHeader) -> Result<LabelWriter> {
    let stem = match split {
        LabelSplit::Training => "labels",
        LabelSplit::HeldOut => "held-out",
    };
    let name = |n: u32| dir.join(format!("{stem}-{n:02}.cfl"));
    let mut n = 0;
    while name(n + 1).exists() {
        n += 1;
    }
    if n > 0 {
        match LabelWriter::open(&name(n), header) {
            Ok(r) => {
                if r.cut {
                    eprintln!(
                        "teacher: cut off a partial last label of {} (a killed run)",
                        name(n).display()
                    );
                }
                return Ok(r.writer);
            }
            // The teacher's settings changed: their labels go to a file of their own.
            Err(LabelFileError::OtherSettings { .. }) => {}
            Err(e) => return Err(user_error(e)),
        }
    }
    LabelWriter::open(&name(n + 1), header)
        .map(|r| r.writer)
        .map_err(user_error)
}

/// The feeding thread's state.
struct Feeder {
    pool: EnginePool,
    /// The training labels' writer and the held-out labels'.
    writers: [LabelWriter; 2],
    /// Jobs (by index) of held-out games not yet answered.
    held: HashSet<u64>,
    receiver: Receiver<Vec<Offered>>,
    backlog: VecDeque<Job>,
    in_flight: usize,
    max_in_flight: usize,
    stats: Arc<Mutex<FeedStats>>,
    started: Instant,
}

impl Feeder {
    /// Feeds the engines and writes their labels until `stop` (then drops what waits);
    /// while `paused`, hands them nothing new.
    fn run(&mut self, stop: &AtomicBool, paused: &AtomicBool) -> Result<()> {
        let mut last_sync = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let mut dropped = 0;
            let mut queued = 0;
            while let Ok(batch) = self.receiver.try_recv() {
                queued += batch.len() as u64;
                for Offered { job, held_out } in batch {
                    if held_out {
                        self.held.insert(job.index);
                    }
                    self.backlog.push_back(job);
                }
            }
            while self.backlog.len() > MAX_BACKLOG {
                if let Some(job) = self.backlog.pop_front() {
                    self.held.remove(&job.index);
                }
                dropped += 1;
            }
            while self.in_flight < self.max_in_flight && !paused.load(Ordering::Relaxed) {
                let Some(job) = self.backlog.pop_back() else {
                    break;
                };
                self.pool.submit(job);
                self.in_flight += 1;
            }
            let (mut labels, mut skipped, mut warnings) = (0, 0, 0);
            match self.pool.next_event(Duration::from_millis(100)) {
                Some(PoolEvent::Done(index, entry)) => {
                    self.in_flight -= 1;
                    match entry {
                        LabelEntry::Label(_) => labels += 1,
                        LabelEntry::Skipped { .. } => skipped += 1,
                    }
                    let held_out = self.held.remove(&index);
                    self.writers[usize::from(held_out)].append(&entry)?;
                }
                Some(PoolEvent::Warning(_)) => warnings += 1,
                Some(PoolEvent::Failed(_, job)) => self.pool.submit(job),
                None => {}
            }
            if self.pool.all_failed() {
                anyhow::bail!("every engine failed and could not be restarted");
            }
            if last_sync.elapsed() >= SYNC_EVERY {
                self.sync()?;
                last_sync = Instant::now();
            }
            let mut s = self.stats.lock().expect("never poisoned");
            s.queued += queued;
            s.dropped += dropped;
            s.labels += labels;
            s.skipped += skipped;
            s.warnings += warnings;
            s.waiting = (self.backlog.len() + self.in_flight) as u64;
            s.seconds = self.started.elapsed().as_secs_f64();
        }
        self.sync()
    }

    fn sync(&mut self) -> Result<()> {
        for writer in &mut self.writers {
            writer.sync()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfzero_chess::ChessState;

    /// A feed of the project's scripted UCI engine (`tests/engines/scripted_uci.py`, which
    /// values every legal move of any position by a fixed rule) writing under `dir`, labelling
    /// `share` of the positions offered.
    fn scripted_feed(dir: &Path, share: f64) -> TeacherFeed {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let table = dir.join("table.json");
        std::fs::write(&table, r#"{"*": {}}"#).unwrap();
        let config = TeacherConfig {
            engine: format!(
                "/usr/bin/env SCRIPTED_UCI_TABLE={} {} {}",
                table.display(),
                root.join(".venv/bin/python").display(),
                root.join("tests/engines/scripted_uci.py").display()
            ),
            nodes: 1,
            share,
            ..TeacherConfig::default()
        };
        let engines = TeacherEngines::start(&config).unwrap();
        TeacherFeed::start(engines, &dir.join("teacher"), 1).unwrap()
    }

    /// A game of `plies` real moves that leaves the start position by its own first move:
    /// move `(ply + seed) mod legal` each ply.
    fn game(seed: usize, plies: usize) -> GameRecord {
        use cfzero_mcts::Game;
        use cfzero_selfplay::record::PositionRecord;
        use cfzero_selfplay::result::{GameResult, Termination};
        let mut state = ChessState::new();
        let mut moves = Vec::new();
        let mut positions = Vec::new();
        for ply in 0..plies {
            state.legal_moves(&mut moves);
            if moves.is_empty() {
                break;
            }
            let played = (ply + seed) % moves.len();
            positions.push(PositionRecord {
                played: played as u8,
                policy: vec![1; moves.len()],
                ..PositionRecord::default()
            });
            state.play(moves[played]);
        }
        GameRecord {
            start_fen: None,
            result: GameResult::Draw,
            termination: Termination::MAX_PLIES,
            generation: 1,
            positions,
        }
    }

    /// The FENs of `path`'s labels.
    fn label_fens(path: &Path) -> Vec<String> {
        let mut reader = cfzero_teacher::label_file::LabelReader::open(path).unwrap();
        let mut fens = Vec::new();
        while let Some(entry) = reader.next_entry().unwrap() {
            if let LabelEntry::Label(label) = entry {
                fens.push(label.fen);
            }
        }
        fens
    }

    /// Every position of a held-out game is labelled into the held-out file, every position
    /// of the other games into the training file: a held-out game reaches training through
    /// the teacher no more than through the window.
    #[test]
    fn labels_of_held_out_games_go_to_the_held_out_file_only() {
        use cfzero_selfplay::replay::replay;
        let tmp = tempfile::tempdir().unwrap();
        let mut feed = scripted_feed(tmp.path(), 1.0);
        // Every third game held out.
        let games: Vec<(GameRecord, bool)> = (0..12).map(|i| (game(i, 6), i % 3 == 2)).collect();
        let fens_of = |held: bool| -> std::collections::HashSet<String> {
            let mut fens = std::collections::HashSet::new();
            for (g, _) in games.iter().filter(|(_, h)| *h == held) {
                replay(g, |_, state, _, _| {
                    fens.insert(state.fen());
                })
                .unwrap();
            }
            fens
        };
        let (held, trained) = (fens_of(true), fens_of(false));
        assert!(
            !held.is_empty() && !trained.is_empty(),
            "both sides have games"
        );
        let positions: u64 = games.iter().map(|(g, _)| g.positions.len() as u64).sum();
        feed.offer(games.iter().map(|(g, h)| (g, *h)), 1);
        assert!(
            wait_for(&feed, 120, |s| s.labels + s.skipped == positions),
            "{:?}",
            feed.stats()
        );
        drop(feed);
        let dir = tmp.path().join("teacher");
        let (held_labels, trained_labels) = (
            label_fens(&dir.join("held-out-01.cfl")),
            label_fens(&dir.join("labels-01.cfl")),
        );
        assert!(!held_labels.is_empty() && !trained_labels.is_empty());
        assert_eq!((held_labels.len() + trained_labels.len()) as u64, positions);
        // The start position is in every game; every other position is in one game only.
        let start = ChessState::new().fen();
        for fen in held_labels.iter().filter(|f| **f != start) {
            assert!(held.contains(fen) && !trained.contains(fen), "{fen}");
        }
        for fen in trained_labels.iter().filter(|f| **f != start) {
            assert!(trained.contains(fen) && !held.contains(fen), "{fen}");
        }
    }

    /// Waits up to `seconds` for `done` to hold of the feed's figures.
    fn wait_for(feed: &TeacherFeed, seconds: u64, done: impl Fn(&FeedStats) -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(seconds);
        while Instant::now() < until {
            if done(&feed.stats()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn a_held_feed_labels_nothing_until_the_guard_drops() {
        let tmp = tempfile::tempdir().unwrap();
        let feed = scripted_feed(tmp.path(), 1.0);
        let fens = [
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
            "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
        ];
        let jobs = |from: u64| -> Vec<Offered> {
            (from..)
                .zip(fens)
                .map(|(index, fen)| Offered {
                    job: Job {
                        index,
                        fen: fen.to_owned(),
                        plies_left: Some(10),
                        history: None,
                    },
                    held_out: false,
                })
                .collect()
        };
        // Unheld, the engine answers.
        feed.jobs.as_ref().unwrap().send(jobs(0)).unwrap();
        assert!(wait_for(&feed, 60, |s| s.labels == 3), "{:?}", feed.stats());
        // Held, positions wait and nothing is labelled.
        let held = feed.pause();
        feed.jobs.as_ref().unwrap().send(jobs(3)).unwrap();
        assert!(
            wait_for(&feed, 10, |s| s.waiting == 3),
            "{:?}",
            feed.stats()
        );
        std::thread::sleep(Duration::from_secs(2));
        let stats = feed.stats();
        assert_eq!((stats.labels, stats.waiting), (3, 3), "{stats:?}");
        // Let go, the engine takes them.
        drop(held);
        assert!(wait_for(&feed, 60, |s| s.labels == 6), "{:?}", feed.stats());
        assert_eq!(feed.stats().waiting, 0);
        assert!(feed.failed().is_none());
    }
}
