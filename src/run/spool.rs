//! A self-play worker's local spool (`spool/<worker>/` in the run directory or the cache):
//! the games it finished and the store does not have yet. Nothing a worker finished is lost, whether the store is down or the
//! worker is killed:
//!
//! ```text
//! SPOOL/games/gen-0004/W-g00012.cfzg   finished games, one file each (written atomically)
//! SPOOL/bundling/i3s17-g0004/...       games being bundled into a chunk (moved here first)
//! SPOOL/outbox/i3s17-g0004-n32-p5120.cfzg (+ .pgn)   chunks waiting for upload
//! SPOOL/next-index                     the next game number (it seeds the games)
//! SPOOL/last-number                    the incarnation and number of the newest chunk made
//! SPOOL/lock                           held by the worker that owns the spool
//! ```
//!
//! A chunk is numbered when it is bundled (`i<incarnation>s<seq>`,
//! [`cfzero_store::Bundle::Numbered`]): the incarnation is the one this worker process
//! claimed on the store, the numbers count its chunks from 1 without holes. Bundling moves the
//! game files into a directory named with the chunk's number, writes the chunk to the outbox
//! atomically, then removes that directory: a kill at any point leaves either the games or the
//! chunk, and [`Spool::open`] finishes what was begun. An outbox chunk leaves only once the
//! store has it, under the name it was bundled with, so a chunk uploaded twice (a kill between
//! the upload and the removal, or two workers started from one copied cache) is read once.
//! Chunks bundled by older versions carry their bundle time instead and go up as they are.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use cfzero_fsutil::write_file_atomically;
use cfzero_selfplay::GameRecord;
use cfzero_selfplay::record::{RECORD_EXTENSION, encode_records, read_records};
use cfzero_store::chunks::now_ms;
use cfzero_store::{Bundle, ChunkName, RunStore};

use crate::run::dir::generation_dir;
use crate::run::selfplay_phase::{pgn_text, record_prefix};

/// A worker's spool, locked while this value lives.
#[derive(Debug)]
pub struct Spool {
    root: PathBuf,
    worker: String,
    /// The heads of the streams this spool uploads to.
    heads: std::sync::Mutex<cfzero_store::heads::HeadWriter>,
    _lock: File,
}

/// A chunk in the outbox.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The chunk's file.
    pub path: PathBuf,
    /// Its generation.
    pub generation: u32,
    /// Which of the worker's chunks it is.
    pub bundle: Bundle,
    /// Games in it.
    pub games: u32,
    /// Positions in it.
    pub positions: u64,
}

impl Spool {
    /// Opens the spool of `worker` under `root`, or `None` if another process holds it;
    /// finishes bundles a killed worker left half done.
    pub fn open(root: &Path, worker: &str) -> Result<Option<Spool>> {
        for sub in ["games", "bundling", "outbox"] {
            let d = root.join(sub);
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        }
        let Some(lock) = cfzero_store::local::try_lock_file(&root.join("lock"))? else {
            return Ok(None);
        };
        let spool = Spool {
            root: root.to_owned(),
            worker: worker.to_owned(),
            heads: Default::default(),
            _lock: lock,
        };
        for dir in list(&spool.root.join("bundling"))? {
            spool.finish_bundle(&dir)?;
        }
        Ok(Some(spool))
    }

    /// The worker's name.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// Where the games of generation `g` are played into.
    pub fn games_dir(&self, g: u32) -> PathBuf {
        self.root.join("games").join(format!("gen-{g:04}"))
    }

