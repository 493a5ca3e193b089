//! The trainer's side of a run, shared by `cfzero train` (which also plays the games) and
//! `cfzero learn` (which takes them from separate `cfzero selfplay` workers): open or resume
//! the run directory, keep the replay window fed, train, publish, evaluate and log.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use anyhow::{Context, Result};
use cfzero_eval::elo::signed_elo;
use cfzero_fsutil::{remove_stale_temporaries, write_file_atomically};
use cfzero_network::Net;
use cfzero_network::checkpoint::{
    CheckpointError, load_net, read_net_config, read_net_metadata, save_net,
};
use cfzero_selfplay::openings::read_openings;
use cfzero_selfplay::window::{Arrival, ReplayWindow};
use cfzero_store::{FencedStore, RETRY_BUDGET, RetryingStore, RunLocation, RunStore};
use cfzero_trainer::learner::{STATE_KEY, STEP_KEY};
use cfzero_trainer::{EventWriter, Learner, TrainPrecision};
use cfzero_trainer::{Mixture, SampleSource, Split};
use clap::Args;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use tch::Device;

use crate::config::Config;
use crate::error::user_error;
use crate::flags::DeviceFlag;
use crate::run::dir::{MINUTES_KEY, RunDir};
use crate::run::evaluate::{self, Anchor};
use crate::run::learn_phase::{self, LearnSummary};
use crate::run::lease_keeper::LeaseKeeper;
use crate::run::selfplay_phase;
use crate::run::stored_run::{OWN_WORKER, StoredRun, local_dir};
use crate::user_bail;

/// The arguments of `train` and `learn` that open a run.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Config file (TOML).
    #[arg(long, default_value = "configs/tiny.toml")]
    pub config: PathBuf,
    /// The run: a directory, or object storage (`s3://BUCKET/PREFIX`, `gs://...`,
    /// `az://...`; `AWS_ENDPOINT_URL` for MinIO and other S3-compatible servers). Nets,
    /// games, logs and state go there.
    #[arg(long)]
    pub run: PathBuf,
    /// With a run on object storage: the local cache directory (default
    /// `~/.cache/cfzero/runs/<run>`, or under `$CFZERO_CACHE`).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// With a run on object storage: seconds the trainer lease lasts unless renewed (the
    /// trainer renews it every third of that); a successor takes over a crashed trainer's
    /// run after at most this long. Each of the trainer's uploads must finish within a
    /// quarter of it (a write that could land after the lease expired is abandoned), so raise
    /// it where uploading a net's trainer state takes longer than 15 s.
    #[arg(long, default_value_t = 60.0)]
    pub lease_seconds: f64,
    /// Continue the run in `--run` where it stopped.
    #[arg(long)]
    pub resume: bool,
    /// With --resume: accept a config that differs from the run's frozen one (and freeze the new one).
    #[arg(long)]
    pub force: bool,
    /// Stop after this many generations in total (default: no limit).
    #[arg(long)]
    pub generations: Option<u32>,
    /// Wall-clock limit in minutes (fractions allowed): self-play and training stop within
    /// seconds of it, keeping the complete games; a generation whose training did not finish
    /// is not published, and `--resume` continues the run.
    #[arg(long, allow_negative_numbers = true)]
    pub minutes: Option<f64>,
    #[command(flatten)]
    pub device: DeviceFlag,
    /// Start from this net (e.g. an imported Lc0 net) instead of random weights.
    #[arg(long)]
    pub init_from: Option<PathBuf>,
    /// `cfzero train`: a UCI engine (its command line, e.g. `/usr/games/stockfish`) that
    /// labels a share of the self-play positions; the config's `[teacher]` table says how.
    /// Recorded in the run's frozen config.
    #[arg(long, value_name = "COMMAND")]
    pub teacher: Option<String>,
    /// The in-run evaluation's anchor: a UCI engine's command line (a bare name is looked
    /// for on PATH, then in /usr/games), instead of the config's `[eval] engine`; its
    /// options and nodes come from `[eval]` (default: Skill Level 0, one thread, 16 MB hash,
    /// 100 nodes a move, each option sent where the engine offers it). Recorded in the
    /// run's frozen config.
    #[arg(long, value_name = "COMMAND")]
    pub eval_engine: Option<String>,
    /// Precision of the training steps, instead of the config's `train.precision`: auto (bf16
    /// on a CPU with avx512_bf16, else f32), f32, or bf16 (autocast: bf16 products, f32
    /// weights). Recorded in the run's frozen config.
    #[arg(long, value_name = "PRECISION")]
    pub train_precision: Option<TrainPrecision>,
    /// The run's seed instead of the config's `run.seed` (runs of one config that differ
    /// only by it are replicates). Recorded in the run's frozen config; a resume keeps it.
    #[arg(long)]
    pub seed: Option<u64>,
}

