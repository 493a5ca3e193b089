//! The run configuration: a TOML file with one table per part of the system.

use std::path::Path;
use std::sync::Mutex;

use anyhow::Result;
use cfzero_inference::InferenceOptions;
use cfzero_inference::backend::BackendChoice;
use cfzero_mcts::SearchConfig;
use cfzero_network::NetworkConfig;
use cfzero_network::config::ConfigError;
use cfzero_network::precision::{self, Bf16Support, Precision};
use cfzero_selfplay::SelfplayConfig;
use cfzero_selfplay::window::WindowConfig;
use cfzero_settings::InvalidSetting;
use cfzero_trainer::TrainConfig;
use serde::{Deserialize, Serialize};
use tch::Device;

use crate::error::user_error;

/// A whole configuration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The network's shape.
    pub network: NetworkConfig,
    /// Search constants (self-play and evaluation).
    #[serde(default)]
    pub search: SearchConfig,
    /// How self-play games are played.
    #[serde(default)]
    pub selfplay: SelfplayConfig,
    /// The replay window.
    #[serde(default)]
    pub window: WindowConfig,
    /// Training steps.
    #[serde(default)]
    pub train: TrainConfig,
    /// The generation loop of `cfzero train`.
    #[serde(default)]
    pub run: RunConfig,
    /// The in-run evaluation.
    #[serde(default)]
    pub eval: EvalConfig,
    /// How self-play and the evaluation serve their nets.
    #[serde(default)]
    pub inference: InferenceConfig,
    /// A UCI engine that labels a share of the self-play positions (`cfzero train`); none
    /// by default.
    #[serde(default)]
    pub teacher: TeacherConfig,
}

/// The `[teacher]` table: a UCI engine beside self-play (docs/METHODS.md §9). It labels a
/// share of the positions each generation's games reach, as they arrive, with its value of
/// the position and of every legal move; training then draws `weight` of its samples from
/// those labels (the teacher's targets) and the rest from the replay window (the search's),
/// which blends the two targets in expectation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TeacherConfig {
    /// The engine's command line (e.g. `/usr/games/stockfish`); empty: no teacher.
    pub engine: String,
    /// UCI options of the engine, `Name = "value"`; each of [`TEACHER_OPTIONS`] the table
    /// leaves out is added where the engine offers it.
    pub options: std::collections::BTreeMap<String, String>,
    /// Nodes per position (used unless `movetime_ms` or `depth` is set).
    pub nodes: u64,
    /// Milliseconds per position instead of nodes.
    pub movetime_ms: Option<u64>,
    /// Plies of depth per position instead of nodes.
    pub depth: Option<u32>,
    /// How every legal move's value is obtained: `multi_pv` (one search) or `search_moves`
    /// (one search per move).
    pub method: cfzero_teacher::Method,
    /// Engine processes (each takes a core's share from self-play while it works).
    pub processes: usize,
    /// Seconds an engine may take for one answer before it is restarted.
    pub timeout_seconds: u64,
    /// Tries per position before it is given up.
    pub attempts: usize,
    /// Share of each generation's self-play positions sent to the engine.
    pub share: f64,
    /// Share of the training samples drawn from the teacher's labels at generation 1
    /// (docs/METHODS.md §9 gives the measurement behind the default).
    pub weight: f64,
    /// Training labels drawn from: the newest this many (each label takes about half a
    /// kilobyte in memory, so the default bounds the labels near 250 MB; it is as large as the
    /// replay window's largest size, `[window] max_positions`).
    pub window: usize,
    /// The weight is multiplied by this each generation (1: constant).
    pub decay: f64,
    /// Temperature of the softmax over the moves' expected scores (the policy target).
    pub temperature: f64,
}

/// Options the teacher's engine gets unless `[teacher.options]` sets them, each where the
/// engine offers it: W/D/L with every score (without it a score carries no draw share, and the
/// value targets none), one thread and a small hash (the engine shares the cores with
/// self-play).
pub const TEACHER_OPTIONS: [(&str, &str); 3] =
    [("UCI_ShowWDL", "true"), ("Threads", "1"), ("Hash", "16")];

