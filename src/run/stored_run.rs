//! A run on its store ([`RunStore`]), worked on through a local directory in the
//! run-directory layout ([`RunDir`]): training, self-play and matches read and write local
//! files, and this module moves them to and from the store ([`RunStore::get_file`],
//! [`RunStore::put_file`]). A run is stored the same way wherever it lives; a run in a
//! directory ([`cfzero_store::LocalStore`]) is also its own local copy, so that its store
//! finds most files in place and moves nothing. Every command that opens a run goes through
//! here. What lives where:
//!
//! ```text
//! config.toml                       the frozen config (written by the trainer)
//! nets/gen-0003.safetensors         published nets, created only if absent (the commit point)
//! state/trainer-gen-0003-TAG.*      the trainer state after generation 3 (weights, optimizer,
//!                                   SWA, step), uploaded before the net, which names its TAG
//! state/chunk-cursor.json           where the trainer's ingest of chunks stands
//! chunks/<ms>-g<gen>-<worker>-i<incarnation>s<seq>-...   the workers' games, one object
//!                                   per chunk, numbered per uploader's start
//! pgn/gen-0003/<worker>-i<incarnation>s<seq>.pgn   the same games as PGN, one per chunk
//! workers/<worker>/<incarnation>    an uploader's start, claimed create-if-absent
//! heads/<worker>/<incarnation>/<seq>   the keys of that start's newest chunks
//! log.tsv, tb/...                   the trainer's log and TensorBoard files
//! teacher/labels-NN.cfl             a teacher's labels (`train --teacher`), as of the last
//!                                   generation published; `held-out-NN.cfl` those of the
//!                                   games held out of training
//! trainer.lease                     the trainer lease
//! ```
//!
//! The local copy (the cache) adds `games/gen-N/`, where the replay window reads the games: a
//! chunk's games under the chunk's name (a link to the chunk in a directory), and the games
//! `cfzero train` plays itself (`gNNNNN.cfzg`, also uploaded as chunks of the worker
//! `trainer`); a worker's spool (`spool/<worker>/`) of games not uploaded yet. On object
//! storage the cache is `--cache DIR`, else `$CFZERO_CACHE/runs/<run>`, else
//! `$XDG_CACHE_HOME/cfzero/runs/<run>` (`~/.cache/cfzero/...`); it holds nothing the store does
//! not but the spool (a trainer resumes on another machine from the store alone). A trainer
//! sheds the copies of generations older than every game of its window
//! ([`StoredRun::prune_games_before`]). A directory of an older version, whose workers wrote
//! `games/gen-N/<worker>-gNNNNN.cfzg` and `pgn/gen-N-<worker>.pgn` straight into it, is read
//! and resumed as it is.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use cfzero_fsutil::write_file_atomically;
use cfzero_store::chunks::{CHUNKS, now_ms};
use cfzero_store::{
    Bundle, ChunkCursor, ChunkName, HoleEvent, RunLocation, RunStore, claim_incarnation,
};
use url::Url;

use crate::run::dir::RunDir;

/// The worker name of a trainer's own games (`cfzero train` on object storage).
pub const OWN_WORKER: &str = "trainer";

/// The key of the trainer's chunk cursor.
pub const CURSOR_KEY: &str = "state/chunk-cursor.json";

/// The window of the chunk cursor's quick polls: an upload landing later than this after a
/// later one was seen (a slow upload, or clocks that differ by more) waits for the next sweep
/// of the streams' heads ([`HEAD_SWEEP_EVERY`]). A quick poll pages through every chunk named
/// in the window (the fleet's upload rate times this) each time, so a short window keeps polls
/// small; the sweeps make it safe.
pub const CHUNK_GRACE: Duration = Duration::from_secs(30);

/// How long the trainer waits for the chunks of a hole in a worker's numbered chunks (a later
/// one listed, an earlier one not) before it reports them and goes on without them. A worker
/// uploads its chunks one at a time, in order, so a hole is a listing that missed a chunk
/// (the next poll finds it) or a chunk deleted from the store by hand.
pub const HOLE_WAIT: Duration = Duration::from_secs(600);

/// How far back from the newest upload a trainer's start first lists chunks to refill its
/// window (then four times as far, and so on, while they hold fewer positions).
pub const WINDOW_SPAN: Duration = Duration::from_secs(60);

/// How often the trainer sweeps the streams' heads ([`cfzero_store::heads`]), to find the
/// chunks the quick polls cannot see.
pub const HEAD_SWEEP_EVERY: Duration = Duration::from_secs(60);

/// The cache directory of the run at `url`.
pub fn cache_dir(explicit: Option<&Path>, url: &Url) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_owned();
    }
    let base = std::env::var_os("CFZERO_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("cfzero")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/cfzero")))
        .unwrap_or_else(|| PathBuf::from(".cfzero-cache"));
    let name: String = url
        .as_str()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    base.join("runs").join(name)
}

/// The local directory of the run at `location`: the run's own directory, or for object
/// storage its cache (`explicit`, else [`cache_dir`]). A cache named for a run in a
/// directory is the user's mistake (the directory is its own cache).
pub fn local_dir(location: &RunLocation, explicit: Option<&Path>) -> Result<PathBuf> {
    match (location, explicit) {
        (RunLocation::Local(path), None) => Ok(path.clone()),
        (RunLocation::Local(path), Some(cache)) => Err(crate::error::user_error(format!(
            "--cache {}: the run {} is a directory, its own cache (--cache is for a run on object storage)",
            cache.display(),
            path.display()
        ))),
        (RunLocation::Object(url), _) => Ok(cache_dir(explicit, url)),
    }
}