impl RunArgs {
    /// Where the run lives.
    pub fn location(&self) -> Result<RunLocation> {
        RunLocation::parse(&self.run.to_string_lossy()).map_err(user_error)
    }

    /// Whether the run should stop before generation `generation + 1`: the generation limit
    /// is reached, or `stop` is set (Ctrl-C, or the `--minutes` [`crate::run::deadline`], the
    /// one clock of a run's time limit).
    pub fn should_stop(&self, generation: u32, stop: &AtomicBool) -> bool {
        self.generations.is_some_and(|max| generation >= max) || stop.load(Ordering::Relaxed)
    }
}

/// An open run, from the trainer's side.
pub struct Session {
    /// The run's config.
    pub config: Config,
    /// The run directory (for a run on object storage, its local cache).
    pub dir: RunDir,
    /// The run as the user named it (a directory or a URL), for messages.
    pub location: String,
    /// The run on its store (a directory, or object storage through the cache `dir`).
    stored: StoredRun,
    /// Where nets run.
    pub device: Device,
    /// The net being trained, its optimizer and SWA.
    pub learner: Learner,
    /// Positions to train on, shared with the loader threads.
    pub window: Arc<RwLock<ReplayWindow>>,
    /// TensorBoard log.
    pub tb: EventWriter,
    /// Newest published generation.
    pub generation: u32,
    eval_openings: Vec<String>,
    /// What the in-run evaluation plays against.
    anchor: Anchor,
    /// Print the per-generation lines on stderr rather than stdout (for a command whose
    /// stdout is a report, like `bench learn --json`).
    pub lines_to_stderr: bool,
    /// Trainable positions added to the window since the last training phase (counted
    /// from the session's start: a resumed run does not know what it had trained on).
    new_positions: usize,
    /// Data sources trained on beside the window (`cfzero learn --data`), with their
    /// weights, and the window's weight in that mixture.
    data: Vec<(Arc<dyn SampleSource>, f64)>,
    window_weight: f64,
    /// The run's trainer lease, held while the session lives: a second trainer on the run is
    /// refused.
    lease: LeaseKeeper,
    /// The games added to the window since the last [`Session::take_arrivals`], once
    /// [`Session::collect_arrivals`] asked for them (a teacher labels them).
    arrivals: Option<Vec<Arrival>>,
    /// This session's own name for the trainer states it saves, random at each start, and
    /// named by each net it publishes: a resume loads the state published with its net,
    /// never one that another trainer saved for the same generation.
    state_tag: String,
    /// The run's minutes of training when this session opened it ([`RunDir::minutes_at`]
    /// of the generation it resumed from), and when it did: each net it publishes records
    /// the two summed ([`MINUTES_KEY`]).
    minutes_before: f64,
    opened: Instant,
}

/// Steps that draw each of `new_positions` about `reuse` times in batches of `batch` of which
/// a share `window_share` comes from the window (at least one step); a window the batches draw
/// nothing from counts as all of them (there is no reuse to keep).
fn reuse_steps(reuse: f64, new_positions: usize, batch: usize, window_share: f64) -> u64 {
    let share = if window_share.is_finite() && window_share > 0.0 {
        window_share.min(1.0)
    } else {
        1.0
    };
    let samples = reuse * new_positions as f64 / share;
    ((samples / batch.max(1) as f64).ceil() as u64).max(1)
}

/// The share of the batches' draws that take a trainable position of the window: the
/// window's weight among the data sources (`others` the sum of the rest), less its draws of
/// positions without a policy target (`value_only_share` of them).
fn trainable_share(window_weight: f64, others: f64, value_only_share: f64) -> f64 {
    window_weight / (window_weight + others) * (1.0 - value_only_share)
}