impl Default for TeacherConfig {
    fn default() -> Self {
        TeacherConfig {
            engine: String::new(),
            options: std::collections::BTreeMap::new(),
            nodes: 1000,
            movetime_ms: None,
            depth: None,
            method: cfzero_teacher::Method::MultiPv,
            processes: 1,
            timeout_seconds: 60,
            attempts: 3,
            share: 0.25,
            weight: 0.75,
            window: 500_000,
            decay: 1.0,
            temperature: f64::from(cfzero_trainer::source::teacher::DEFAULT_TEMPERATURE),
        }
    }
}

impl TeacherConfig {
    /// Whether a teacher is configured.
    pub fn enabled(&self) -> bool {
        !self.engine.trim().is_empty()
    }

    /// The budget of each search.
    pub fn limit(&self) -> cfzero_eval::uci_client::UciLimit {
        use cfzero_eval::uci_client::UciLimit;
        match (self.movetime_ms, self.depth) {
            (Some(ms), _) => UciLimit::Movetime(ms),
            (_, Some(d)) => UciLimit::Depth(d),
            _ => UciLimit::Nodes(self.nodes),
        }
    }

    /// The weight of the teacher's labels in the training of generation `g` (1-based).
    pub fn weight_at(&self, g: u32) -> f64 {
        self.weight * self.decay.powi(g.saturating_sub(1) as i32)
    }

    /// Checks the `[teacher]` table's ranges.
    fn validate(&self) -> std::result::Result<(), InvalidSetting> {
        InvalidSetting::at_least("nodes", self.nodes, 1)?;
        InvalidSetting::at_least("movetime_ms", self.movetime_ms.unwrap_or(1), 1)?;
        InvalidSetting::at_least("depth", u64::from(self.depth.unwrap_or(1)), 1)?;
        InvalidSetting::at_least("processes", self.processes as u64, 1)?;
        InvalidSetting::at_least("timeout_seconds", self.timeout_seconds, 1)?;
        InvalidSetting::at_least("attempts", self.attempts as u64, 1)?;
        InvalidSetting::in_range("share", self.share, 0.0, true, 1.0)?;
        InvalidSetting::in_range("weight", self.weight, 0.0, false, 1.0)?;
        InvalidSetting::at_least("window", self.window as u64, 1)?;
        InvalidSetting::in_range("decay", self.decay, 0.0, true, 1.0)?;
        InvalidSetting::in_range("temperature", self.temperature, 0.0, true, f64::INFINITY)
    }
}

/// The `[run]` table: the shape of a training run's generations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    /// Self-play games per generation.
    pub games_per_generation: usize,
    /// Training steps per generation (when `sample_reuse` is 0).
    pub steps_per_generation: u64,
    /// Sample reuse: when above 0, each generation trains
    /// `ceil(sample_reuse * new trainable positions / (batch_size * window share))` steps, so
    /// that every new training position is seen about this many times while it is new,
    /// however many positions the generation's games happened to have and whatever share of
    /// the batches a teacher's labels take (as Lc0 and KataGo balance the trainer against the
    /// games).
    pub sample_reuse: f64,
    /// Random seed of the run.
    pub seed: u64,
    /// Threads libtorch may use for training (0: its default, one per core).
    pub torch_threads: usize,
    /// Keep every game the run ever played (`true`); `false`: after each publication the
    /// trainer removes from the run the games of generations older than every game of its
    /// window, once it has read them (chunks and their PGN on object storage, `games/gen-N`
    /// and `pgn/gen-N` in a directory), so the run holds about a window of games however long
    /// it runs, and so does its listing of every chunk. `export-data` then exports only those.
    pub keep_old_games: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            games_per_generation: 64,
            steps_per_generation: 100,
            sample_reuse: 0.0,
            seed: 1,
            torch_threads: 0,
            keep_old_games: true,
        }
    }
}

impl RunConfig {
    /// Makes libtorch use the training thread count from now on.
    pub fn use_training_threads(&self) {
        set_torch_threads(self.torch_threads);
    }

