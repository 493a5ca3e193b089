//! One search with many leaves per batch ([`Driver::search`] with
//! [`SearchConfig::batch`]): the budget is spent exactly, nothing stays in flight,
//! one leaf per batch is the sequential search, limits stop it, and it still plays
//! tic-tac-toe perfectly.

mod common;

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use cfzero_mcts::tictactoe::{TicTacToe, solve};
use cfzero_mcts::{Driver, Game, Limits, Search, SearchConfig, UniformEvaluator};
use common::{HashEvaluator, Wide};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn limits(simulations: u32) -> Limits<'static> {
    Limits {
        simulations,
        ..Limits::default()
    }
}

#[test]
fn one_leaf_per_batch_is_the_sequential_search() {
    let roots: Vec<TicTacToe> = common::tictactoe_positions()
        .into_iter()
        .step_by(97)
        .collect();
    for config in [SearchConfig::default(), SearchConfig::puct()] {
        let config = SearchConfig { batch: 1, ..config };
        let mut lone = Search::new(config.clone());
        let mut driver = Driver::new(config.clone(), 0);
        let (mut a, mut b) = (ChaCha8Rng::seed_from_u64(3), ChaCha8Rng::seed_from_u64(3));
        for root in &roots {
            let expected = lone.run(root, 90, &HashEvaluator, &mut a).unwrap();
            let got = driver
                .search(root, &limits(90), &HashEvaluator, &mut b, |_| {})
                .unwrap();
            assert_eq!(got, expected, "{config:?}");
        }
    }
}

#[test]
fn batches_spend_the_budget_exactly_and_leave_nothing_in_flight() {
    let root = Wide::new(12, 40);
    for config in [SearchConfig::default(), SearchConfig::puct()] {
        for leaves in [2, 7, 32, 256] {
            for budget in [1, 15, 64, 300] {
                let config = SearchConfig {
                    batch: leaves,
                    ..config.clone()
                };
                let mut driver = Driver::new(config.clone(), 1 << 10);
                let mut rng = ChaCha8Rng::seed_from_u64(1);
                let mut batches = 0;
                let mut in_flight_seen = 0;
                let result = driver
                    .search(&root, &limits(budget), &HashEvaluator, &mut rng, |search| {
                        batches += 1;
                        in_flight_seen += search
                            .tree()
                            .nodes
                            .iter()
                            .map(|n| u32::from(n.in_flight))
                            .sum::<u32>();
                    })
                    .unwrap();
                let what = format!("{:?} leaves {leaves} budget {budget}", config.mode);
                assert_eq!(result.simulations, budget, "{what}");
                assert_eq!(result.visits.iter().sum::<u32>(), budget, "{what}");
                assert_eq!(
                    in_flight_seen, 0,
                    "{what}: the callback sees answered batches"
                );
                // The root alone, then batches: far fewer than one per simulation once the
                // batches are allowed to be large.
                assert!(batches <= budget as usize + 1, "{what}: {batches} batches");
                if leaves >= 32 && budget == 300 {
                    assert!(batches < 100, "{what}: {batches} batches");
                }
                let stats = driver.stats();
                assert_eq!(
                    stats.evaluated + stats.cache_hits,
                    u64::from(budget) + 1,
                    "{what}: every simulation ends at a new leaf here (no terminals)"
                );
            }
        }
    }
}

#[test]
fn batched_search_plays_tic_tac_toe_perfectly() {
    // The same strength test as the sequential search (tests/tictactoe_optimal.rs), with
    // 16 leaves per batch: the in-flight visits must not send the search astray.
    let config = SearchConfig {
        gumbel_scale: 0.0,
        ..SearchConfig::default()
    };
    for config in [config, SearchConfig::puct()] {
        let config = SearchConfig {
            batch: 16,
            ..config
        };
        let mut driver = Driver::new(config.clone(), 1 << 12);
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut wrong = Vec::new();
        for state in common::tictactoe_positions() {
            let result = driver
                .search(&state, &limits(3200), &UniformEvaluator, &mut rng, |_| {})
                .unwrap();
            let mut next = state;
            next.play(result.best_move);
            if -solve(&next) != solve(&state) {
                wrong.push((state, result.best_move));
            }
        }
        assert!(
            wrong.is_empty(),
            "{:?}: {} mistakes, e.g. {:?}",
            config.mode,
            wrong.len(),
            &wrong[..wrong.len().min(3)]
        );
    }
}