/// Whether `err` is a write refused by the trainer lease's fence: the trainer must stop.
fn is_fenced(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        matches!(
            e.downcast_ref::<cfzero_store::StoreError>(),
            Some(cfzero_store::StoreError::Fenced { .. })
        )
    })
}

/// This trainer as the lease names it to a second one: command, process and host.
fn trainer_name() -> String {
    let host = cfzero_fsutil::host_name().unwrap_or_else(|| "an unknown host".to_owned());
    let command = std::env::args().nth(1).unwrap_or_default();
    format!("cfzero {command} (pid {} on {host})", std::process::id())
}

impl Session {
    /// Creates the run directory (or resumes the run in it) and loads the newest net, the
    /// trainer state and every game on disk.
    pub fn open(args: &RunArgs) -> Result<Session> {
        let mut config = Config::load(&args.config)?;
        if let Some(engine) = &args.teacher {
            config.teacher.engine = engine.clone();
        }
        if let Some(precision) = args.train_precision {
            config.train.precision = precision;
        }
        if let Some(engine) = &args.eval_engine {
            config.eval.engine = engine.clone();
        }
        if let Some(seed) = args.seed {
            config.run.seed = seed;
        }
        // The anchor starts once before anything is written: an engine that does not run
        // is an error now, not after the first generations.
        let mut anchor = Anchor::of(&config.eval);
        let mut anchor_label = match config.eval.every {
            0 => None,
            _ => Some(anchor.player(1)?.label()),
        };
        let device = args.device.parse()?;
        let location = args.location()?;
        if !(args.lease_seconds.is_finite() && args.lease_seconds >= 1.0) {
            user_bail!("--lease-seconds must be at least 1");
        }
        let ttl = std::time::Duration::from_secs_f64(args.lease_seconds);
        let local = local_dir(&location, args.cache.as_deref())?;
        // Every request gives up before the fence's margin (a third of the lease) has passed,
        // so that a write which passed the fence cannot land after the lease expired.
        let store: Arc<dyn RunStore> =
            Arc::from(cfzero_store::open_within(&location, Some(ttl / 4)).map_err(user_error)?);
        // One trainer per run, before anything is written: a second `train` or `learn` on
        // this run is refused, naming the first.
        let lease = LeaseKeeper::acquire(store.clone(), &trainer_name(), ttl).map_err(|e| {
            if e.is_user_error() {
                user_error(e)
            } else {
                anyhow::Error::new(e)
            }
        })?;
        // Everything this trainer writes to the store passes the lease's fence, each retry of
        // a request the store's weather failed anew.
        let fenced = Arc::new(FencedStore::new(store, lease.fence()));
        let mut stored = StoredRun::new(Arc::new(RetryingStore::new(fenced, RETRY_BUDGET)), &local);
        let dir = stored.dir().clone();
        // The store is the truth: a cache of a run it no longer holds starts over.
        if !stored.pull(&dir.config())? {
            stored.clear_cache()?;
        }
        if keep_engines(&dir, &mut config, args)? {
            anchor = Anchor::of(&config.eval);
            if config.eval.every > 0 {
                anchor_label = Some(anchor.player(1)?.label());
            }
        }
        freeze_config(&dir, &location.to_string(), &config, args)?;
        stored.push(&dir.config())?;
        // The frozen config keeps `auto`: each machine that runs it sizes it anew.
        eprintln!(
            "{}",
            crate::sizing::size(&mut config, crate::sizing::Machine::detect(device))
        );
        let pulled = stored.pull_for_trainer(config.window.max_positions)?;
        if pulled > 0 {
            eprintln!("resume: {pulled} chunk(s) of games downloaded from {location}");
        }
        // Temporary files a killed run left (a young one of another machine may be another
        // worker's write in progress).
        let stale = remove_stale_temporaries(dir.root(), STALE_TEMPORARY);
        if stale > 0 {
            eprintln!("note: removed {stale} temporary file(s) left by an interrupted run");
        }
        let eval_openings = match &config.eval.openings {
            Some(p) => {
                let mut all = read_openings(p).map_err(user_error)?;
                all.shuffle(&mut ChaCha8Rng::seed_from_u64(config.run.seed));
                all.truncate(config.eval.openings_count.max(1));
                all
            }
            None => Vec::new(),
        };
        if let Some(label) = anchor_label {
            eprintln!(
                "eval: every {} generation(s), {} games against {label} at {} simulations a move",
                config.eval.every,
                2 * eval_openings.len().max(1),
                config.eval.simulations
            );
        }

        // The last published net is the commit point of a generation.
        let generation = match dir.published()?.last() {
            Some(&g) => g,
            None => {
                let net = match &args.init_from {
                    Some(p) => load_net(p, device).map_err(user_error)?,
                    None => Net::seeded(&config.network, device, config.run.seed as i64)
                        .map_err(user_error)?,
                };
                let staged = stored.staged_net(0);
                save_net(&net, &staged)?;
                stored.publish(0, &staged)?;
                0
            }
        };
        let net = load_net(&dir.net(generation), device)?;
        if net.config != config.network {
            user_bail!(
                "the run's nets do not have the shape of [network] in {}",
                args.config.display()
            );
        }
        let mut learner = Learner::new(net, config.train.clone());
        // The state the net was published with, by the tag the net names (none: a net of an
        // older version, whose state has no tag).
        let named = read_net_metadata(&dir.net(generation), STATE_KEY)?;
        let (weights, optim) = dir.trainer_state(generation, named.as_deref());
        if let Some(tag) = named.as_deref()
            && !(weights.exists() && optim.exists())
        {
            eprintln!(
                "note: generation {generation}'s net was published with the trainer state {tag}, which the run does not hold; no other state is loaded for it"
            );
        }
        if weights.exists() && optim.exists() {
            match learner.load_state(&weights, &optim) {
                Ok(()) => {}
                // A state written by an older cfzero for a net that has since gained a
                // parameter (e.g. the Shaw position bias): the published net loads, its
                // optimizer moments no longer line up.
                Err(e @ CheckpointError::Mismatch { .. }) => {
                    eprintln!(
                        "note: the trainer state of generation {generation} does not fit this version ({e}); training continues from the published net with a fresh optimizer"
                    );
                    let net = load_net(&dir.net(generation), device)?;
                    learner = Learner::new(net, config.train.clone());
                }
                Err(e) => return Err(e).context("loading the trainer state"),
            }
        } else if generation > 0 {
            // The published net says at which step it was published: the learning-rate
            // schedule goes on from there instead of warming up again.
            let step = read_net_metadata(&dir.net(generation), STEP_KEY)?
                .and_then(|s| s.parse::<u64>().ok());
            match step {
                Some(step) => {
                    learner.set_steps(step);
                    eprintln!(
                        "note: no trainer state for generation {generation}; training continues from the published net with a fresh optimizer at step {step} (the learning-rate schedule goes on)"
                    );
                }
                None => eprintln!(
                    "note: no trainer state for generation {generation}, and its net does not record its step; training continues from the published net with a fresh optimizer and the learning-rate schedule starts over"
                ),
            }
        }
        let window = Arc::new(RwLock::new(ReplayWindow::new(config.window.clone())));
        let tb = EventWriter::create(&dir.tensorboard())?;
        let dir_minutes = dir.minutes_at(generation);
        let mut session = Session {
            config,
            dir,
            device,
            learner,
            window,
            tb,
            generation,
            location: location.to_string(),
            stored,
            eval_openings,
            anchor,
            lines_to_stderr: false,
            new_positions: 0,
            data: Vec::new(),
            window_weight: 1.0,
            lease,
            arrivals: None,
            state_tag: format!("{:08x}", rand::random::<u32>()),
            minutes_before: dir_minutes,
            opened: Instant::now(),
        };
        let games = session.load_new_games()?;
        session.new_positions = 0;
        if games > 0 {
            eprintln!(
                "resume: {games} games, {} positions in the replay window",
                session.window_positions()
            );
        }
        let (precision, why) = session.learner.precision();
        eprintln!(
            "run {}: generation {generation}, {} parameters, device {device:?}, training in {precision} ({why})",
            session.location,
            session.learner.net().parameter_count()
        );
        Ok(session)
    }