    /// Checks the `[run]` table's ranges: a generation needs a game.
    fn validate(&self) -> std::result::Result<(), InvalidSetting> {
        InvalidSetting::at_least("games_per_generation", self.games_per_generation as u64, 1)?;
        let reuse = self.sample_reuse;
        InvalidSetting::in_range("sample_reuse", reuse, 0.0, false, f64::INFINITY)
    }
}

/// The `[eval]` table: the evaluation match `cfzero train` plays every few generations, and
/// the simulations and openings `ladder` takes from a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvalConfig {
    /// Evaluate every this many generations (0: never).
    pub every: u32,
    /// Openings of the evaluation matches (each played with both colours).
    pub openings: Option<std::path::PathBuf>,
    /// Openings drawn from that file per evaluation match.
    pub openings_count: usize,
    /// Simulations per move of the nets in evaluation matches.
    pub simulations: u32,
    /// The anchor the in-run evaluation plays: a UCI engine's command line (a bare program
    /// name is looked for on `PATH`, then in `/usr/games`); empty: the built-in 1-ply
    /// material-greedy mover. An engine at a fixed level does not saturate as the greedy
    /// mover does once the net beats it every game.
    pub engine: String,
    /// UCI options of the anchor engine, each sent only where the engine offers it. The
    /// default is the documented reference, Stockfish's weakest level on one thread.
    pub engine_options: std::collections::BTreeMap<String, String>,
    /// Nodes a move of the anchor engine.
    pub engine_nodes: u64,
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            every: 1,
            openings: None,
            openings_count: 10,
            simulations: 32,
            engine: String::new(),
            engine_options: [("Skill Level", "0"), ("Threads", "1"), ("Hash", "16")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            engine_nodes: 100,
        }
    }
}

impl EvalConfig {
    /// Checks the `[eval]` table's ranges.
    fn validate(&self) -> std::result::Result<(), InvalidSetting> {
        InvalidSetting::at_least("openings_count", self.openings_count as u64, 1)?;
        InvalidSetting::at_least("simulations", self.simulations.into(), 1)?;
        InvalidSetting::at_least("engine_nodes", self.engine_nodes, 1)
    }
}

/// The `[inference]` table: how the nets of self-play and of the in-run evaluation are served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InferenceConfig {
    /// Largest batch an inference server runs; `"auto"` (0): sized to the machine
    /// ([`crate::sizing`]).
    #[serde(with = "cfzero_settings::auto")]
    pub max_batch: usize,
    /// Threads libtorch may use in each inference server (0: its default). The actor threads
    /// need cores too: more threads than free cores make libtorch's OpenMP workers spin-wait
    /// for each other, which costs far more than it gains.
    pub threads: usize,
    /// Inference servers of self-play, each a thread with its own copy of the net and
    /// `threads` libtorch threads; actor `a` uses server `a mod servers`. On a CPU, one
    /// single-threaded server per core evaluates more than one server whose libtorch threads
    /// synchronise on every small kernel. `"auto"` (0): sized to the machine
    /// ([`crate::sizing`]).
    #[serde(with = "cfzero_settings::auto")]
    pub servers: usize,
    /// Precision of the nets: `auto` (bf16 where the device computes it natively, else f32),
    /// `f32` or `bf16` (see `cfzero_network::precision`).
    pub precision: Precision,
    /// Backend of the nets: `auto` (the native pass for f32 on a CPU, else libtorch), `tch`,
    /// `native` or `material` (see `cfzero_inference::backend::BackendChoice`).
    pub backend: BackendChoice,
}

impl Default for InferenceConfig {
    fn default() -> Self {
        InferenceConfig {
            max_batch: 0,
            threads: 1,
            servers: 0,
            precision: Precision::Auto,
            backend: BackendChoice::Auto,
        }
    }
}

impl InferenceConfig {
    /// Makes libtorch use the inference thread count; call it before an inference thread
    /// starts (a new thread takes the count that is set when it first runs the net).
    pub fn use_threads(&self) {
        set_torch_threads(self.threads);
    }