#[test]
fn stop_and_deadline_end_the_search_after_the_root() {
    let root = Wide::new(8, 5);
    let stop = AtomicBool::new(true);
    let past = Instant::now();
    for limits in [
        Limits {
            simulations: 500,
            stop: Some(&stop),
            ..Limits::default()
        },
        Limits {
            simulations: 500,
            deadline: Some(past),
            ..Limits::default()
        },
    ] {
        let config = SearchConfig {
            batch: 8,
            ..SearchConfig::default()
        };
        let mut driver = Driver::new(config, 0);
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut calls = 0;
        let result = driver
            .search(&root, &limits, &HashEvaluator, &mut rng, |_| calls += 1)
            .unwrap();
        // The root was evaluated (there is a move), nothing more.
        assert_eq!(result.simulations, 0);
        assert_eq!(calls, 1);
        assert_eq!(result.moves.len(), 8);
        assert!(result.moves.contains(&result.best_move));
    }
}

#[test]
fn play_considers_every_move_when_the_budget_allows() {
    // 12 moves, 4 phases: 48 simulations give each a visit per phase.
    let root = Wide::new(12, 40);
    let play = SearchConfig {
        gumbel_m: 4,
        ..SearchConfig::default()
    }
    .for_play();
    assert_eq!(play.gumbel_scale, 0.0);
    for (budget, visited) in [(48, 12), (47, 4), (400, 12)] {
        let mut driver = Driver::new(play.clone(), 0);
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let result = driver
            .search(&root, &limits(budget), &HashEvaluator, &mut rng, |_| {})
            .unwrap();
        let seen = result.visits.iter().filter(|&&v| v > 0).count();
        assert_eq!(seen, visited, "budget {budget}");
    }
}

#[test]
fn many_trees_with_many_leaves_each_spend_their_budgets() {
    let roots: Vec<TicTacToe> = common::tictactoe_positions()
        .into_iter()
        .step_by(41)
        .collect();
    let budgets: Vec<u32> = (0..roots.len()).map(|i| 8 + (i as u32 * 7) % 90).collect();
    let mut driver = Driver::new(SearchConfig::default(), 1 << 12).with_leaves_per_tree(4);
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let results = driver
        .run(&roots, &budgets, &HashEvaluator, &mut rng)
        .unwrap();
    for (result, &budget) in results.iter().zip(&budgets) {
        assert_eq!(result.visits.iter().sum::<u32>(), budget);
        assert_eq!(result.simulations, budget);
    }
    // Fewer batches than the sequential driver needs for the same searches.
    let mut sequential = Driver::new(SearchConfig::default(), 1 << 12);
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    sequential
        .run(&roots, &budgets, &HashEvaluator, &mut rng)
        .unwrap();
    assert!(driver.stats().batches < sequential.stats().batches);
}

#[test]
fn batches_keep_the_sequential_halving_schedule() {
    // Which moves survive a phase depends on the values, which batching changes a little;
    // how many visits each survivor gets must not change: the sorted visit counts of the
    // root are those of the sequential search.
    let root = Wide::new(20, 40);
    for budget in [16, 50, 200, 801] {
        let counts = |batch: u32| {
            let config = SearchConfig {
                batch,
                ..SearchConfig::default()
            };
            let mut driver = Driver::new(config, 0);
            let mut rng = ChaCha8Rng::seed_from_u64(8);
            let result = driver
                .search(&root, &limits(budget), &HashEvaluator, &mut rng, |_| {})
                .unwrap();
            let mut visits = result.visits.clone();
            visits.sort_unstable();
            visits
        };
        let sequential = counts(1);
        for batch in [4, 16, 64] {
            assert_eq!(counts(batch), sequential, "budget {budget} batch {batch}");
        }
    }
}