    /// Adds the game records written since the last call to the replay window; returns
    /// how many games were added. Torn or corrupt files are skipped with a warning.
    pub fn load_new_games(&mut self) -> Result<usize> {
        self.stored.ingest(Some(OWN_WORKER))?;
        let mut w = self
            .window
            .write()
            .expect("the window lock is never poisoned");
        let seen = w.positions_seen();
        let (games, skipped) =
            w.load_new_files_into(&self.dir.all_games(), self.arrivals.as_mut())?;
        self.new_positions += w.positions_seen() - seen;
        for s in skipped {
            eprintln!("warning: skipping {}", s.error);
        }
        Ok(games)
    }

    /// Puts the games this trainer played for generation `g` (`cfzero train`) on the store,
    /// as one chunk with their PGN, as a worker's games are (a successor trainer elsewhere
    /// reads them from there).
    pub fn upload_own_games(&self, g: u32) -> Result<()> {
        let games = self.dir.games(g);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&games)
            .with_context(|| format!("reading {}", games.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension()
                    .is_some_and(|x| x == cfzero_selfplay::record::RECORD_EXTENSION)
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&selfplay_phase::record_prefix("")))
            })
            .collect();
        files.sort();
        self.stored
            .upload_games(g, OWN_WORKER, &files, &self.dir.pgn(g))
    }

    /// From now on, keeps the games that enter the window for [`Session::take_arrivals`].
    pub fn collect_arrivals(&mut self) {
        self.arrivals.get_or_insert_with(Vec::new);
    }

    /// Uploads the teacher's label files that grew since the last publication (a run in a
    /// directory holds them already).
    pub fn push_labels(&self) -> Result<()> {
        self.stored.push_labels()
    }

    /// The games that entered the window since the last call (none unless
    /// [`Session::collect_arrivals`] was called).
    pub fn take_arrivals(&mut self) -> Vec<Arrival> {
        self.arrivals
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Positions in the replay window.
    pub fn window_positions(&self) -> usize {
        self.window
            .read()
            .expect("the window lock is never poisoned")
            .positions()
    }

    /// Trains one generation's steps and publishes the next net: the trainer state first,
    /// the net last (the commit point). `None` if `stop` interrupted the training.
    pub fn train_and_publish(&mut self, stop: &AtomicBool) -> Result<Option<LearnSummary>> {
        let steps = self.steps_for(self.new_positions);
        self.train_steps_and_publish(steps, stop)
    }

    /// Trains on `sources` beside the window: each training sample comes from one of them
    /// or from the window (weight `window_weight`), in proportion to the weights.
    pub fn add_data_sources(
        &mut self,
        sources: Vec<(Arc<dyn SampleSource>, f64)>,
        window_weight: f64,
    ) {
        self.data = sources;
        self.window_weight = window_weight;
    }

    /// What training samples come from: the window, or the mixture with the data sources.
    pub fn source(&self) -> Arc<dyn SampleSource> {
        if self.data.is_empty() {
            return self.window.clone();
        }
        let mut parts: Vec<(Arc<dyn SampleSource>, f64)> =
            vec![(self.window.clone(), self.window_weight)];
        parts.extend(self.data.iter().cloned());
        Arc::new(Mixture::new(parts))
    }

    /// Trains `steps` steps on [`Session::source`] and publishes the next generation, as
    /// [`Session::train_and_publish`].
    pub fn train_steps_and_publish(
        &mut self,
        steps: u64,
        stop: &AtomicBool,
    ) -> Result<Option<LearnSummary>> {
        let source = self.source();
        // Validation measures self-play's held-out games alone: a data source beside them
        // (the teacher's labels) reports its own, and a mixture would blend the two. Without
        // self-play games held out (`cfzero learn` on data alone), the data's are measured.
        let held_out: Arc<dyn SampleSource> =
            if self.data.is_empty() || self.window.positions(Split::Validation) > 0 {
                self.window.clone()
            } else {
                source.clone()
            };
        let summary = learn_phase::train(
            &self.config,
            &mut self.learner,
            &source,
            held_out.as_ref(),
            steps,
            &mut self.tb,
            stop,
        )?;
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let next = self.generation + 1;
        if let Some(why) = self.lease.lost() {
            anyhow::bail!("not publishing generation {next}: {why}");
        }
        // The lease keeps other trainers out; this keeps a published net from ever being
        // replaced, whatever else writes to the directory.
        if self.dir.net(next).exists() {
            anyhow::bail!(
                "{} exists already: another trainer published generation {next} of this run",
                self.dir.net(next).display()
            );
        }
        let (w, o) = self.dir.trainer_state(next, Some(&self.state_tag));
        self.learner.save_state(&w, &o)?;
        let staged = self.stored.staged_net(next);
        let minutes = self.minutes_before + self.opened.elapsed().as_secs_f64() / 60.0;
        self.learner.publish(
            &staged,
            &[
                (STATE_KEY, self.state_tag.clone()),
                (MINUTES_KEY, format!("{minutes:.4}")),
            ],
        )?;
        self.stored.publish(next, &staged)?;
        self.dir.prune_trainer_states(next);
        // Games older than every game of the window are kept as chunks alone, or nowhere with
        // `run.keep_old_games = false`. The window remembers the files it read, so a copy
        // made again (`export-data` on the same cache) is not read twice.
        let oldest = self
            .window
            .read()
            .expect("the window lock is never poisoned")
            .oldest_generation();
        if let Some(g) = oldest {
            if self.config.run.keep_old_games {
                self.stored.prune_games_before(g)?;
            } else {
                self.stored.forget_games_before(g)?;
            }
        }
        self.generation = next;
        self.new_positions = 0;
        Ok(Some(summary))
    }

    /// Training steps for a generation that brought `new_positions` trainable positions:
    /// `steps_per_generation`, or with `sample_reuse` set, enough steps to see each new
    /// position about that many times (at least one step). The steps follow the samples the
    /// window gets: where data sources share the batches (a teacher's labels), the window's
    /// share of them is smaller and the steps more, so that self-play's positions keep their
    /// reuse at any teacher weight; so are the window's draws of positions without a policy
    /// target (`window.value_only_share`), which are no trainable position's reuse.
    pub fn steps_for(&self, new_positions: usize) -> u64 {
        let run = &self.config.run;
        if run.sample_reuse > 0.0 {
            let others: f64 = self.data.iter().map(|(_, w)| w).sum();
            let share = trainable_share(
                self.window_weight,
                others,
                self.config.window.value_only_share,
            );
            reuse_steps(
                run.sample_reuse,
                new_positions,
                self.config.train.batch_size,
                share,
            )
        } else {
            run.steps_per_generation
        }
    }

    /// Plays the evaluation match against the anchor if this generation is due for it,
    /// appends its row to `eval.tsv`, redraws `elo.png` and logs it to TensorBoard; returns
    /// the text for the generation's summary line (empty if not due). The match ends within
    /// a move of `stop` being set, and the line then says so. An anchor engine that fails
    /// mid-match costs this evaluation, not the run: the line says why.
    pub fn evaluate_if_due(&mut self, stop: &AtomicBool) -> Result<String> {
        let every = self.config.eval.every;
        if every == 0 || !self.generation.is_multiple_of(every) {
            return Ok(String::new());
        }
        let candidate = load_net(&self.dir.net(self.generation), self.device)?;
        let result = evaluate::evaluate(
            &self.config,
            candidate,
            &self.anchor,
            &self.eval_openings,
            self.config.run.seed ^ u64::from(self.generation),
            stop,
        );
        let e = match result {
            Ok(Some(e)) => e,
            Ok(None) => return Ok(" | eval stopped".into()),
            Err(err) => {
                eprintln!(
                    "warning: the evaluation of generation {} failed: {err:#}",
                    self.generation
                );
                return Ok(" | eval failed".into());
            }
        };
        let step = self.learner.steps();
        let row = evaluate::EvalRow {
            generation: self.generation,
            step,
            minutes: self.dir.minutes_between(0, self.generation),
            anchor: e.anchor.clone(),
            score: e.score,
            elo: e.elo,
        };
        evaluate::append_row(&self.dir.eval_log(), &row)?;
        evaluate::redraw(&self.dir.eval_log(), &self.dir.elo_plot(), &self.location)?;
        self.tb
            .scalar("eval/score_vs_anchor", step, e.score.score())?;
        self.tb
            .scalar("eval/elo_vs_anchor", step, evaluate::shown(e.elo.1))?;
        self.tb
            .scalar("eval/elo_vs_anchor_low", step, evaluate::shown(e.elo.0))?;
        self.tb
            .scalar("eval/elo_vs_anchor_high", step, evaluate::shown(e.elo.2))?;
        self.tb.flush()?;
        let s = &e.score;
        // `+ 0.0` turns the -0 of an even score into +0.
        let elo = |x: f64| signed_elo(x + 0.0);
        Ok(format!(
            " | vs {} {:.0}% (+{} ={} -{}) Elo {} [{}, {}]",
            e.anchor,
            100.0 * s.score(),
            s.wins,
            s.draws,
            s.losses,
            elo(e.elo.1),
            elo(e.elo.0),
            elo(e.elo.2)
        ))
    }

    /// Says where the run stopped and how to go on.
    pub fn report_stop(&self) {
        eprintln!(
            "run {}: stopped at generation {} (resume with --resume)",
            self.location, self.generation
        );
    }

    /// Prints a generation's summary line and appends it to `log.tsv`.
    pub fn log_line(&self, line: &str) -> Result<()> {
        if self.lines_to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
        let path = self.dir.log();
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        // One write of the whole line: `writeln!` would write the line and the newline
        // separately, and a kill between them would glue the next run's line onto this one.
        f.write_all(format!("{line}\n").as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        if let Err(e) = self.stored.push_logs() {
            // A fenced trainer stops here; anything else, the next generation's publication
            // uploads them again.
            if is_fenced(&e) {
                return Err(e);
            }
            eprintln!("warning: uploading the log: {e:#}");
        }
        Ok(())
    }

    /// Logs a self-play phase's statistics to TensorBoard at step `generation`.
    pub fn log_selfplay(
        &mut self,
        generation: u32,
        sp: &selfplay_phase::SelfplaySummary,
    ) -> Result<()> {
        let tb = &mut self.tb;
        let g = u64::from(generation);
        let secs = sp.seconds.max(1e-9);
        tb.scalar("selfplay/games", g, sp.games as f64)?;
        tb.scalar("selfplay/game_length", g, sp.mean_length())?;
        tb.scalar("selfplay/white_wins", g, sp.results[0] as f64)?;
        tb.scalar("selfplay/draws", g, sp.results[1] as f64)?;
        tb.scalar("selfplay/black_wins", g, sp.results[2] as f64)?;
        tb.scalar("selfplay/positions_per_second", g, sp.rate())?;
        tb.scalar("selfplay/nodes_per_second", g, sp.simulations as f64 / secs)?;
        tb.scalar("selfplay/avg_batch", g, sp.inference.average_batch())?;
        tb.scalar("selfplay/inference_busy", g, sp.inference.busy_share(secs))?;
        if sp.training_positions > 0 {
            tb.scalar(
                "selfplay/policy_surprise",
                g,
                sp.surprise / sp.training_positions as f64,
            )?;
        }
        if sp.positions > 0 {
            tb.scalar(
                "selfplay/bytes_per_position",
                g,
                sp.record_bytes as f64 / sp.positions as f64,
            )?;
        }
        if sp.resign_checked > 0 {
            tb.scalar(
                "selfplay/resign_false_positive_rate",
                g,
                sp.resign_false_positives as f64 / sp.resign_checked as f64,
            )?;
        }
        tb.flush()?;
        Ok(())
    }
}

/// On `--resume`, the teacher, the anchor and the seed the run was started with go on unless
/// named again: `--teacher`, `--eval-engine` and `--seed` put them into the frozen config, not
/// into the config file a resume reads. Says on stderr which it keeps; true if it kept the
/// anchor.
fn keep_engines(dir: &RunDir, config: &mut Config, args: &RunArgs) -> Result<bool> {
    let frozen = dir.config();
    if !args.resume || !frozen.exists() {
        return Ok(false);
    }
    let old = Config::load(&frozen)?;
    if args.teacher.is_none() && config.teacher.engine.is_empty() && !old.teacher.engine.is_empty()
    {
        eprintln!(
            "resume: the run keeps its teacher {} (--teacher names another)",
            old.teacher.engine
        );
        config.teacher.engine = old.teacher.engine;
    }
    if args.seed.is_none() && config.run.seed != old.run.seed {
        eprintln!(
            "resume: the run keeps its seed {} (--seed names another)",
            old.run.seed
        );
        config.run.seed = old.run.seed;
    }
    let keep_anchor =
        args.eval_engine.is_none() && config.eval.engine.is_empty() && !old.eval.engine.is_empty();
    if keep_anchor {
        eprintln!(
            "resume: the run keeps its anchor {} (--eval-engine names another)",
            old.eval.engine
        );
        config.eval.engine = old.eval.engine;
    }
    Ok(keep_anchor)
}

/// Refuses to resume with a different config unless forced; writes the frozen config.
fn freeze_config(dir: &RunDir, location: &str, config: &Config, args: &RunArgs) -> Result<()> {
    let frozen = dir.config();
    if frozen.exists() {
        if !args.resume {
            user_bail!("{location} already holds a run: pass --resume to continue it");
        }
        let old = Config::load(&frozen)?;
        if &old != config && !args.force {
            user_bail!(
                "{} differs from the config the run was started with ({}): pass --force to continue with it",
                args.config.display(),
                frozen.display()
            );
        }
        // --force may change anything but the net's shape: refuse before the frozen config
        // is replaced, so that a refused resume leaves the run as it was.
        if let Some(&g) = dir.published()?.last() {
            let shape = read_net_config(&dir.net(g))?;
            if shape != config.network {
                user_bail!(
                    "the run's nets do not have the shape of [network] in {}",
                    args.config.display()
                );
            }
        }
    }
    dir.create()?;
    if !frozen.exists() || args.force {
        write_file_atomically(&frozen, config.to_toml().as_bytes())
            .with_context(|| format!("writing {}", frozen.display()))?;
    }
    Ok(())
}

/// Age from which a temporary file of an atomic write counts as left behind: writes take
/// seconds, even of a large net over a network filesystem.
const STALE_TEMPORARY: std::time::Duration = std::time::Duration::from_secs(600);

/// A flag that the first Ctrl-C sets (finish cleanly); a second Ctrl-C exits at once.
pub fn stop_on_ctrl_c() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // The handler counts its own presses: a time limit sets the same flag, and the first
    // Ctrl-C after it must still finish cleanly.
    let pressed = AtomicBool::new(false);
    let _ = ctrlc::set_handler(move || {
        flag.store(true, Ordering::SeqCst);
        if pressed.swap(true, Ordering::SeqCst) {
            eprintln!("\nsecond Ctrl-C: exiting now (the run resumes from the last published net)");
            std::process::exit(130);
        }
        eprintln!("\nCtrl-C: finishing cleanly; press again to exit at once");
    });
    stop
}

