//! The search benchmark behind `cfzero bench mcts`: simulations per second of one tree
//! (Gumbel and PUCT) and of the many-tree driver, on chess positions with a built-in evaluator.

use std::path::Path;
use std::time::Instant;

use cfzero_chess::{ChessError, ChessState, HistoryFill};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::config::SearchConfig;
use crate::driver::Driver;
use crate::evaluator::Evaluator;
use crate::evaluators::{MaterialEvaluator, UniformEvaluator};
use crate::search::{Search, SearchError};
use crate::tree::{Edge, Node};

/// The reference speed of the search: Lc0's search with its random backend on one thread of
/// a 2-core x86-64 machine, in nodes per second. Every [`Rate`] is compared with it.
pub const REFERENCE_NODES_PER_SECOND: f64 = 75_000.0;

/// Which built-in evaluator the benchmark uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BenchEvaluator {
    /// Equal priors, value 0: measures the search alone.
    Uniform,
    /// Equal priors, material value.
    Material,
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// The evaluator.
    pub evaluator: BenchEvaluator,
    /// Simulations per search.
    pub nodes: u32,
    /// Root positions; searched in turn, cycled for the driver's games.
    pub positions: Vec<ChessState>,
    /// Searches the driver runs at once.
    pub games: usize,
    /// Evaluation cache of the driver, in entries (0 disables it).
    pub cache_entries: usize,
    /// Seed of the root noise.
    pub seed: u64,
}

/// One measurement.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rate {
    /// Searches run.
    pub searches: u64,
    /// Simulations run (each adds a node or revisits a terminal).
    pub nodes: u64,
    /// Wall time in seconds.
    pub seconds: f64,
    /// `nodes / seconds`.
    pub nodes_per_second: f64,
    /// `nodes_per_second /` [`REFERENCE_NODES_PER_SECOND`].
    pub ratio_to_reference: f64,
}

impl Rate {
    fn new(searches: u64, nodes: u64, seconds: f64) -> Rate {
        let nodes_per_second = nodes as f64 / seconds.max(1e-9);
        Rate {
            searches,
            nodes,
            seconds,
            nodes_per_second,
            ratio_to_reference: nodes_per_second / REFERENCE_NODES_PER_SECOND,
        }
    }
}

/// Memory of the tree after a search: the arena's allocation over its nodes.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TreeMemory {
    /// Fresh Gumbel trees measured, one per position.
    pub trees: u64,
    /// Nodes in those trees.
    pub nodes: u64,
    /// Bytes their arenas allocated (node and edge capacity).
    pub arena_bytes: u64,
    /// `arena_bytes / nodes`.
    pub bytes_per_node: f64,
    /// Size of one node.
    pub node_size: usize,
    /// Size of one edge.
    pub edge_size: usize,
}

/// The benchmark's results.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// The evaluator used.
    pub evaluator: BenchEvaluator,
    /// [`REFERENCE_NODES_PER_SECOND`], which each rate's `ratio_to_reference` divides by.
    pub reference_nodes_per_second: f64,
    /// Simulations per search.
    pub nodes_per_search: u32,
    /// Number of root positions.
    pub positions: usize,
    /// One Gumbel tree at a time, one thread.
    pub single_gumbel: Rate,
    /// One PUCT tree at a time, one thread.
    pub single_puct: Rate,
    /// The driver with `games` Gumbel trees at once, one thread.
    pub driver: Rate,
    /// Games of the driver.
    pub games: usize,
    /// Leaves the driver answered from its cache.
    pub driver_cache_hits: u64,
    /// Batches the driver sent to the evaluator.
    pub driver_batches: u64,
    /// Bytes per tree node after a search of `nodes_per_search`.
    pub memory: TreeMemory,
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The positions file could not be read.
    #[error("cannot read positions from {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line of the positions file is not a valid position.
    #[error("{path}:{line}: {source}")]
    Position {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// Why the FEN was rejected.
        source: ChessError,
    },
    /// The file has no usable positions.
    #[error("no positions to search (empty file or all games finished): {0}")]
    NoPositions(String),
    /// The search failed.
    #[error(transparent)]
    Search(#[from] SearchError),
}