/// A run on a store and its local directory.
#[derive(Debug)]
pub struct StoredRun {
    store: Arc<dyn RunStore>,
    dir: RunDir,
    cursor: ChunkCursor,
    /// When the streams' heads were last swept, or the chunks listed in full (`None`: not
    /// yet by this process, whose first ingest lists every chunk).
    last_sweep: Option<std::time::Instant>,
    /// The length of each growing file (a teacher's labels) as last uploaded.
    uploaded: std::sync::Mutex<std::collections::HashMap<PathBuf, u64>>,
    /// The incarnation this process claimed for its own uploads and the last number used.
    own_stream: std::sync::Mutex<Option<(u32, u64)>>,
    /// The heads of this process's own streams.
    heads: std::sync::Mutex<cfzero_store::heads::HeadWriter>,
    /// The generation directories a prune walked and left as they were (every file one the
    /// store keeps, as in a run directory), with their modification times then: a directory
    /// unchanged since is not walked again, so a prune costs what changed, not the run.
    pruned: std::sync::Mutex<std::collections::HashMap<PathBuf, std::time::SystemTime>>,
}

impl StoredRun {
    /// The run on `store`, worked on in `local` (for a directory store, the directory).
    pub fn new(store: Arc<dyn RunStore>, local: &Path) -> StoredRun {
        StoredRun {
            store,
            dir: RunDir::new(local),
            cursor: ChunkCursor::new(CHUNK_GRACE),
            last_sweep: None,
            uploaded: Default::default(),
            own_stream: Default::default(),
            heads: Default::default(),
            pruned: Default::default(),
        }
    }

    /// Opens the store of `location` and the run on it, in [`local_dir`]`(location, cache)`;
    /// with a `budget`, every write that takes longer is abandoned
    /// ([`cfzero_store::open_within`]).
    pub fn open(
        location: &RunLocation,
        cache: Option<&Path>,
        budget: Option<Duration>,
    ) -> Result<StoredRun> {
        let store =
            cfzero_store::open_within(location, budget).map_err(crate::error::user_error)?;
        Ok(StoredRun::new(
            Arc::from(store),
            &local_dir(location, cache)?,
        ))
    }