/// Number of game record files directly in `dir` (0 if it does not exist).
pub fn count_records(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(|e| e.ok())
                .filter(|e| {
                    e.path()
                        .extension()
                        .is_some_and(|x| x == cfzero_selfplay::record::RECORD_EXTENSION)
                })
                .count()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::{reuse_steps, trainable_share};

    /// Self-play's positions keep their reuse whatever share of the batches the window gets.
    #[test]
    fn steps_grow_as_the_windows_share_of_the_batches_shrinks() {
        // 1,000 new positions seen 3 times in batches of 256: 11.7 batches of the window.
        assert_eq!(reuse_steps(3.0, 1000, 256, 1.0), 12);
        // A quarter of each batch from the window: four times the batches.
        assert_eq!(reuse_steps(3.0, 1000, 256, 0.25), 47);
        // Nothing from the window (a teacher at weight 1): the window's own count.
        assert_eq!(reuse_steps(3.0, 1000, 256, 0.0), 12);
        assert_eq!(reuse_steps(3.0, 1000, 256, f64::NAN), 12);
        // At least one step.
        assert_eq!(reuse_steps(3.0, 0, 256, 0.5), 1);
    }

    /// Draws of positions without a policy target are no trainable position's reuse: the
    /// steps grow to keep it, beside a teacher as alone.
    #[test]
    fn value_only_draws_shrink_the_trainable_share() {
        assert_eq!(trainable_share(1.0, 0.0, 0.0), 1.0);
        assert_eq!(trainable_share(1.0, 3.0, 0.0), 0.25);
        assert_eq!(trainable_share(1.0, 0.0, 0.25), 0.75);
        assert_eq!(trainable_share(1.0, 1.0, 0.5), 0.25);
        // 3,000 draws of trainable positions at three quarters of each batch of 256.
        assert_eq!(
            reuse_steps(3.0, 1000, 256, trainable_share(1.0, 0.0, 0.25)),
            16
        );
    }
}