/// Reads positions from an EPD or FEN file (one a line; only the first four fields are
/// used, so EPD operations and FEN clocks are both fine; blank lines and `#` comments are
/// skipped). Finished games are left out, as there is nothing to search.
pub fn load_positions(path: &Path) -> Result<Vec<ChessState>, BenchError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| BenchError::Read {
        path: name.clone(),
        source,
    })?;
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fen = line
            .split_whitespace()
            .take(4)
            .collect::<Vec<_>>()
            .join(" ");
        let state =
            ChessState::from_fen(&fen, HistoryFill::No).map_err(|source| BenchError::Position {
                path: name.clone(),
                line: index + 1,
                source,
            })?;
        if state.terminal_reason().is_none() {
            out.push(state);
        }
    }
    if out.is_empty() {
        return Err(BenchError::NoPositions(name));
    }
    Ok(out)
}

/// Runs the benchmark.
pub fn run_mcts_bench(options: &BenchOptions) -> Result<BenchReport, BenchError> {
    if options.positions.is_empty() {
        return Err(BenchError::NoPositions("no positions given".into()));
    }
    match options.evaluator {
        BenchEvaluator::Uniform => run_with(options, &UniformEvaluator),
        BenchEvaluator::Material => run_with(options, &MaterialEvaluator::default()),
    }
}

fn run_with<E: Evaluator<ChessState>>(
    options: &BenchOptions,
    evaluator: &E,
) -> Result<BenchReport, BenchError> {
    let single_gumbel = single(options, evaluator, SearchConfig::default())?;
    let single_puct = single(options, evaluator, SearchConfig::puct())?;
    let memory = tree_memory(options, evaluator)?;
    let games = options.games.max(1);
    let roots: Vec<ChessState> = options
        .positions
        .iter()
        .cycle()
        .take(games)
        .cloned()
        .collect();
    let budgets = vec![options.nodes; games];
    let mut driver = Driver::new(SearchConfig::default(), options.cache_entries);
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let start = Instant::now();
    let results = driver.run(&roots, &budgets, evaluator, &mut rng)?;
    let seconds = start.elapsed().as_secs_f64();
    let nodes = results.iter().map(|r| u64::from(r.simulations)).sum();
    let stats = driver.stats();
    Ok(BenchReport {
        evaluator: options.evaluator,
        reference_nodes_per_second: REFERENCE_NODES_PER_SECOND,
        nodes_per_search: options.nodes,
        positions: options.positions.len(),
        single_gumbel,
        single_puct,
        driver: Rate::new(games as u64, nodes, seconds),
        games,
        driver_cache_hits: stats.cache_hits,
        driver_batches: stats.batches,
        memory,
    })
}

/// Searches every position once with a fresh Gumbel tree (untimed) and sums what the arenas
/// allocated, so that the capacity a reused tree keeps from earlier searches does not count.
fn tree_memory<E: Evaluator<ChessState>>(
    options: &BenchOptions,
    evaluator: &E,
) -> Result<TreeMemory, BenchError> {
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let (mut nodes, mut bytes) = (0u64, 0u64);
    for root in &options.positions {
        let mut search = Search::new(SearchConfig::default());
        let result = search.run(root, options.nodes, evaluator, &mut rng)?;
        nodes += result.nodes as u64;
        bytes += search.tree().arena_bytes() as u64;
    }
    Ok(TreeMemory {
        trees: options.positions.len() as u64,
        nodes,
        arena_bytes: bytes,
        bytes_per_node: bytes as f64 / nodes.max(1) as f64,
        node_size: std::mem::size_of::<Node>(),
        edge_size: std::mem::size_of::<Edge<<ChessState as crate::game::Game>::Move>>(),
    })
}

/// Searches every position once with one reused tree.
fn single<E: Evaluator<ChessState>>(
    options: &BenchOptions,
    evaluator: &E,
    config: SearchConfig,
) -> Result<Rate, BenchError> {
    let mut search = Search::new(config);
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let start = Instant::now();
    let mut nodes = 0u64;
    for root in &options.positions {
        nodes += u64::from(
            search
                .run(root, options.nodes, evaluator, &mut rng)?
                .simulations,
        );
    }
    let seconds = start.elapsed().as_secs_f64();
    Ok(Rate::new(options.positions.len() as u64, nodes, seconds))
}