    /// Goes on from `cursor` (what the store's `state/chunk-cursor.json` holds when a trainer
    /// resumes; `bench store` simulates a restart with it).
    pub fn set_cursor(&mut self, cursor: ChunkCursor) {
        self.cursor = cursor;
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn RunStore> {
        &self.store
    }

    /// The cache, in the run-directory layout.
    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    /// The store's key of a file in the cache.
    fn key_of(&self, path: &Path) -> Result<String> {
        let rel = path
            .strip_prefix(self.dir.root())
            .with_context(|| format!("{} is outside the run's cache", path.display()))?;
        Ok(rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"))
    }

    /// Downloads the object of a cache file to it; `false` if the store has none.
    pub fn pull(&self, path: &Path) -> Result<bool> {
        Ok(self.store.get_file(&self.key_of(path)?, path)?)
    }

    /// Uploads a cache file (nothing if it does not exist).
    pub fn push(&self, path: &Path) -> Result<()> {
        self.store.put_file(&self.key_of(path)?, path)?;
        Ok(())
    }

    /// Uploads every file under a cache directory (TensorBoard's).
    pub fn push_tree(&self, dir: &Path) -> Result<()> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                self.push_tree(&p)?;
            } else if !cfzero_fsutil::is_temporary(&p) {
                self.push(&p)?;
            }
        }
        Ok(())
    }

    /// The newest published generation on the store (one listing of `nets/`).
    pub fn newest_net(&self) -> Result<Option<u32>> {
        Ok(self
            .store
            .list_after("nets", None)?
            .iter()
            .filter_map(|k| net_generation(k))
            .max())
    }

    /// What `cfzero ladder` reads: the config, every net and the ladder's earlier results.
    pub fn pull_ladder(&self) -> Result<()> {
        self.pull(&self.dir.config())?;
        for key in self.store.list_after("nets", None)? {
            if let Some(g) = net_generation(&key) {
                self.pull_net(g)?;
                // The ladder's time axis reads when each net was published: the object's
                // time, not the download's (a directory's own file has it already).
                let path = self.dir.net(g);
                let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
                if let Some(t) = self.store.head(&key)?.map(|o| o.modified)
                    && modified != Some(t)
                {
                    std::fs::File::options()
                        .write(true)
                        .open(&path)
                        .and_then(|f| f.set_modified(t))
                        .with_context(|| format!("setting the time of {}", path.display()))?;
                }
            }
        }
        self.pull(&self.dir.root().join("ladder").join("results.json"))?;
        Ok(())
    }

    /// What reading a run's games needs (`cfzero export-data`): the config, the newest net
    /// and every chunk of games, into the cache's `games/` (what the cache has already is
    /// kept). Returns the chunks downloaded.
    pub fn pull_games(&self) -> Result<usize> {
        self.pull(&self.dir.config())?;
        if let Some(g) = self.newest_net()? {
            self.pull_net(g)?;
        }
        let mut pulled = 0;
        for key in self.store.list_after(CHUNKS, None)? {
            let Some(name) = ChunkName::parse(&key) else {
                continue;
            };
            // The trainer's own games of this cache are here already, under their own names.
            if name.worker == OWN_WORKER && self.has_own_games(name.generation) {
                continue;
            }
            let local = self.chunk_path(&name);
            if !local.exists() && self.store.get_file(&key, &local)? {
                pulled += 1;
            }
        }
        Ok(pulled)
    }

    /// Downloads net `g` into the cache unless it is there; `false` if the store lacks it.
    pub fn pull_net(&self, g: u32) -> Result<bool> {
        let path = self.dir.net(g);
        if path.exists() {
            return Ok(true);
        }
        self.pull(&path)
    }

    /// Removes from the cache the files of the run layout that the store does not hold (for
    /// a run the store does not hold: a cache left by an earlier run of the same URL). Only
    /// the run layout's own entries go, never anything else in a `--cache` directory, and
    /// never a file the store holds under its path (in a directory, every file of the run):
    /// the cache's `games/` are copies under names of their own, so that they all go.
    /// Returns the files removed.
    pub fn clear_cache(&self) -> Result<usize> {
        let mut removed = 0;
        for sub in ["nets", "games", "pgn", "state", "tb", "teacher"] {
            let held: std::collections::HashSet<String> =
                self.store.list_after(sub, None)?.into_iter().collect();
            for path in files_under(&self.dir.root().join(sub)) {
                if !held.contains(&self.key_of(&path)?) {
                    remove_file(&path)?;
                    removed += 1;
                }
            }
        }
        for f in [
            self.dir.config(),
            self.dir.log(),
            self.dir.eval_log(),
            self.dir.elo_plot(),
        ] {
            if f.exists() && self.store.head(&self.key_of(&f)?)?.is_none() {
                remove_file(&f)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// What a trainer needs to go on where the run's last trainer stopped, from the store
    /// alone: the newest net and generation 0's (the evaluation's baseline), the trainer
    /// state, the logs, the chunk cursor, and the newest chunks up to `window_positions`
    /// positions (the replay window). Returns the chunks downloaded.
    pub fn pull_for_trainer(&mut self, window_positions: usize) -> Result<usize> {
        let Some(newest) = self.newest_net()? else {
            return Ok(0);
        };
        // Nets the cache has and the store lacks were published here by a trainer killed
        // before it uploaded them: the store is the truth.
        for g in self.dir.published()? {
            if g > newest {
                for p in self.dir.trainer_state_files_of(g) {
                    let _ = std::fs::remove_file(p);
                }
                let _ = std::fs::remove_file(self.dir.net(g));
            }
        }
        for g in [0, newest] {
            self.pull_net(g)?;
        }
        // The state the newest net names, and no other of its generation.
        let (w, o) = self.dir.state_of(newest)?;
        for p in trainer_state_files(&w, &o) {
            self.pull(&p)?;
        }
        self.pull(&self.dir.log())?;
        self.pull(&self.dir.eval_log())?;
        self.pull_labels()?;
        if let Some(bytes) = self.store.get(CURSOR_KEY)? {
            let stored: ChunkCursor = serde_json::from_slice(&bytes)
                .with_context(|| format!("reading {CURSOR_KEY} of {}", self.store.location()))?;
            self.cursor = stored.with_grace(CHUNK_GRACE);
        }
        // The newest chunks fill the window.
        let chunks = self.newest_chunks(window_positions)?;
        let mut positions = 0u64;
        let mut pulled = 0;
        let mut seen = std::collections::HashSet::new();
        for c in chunks {
            if positions >= window_positions as u64 {
                break;
            }
            // A chunk uploaded twice is listed under two keys and counts once.
            if !seen.insert(c.stem()) {
                continue;
            }
            positions += c.positions;
            // The trainer's own games of this cache are here already, under their own names.
            if c.worker == OWN_WORKER && self.has_own_games(c.generation) {
                continue;
            }
            let local = self.chunk_path(&c);
            if !local.exists() && self.store.get_file(&c.key(), &local)? {
                pulled += 1;
            }
        }
        Ok(pulled)
    }

    /// The newest chunks, newest first, enough to hold `positions` positions (every chunk if
    /// the run holds fewer): listed after a time that goes back from the newest upload the
    /// cursor saw, [`WINDOW_SPAN`] at first and four times as far each further try, so that
    /// a trainer's start lists about what its window holds, not what the run does. Without
    /// a cursor (nothing consumed yet), every chunk.
    pub fn newest_chunks(&self, positions: usize) -> Result<Vec<ChunkName>> {
        let newest = self.cursor.newest_ms().min(now_ms());
        let mut span = WINDOW_SPAN.as_millis() as u64;
        loop {
            let from =
                (newest > 0 && span < newest).then(|| format!("{CHUNKS}/{:013}", newest - span));
            let mut chunks: Vec<ChunkName> = self
                .store
                .list_after(CHUNKS, from.as_deref())?
                .iter()
                .filter_map(|k| ChunkName::parse(k))
                .collect();
            chunks.sort_by_key(|c| std::cmp::Reverse(c.uploaded_ms));
            let held: u64 = chunks.iter().map(|c| c.positions).sum();
            if from.is_none() || held >= positions as u64 {
                return Ok(chunks);
            }
            span = span.saturating_mul(4);
        }
    }

    /// Removes from the cache the copies of games of generations below `g` that the store
    /// keeps as chunks and not under their own paths: a chunk's games (under the chunk's
    /// name) and the games this trainer played and uploaded (`gNNNNN.cfzg`), so that a
    /// trainer's cache on object storage stays about the size of its window however long
    /// the run. A file the store holds under its path stays: in a run directory, every one
    /// (its local copy is the run), and anything that is not such a copy (the games an
    /// older version's workers wrote straight into a run directory). Returns the files
    /// removed.
    pub fn prune_games_before(&self, g: u32) -> Result<usize> {
        let mut removed = 0;
        let mut pruned = self.pruned.lock().unwrap_or_else(|e| e.into_inner());
        for dir in self.generation_dirs("games", g) {
            let modified = std::fs::metadata(&dir).and_then(|m| m.modified()).ok();
            if modified.is_some() && pruned.get(&dir) == modified.as_ref() {
                continue;
            }
            let held: std::collections::HashSet<String> = self
                .store
                .list_after(&self.key_of(&dir)?, None)?
                .into_iter()
                .collect();
            let files = files_under(&dir);
            let flat = files.iter().all(|f| f.parent() == Some(dir.as_path()));
            let mut removed_here = 0;
            for path in files {
                let name = path.file_stem().and_then(|n| n.to_str()).unwrap_or("");
                let copy = is_chunk_copy(name) || is_own_games(name);
                if copy && !held.contains(&self.key_of(&path)?) {
                    remove_file(&path)?;
                    removed_here += 1;
                }
            }
            removed += removed_here;
            // Gone once empty.
            if std::fs::remove_dir(&dir).is_ok() {
                pruned.remove(&dir);
                continue;
            }
            // Remembered only when nothing changed it for a second: a file added in the
            // same tick of a coarse file-system clock would otherwise leave the time as it
            // was. A file added below a subdirectory does not touch the directory's time.
            if let Some(time) = modified
                && removed_here == 0
                && flat
                && time.elapsed().is_ok_and(|age| age > Duration::from_secs(1))
            {
                pruned.insert(dir, time);
            }
        }
        Ok(removed)
    }

    /// The local directories `TREE/gen-N` for N below `g`.
    fn generation_dirs(&self, tree: &str, g: u32) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.dir.root().join(tree)) else {
            return Vec::new();
        };
        entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| crate::run::dir::generation_dir(p).is_some_and(|n| n < g) && p.is_dir())
            .collect()
    }

    /// Removes the local directories `games/gen-N` and `pgn/gen-N` for N below `g`.
    fn remove_generation_dirs(&self, g: u32) -> Result<usize> {
        let mut removed = 0;
        for dir in [
            self.generation_dirs("games", g),
            self.generation_dirs("pgn", g),
        ]
        .concat()
        {
            std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
            removed += 1;
        }
        Ok(removed)
    }

    /// Removes from the run the games of generations below `g` that the trainer has read
    /// (`run.keep_old_games = false`): the chunks its cursor consumed and their PGN (a chunk
    /// not read yet stays), and the local `games/gen-N` and `pgn/gen-N`. Returns the objects
    /// and directories removed.
    pub fn forget_games_before(&self, g: u32) -> Result<usize> {
        let mut removed = self.remove_generation_dirs(g)?;
        for key in self.store.list_after(CHUNKS, None)? {
            let Some(name) = ChunkName::parse(&key) else {
                continue;
            };
            if name.generation < g && self.cursor.consumed(&key) {
                self.store.delete(&name.pgn_key())?;
                self.store.delete(&key)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Whether the cache holds games `cfzero train` played here for generation `g`
    /// (`gNNNNN.cfzg`).
    fn has_own_games(&self, g: u32) -> bool {
        std::fs::read_dir(self.dir.games(g)).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.strip_suffix(".cfzg").is_some_and(is_own_games)
            })
        })
    }

    /// Where a chunk's games go in the cache (where the replay window reads them).
    fn chunk_path(&self, c: &ChunkName) -> PathBuf {
        self.dir
            .games(c.generation)
            .join(format!("{}.cfzg", c.stem()))
    }

    /// Downloads the chunks that arrived since the last call into the cache; chunks of
    /// `skip_worker` (the trainer's own games, in the cache already) are only marked read.
    /// A quick poll of the cursor's window, and at the first call and then at least every
    /// [`HEAD_SWEEP_EVERY`] a sweep of the streams' heads, whose cost follows the number of
    /// uploaders, not of chunks: whatever they find behind the window (a worker's slow clock,
    /// a slow upload) is ingested too, with a note. Every chunk is listed only at the first
    /// call of a cursor that has consumed nothing (or chunks of older versions, which have no
    /// heads), and for a stream further ahead than its head reaches. Returns the chunks
    /// downloaded.
    pub fn ingest(&mut self, skip_worker: Option<&str>) -> Result<usize> {
        let store = self.store.clone();
        let store = store.as_ref();
        let sweep_due = self
            .last_sweep
            .is_none_or(|t| t.elapsed() >= HEAD_SWEEP_EVERY);
        let (mut keys, behind) = if self.last_sweep.is_none() && !self.cursor.covered_by_heads() {
            (Vec::new(), self.cursor.poll_all(store)?.new)
        } else if sweep_due {
            let sweep = self.cursor.sweep_heads(store)?;
            let mut behind = sweep.new;
            if !sweep.beyond.is_empty() {
                eprintln!(
                    "note: {} stream(s) of chunks further ahead of the trainer than their heads reach ({}): listing every chunk",
                    sweep.beyond.len(),
                    sweep.beyond.join(", ")
                );
                behind.extend(self.cursor.poll_all(store)?.new);
            }
            (self.cursor.poll(store)?, behind)
        } else {
            (self.cursor.poll(store)?, Vec::new())
        };
        if sweep_due {
            self.last_sweep = Some(std::time::Instant::now());
        }
        let from = self.cursor.list_from();
        let late = behind
            .iter()
            .filter(|k| from.as_deref().is_some_and(|f| k.as_str() <= f) && !keys.contains(k))
            .count();
        if late > 0 {
            eprintln!(
                "note: {late} chunk(s) found behind the chunk cursor (a worker's clock or upload is more than {} s late): ingested",
                self.cursor.grace().as_secs()
            );
        }
        keys.extend(behind);
        keys.sort();
        keys.dedup();
        let mut pulled = 0;
        for key in keys {
            let Some(name) = ChunkName::parse(&key) else {
                continue;
            };
            let local = self.chunk_path(&name);
            // Listed but gone (deleted by hand) is nothing to train on.
            if skip_worker != Some(name.worker.as_str())
                && !local.exists()
                && self.store.get_file(&key, &local)?
            {
                pulled += 1;
            }
            self.cursor.consume(&key);
        }
        for event in self.cursor.check_holes(now_ms(), HOLE_WAIT) {
            match event {
                HoleEvent::Waiting(h) => eprintln!(
                    "note: chunk(s) {}-{} of {} not listed while later ones are: waiting up to {} s for them",
                    h.first,
                    h.last,
                    h.stream,
                    HOLE_WAIT.as_secs()
                ),
                HoleEvent::Skipped(h) => eprintln!(
                    "warning: chunk(s) {}-{} of {} missing for {} s: going on without them (read if they still come)",
                    h.first,
                    h.last,
                    h.stream,
                    h.waited.as_secs()
                ),
            }
        }
        Ok(pulled)
    }

    /// Publishes generation `g`, whose net the trainer wrote to `staged` (a temporary file,
    /// [`StoredRun::staged_net`]): the trainer state, log, TensorBoard files and chunk cursor
    /// first, the net last and only if the store has no net `g` (the commit point: two
    /// trainers can never both publish a generation), then the net in the cache.
    pub fn publish(&self, g: u32, staged: &Path) -> Result<()> {
        let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
        let bytes = read(staged)?;
        let state = cfzero_network::checkpoint::read_net_metadata(
            staged,
            cfzero_trainer::learner::STATE_KEY,
        )
        .with_context(|| format!("reading {}", staged.display()))?;
        let (w, o) = self.dir.trainer_state(g, state.as_deref());
        for p in trainer_state_files(&w, &o) {
            self.push(&p)?;
        }
        self.push_logs()?;
        self.push_labels()?;
        self.store
            .put(CURSOR_KEY, &serde_json::to_vec(&self.cursor)?)?;
        let net = self.dir.net(g);
        let key = self.key_of(&net)?;
        if !self.store.put_if_absent(&key, &bytes)? {
            let _ = std::fs::remove_file(staged);
            anyhow::bail!(
                "{} exists already on {}: another trainer published generation {g} of this run",
                key,
                self.store.location()
            );
        }
        // A directory's store wrote the net into place; a cache takes the staged file.
        if net.exists() {
            remove_file(staged)?;
        } else {
            std::fs::rename(staged, &net)
                .with_context(|| format!("moving {} to {}", staged.display(), net.display()))?;
        }
        self.prune_states(g)
    }

    /// Where the trainer writes net `g` before [`StoredRun::publish`] makes it the run's: a
    /// temporary file beside it, which no listing or reader of nets takes for a net (and
    /// which the clean-up of stale temporaries removes if a trainer is killed first).
    pub fn staged_net(&self, g: u32) -> PathBuf {
        cfzero_fsutil::temporary_path(&self.dir.net(g))
    }

    /// Removes the store's trainer states of generations before `g`, as the cache does: a
    /// resume reads only the newest net's, so the store keeps a few objects under `state/`
    /// however long the run.
    fn prune_states(&self, g: u32) -> Result<()> {
        for key in self.store.list_after("state", None)? {
            let old = key
                .strip_prefix("state/")
                .and_then(crate::run::dir::state_generation)
                .is_some_and(|n| n < g);
            if old {
                self.store.delete(&key)?;
            }
        }
        Ok(())
    }

    /// Uploads the teacher's label files that grew since this process last uploaded them. A
    /// file the teacher is appending to goes up as far as it is written; a torn last label
    /// is cut when a trainer opens the file again.
    pub fn push_labels(&self) -> Result<()> {
        let Ok(entries) = std::fs::read_dir(self.dir.teacher()) else {
            return Ok(());
        };
        let mut uploaded = self.uploaded.lock().expect("never poisoned");
        for e in entries.flatten() {
            let path = e.path();
            if cfzero_fsutil::is_temporary(&path) || !path.is_file() {
                continue;
            }
            // An unchanged file is told by its length alone: only a grown one is read.
            let len = e.metadata().map_or(0, |m| m.len());
            if uploaded.get(&path) == Some(&len) {
                continue;
            }
            // What went up: the teacher may have written more since the length was read.
            if let Some(sent) = self.store.put_file(&self.key_of(&path)?, &path)? {
                uploaded.insert(path, sent);
            }
        }
        Ok(())
    }

    /// Downloads the teacher's label files that the store holds longer than the cache (label
    /// files only grow: a longer local one was written here after the last publication).
    fn pull_labels(&self) -> Result<()> {
        for key in self.store.list_after("teacher", None)? {
            let path = self.dir.root().join(&key);
            let local = std::fs::metadata(&path).map_or(0, |m| m.len());
            // Label files only grow: one no longer than the local copy is not downloaded.
            if self.store.head(&key)?.is_none_or(|o| o.size <= local) {
                continue;
            }
            let Some(bytes) = self.store.get(&key)? else {
                continue;
            };
            if bytes.len() as u64 > local {
                write_local(&path, &bytes)?;
            }
        }
        Ok(())
    }

    /// Uploads the log, the evaluation's rows and plot, and the TensorBoard files.
    pub fn push_logs(&self) -> Result<()> {
        self.push(&self.dir.log())?;
        self.push(&self.dir.eval_log())?;
        self.push(&self.dir.elo_plot())?;
        self.push_tree(&self.dir.tensorboard())
    }

    /// The number of this process's next chunk of `worker`, claiming an incarnation at the
    /// first. A failed upload leaves a hole its successor steps over after [`HOLE_WAIT`]: the
    /// trainer's own games are in its cache already, and a trainer that fails to publish
    /// stops.
    fn next_own_bundle(&self, worker: &str) -> Result<Bundle> {
        let mut own = self.own_stream.lock().expect("never poisoned");
        let (incarnation, seq) = match *own {
            Some((incarnation, seq)) => (incarnation, seq + 1),
            None => {
                let note = format!("{} pid {}", worker, std::process::id());
                (claim_incarnation(self.store.as_ref(), worker, &note)?, 1)
            }
        };
        *own = Some((incarnation, seq));
        Ok(Bundle::Numbered { incarnation, seq })
    }

    /// Uploads the games of `files` (records of generation `g`) as one chunk of `worker`,
    /// with their PGN: a trainer that plays its own games keeps them on the store, so that a
    /// successor elsewhere has them.
    pub fn upload_games(&self, g: u32, worker: &str, files: &[PathBuf], pgn: &Path) -> Result<()> {
        let mut games = Vec::new();
        for f in files {
            games.extend(cfzero_selfplay::record::read_records(f)?);
        }
        if games.is_empty() {
            return Ok(());
        }
        let bundle = self.next_own_bundle(worker)?;
        let name = ChunkName {
            uploaded_ms: now_ms(),
            generation: g,
            worker: worker.to_owned(),
            bundle,
            games: games.len() as u32,
            positions: games.iter().map(|g| g.positions.len() as u64).sum(),
        };
        if let Ok(text) = std::fs::read(pgn) {
            self.store.put(&name.pgn_key(), &text)?;
        }
        let key = name.key();
        self.store
            .put(&key, &cfzero_selfplay::record::encode_records(&games))?;
        self.heads.lock().expect("never poisoned").record_upload(
            self.store.as_ref(),
            &name,
            &key,
        )?;
        Ok(())
    }
}

