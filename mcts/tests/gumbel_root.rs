//! The Gumbel root: the sequential halving schedule as it lands in the tree, pi', the
//! final move rule and reproducibility.

mod common;

use cfzero_mcts::tictactoe::TicTacToe;
use cfzero_mcts::{QNormalization, Search, SearchConfig, UniformEvaluator};
use common::{HashEvaluator, Wide};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Root visits of a Gumbel search of `n` simulations over 20 root moves, sorted high to low.
fn sorted_root_visits(n: u32, seed: u64) -> Vec<u32> {
    let mut search = Search::new(SearchConfig::default());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let result = search
        .run(&Wide::new(20, 4), n, &UniformEvaluator, &mut rng)
        .unwrap();
    assert_eq!(result.visits.iter().sum::<u32>(), n, "root visits sum to n");
    assert_eq!(result.simulations, n);
    let mut visits = result.visits;
    visits.sort_unstable_by(|a, b| b.cmp(a));
    visits
}

/// Per-action totals of the schedule: `(count, visits)` groups, then zeros.
fn expected(groups: &[(usize, u32)]) -> Vec<u32> {
    let mut out: Vec<u32> = groups
        .iter()
        .flat_map(|&(k, v)| std::iter::repeat_n(v, k))
        .collect();
    out.resize(20, 0);
    out
}

#[test]
fn root_visits_follow_the_schedule_for_m16() {
    for seed in 0..3 {
        // n = 8: m = 8, one phase of 8 x 1.
        assert_eq!(sorted_root_visits(8, seed), expected(&[(8, 1)]));
        // n = 32: 16x1, 8x1, 4x2 -> 4 actions with 1 + 1 + 2, 4 with 2, 8 with 1.
        assert_eq!(
            sorted_root_visits(32, seed),
            expected(&[(4, 4), (4, 2), (8, 1)])
        );
        // n = 64: 16x1, 8x2, 4x4, 2x8.
        assert_eq!(
            sorted_root_visits(64, seed),
            expected(&[(2, 15), (2, 7), (4, 3), (8, 1)])
        );
        // n = 200: 16x3, 8x6, 4x12, 2x25 + 6 leftover (3 each).
        assert_eq!(
            sorted_root_visits(200, seed),
            expected(&[(2, 49), (2, 21), (4, 9), (8, 3)])
        );
        // n = 800: 16x12, 8x25, 4x50, 2x100 + 8 leftover (4 each).
        assert_eq!(
            sorted_root_visits(800, seed),
            expected(&[(2, 191), (2, 87), (4, 37), (8, 12)])
        );
    }
}

#[test]
fn root_visits_sum_to_the_budget_for_any_budget() {
    for n in [0, 1, 2, 3, 5, 7, 13, 16, 17, 20, 21, 33, 99, 250] {
        let visits = sorted_root_visits(n, 7);
        assert_eq!(visits.iter().sum::<u32>(), n);
    }
}

#[test]
fn improved_policy_is_a_distribution_positive_on_every_legal_move() {
    for normalization in [QNormalization::MinMax, QNormalization::Fixed] {
        let config = SearchConfig {
            q_normalization: normalization,
            ..SearchConfig::default()
        };
        let mut search = Search::new(config.clone());
        let mut ttt = Search::new(config);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for n in [0, 1, 16, 100] {
            let result = search
                .run(&Wide::new(30, 3), n, &HashEvaluator, &mut rng)
                .unwrap();
            assert_eq!(result.policy.len(), 30);
            assert!((result.policy.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            assert!(
                result.policy.iter().all(|&p| p > 0.0),
                "{:?}",
                result.policy
            );
            let root = TicTacToe::from_board("X.. .O. ...").unwrap();
            let result = ttt.run(&root, n, &HashEvaluator, &mut rng).unwrap();
            assert_eq!(result.policy.len(), 7);
            assert!((result.policy.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            assert!(
                result.policy.iter().all(|&p| p > 0.0),
                "{:?}",
                result.policy
            );
        }
    }
}

#[test]
fn final_move_is_among_the_most_visited() {
    let mut search = Search::new(SearchConfig::default());
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for n in [1, 5, 40, 201] {
        let result = search
            .run(&Wide::new(20, 4), n, &HashEvaluator, &mut rng)
            .unwrap();
        let best = result
            .moves
            .iter()
            .position(|&m| m == result.best_move)
            .unwrap();
        assert_eq!(result.visits[best], *result.visits.iter().max().unwrap());
    }
}

#[test]
fn same_seed_gives_the_same_result() {
    for config in [
        SearchConfig::default(),
        SearchConfig {
            dirichlet_epsilon: 0.25,
            ..SearchConfig::puct()
        },
    ] {
        let run = |seed: u64| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let a = Search::new(config.clone())
                .run(&Wide::new(20, 5), 300, &HashEvaluator, &mut rng)
                .unwrap();
            let b = Search::new(config.clone())
                .run(&TicTacToe::new(), 300, &HashEvaluator, &mut rng)
                .unwrap();
            (a, b)
        };
        assert_eq!(run(11), run(11));
    }
    // The noise matters: different seeds pick different considered sets at uniform priors.
    let differs =
        (0..8).any(|seed| sorted_visits_by_move(seed) != sorted_visits_by_move(seed + 100));
    assert!(differs);
}

fn sorted_visits_by_move(seed: u64) -> Vec<u32> {
    let mut search = Search::new(SearchConfig::default());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    search
        .run(&Wide::new(20, 3), 32, &UniformEvaluator, &mut rng)
        .unwrap()
        .visits
}
