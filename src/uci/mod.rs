//! `cfzero uci`: a net as a UCI engine, for chess GUIs and match runners.
//!
//! The command loop reads stdin; each `go` runs on a search thread ([`searcher`]) so that
//! `stop`, `isready` and `quit` are answered while it thinks. Bad input never ends the
//! engine: it is reported in an `info string` line and ignored.

pub mod clock;
pub mod command;
pub mod searcher;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::Result;
use cfzero_chess::{ChessState, HistoryFill, TerminalReason};
use cfzero_inference::backend::BackendChoice;
use cfzero_inference::{InferenceHandle, InferenceServer};
use cfzero_mcts::{Driver, SearchConfig, SearchMode};
use cfzero_network::checkpoint::load_net;
use cfzero_network::precision::Precision;
use clap::Args;
use shakmaty::Color;

use cfzero_eval::lines::{MAX_LINE, read_line_bounded};

use crate::commands::net_play::play_search;
use crate::config::{Config, resolve_inference, set_torch_threads};
use crate::flags::{DeviceFlag, PlayFlags};
use crate::user_bail;
use clock::{MAX_SIMULATIONS, budget};
use command::{Command, GoParams};
use searcher::{Job, Shared, SharedDriver};

/// Arguments of `cfzero uci`.
#[derive(Debug, Args)]
pub struct UciArgs {
    /// The net to play (the `Net` option can change it).
    #[arg(long)]
    pub net: Option<PathBuf>,
    /// Simulations per move when `go` gives no limit (the `Simulations` option; default: the
    /// `--config`'s `[search] simulations`, else that table's default).
    #[arg(long)]
    pub sims: Option<u32>,
    /// libtorch threads for the net (the `Threads` option); 0 = all cores.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    #[command(flatten)]
    pub device: DeviceFlag,
    #[command(flatten)]
    pub play: PlayFlags,
    /// A config file whose `[search]` table sets the search constants (the `Config`
    /// option); without one, the defaults of docs/METHODS.md §3. Play turns root noise off.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

/// Positions the engine's evaluation cache holds: four times the default
/// ([`cfzero_mcts::DEFAULT_CACHE_ENTRIES`], about 60 MB), because it is kept from one `go` to
/// the next over a whole game and searches of 800 simulations and more fill it faster.
pub const CACHE_ENTRIES: usize = 4 * cfzero_mcts::DEFAULT_CACHE_ENTRIES;

/// Most leaves the `Batch` option allows in one evaluation.
const MAX_BATCH: u64 = 1024;

/// The engine's options, as `setoption` sets them.
#[derive(Debug, Clone, PartialEq)]
struct Options {
    net: Option<PathBuf>,
    threads: usize,
    simulations: u64,
    /// The search constants (`--config`, `Config`, `SearchMode`, `Batch`), before
    /// [`SearchConfig::for_play`].
    search: SearchConfig,
    move_overhead_ms: u64,
    precision: Precision,
    backend: BackendChoice,
}

/// The `option` lines of the `uci` answer.
fn option_lines(o: &Options) -> Vec<String> {
    let net = o
        .net
        .as_ref()
        .map_or("<empty>".to_string(), |p| p.display().to_string());
    vec![
        format!("option name Net type string default {net}"),
        format!(
            "option name Threads type spin default {} min 0 max 256",
            o.threads
        ),
        format!(
            "option name Simulations type spin default {} min 1 max {MAX_SIMULATIONS}",
            o.simulations
        ),
        format!(
            "option name SearchMode type combo default {} var gumbel var puct",
            match o.search.mode {
                SearchMode::Gumbel => "gumbel",
                SearchMode::Puct => "puct",
            }
        ),
        format!(
            "option name Batch type spin default {} min 1 max {MAX_BATCH}",
            o.search.batch
        ),
        "option name Config type string default <empty>".to_string(),
        "option name MoveOverhead type spin default 50 min 0 max 5000".to_string(),
        format!(
            "option name Precision type combo default {} var auto var f32 var bf16",
            o.precision
        ),
        format!(
            "option name Backend type combo default {} var auto var tch var native var material",
            o.backend
        ),
    ]
}

/// A loaded net and what it was loaded with.
struct Loaded {
    path: PathBuf,
    threads: usize,
    precision: Precision,
    backend: BackendChoice,
    batch: u32,
    handle: InferenceHandle<ChessState>,
}

/// The engine between commands.
struct Engine {
    options: Options,
    device: tch::Device,
    loaded: Option<Loaded>,
    position: ChessState,
    shared: Shared,
    search: Option<JoinHandle<()>>,
    /// The search and its cache, for the loaded net and the current constants; `None`
    /// until the next `go` builds it.
    driver: Option<SharedDriver>,
}

impl Engine {
    /// Handles one line; false on `quit`.
    fn handle(&mut self, line: &str) -> bool {
        match command::parse(line) {
            Command::Uci => {
                println!("id name cfzero {}", env!("CARGO_PKG_VERSION"));
                println!("id author the cfzero developers");
                for l in option_lines(&self.options) {
                    println!("{l}");
                }
                println!("uciok");
            }
            Command::IsReady => {
                if self.search.is_none() {
                    self.ensure_net();
                }
                println!("readyok");
            }
            Command::NewGame => {
                self.stop_search();
                self.position = start_position();
            }
            Command::SetOption { name, value } => self.set_option(&name, &value),
            Command::Position { fen, moves } => self.set_position(fen.as_deref(), &moves),
            Command::Go(go) => self.go(&go),
            Command::Stop => self.stop_search(),
            Command::PonderHit | Command::Empty => {}
            Command::Quit => {
                self.stop_search();
                return false;
            }
            Command::Invalid(why) => println!("info string ignored: {why}"),
        }
        true
    }