    /// The options of a self-play or evaluation inference server on `device`: the table's
    /// `max_batch` (sized by [`crate::sizing::size`]; one left to `auto` and never sized
    /// serves at [`cfzero_inference::DEFAULT_MAX_BATCH`]), precision and backend
    /// ([`inference_options`]).
    pub fn options(&self, device: Device) -> InferenceOptions {
        let max_batch = match self.max_batch {
            0 => cfzero_inference::DEFAULT_MAX_BATCH,
            n => n,
        };
        inference_options(self.precision, self.backend, device, max_batch)
    }
}

/// The options of an inference server on `device` in `precision` with `backend`, for batches
/// of up to `max_batch`: how every command that serves a net builds them. Says which
/// precision runs and why on stderr, once per process for each distinct answer.
pub fn inference_options(
    precision: Precision,
    backend: BackendChoice,
    device: Device,
    max_batch: usize,
) -> InferenceOptions {
    let (options, notice) = resolve_inference(precision, backend, device, max_batch);
    say_once(notice);
    options
}

/// Prints `notice` on stderr unless this process printed the same line before: a notice of
/// how a setting resolves is worth one line, however many times the setting is read.
fn say_once(notice: String) {
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    if let Ok(mut said) = SAID.lock()
        && !said.contains(&notice)
    {
        eprintln!("{notice}");
        said.push(notice);
    }
}

/// [`inference_options`] without the notice on stderr: the options and the one-line notice
/// of which precision runs and why, for a caller that reports it its own way (`cfzero uci`
/// as an `info string`).
pub fn resolve_inference(
    precision: Precision,
    backend: BackendChoice,
    device: Device,
    max_batch: usize,
) -> (InferenceOptions, String) {
    let resolved = precision::resolve(precision, &Bf16Support::detect(device));
    let options = InferenceOptions {
        max_batch,
        kind: resolved.kind,
        backend,
        ..InferenceOptions::default()
    };
    (options, resolved.notice)
}

/// Sets libtorch's thread count; 0 means one thread per core.
pub fn set_torch_threads(n: usize) {
    let n = if n == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        n
    };
    tch::set_num_threads(n as i32);
}

impl Config {
    /// Reads and validates a config file; any problem is a one-line [`crate::error::UserError`]
    /// naming the file, and the key and line where it can. A key in its old place is read
    /// from there, with a one-line notice on stderr naming its new place (once per process).
    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| user_error(format!("cannot read config {}: {e}", path.display())))?;
        let (config, moved) = Self::parse_with_notices(&text)
            .map_err(|msg| user_error(format!("config {}: {msg}", path.display())))?;
        for notice in moved {
            say_once(format!("config {}: {notice}", path.display()));
        }
        Ok(config)
    }

    /// Parses config text; the error is one line with the line number where it can.
    #[cfg(test)]
    pub fn parse(text: &str) -> std::result::Result<Config, ConfigTextError> {
        Self::parse_with_notices(text).map(|(config, _)| config)
    }

    /// [`Config::parse`], with a notice for each key read from its old place
    /// ([`MOVED_KEYS`]).
    pub fn parse_with_notices(
        text: &str,
    ) -> std::result::Result<(Config, Vec<String>), ConfigTextError> {
        let at_line = |e: toml::de::Error| {
            let msg = e.message().trim().replace('\n', " ");
            match e.span() {
                Some(span) => {
                    let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                    format!("line {line}: {msg}")
                }
                None => msg,
            }
        };
        let mut table =
            toml::from_str::<toml::Table>(text).map_err(|e| ConfigTextError(at_line(e)))?;
        let moved = move_old_keys(&mut table).map_err(ConfigTextError)?;
        let config = if moved.is_empty() {
            toml::from_str::<Config>(text).map_err(at_line)
        } else {
            // The moved table has no lines of the text: its errors name the key alone.
            toml::Value::Table(table)
                .try_into::<Config>()
                .map_err(|e| e.message().trim().replace('\n', " "))
        }
        .map_err(ConfigTextError)?;
        config
            .validate()
            .map_err(|e| ConfigTextError(e.describe(text)))?;
        Ok((config, moved))
    }

    /// The config as TOML text, as it would be frozen into a run directory.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("a Config always serialises to TOML")
    }
}