    /// Reserves `n` game numbers; returns the first. Game numbers seed the games, so they
    /// never repeat for this worker, across restarts included.
    pub fn reserve(&self, n: usize) -> Result<u64> {
        let path = self.root.join("next-index");
        let first = match std::fs::read_to_string(&path) {
            Ok(s) => s.trim().parse::<u64>().unwrap_or(0),
            Err(_) => 0,
        };
        write_file_atomically(&path, (first + n as u64).to_string().as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(first)
    }

    /// Finished games not bundled yet, and when the oldest of them was written.
    pub fn pending(&self) -> Result<(usize, Option<SystemTime>)> {
        let mut count = 0;
        let mut oldest: Option<SystemTime> = None;
        for dir in list(&self.root.join("games"))? {
            for f in self.finished_games(&dir)? {
                count += 1;
                if let Ok(t) = std::fs::metadata(&f).and_then(|m| m.modified()) {
                    oldest = Some(oldest.map_or(t, |o| o.min(t)));
                }
            }
        }
        Ok((count, oldest))
    }

    /// Bundles every finished game into outbox chunks (one per generation), numbered in
    /// `incarnation` (this process's, [`cfzero_store::claim_incarnation`]); returns the number of
    /// chunks made.
    pub fn bundle(&self, incarnation: u32) -> Result<usize> {
        let mut made = 0;
        for dir in list(&self.root.join("games"))? {
            let files = self.finished_games(&dir)?;
            if files.is_empty() {
                continue;
            }
            let Some(generation) = generation_dir(&dir) else {
                continue;
            };
            let bundle = Bundle::Numbered {
                incarnation,
                seq: self.last_seq(incarnation)? + 1,
            };
            let target = self
                .root
                .join("bundling")
                .join(bundle_dir(bundle, generation));
            // The directory first: a kill before the record below leaves it, and the next
            // number is counted past it.
            std::fs::create_dir_all(&target)
                .with_context(|| format!("creating {}", target.display()))?;
            let last = self.root.join("last-number");
            write_file_atomically(&last, bundle.to_string().as_bytes())
                .with_context(|| format!("writing {}", last.display()))?;
            for f in files {
                let to = target.join(f.file_name().unwrap_or_default());
                std::fs::rename(&f, &to)
                    .with_context(|| format!("moving {} to {}", f.display(), to.display()))?;
            }
            self.finish_bundle(&target)?;
            made += 1;
        }
        Ok(made)
    }

    /// The newest chunk number this worker used in `incarnation` (0 for none): the one
    /// recorded, or any in the bundling directory or the outbox.
    fn last_seq(&self, incarnation: u32) -> Result<u64> {
        let seq_of = |b: Bundle| match b {
            Bundle::Numbered {
                incarnation: i,
                seq,
            } if i == incarnation => seq,
            _ => 0,
        };
        let recorded = std::fs::read_to_string(self.root.join("last-number"))
            .ok()
            .and_then(|t| t.trim().parse::<Bundle>().ok())
            .map_or(0, seq_of);
        let bundling = list(&self.root.join("bundling"))?
            .iter()
            .filter_map(|d| parse_bundle_dir(d.file_name()?.to_str()?).map(|(b, _)| seq_of(b)))
            .max()
            .unwrap_or(0);
        let outbox = self
            .outbox()?
            .iter()
            .map(|o| seq_of(o.bundle))
            .max()
            .unwrap_or(0);
        Ok(recorded.max(bundling).max(outbox))
    }

    /// Writes the chunk of a bundling directory to the outbox (unless it is there already)
    /// and removes the directory.
    fn finish_bundle(&self, dir: &Path) -> Result<()> {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let Some((bundle, generation)) = parse_bundle_dir(&name) else {
            return Ok(());
        };
        let already = self.outbox()?.into_iter().any(|o| o.bundle == bundle);
        if !already {
            let mut games: Vec<GameRecord> = Vec::new();
            for f in list(dir)? {
                match read_records(&f) {
                    Ok(g) => games.extend(g),
                    // A file the worker did not finish writing is a game it did not finish.
                    Err(e) => eprintln!("warning: spool: skipping {}: {e}", f.display()),
                }
            }
            if !games.is_empty() {
                let positions: u64 = games.iter().map(|g| g.positions.len() as u64).sum();
                let stem = format!("{bundle}-g{generation:04}-n{}-p{positions}", games.len());
                let outbox = self.root.join("outbox");
                let pgn = pgn_text(&games, generation, &dir.display().to_string());
                let pgn_path = outbox.join(format!("{stem}.pgn"));
                write_file_atomically(&pgn_path, pgn.as_bytes())
                    .with_context(|| format!("writing {}", pgn_path.display()))?;
                // The chunk last: its presence says the bundle is complete.
                let chunk = outbox.join(format!("{stem}.{RECORD_EXTENSION}"));
                write_file_atomically(&chunk, &encode_records(&games))
                    .with_context(|| format!("writing {}", chunk.display()))?;
            }
        }
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))
    }

    /// Chunks waiting for upload, oldest first.
    pub fn outbox(&self) -> Result<Vec<Outgoing>> {
        let mut out: Vec<Outgoing> = list(&self.root.join("outbox"))?
            .into_iter()
            .filter_map(|path| {
                let stem = path
                    .file_name()?
                    .to_str()?
                    .strip_suffix(".cfzg")?
                    .to_owned();
                let mut parts = stem.split('-');
                let bundle: Bundle = parts.next()?.parse().ok()?;
                let generation = parts.next()?.strip_prefix('g')?.parse().ok()?;
                let games = parts.next()?.strip_prefix('n')?.parse().ok()?;
                let positions = parts.next()?.strip_prefix('p')?.parse().ok()?;
                Some(Outgoing {
                    path,
                    generation,
                    bundle,
                    games,
                    positions,
                })
            })
            .collect();
        out.sort_by_key(|o| o.bundle);
        Ok(out)
    }

    /// Bytes of games the store does not have yet: the outbox's chunks and the finished
    /// games not bundled (which wait for an incarnation while the store cannot be reached).
    pub fn waiting_bytes(&self) -> u64 {
        let size = |files: Vec<PathBuf>| -> u64 {
            files
                .iter()
                .filter_map(|f| std::fs::metadata(f).ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        };
        let games: u64 = list(&self.root.join("games"))
            .unwrap_or_default()
            .into_iter()
            .map(|dir| size(self.finished_games(&dir).unwrap_or_default()))
            .sum();
        games + size(list(&self.root.join("outbox")).unwrap_or_default())
    }

    /// Uploads one outbox chunk under the name it was bundled with (its PGN first, under
    /// `pgn/gen-N/`, its stream's head after it), then removes it from the outbox; returns
    /// its key.
    pub fn upload(&self, store: &dyn RunStore, chunk: &Outgoing) -> Result<String> {
        let bytes = std::fs::read(&chunk.path)
            .with_context(|| format!("reading {}", chunk.path.display()))?;
        let name = ChunkName {
            uploaded_ms: now_ms(),
            generation: chunk.generation,
            worker: self.worker.clone(),
            bundle: chunk.bundle,
            games: chunk.games,
            positions: chunk.positions,
        };
        let key = name.key();
        let pgn_path = chunk.path.with_extension("pgn");
        if let Ok(pgn) = std::fs::read(&pgn_path) {
            store.put(&name.pgn_key(), &pgn)?;
        }
        store.put(&key, &bytes)?;
        // The stream's head names the chunk for the trainer's sweeps; a failure here retries
        // the whole upload (the chunk is read once all the same).
        self.heads
            .lock()
            .expect("never poisoned")
            .record_upload(store, &name, &key)?;
        let _ = std::fs::remove_file(&pgn_path);
        std::fs::remove_file(&chunk.path)
            .with_context(|| format!("removing {}", chunk.path.display()))?;
        Ok(key)
    }

    /// The finished game files of this worker in `dir` (temporary files left out).
    fn finished_games(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let prefix = record_prefix(&self.worker);
        Ok(list(dir)?
            .into_iter()
            .filter(|p| {
                p.extension().is_some_and(|e| e == RECORD_EXTENSION)
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&prefix))
            })
            .collect())
    }
}

