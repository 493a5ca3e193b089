//! The search benchmark of `cfzero bench mcts` without libtorch: simulations per second of
//! one Gumbel tree, one PUCT tree and the driver, with the uniform evaluator.
//!
//! `cargo run --release -p cfzero-mcts --example bench_mcts -- [POSITIONS] [NODES] [REPEATS]`
//! (defaults: configs/openings/4mvs_+90_+99.epd, 800, 3). Each repeat prints one line;
//! on a shared machine compare the best of several repeats, not a single one.

use std::path::PathBuf;

use cfzero_mcts::bench::{BenchEvaluator, BenchOptions, load_positions, run_mcts_bench};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../configs/openings/4mvs_+90_+99.epd")
    });
    let nodes: u32 = args.next().map_or(Ok(800), |s| s.parse())?;
    let repeats: usize = args.next().map_or(Ok(3), |s| s.parse())?;
    let options = BenchOptions {
        evaluator: BenchEvaluator::Uniform,
        nodes,
        positions: load_positions(&path)?,
        games: 64,
        cache_entries: 0,
        seed: 0,
    };
    for _ in 0..repeats {
        let r = run_mcts_bench(&options)?;
        println!(
            "gumbel {:.0} nodes/s, puct {:.0} nodes/s, driver {:.0} nodes/s",
            r.single_gumbel.nodes_per_second,
            r.single_puct.nodes_per_second,
            r.driver.nodes_per_second
        );
    }
    Ok(())
}