/// Keys that `[run]` held before the in-run evaluation and inference serving had tables of
/// their own: `(old key in [run], new table, new key)`. A config that writes one in its old
/// place is read as if it were in the new one.
pub const MOVED_KEYS: [(&str, &str, &str); 12] = [
    ("eval_every", "eval", "every"),
    ("eval_openings", "eval", "openings"),
    ("eval_openings_count", "eval", "openings_count"),
    ("eval_simulations", "eval", "simulations"),
    ("eval_engine", "eval", "engine"),
    ("eval_engine_options", "eval", "engine_options"),
    ("eval_engine_nodes", "eval", "engine_nodes"),
    ("max_batch", "inference", "max_batch"),
    ("inference_threads", "inference", "threads"),
    ("inference_servers", "inference", "servers"),
    ("inference_precision", "inference", "precision"),
    ("backend", "inference", "backend"),
];

/// Moves the [`MOVED_KEYS`] that `doc`'s `[run]` writes to their tables; returns a notice for
/// each. A key written in both places is an error: neither can be said to win.
fn move_old_keys(doc: &mut toml::Table) -> std::result::Result<Vec<String>, String> {
    let mut notices = Vec::new();
    for (old, table, key) in MOVED_KEYS {
        let Some(value) = doc
            .get_mut("run")
            .and_then(toml::Value::as_table_mut)
            .and_then(|run| run.remove(old))
        else {
            continue;
        };
        let target = doc
            .entry(table)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let Some(target) = target.as_table_mut() else {
            return Err(format!("`{table}` must be a table"));
        };
        if target.contains_key(key) {
            return Err(format!(
                "[run] {old} and [{table}] {key} are the same setting; write it once, as [{table}] {key}"
            ));
        }
        target.insert(key.to_string(), value);
        notices.push(format!("[run] {old} is now [{table}] {key}; read as such"));
    }
    Ok(notices)
}

/// Why a config text is not a valid config, on one line, with the line of the text where it
/// can be placed (`line 12: [train] batch_size must be at least 1 (got 0)`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigTextError(pub String);

/// A setting of a parsed config that is out of range or inconsistent with another.
#[derive(Debug)]
struct InvalidConfig {
    /// The table, e.g. `selfplay`.
    table: &'static str,
    /// The key within the table, dotted for a nested one (e.g. `lr.peak`).
    key: String,
    /// The whole message, naming the key.
    message: String,
}

impl InvalidConfig {
    fn new(table: &'static str, error: InvalidSetting) -> Self {
        InvalidConfig {
            table,
            key: error.key.clone(),
            message: error.to_string(),
        }
    }

    /// One line: the line of the key in `text` where it is written there (a default value
    /// has no line), the table and the message.
    fn describe(&self, text: &str) -> String {
        let msg = format!("[{}] {}", self.table, self.message);
        match key_line(text, self.table, &self.key) {
            Some(line) => format!("line {line}: {msg}"),
            None => msg,
        }
    }
}

impl Config {
    /// Checks every table's ranges and the relations between settings, so that a bad value
    /// stops the run at once with its key named, instead of a panic, a hang or a silently
    /// useless run hours later.
    fn validate(&self) -> std::result::Result<(), InvalidConfig> {
        self.network.validate().map_err(|e| {
            let message = match e {
                ConfigError::Invalid(m) | ConfigError::Parse(m) => m,
            };
            // The network crate's messages name their key first, in backticks.
            let key = message.split('`').nth(1).unwrap_or_default().to_string();
            InvalidConfig {
                table: "network",
                key,
                message,
            }
        })?;
        let tables = [
            ("search", self.search.validate()),
            ("selfplay", self.selfplay.validate()),
            ("window", self.window.validate()),
            ("train", self.train.validate()),
            ("run", self.run.validate()),
            ("eval", self.eval.validate()),
            ("teacher", self.teacher.validate()),
        ];
        for (table, result) in tables {
            result.map_err(|e| InvalidConfig::new(table, e))?;
        }
        Ok(())
    }
}

