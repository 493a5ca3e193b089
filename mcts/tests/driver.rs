//! The many-tree driver: same results as lone searches, per-root budgets, the cache.

mod common;

use cfzero_mcts::tictactoe::TicTacToe;
use cfzero_mcts::{Driver, Search, SearchConfig, SearchError, Terminal, UniformEvaluator};
use common::{HashEvaluator, Wide};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Lone searches, one after the other, drawing from one generator as the driver does.
fn lone<G: cfzero_mcts::Game>(
    config: &SearchConfig,
    roots: &[G],
    budgets: &[u32],
    seed: u64,
) -> Vec<cfzero_mcts::SearchResult<G::Move>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut search = Search::new(config.clone());
    roots
        .iter()
        .zip(budgets)
        .map(|(r, &b)| search.run(r, b, &HashEvaluator, &mut rng).unwrap())
        .collect()
}

#[test]
fn driver_matches_lone_searches() {
    let roots: Vec<TicTacToe> = common::tictactoe_positions()
        .into_iter()
        .step_by(37)
        .collect();
    // Per-root budgets, as playout cap randomisation gives: some small, some large.
    let budgets: Vec<u32> = (0..roots.len())
        .map(|i| if i % 4 == 0 { 8 } else { 64 + i as u32 })
        .collect();
    for config in [SearchConfig::default(), SearchConfig::puct()] {
        let expected = lone(&config, &roots, &budgets, 9);
        for cache in [0, 1 << 12] {
            let mut driver = Driver::new(config.clone(), cache);
            let mut rng = ChaCha8Rng::seed_from_u64(9);
            let results = driver
                .run(&roots, &budgets, &HashEvaluator, &mut rng)
                .unwrap();
            assert_eq!(results, expected, "cache {cache}");
            for (result, &budget) in results.iter().zip(&budgets) {
                assert_eq!(result.visits.iter().sum::<u32>(), budget);
            }
            let stats = driver.stats();
            if cache == 0 {
                assert_eq!(stats.cache_hits, 0);
            } else {
                assert!(stats.cache_hits > 0, "{stats:?}");
            }
        }
    }
}

#[test]
fn cache_answers_repeated_positions_and_counts_every_leaf() {
    // Eight copies of one root: with the cache, the evaluator sees each position about once.
    let roots = vec![Wide::new(6, 3); 8];
    let budgets = vec![50; 8];
    let mut driver = Driver::new(SearchConfig::default(), 1 << 12);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let results = driver
        .run(&roots, &budgets, &HashEvaluator, &mut rng)
        .unwrap();
    let stats = driver.stats();
    // Every root evaluation and every non-terminal new node is one evaluated or cached leaf.
    let nonterminal_nodes: u64 =
        results.iter().map(|r| r.nodes as u64).sum::<u64>() - terminal_nodes(&roots, &budgets);
    assert_eq!(
        stats.evaluated + stats.cache_hits,
        nonterminal_nodes,
        "{stats:?} nodes {}",
        results.iter().map(|r| r.nodes).sum::<usize>()
    );
    // Copies in the same batch all miss (nothing is cached until a batch completes), so
    // fewer than 7 in 8 leaves hit; measured: 90 hits of 186 leaves.
    assert!(
        stats.cache_hits * 5 >= (stats.evaluated + stats.cache_hits) * 2,
        "{stats:?}"
    );
    // Both halves were used: at least one batch per half per step.
    assert!(stats.batches >= 2);

    let mut uncached = Driver::new(SearchConfig::default(), 0);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let again = uncached
        .run(&roots, &budgets, &HashEvaluator, &mut rng)
        .unwrap();
    assert_eq!(again, results);
    assert_eq!(
        uncached.stats().evaluated,
        stats.evaluated + stats.cache_hits
    );
}

/// Terminal nodes of the trees of a fresh lone search of each root (same seed sequence).
fn terminal_nodes(roots: &[Wide], budgets: &[u32]) -> u64 {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut search = Search::new(SearchConfig::default());
    let mut count = 0;
    for (root, &budget) in roots.iter().zip(budgets) {
        search.run(root, budget, &HashEvaluator, &mut rng).unwrap();
        count += search
            .tree()
            .nodes
            .iter()
            .filter(|n| matches!(n.kind, cfzero_mcts::tree::NodeKind::Terminal(_)))
            .count() as u64;
    }
    count
}

#[test]
fn driver_reuses_itself_and_reports_finished_roots() {
    let mut driver = Driver::new(SearchConfig::default(), 256);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let roots = [
        TicTacToe::new(),
        TicTacToe::from_board("XX. OO. ...").unwrap(),
    ];
    for _ in 0..3 {
        let results = driver
            .run(&roots, &[32, 32], &UniformEvaluator, &mut rng)
            .unwrap();
        assert_eq!(results[1].best_move, 2);
    }
    let won = TicTacToe::from_board("XXX OO. ...").unwrap();
    let err = driver
        .run(&[roots[0], won], &[8, 8], &UniformEvaluator, &mut rng)
        .unwrap_err();
    assert!(
        matches!(
            err,
            SearchError::TerminalRoot {
                index: 1,
                outcome: Terminal::Loss
            }
        ),
        "{err}"
    );
    let err = driver
        .run(&roots, &[8], &UniformEvaluator, &mut rng)
        .unwrap_err();
    assert!(matches!(
        err,
        SearchError::BudgetCount {
            roots: 2,
            budgets: 1
        }
    ));
}