    fn set_option(&mut self, name: &str, value: &str) {
        if self.search.is_some() {
            println!("info string ignored: setoption while searching");
            return;
        }
        let number = || value.trim().parse::<u64>().ok();
        match name.to_ascii_lowercase().as_str() {
            "net" => {
                self.options.net =
                    (!value.is_empty() && value != "<empty>").then(|| PathBuf::from(value))
            }
            "threads" => match number().filter(|&n| n <= 256) {
                Some(n) => self.options.threads = n as usize,
                None => println!("info string ignored: Threads {value:?} is not 0 to 256"),
            },
            "simulations" => match number().filter(|&n| (1..=MAX_SIMULATIONS).contains(&n)) {
                Some(n) => self.options.simulations = n,
                None => println!(
                    "info string ignored: Simulations {value:?} is not 1 to {MAX_SIMULATIONS}"
                ),
            },
            "searchmode" => match value.to_ascii_lowercase().as_str() {
                "gumbel" => self.options.search.mode = SearchMode::Gumbel,
                "puct" => self.options.search.mode = SearchMode::Puct,
                _ => println!("info string ignored: SearchMode {value:?} is not gumbel or puct"),
            },
            "batch" => match number().filter(|&n| (1..=MAX_BATCH).contains(&n)) {
                Some(n) => self.options.search.batch = n as u32,
                None => println!("info string ignored: Batch {value:?} is not 1 to {MAX_BATCH}"),
            },
            "config" => {
                if value.is_empty() || value == "<empty>" {
                    self.options.search = SearchConfig::default();
                } else {
                    match Config::load(std::path::Path::new(value)) {
                        Ok(config) => self.options.search = config.search,
                        Err(e) => println!("info string ignored: Config: {e:#}"),
                    }
                }
            }
            "moveoverhead" => match number().filter(|&n| n <= 5000) {
                Some(n) => self.options.move_overhead_ms = n,
                None => println!("info string ignored: MoveOverhead {value:?} is not 0 to 5000"),
            },
            "precision" => match value.parse::<Precision>() {
                Ok(p) => self.options.precision = p,
                Err(e) => println!("info string ignored: Precision: {e}"),
            },
            "backend" => match value.parse::<BackendChoice>() {
                Ok(b) => self.options.backend = b,
                Err(e) => println!("info string ignored: Backend: {e}"),
            },
            _ => println!("info string ignored: unknown option {name:?}"),
        }
    }

    /// Sets the position, or keeps the old one if the FEN or a move is bad.
    fn set_position(&mut self, fen: Option<&str>, moves: &[String]) {
        if self.search.is_some() {
            println!("info string ignored: position while searching");
            return;
        }
        let state = match fen {
            None => Ok(start_position()),
            Some(f) => ChessState::from_fen(f, HistoryFill::No).map(|mut s| {
                s.set_max_plies(u32::MAX);
                s
            }),
        };
        let mut state = match state {
            Ok(s) => s,
            Err(e) => {
                println!("info string ignored: position: {e}");
                return;
            }
        };
        for mv in moves {
            if let Err(e) = state.play_uci(mv) {
                println!("info string ignored: position: {e}");
                return;
            }
        }
        self.position = state;
    }

    /// Loads the net if the options name another one (or other threads); false if there is
    /// none. A net that does not load is reported and forgotten: the engine keeps the one it
    /// had, and the options name that one again.
    fn ensure_net(&mut self) -> bool {
        let Some(path) = self.options.net.clone() else {
            println!("info string no net: set the Net option or start with --net");
            return false;
        };
        let (threads, precision) = (self.options.threads, self.options.precision);
        let (batch, backend) = (self.options.search.batch, self.options.backend);
        if self.loaded.as_ref().is_some_and(|l| {
            l.path == path
                && l.threads == threads
                && l.precision == precision
                && l.backend == backend
                && l.batch == batch
        }) {
            return true;
        }
        set_torch_threads(threads);
        let served = load_net(&path, self.device)
            .map_err(|e| e.to_string())
            .and_then(|net| {
                // The search sends up to `batch` leaves per forward pass.
                let (options, notice) =
                    resolve_inference(precision, backend, self.device, batch as usize);
                println!("info string {notice}");
                InferenceServer::spawn(net, options).map_err(|e| e.to_string())
            });
        match served {
            Ok(handle) => {
                println!("info string backend {}", handle.capabilities().name);
                self.loaded = Some(Loaded {
                    path,
                    threads,
                    precision,
                    backend,
                    batch,
                    handle,
                });
                // The cache holds the old net's evaluations.
                self.driver = None;
                true
            }
            Err(e) => {
                println!("info string cannot load the net: {e}");
                match &self.loaded {
                    Some(old) => {
                        println!("info string keeping the net {}", old.path.display());
                        self.options.net = Some(old.path.clone());
                        self.options.threads = old.threads;
                        self.options.backend = old.backend;
                        set_torch_threads(old.threads);
                        true
                    }
                    None => false,
                }
            }
        }
    }