/// The 1-based line where `[table]`'s `key` (dotted for nested tables) is written in `text`,
/// if it is.
fn key_line(text: &str, table: &str, key: &str) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(text).ok()?;
    let mut current: &DeTable = doc.get_ref();
    let mut span = None;
    let mut parts = std::iter::once(table).chain(key.split('.')).peekable();
    while let Some(part) = parts.next() {
        let (k, v) = current.iter().find(|(k, _)| k.get_ref() == part)?;
        span = Some(k.span());
        if parts.peek().is_some() {
            match v.get_ref() {
                DeValue::Table(inner) => current = inner,
                _ => return None,
            }
        }
    }
    let start = span?.start.min(text.len());
    Some(text[..start].matches('\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfzero_network::optim::schedule::LrSchedule;

    /// A config written before `[eval]` and `[inference]` existed reads as it always did, each
    /// moved key with a notice naming its new place; a key in both places is refused.
    #[test]
    fn old_run_keys_are_read_in_their_new_place_with_a_notice() {
        let micro = include_str!("../configs/micro.toml");
        let network = &micro[..micro.find("\n[search]").expect("micro.toml has [search]")];
        let old = format!(
            "{network}\n[run]\nseed = 3\neval_every = 5\neval_engine = \"sf\"\n\
             eval_engine_options = {{ Threads = \"2\" }}\ninference_servers = 3\n\
             backend = \"native\"\n"
        );
        let (config, notices) = Config::parse_with_notices(&old).unwrap();
        assert_eq!(config.run.seed, 3);
        assert_eq!((config.eval.every, config.eval.engine.as_str()), (5, "sf"));
        assert_eq!(config.eval.engine_options.len(), 1);
        assert_eq!(config.eval.engine_options["Threads"], "2");
        assert_eq!(config.inference.servers, 3);
        assert_eq!(config.inference.backend, BackendChoice::Native);
        assert_eq!(notices.len(), 5, "{notices:?}");
        let said = |n: &str| notices.iter().any(|x| x == n);
        assert!(said("[run] eval_every is now [eval] every; read as such"));
        assert!(said(
            "[run] inference_servers is now [inference] servers; read as such"
        ));
        // The new layout reads the same, without a notice; what it writes is the new layout.
        let (again, none) = Config::parse_with_notices(&config.to_toml()).unwrap();
        assert_eq!((again, none.len()), (config, 0));

        let both = format!("{network}\n[run]\neval_every = 5\n[eval]\nevery = 2\n");
        let err = Config::parse(&both).unwrap_err().to_string();
        assert!(err.contains("[run] eval_every and [eval] every"), "{err}");
    }

    /// A key left out takes its type's default whether its table is written or not, so
    /// `[train]` with one key means the defaults plus that key.
    #[test]
    fn a_key_left_out_takes_the_default_of_its_type() {
        let micro = include_str!("../configs/micro.toml");
        let network = &micro[..micro.find("\n[search]").expect("micro.toml has [search]")];
        let bare = Config::parse(network).unwrap();
        assert_eq!(bare.train, TrainConfig::default());
        assert_eq!(bare.window, WindowConfig::default());
        assert_eq!(bare.train.lr.warmup_steps, 100);

        let text = format!(
            "{network}\n[window]\nmin_positions = 100\n[train]\nq_ratio = 0.25\n[train.lr]\npeak = 0.002\n"
        );
        let some = Config::parse(&text).unwrap();
        assert_eq!(
            some.window,
            WindowConfig {
                min_positions: 100,
                ..WindowConfig::default()
            }
        );
        assert_eq!(
            some.train,
            TrainConfig {
                q_ratio: 0.25,
                lr: LrSchedule {
                    peak: 0.002,
                    ..LrSchedule::default()
                },
                ..TrainConfig::default()
            }
        );
    }
}