/// How long to wait before the next try after `failures` failed ones in a row: 1 s,
/// doubling, at most a minute.
pub fn backoff(failures: u32) -> Duration {
    Duration::from_secs(1u64 << failures.min(6)).min(Duration::from_secs(60))
}

fn bundle_dir(bundle: Bundle, generation: u32) -> String {
    format!("{bundle}-g{generation:04}")
}

fn parse_bundle_dir(name: &str) -> Option<(Bundle, u32)> {
    let (bundle, generation) = name.split_once("-g")?;
    Some((bundle.parse().ok()?, generation.parse().ok()?))
}

/// The entries of `dir`, sorted (none if it does not exist).
fn list(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            for e in entries {
                out.push(
                    e.with_context(|| format!("reading {}", dir.display()))?
                        .path(),
                );
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfzero_selfplay::record::write_records;
    use cfzero_selfplay::{GameResult, PositionRecord, Termination};
    use cfzero_store::LocalStore;

    /// Two plies (the first legal move each time), then Black resigns.
    fn game() -> GameRecord {
        let position = PositionRecord::default();
        GameRecord {
            start_fen: None,
            result: GameResult::WhiteWin,
            termination: Termination::Resignation,
            generation: 0,
            positions: vec![position.clone(), position],
        }
    }

    /// The spool at `root` once its last owner is gone. Another test of this binary may be
    /// spawning a process that holds a copy of the lock's handle until it executes, so the lock
    /// is waited for a while rather than read once.
    fn reopen(root: &Path) -> Spool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            if let Some(spool) = Spool::open(root, "w").unwrap() {
                return spool;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the spool stays locked"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    fn numbered(incarnation: u32, seq: u64) -> Bundle {
        Bundle::Numbered { incarnation, seq }
    }

    #[test]
    fn games_go_to_the_outbox_and_from_there_to_the_store_once() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("spool");
        let spool = Spool::open(&root, "w").unwrap().unwrap();
        assert!(Spool::open(&root, "w").unwrap().is_none(), "one owner");
        assert_eq!(spool.reserve(3).unwrap(), 0);
        assert_eq!(spool.reserve(2).unwrap(), 3);

        let games = spool.games_dir(1);
        std::fs::create_dir_all(&games).unwrap();
        for i in 0..3 {
            write_records(&games.join(format!("w-g{i:05}.cfzg")), &[game()]).unwrap();
        }
        // A game being written and another worker's file are not this worker's finished games.
        std::fs::write(games.join("w-g00003.cfzg.tmp1-0"), b"half").unwrap();
        write_records(&games.join("x-g00000.cfzg"), &[game()]).unwrap();
        assert_eq!(spool.pending().unwrap().0, 3);
        assert_eq!(spool.bundle(2).unwrap(), 1);
        assert_eq!(spool.pending().unwrap().0, 0);
        let outbox = spool.outbox().unwrap();
        assert_eq!(outbox.len(), 1);
        let first = numbered(2, 1);
        assert_eq!(
            (
                outbox[0].bundle,
                outbox[0].games,
                outbox[0].positions,
                outbox[0].generation
            ),
            (first, 3, 6, 1)
        );
        let pgn = std::fs::read_to_string(outbox[0].path.with_extension("pgn")).unwrap();
        assert_eq!(
            pgn.matches("[Termination \"resignation\"]").count(),
            3,
            "{pgn}"
        );

        // Killed while bundling chunk 2: the next owner finishes the bundle, and its chunks
        // are numbered past it.
        let second = numbered(2, 2);
        let half = root.join("bundling").join(bundle_dir(second, 2));
        std::fs::create_dir_all(&half).unwrap();
        write_records(&half.join("w-g00004.cfzg"), &[game()]).unwrap();
        // A chunk an older version bundled, named by its bundle time.
        let timed = root
            .join("bundling")
            .join(bundle_dir(Bundle::Timed(1_700_000_000_000), 2));
        std::fs::create_dir_all(&timed).unwrap();
        write_records(&timed.join("w-g00003.cfzg"), &[game()]).unwrap();
        drop(spool);
        let spool = reopen(&root);
        assert!(!half.exists() && !timed.exists());
        let outbox = spool.outbox().unwrap();
        let made: Vec<(Bundle, u32, u32)> = outbox
            .iter()
            .map(|o| (o.bundle, o.games, o.generation))
            .collect();
        assert_eq!(
            made,
            vec![
                (first, 3, 1),
                (second, 1, 2),
                (Bundle::Timed(1_700_000_000_000), 1, 2)
            ]
        );
        write_records(&spool.games_dir(1).join("w-g00005.cfzg"), &[game()]).unwrap();
        assert_eq!(spool.bundle(2).unwrap(), 1);
        assert_eq!(spool.outbox().unwrap()[2].bundle, numbered(2, 3));
        // Another incarnation numbers from 1.
        write_records(&spool.games_dir(1).join("w-g00006.cfzg"), &[game()]).unwrap();
        assert_eq!(spool.bundle(3).unwrap(), 1);
        assert_eq!(spool.outbox().unwrap()[3].bundle, numbered(3, 1));

        let store = LocalStore::new(&tmp.path().join("store"));
        let outbox = spool.outbox().unwrap();
        for chunk in &outbox {
            let key = spool.upload(&store, chunk).unwrap();
            let name = ChunkName::parse(&key).unwrap();
            assert_eq!(
                (name.worker.as_str(), name.bundle, name.games),
                ("w", chunk.bundle, chunk.games)
            );
            let games = cfzero_selfplay::record::decode_records(
                &store.get(&key).unwrap().unwrap(),
                Path::new(&key),
            )
            .unwrap();
            assert_eq!(games.len() as u32, chunk.games);
        }
        assert!(spool.outbox().unwrap().is_empty());
        assert_eq!(store.list_after("pgn", None).unwrap().len(), 5);
        assert_eq!(spool.waiting_bytes(), 0);

        // Numbers only increase within an incarnation, after their upload too.
        std::fs::create_dir_all(spool.games_dir(4)).unwrap();
        write_records(&spool.games_dir(4).join("w-g00007.cfzg"), &[game()]).unwrap();
        assert_eq!(spool.bundle(3).unwrap(), 1);
        assert_eq!(spool.outbox().unwrap()[0].bundle, numbered(3, 2));
    }

    /// Copies the directory `from` to `to`, as a user copying a worker's cache does.
    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_dir(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), &target).unwrap();
            }
        }
    }

    /// A game told apart from the others by its `generation` field.
    fn marked(mark: u32) -> GameRecord {
        GameRecord {
            generation: mark,
            ..game()
        }
    }

    #[test]
    fn two_workers_from_one_copied_cache_and_a_retried_upload_lose_and_double_nothing() {
        use cfzero_store::{ChunkCursor, claim_incarnation};
        let tmp = tempfile::tempdir().unwrap();
        let store = LocalStore::new(&tmp.path().join("store"));
        let root = tmp.path().join("spool");
        let spool = Spool::open(&root, "w").unwrap().unwrap();
        let first = claim_incarnation(&store, "w", "first").unwrap();
        std::fs::create_dir_all(spool.games_dir(1)).unwrap();
        for (i, mark) in [10, 11].into_iter().enumerate() {
            let file = spool.games_dir(1).join(format!("w-g{i:05}.cfzg"));
            write_records(&file, &[marked(mark)]).unwrap();
        }
        assert_eq!(spool.bundle(first).unwrap(), 1);
        // Uploaded, then killed before the chunk left the outbox: it goes up again.
        let chunk = spool.outbox().unwrap().remove(0);
        let kept = std::fs::read(&chunk.path).unwrap();
        spool.upload(&store, &chunk).unwrap();
        std::fs::write(&chunk.path, kept).unwrap();
        drop(spool);

        // The cache copied to a second machine; both workers start from it.
        let copy = tmp.path().join("copy");
        copy_dir(&root, &copy);
        let spools = [reopen(&root), reopen(&copy)];
        for (spool, marks) in spools.iter().zip([[20, 21], [30, 31]]) {
            let incarnation = claim_incarnation(&store, "w", "again").unwrap();
            assert_ne!(incarnation, first);
            // The same game numbers on both: the copied next-index.
            let at = spool.reserve(2).unwrap();
            std::fs::create_dir_all(spool.games_dir(2)).unwrap();
            for (i, mark) in marks.into_iter().enumerate() {
                let file = spool
                    .games_dir(2)
                    .join(format!("w-g{:05}.cfzg", at + i as u64));
                write_records(&file, &[marked(mark)]).unwrap();
            }
            assert_eq!(spool.bundle(incarnation).unwrap(), 1);
        }
        for spool in &spools {
            for chunk in spool.outbox().unwrap() {
                spool.upload(&store, &chunk).unwrap();
            }
        }

        // The trainer reads every game once.
        let mut cursor = ChunkCursor::new(Duration::from_secs(300));
        let mut marks = Vec::new();
        for key in cursor.poll_all(&store).unwrap().new {
            if !cursor.consumed(&key) {
                let bytes = store.get(&key).unwrap().unwrap();
                let games =
                    cfzero_selfplay::record::decode_records(&bytes, Path::new(&key)).unwrap();
                marks.extend(games.iter().map(|g| g.generation));
            }
            cursor.consume(&key);
        }
        marks.sort_unstable();
        assert_eq!(marks, vec![10, 11, 20, 21, 30, 31]);
        assert!(
            cursor
                .check_holes(now_ms(), Duration::from_secs(600))
                .is_empty()
        );
    }

    #[test]
    fn names_round_trip() {
        let b = numbered(4, 17);
        assert_eq!(parse_bundle_dir(&bundle_dir(b, 3)), Some((b, 3)));
        let t = Bundle::Timed(1_700_000_000_000);
        assert_eq!(parse_bundle_dir(&bundle_dir(t, 3)), Some((t, 3)));
        assert_eq!(generation_dir(Path::new("x/gen-0012")), Some(12));
        assert_eq!(backoff(0), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(8));
        assert_eq!(backoff(40), Duration::from_secs(60));
    }
}