    fn go(&mut self, go: &GoParams) {
        let started = Instant::now();
        if self.search.is_some() {
            println!("info string ignored: go while searching");
            return;
        }
        if !self.ensure_net() {
            println!("bestmove 0000");
            return;
        }
        let white = self.position.turn() == Color::White;
        let job = Job {
            state: search_root(&self.position),
            budget: budget(
                go,
                white,
                self.options.simulations,
                self.options.move_overhead_ms,
            ),
            started,
        };
        let play = self.options.search.for_play();
        let driver = match &self.driver {
            Some(d) if d.lock().is_ok_and(|d| *d.config() == play) => d.clone(),
            _ => {
                let d: SharedDriver = Arc::new(Mutex::new(Driver::new(play, CACHE_ENTRIES)));
                self.driver = Some(d.clone());
                d
            }
        };
        self.shared.stop.store(false, Ordering::Release);
        self.shared.answered.store(false, Ordering::Release);
        let net = self.loaded.as_ref().expect("ensured").handle.clone();
        self.search = Some(searcher::spawn(job, net, driver, self.shared.clone()));
    }

    /// Stops the search, if any, and waits for its `bestmove`.
    fn stop_search(&mut self) {
        if let Some(search) = self.search.take() {
            self.shared.stop.store(true, Ordering::Release);
            if search.join().is_err() {
                println!("info string the search thread failed");
            }
        }
    }

    /// Forgets a search that has given its `bestmove` (its thread may still be ending: a
    /// GUI can send the next `go` as soon as it reads the answer).
    fn reap(&mut self) {
        if self.search.is_some() && self.shared.answered.load(Ordering::Acquire) {
            self.stop_search();
        }
    }
}

/// The position a `go` searches. A draw that can be claimed (threefold repetition, the
/// fifty-move rule) does not end the game in UCI: the GUI or the opponent decides whether to
/// claim it, and a `bestmove 0000` there is scored as a loss. So the search starts from the
/// same board without the history that repeats and with the halfmove clock just below the
/// limit: every move that keeps the fifty-move draw is still scored as a draw. Any other
/// position is searched as it is.
fn search_root(position: &ChessState) -> ChessState {
    match position.terminal_reason() {
        Some(TerminalReason::ThreefoldRepetition | TerminalReason::FiftyMoveRule) => {}
        _ => return position.clone(),
    }
    let fen = position.fen();
    let mut fields: Vec<String> = fen.split(' ').map(str::to_string).collect();
    if let Some(clock) = fields.get_mut(4) {
        *clock = clock.parse::<u32>().unwrap_or(0).min(99).to_string();
    }
    match ChessState::from_fen(&fields.join(" "), HistoryFill::No) {
        Ok(mut state) => {
            state.set_max_plies(u32::MAX);
            state
        }
        // Cannot happen (it is the position's own FEN); the search then answers as it can.
        Err(_) => position.clone(),
    }
}

fn start_position() -> ChessState {
    let mut s = ChessState::new();
    s.set_max_plies(u32::MAX);
    s
}

/// Runs the engine until `quit` or the end of stdin.
pub fn run(args: &UciArgs) -> Result<()> {
    if let Some(net) = &args.net
        && !net.is_file()
    {
        user_bail!("net {}: no such file", net.display());
    }
    let play = play_search(args.config.as_deref(), args.sims, "--sims")?;
    let simulations = u64::from(play.simulations);
    if simulations > MAX_SIMULATIONS {
        user_bail!("--sims {simulations}: must be 1 to {MAX_SIMULATIONS}");
    }
    let device = args.device.parse()?;
    let mut engine = Engine {
        options: Options {
            net: args.net.clone(),
            threads: args.threads,
            simulations,
            // Already set for play; `for_play` again when a search starts changes nothing.
            search: play.search,
            move_overhead_ms: 50,
            precision: args.play.precision,
            backend: args.play.backend,
        },
        device,
        loaded: None,
        position: start_position(),
        shared: Shared::default(),
        search: None,
        driver: None,
    };
    let mut input = std::io::stdin().lock();
    let mut bytes = Vec::new();
    loop {
        match read_line_bounded(&mut input, MAX_LINE, &mut bytes) {
            Ok(None) | Err(_) => break,
            Ok(Some(true)) => {
                println!("info string ignored: a line longer than {MAX_LINE} bytes");
                continue;
            }
            Ok(Some(false)) => {}
        }
        engine.reap();
        // Bytes that are not UTF-8 are garbage like any other: replaced, then ignored.
        if !engine.handle(&String::from_utf8_lossy(&bytes)) {
            break;
        }
    }
    engine.stop_search();
    Ok(())
}
