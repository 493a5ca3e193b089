//! Search speed with the uniform evaluator: one Gumbel tree, one PUCT tree, and the driver
//! with 64 trees. Throughput is reported in simulations (nodes) per second.

use std::hint::black_box;

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_mcts::{Driver, Search, SearchConfig, UniformEvaluator};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A few middlegame and endgame positions, so that move generation costs what it does in games.
const FENS: [&str; 4] = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
];

const NODES: u32 = 800;

fn positions() -> Vec<ChessState> {
    FENS.iter()
        .map(|f| ChessState::from_fen(f, HistoryFill::No).unwrap())
        .collect()
}

fn single_tree(c: &mut Criterion) {
    let roots = positions();
    let mut group = c.benchmark_group("single_tree");
    group.throughput(Throughput::Elements(u64::from(NODES) * roots.len() as u64));
    for (name, config) in [
        ("gumbel", SearchConfig::default()),
        ("puct", SearchConfig::puct()),
    ] {
        let mut search = Search::new(config);
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        group.bench_function(name, |b| {
            b.iter(|| {
                for root in &roots {
                    black_box(
                        search
                            .run(root, NODES, &UniformEvaluator, &mut rng)
                            .unwrap(),
                    );
                }
            })
        });
    }
    group.finish();
}

fn driver(c: &mut Criterion) {
    const GAMES: usize = 64;
    let roots: Vec<ChessState> = positions().into_iter().cycle().take(GAMES).collect();
    let budgets = vec![NODES; GAMES];
    let mut group = c.benchmark_group("driver");
    group.throughput(Throughput::Elements(u64::from(NODES) * GAMES as u64));
    group.sample_size(10);
    for (name, cache) in [("64_trees_no_cache", 0), ("64_trees_cache", 1 << 16)] {
        let mut driver = Driver::new(SearchConfig::default(), cache);
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        group.bench_function(name, |b| {
            b.iter(|| {
                driver.clear_cache();
                black_box(
                    driver
                        .run(&roots, &budgets, &UniformEvaluator, &mut rng)
                        .unwrap(),
                )
            })
        });
    }
    group.finish();
}

criterion_group!(benches, single_tree, driver);
criterion_main!(benches);
