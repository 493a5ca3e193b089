//! `cfzero bench`: speed measurements, each a table or (`--json`) one JSON object.
//! `bench mcts` measures the search alone, `bench nn` the net, `bench selfplay` and
//! `bench train` the two halves of a generation, `bench learn` the strength a config
//! reaches in a given training time and `bench curve` a run's strength over its minutes;
//! `bench data` and `bench store` the data paths.

use std::path::PathBuf;

use anyhow::Result;
use cfzero_chess::ChessState;
use cfzero_mcts::bench::{
    BenchError, BenchEvaluator, BenchOptions, load_positions, run_mcts_bench,
};
use clap::{Args, Subcommand, ValueEnum};

use crate::error::user_error;

/// Arguments of `cfzero bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchCommand,
}

/// What to measure.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Search speed (simulations per second) with a built-in evaluator, one thread, and
    /// memory per tree node.
    Mcts(MctsArgs),
    /// Network speed: evaluations per second per batch size, against the machine's matmul peak.
    Nn(super::bench_nn::NnArgs),
    /// Self-play speed of a config: positions per second against the net's limit.
    Selfplay(super::bench_selfplay::SelfplayBenchArgs),
    /// Training speed of a config: samples per second.
    Train(super::bench_train::TrainBenchArgs),
    /// Learning speed of a config: trains from zero for some minutes, then plays the net
    /// against the random and the greedy mover (score and Elo with 95% intervals).
    Learn(super::bench_learn::LearnBenchArgs),
    /// Strength over training time: the nets a run had at given minutes against the greedy
    /// mover, an engine and puzzles (`curve.tsv`, `curve.png`).
    Curve(super::bench_curve::CurveBenchArgs),
    /// Training data speed: samples per second that one loader thread makes of each source.
    Data(super::bench_data::DataBenchArgs),
    /// Store speed: how many simulated self-play workers one trainer's ingest keeps up with
    /// on a directory or an object store.
    Store(super::bench_store::StoreBenchArgs),
}

/// The evaluator of `bench mcts`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum EvaluatorArg {
    /// Equal priors, value 0.
    Uniform,
    /// Equal priors, value from the material balance.
    Material,
}

/// Arguments of `cfzero bench mcts`.
#[derive(Debug, Args)]
pub struct MctsArgs {
    /// Evaluator used at the leaves.
    #[arg(long, value_enum, default_value = "uniform")]
    pub evaluator: EvaluatorArg,
    /// Simulations per search.
    #[arg(long, default_value_t = 800)]
    pub nodes: u32,
    /// EPD or FEN file of root positions (default: the start position).
    #[arg(long)]
    pub positions: Option<PathBuf>,
    /// Trees the many-tree driver searches at once.
    #[arg(long, default_value_t = 64)]
    pub games: usize,
    /// At most this many positions of the file are searched (each row of the report times
    /// one search of each: a whole opening suite takes about a second, long enough to time).
    #[arg(long, default_value_t = 1000)]
    pub max_positions: usize,
    /// Evaluation cache of the driver in entries (0 disables it).
    #[arg(long, default_value_t = cfzero_mcts::DEFAULT_CACHE_ENTRIES)]
    pub cache: usize,
    /// Seed of the root noise.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `cfzero bench`.
pub fn run(args: &BenchArgs) -> Result<()> {
    match &args.what {
        BenchCommand::Mcts(a) => mcts(a),
        BenchCommand::Nn(a) => super::bench_nn::run(a),
        BenchCommand::Selfplay(a) => super::bench_selfplay::run(a),
        BenchCommand::Train(a) => super::bench_train::run(a),
        BenchCommand::Learn(a) => super::bench_learn::run(a),
        BenchCommand::Curve(a) => super::bench_curve::run(a),
        BenchCommand::Data(a) => super::bench_data::run(a),
        BenchCommand::Store(a) => super::bench_store::run(a),
    }
}

fn mcts(args: &MctsArgs) -> Result<()> {
    let mut positions = match &args.positions {
        Some(path) => load_positions(path).map_err(|e| match e {
            BenchError::Search(_) => anyhow::Error::new(e),
            other => user_error(other),
        })?,
        None => vec![ChessState::new()],
    };
    positions.truncate(args.max_positions.max(1));
    let options = BenchOptions {
        evaluator: match args.evaluator {
            EvaluatorArg::Uniform => BenchEvaluator::Uniform,
            EvaluatorArg::Material => BenchEvaluator::Material,
        },
        nodes: args.nodes,
        positions,
        games: args.games,
        cache_entries: args.cache,
        seed: args.seed,
    };
    let report = run_mcts_bench(&options)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "{} positions, {} simulations per search, {:?} evaluator",
        report.positions, report.nodes_per_search, report.evaluator
    );
    println!("{:<22} {:>12} {:>9}  details", "", "nodes/s", "vs Lc0");
    for (name, rate) in [
        ("single tree, gumbel", report.single_gumbel),
        ("single tree, puct", report.single_puct),
        ("driver, gumbel", report.driver),
    ] {
        println!(
            "{name:<22} {:>12.0} {:>8.2}x  ({} searches, {} nodes, {:.2} s)",
            rate.nodes_per_second, rate.ratio_to_reference, rate.searches, rate.nodes, rate.seconds
        );
    }
    println!(
        "{:<22} {:>12.0} {:>8.2}x  (Lc0, random backend, one thread)",
        "reference", report.reference_nodes_per_second, 1.0
    );
    println!(
        "driver: {} games at once, {} batches, {} cache hits",
        report.games, report.driver_batches, report.driver_cache_hits
    );
    let m = &report.memory;
    println!(
        "memory: {:.1} bytes per tree node ({} trees, {} nodes, {} KiB of arena; node {} B, edge {} B)",
        m.bytes_per_node,
        m.trees,
        m.nodes,
        m.arena_bytes / 1024,
        m.node_size,
        m.edge_size
    );
    Ok(())
}