/// Every file under `dir` (recursively), temporaries of writes in progress left out.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else if !cfzero_fsutil::is_temporary(&p) {
            out.push(p);
        }
    }
    out
}

/// Removes a local file (one already gone is removed).
fn remove_file(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Whether a game file's stem names a chunk's games in the cache ([`ChunkName::stem`]:
/// `<worker>-i<incarnation>s<seq>`, or `<ms>-<worker>-<ms>` for an older timed chunk), not
/// the games an older version's worker wrote into a run directory (`<worker>-gNNNNN`).
fn is_chunk_copy(stem: &str) -> bool {
    let parts: Vec<&str> = stem.split('-').collect();
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    match parts.as_slice() {
        [worker, bundle] => {
            cfzero_store::chunks::valid_worker_name(worker)
                && matches!(bundle.parse::<Bundle>(), Ok(Bundle::Numbered { .. }))
        }
        [ms, worker, bundle] => {
            digits(ms) && cfzero_store::chunks::valid_worker_name(worker) && digits(bundle)
        }
        _ => false,
    }
}

/// Whether a game file's stem is one of the games `cfzero train` plays itself (`gNNNNN`).
fn is_own_games(stem: &str) -> bool {
    stem.strip_prefix('g')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The files of the trainer state whose weights and optimizer are `w` and `o`: those two,
/// the SWA average and the step record.
pub fn trainer_state_files(w: &Path, o: &Path) -> [PathBuf; 4] {
    [
        w.to_owned(),
        o.to_owned(),
        cfzero_trainer::learner::swa_path(w),
        w.with_extension("json"),
    ]
}

/// The generation of a net's key (`nets/gen-0003.safetensors`).
pub fn net_generation(key: &str) -> Option<u32> {
    key.strip_prefix("nets/gen-")?
        .strip_suffix(".safetensors")?
        .parse()
        .ok()
}

/// Writes a file of the cache atomically, creating its directory.
fn write_local(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    write_file_atomically(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Downloads the object a URL names (`s3://bucket/run/nets/gen-0003.safetensors`) into the
/// cache and returns the local file; a path is returned as it is.
pub fn fetch_file(spec: &Path, cache: Option<&Path>) -> Result<PathBuf> {
    let text = spec.to_string_lossy();
    let location = cfzero_store::RunLocation::parse(&text).map_err(crate::error::user_error)?;
    let url = match location {
        cfzero_store::RunLocation::Local(p) => return Ok(p),
        cfzero_store::RunLocation::Object(url) => url,
    };
    let mut parent = url.clone();
    let name = {
        let mut segments: Vec<String> = url
            .path_segments()
            .map(|s| s.map(str::to_owned).collect())
            .unwrap_or_default();
        let name = segments.pop().filter(|n| !n.is_empty()).ok_or_else(|| {
            crate::error::user_error(format!("{text}: no object named (ends with /)"))
        })?;
        parent.set_path(&segments.join("/"));
        name
    };
    let store = cfzero_store::open(&cfzero_store::RunLocation::Object(parent.clone()))
        .map_err(crate::error::user_error)?;
    let local = cache_dir(cache, &parent).join(&name);
    if !local.exists() {
        let Some(bytes) = store.get(&name)? else {
            return Err(crate::error::user_error(format!("{text}: no such object")));
        };
        write_local(&local, &bytes)?;
    }
    Ok(local)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_dirs_and_net_keys() {
        let url = Url::parse("s3://bucket/runs/x").unwrap();
        let d = cache_dir(None, &url);
        assert!(d.ends_with("runs/s3___bucket_runs_x"), "{}", d.display());
        assert_eq!(cache_dir(Some(Path::new("/c")), &url), PathBuf::from("/c"));
        assert_eq!(net_generation("nets/gen-0012.safetensors"), Some(12));
        assert_eq!(net_generation("nets/gen-0012.safetensors.tmp1"), None);
    }

    #[test]
    fn a_cache_sheds_copies_of_old_generations_and_a_run_directory_keeps_everything() {
        let store_dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let store: Arc<dyn RunStore> = Arc::new(cfzero_store::LocalStore::new(store_dir.path()));
        // A chunk copy, a timed chunk copy, the trainer's own games and an older version's
        // worker file in each generation directory.
        let files = [
            "w1-i3s17.cfzg",
            "1700000000000-w2-1700000000000.cfzg",
            "g00004.cfzg",
            "w3-g00002.cfzg",
        ];
        let make = |root: &Path| {
            for d in [
                "games/gen-0001",
                "games/gen-0002",
                "games/gen-0003",
                "games/other",
            ] {
                std::fs::create_dir_all(root.join(d)).unwrap();
                for f in files {
                    std::fs::write(root.join(d).join(f), b"x").unwrap();
                }
            }
        };
        make(cache.path());
        let cached = StoredRun::new(store.clone(), cache.path());
        assert_eq!(cached.prune_games_before(3).unwrap(), 6);
        for d in ["games/gen-0001", "games/gen-0002"] {
            let left: Vec<PathBuf> = files_under(&cache.path().join(d));
            assert_eq!(
                left,
                vec![cache.path().join(d).join("w3-g00002.cfzg")],
                "{d}"
            );
        }
        for d in ["games/gen-0003", "games/other"] {
            assert_eq!(files_under(&cache.path().join(d)).len(), 4, "{d}");
        }
        // A run directory is its own copy: the store holds every file, nothing goes.
        make(store_dir.path());
        std::fs::create_dir_all(store_dir.path().join("pgn/gen-0001")).unwrap();
        std::fs::write(store_dir.path().join("pgn/gen-0001/w1-i3s17.pgn"), b"x").unwrap();
        let own = StoredRun::new(store.clone(), store_dir.path());
        assert_eq!(own.prune_games_before(3).unwrap(), 0);
        assert_eq!(
            files_under(&store_dir.path().join("games/gen-0001")).len(),
            4
        );
        // Told not to keep old games, the run removes them all, an older version's too.
        assert_eq!(own.forget_games_before(2).unwrap(), 2);
        assert!(!store_dir.path().join("games/gen-0001").exists());
        assert!(!store_dir.path().join("pgn/gen-0001").exists());
        assert_eq!(
            files_under(&store_dir.path().join("games/gen-0002")).len(),
            4
        );
    }

    #[test]
    fn a_prune_walks_a_generation_again_only_once_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        let local: Arc<dyn RunStore> = Arc::new(cfzero_store::LocalStore::new(dir.path()));
        let counted = Arc::new(cfzero_store::CountingStore::new(local));
        let run = StoredRun::new(counted.clone(), dir.path());
        let gens = ["games/gen-0001", "games/gen-0002", "games/gen-0003"];
        // Settled a minute ago, as a long run's old generations are.
        let settle = |d: &Path| {
            std::fs::File::open(d)
                .unwrap()
                .set_modified(std::time::SystemTime::now() - Duration::from_secs(60))
                .unwrap();
        };
        for d in gens {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
            std::fs::write(dir.path().join(d).join("w1-i1s1.cfzg"), b"x").unwrap();
            settle(&dir.path().join(d));
        }
        let lists = || counted.counts().lists;
        // The first prune walks the two old generations and keeps everything: the run
        // directory holds its own games.
        assert_eq!(run.prune_games_before(3).unwrap(), 0);
        assert_eq!(lists(), 2);
        // Nothing changed: nothing walked.
        assert_eq!(run.prune_games_before(3).unwrap(), 0);
        assert_eq!(lists(), 2);
        // A late chunk lands in generation 1 (held by the store: it stays), and generation 3
        // leaves the window: those two are walked, generation 2 is not.
        std::fs::write(dir.path().join("games/gen-0001/w2-i1s1.cfzg"), b"x").unwrap();
        assert_eq!(run.prune_games_before(4).unwrap(), 0);
        assert_eq!(lists(), 4);
        assert_eq!(files_under(&dir.path().join("games/gen-0001")).len(), 2);
        // Generation 1 changed less than a second ago: walked again until it settles.
        assert_eq!(run.prune_games_before(4).unwrap(), 0);
        assert_eq!(lists(), 5);
        settle(&dir.path().join("games/gen-0001"));
        run.prune_games_before(4).unwrap();
        assert_eq!(lists(), 6);
        run.prune_games_before(4).unwrap();
        assert_eq!(lists(), 6);
    }

    #[test]
    fn a_cache_left_by_another_run_loses_what_the_store_lacks_and_a_directory_loses_nothing() {
        let store_dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let store: Arc<dyn RunStore> = Arc::new(cfzero_store::LocalStore::new(store_dir.path()));
        let layout = [
            "config.toml",
            "log.tsv",
            "nets/gen-0000.safetensors",
            "games/gen-0001/w1-i1s1.cfzg",
            "state/trainer-gen-0000-a.safetensors",
            "tb/events.out",
        ];
        let write = |root: &Path, files: &[&str]| {
            for f in files {
                std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
                std::fs::write(root.join(f), b"x").unwrap();
            }
        };
        write(cache.path(), &layout);
        std::fs::write(cache.path().join("notes.txt"), b"mine").unwrap();
        // The store holds the net and its state: the cache keeps those and loses the rest of
        // the layout, never a file of the user's.
        write(store_dir.path(), &[layout[2], layout[4]]);
        let cached = StoredRun::new(store.clone(), cache.path());
        assert_eq!(cached.clear_cache().unwrap(), 4);
        assert!(cache.path().join("nets/gen-0000.safetensors").exists());
        assert!(
            cache
                .path()
                .join("state/trainer-gen-0000-a.safetensors")
                .exists()
        );
        assert!(!cache.path().join("games/gen-0001/w1-i1s1.cfzg").exists());
        assert!(!cache.path().join("log.tsv").exists());
        assert!(cache.path().join("notes.txt").exists());
        // A directory is its own store: all of it is held.
        write(store_dir.path(), &layout);
        let own = StoredRun::new(store, store_dir.path());
        assert_eq!(own.clear_cache().unwrap(), 0);
        assert!(
            store_dir
                .path()
                .join("games/gen-0001/w1-i1s1.cfzg")
                .exists()
        );
    }

    #[test]
    fn only_read_chunks_of_old_generations_are_forgotten_on_a_store() {
        let store_dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let store: Arc<dyn RunStore> = Arc::new(cfzero_store::LocalStore::new(store_dir.path()));
        let chunk = |generation: u32, seq: u64| ChunkName {
            uploaded_ms: 1_000 + seq,
            generation,
            worker: "w".into(),
            bundle: Bundle::Numbered {
                incarnation: 1,
                seq,
            },
            games: 1,
            positions: 10,
        };
        let (read_old, unread_old, read_new) = (chunk(1, 1), chunk(2, 3), chunk(3, 2));
        for c in [&read_old, &unread_old, &read_new] {
            store.put(&c.key(), b"games").unwrap();
            store.put(&c.pgn_key(), b"pgn").unwrap();
        }
        let mut run = StoredRun::new(store.clone(), cache.path());
        run.cursor.consume(&read_old.key());
        run.cursor.consume(&read_new.key());
        assert_eq!(run.forget_games_before(3).unwrap(), 1);
        let left = store.list_after(CHUNKS, None).unwrap();
        assert_eq!(left, vec![read_new.key(), unread_old.key()]);
        assert!(store.get(&read_old.pgn_key()).unwrap().is_none());
        assert!(store.get(&unread_old.pgn_key()).unwrap().is_some());
    }

    #[test]
    fn a_restart_lists_about_its_window_not_the_whole_run() {
        let store_dir = tempfile::tempdir().unwrap();
        let local = cfzero_store::LocalStore::new(store_dir.path());
        let start = now_ms() - 30 * 3_600_000;
        let chunk = |worker: &str, seq: u64, ms: u64| ChunkName {
            uploaded_ms: ms,
            generation: 1,
            worker: worker.into(),
            bundle: Bundle::Numbered {
                incarnation: 1,
                seq,
            },
            games: 1,
            positions: 100,
        };
        // 1,500 chunks of one worker, a minute apart over 25 hours, all consumed; three new
        // ones since; and a worker whose clock is a day slow, not consumed.
        let mut cursor = ChunkCursor::new(CHUNK_GRACE);
        let mut heads = cfzero_store::heads::HeadWriter::default();
        let mut upload = |c: &ChunkName| {
            local.put(&c.key(), b"games").unwrap();
            heads.record_upload(&local, c, &c.key()).unwrap();
        };
        for seq in 1..=1500 {
            let c = chunk("w1", seq, start + seq * 60_000);
            upload(&c);
            cursor.consume(&c.key());
        }
        let new: Vec<ChunkName> = (1501..=1503)
            .map(|seq| chunk("w1", seq, start + 1500 * 60_000 + seq))
            .collect();
        let late = chunk("w2", 1, start + 100 * 60_000);
        for c in new.iter().chain([&late]) {
            upload(c);
        }
        let counted = Arc::new(cfzero_store::CountingStore::new(Arc::new(local.clone())));
        let cache = tempfile::tempdir().unwrap();
        let mut run = StoredRun::new(counted.clone(), cache.path());
        run.cursor = cursor.clone();
        // The window's refill lists the last hour's chunks.
        let newest = run.newest_chunks(300).unwrap();
        assert_eq!(newest[0].key(), new[2].key());
        assert!(newest.len() >= 3 && newest.len() < 70, "{}", newest.len());
        assert!(counted.take().keys_listed < 70);
        // The first ingest finds the new chunks and the late one through the heads.
        assert_eq!(run.ingest(None).unwrap(), 4);
        let cost = counted.take();
        assert!(cost.keys_listed < 20, "{cost:?}");
        for c in new.iter().chain([&late]) {
            assert!(run.cursor.consumed(&c.key()), "{}", c.key());
        }
        // A trainer without a cursor lists every chunk once.
        let fresh_cache = tempfile::tempdir().unwrap();
        let mut fresh = StoredRun::new(counted.clone(), fresh_cache.path());
        assert_eq!(fresh.ingest(None).unwrap(), 1504);
        assert!(counted.take().keys_listed >= 1504);
    }
}
