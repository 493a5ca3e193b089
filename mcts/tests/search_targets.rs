//! What a search hands to training: the value of best play (`policy_q`, `best_q`) rather
//! than the root's mean, proven moves with their exact values in the completed Q and the
//! improved policy, and a mate that is always among the considered moves.

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_mcts::tictactoe::TicTacToe;
use cfzero_mcts::tree::{ROOT, Tree};
use cfzero_mcts::{Search, SearchConfig, Terminal, UniformEvaluator};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// White mates on the back rank with Ra8; 18 moves are legal.
const MATE_IN_ONE: &str = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1";

#[test]
fn a_mate_is_considered_and_carries_its_exact_value_even_with_one_considered_move() {
    // With m = 1 the search considers one move, chosen by noise among equal logits: almost
    // never the mate, before a mate found at the root was always considered.
    let config = SearchConfig {
        gumbel_m: 1,
        ..SearchConfig::default()
    };
    let state = ChessState::from_fen(MATE_IN_ONE, HistoryFill::No).unwrap();
    for seed in 0..20 {
        let mut search = Search::new(config.clone());
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let result = search.run(&state, 8, &UniformEvaluator, &mut rng).unwrap();
        let mate = result
            .moves
            .iter()
            .position(|m| m.to_string() == "Ra1-a8")
            .unwrap_or_else(|| panic!("{:?}", result.moves));
        assert_eq!(result.best_move, result.moves[mate], "seed {seed}");
        assert_eq!(result.q[mate], 1.0, "seed {seed}: {:?}", result.q);
        // Considered, so visited: all eight simulations go to it.
        assert_eq!(result.visits[mate], 8, "seed {seed}: {:?}", result.visits);
        assert_eq!(result.move_outcomes[mate], Some(Terminal::Win));
        let top = (0..result.policy.len())
            .max_by(|&a, &b| result.policy[a].total_cmp(&result.policy[b]))
            .unwrap();
        assert_eq!(top, mate, "seed {seed}: {:?}", result.policy);
        // The root is proven won: the value of best play is exact.
        assert_eq!(
            (result.policy_q, result.best_q, result.value),
            (1.0, 1.0, 1.0)
        );
        // The policy moved from an even prior over 18 moves to (almost) the mate alone: a
        // surprise close to ln 18, the most there is.
        assert!(
            result.prior_kl > 2.0 && result.prior_kl <= 18f32.ln() + 1e-4,
            "seed {seed}: {}",
            result.prior_kl
        );
    }
}

#[test]
fn a_search_that_finds_nothing_new_is_not_surprised() {
    // Every value equal: the improved policy is the prior, and so no surprise.
    let state = ChessState::new();
    let mut search = Search::new(SearchConfig::default());
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let result = search.run(&state, 32, &UniformEvaluator, &mut rng).unwrap();
    assert!(result.prior_kl.abs() < 1e-5, "{}", result.prior_kl);
}

#[test]
fn a_proven_child_has_its_exact_q_before_any_visit() {
    let mut tree: Tree<u8> = Tree::new();
    tree.reset();
    tree.expand(ROOT, &[0, 1, 2], &[0.0; 3], 0.3);
    // Edge 1's child is a terminal loss for its mover (the root mates), never visited.
    let child = tree.add_child(1);
    tree.set_terminal(child, Terminal::Loss);
    assert_eq!(tree.nodes[child as usize].visits, 0);
    assert_eq!(tree.edge_q(1), Some(1.0));
    // Unproven, unvisited edges still have no Q of their own (completed Q gives v_mix).
    assert_eq!(tree.edge_q(0), None);
    assert_eq!(
        cfzero_mcts::qtransform::v_mix(&tree, ROOT),
        0.3,
        "no visited child: the network value"
    );
}

#[test]
fn the_value_of_best_play_is_not_dragged_down_by_single_visits() {
    // O to move must block at 2 (every other move lets X complete the top row). With all
    // seven moves considered, sequential halving visits each of them, and the six losing
    // ones make the root's mean much worse than the value of the move the search plays.
    let state = TicTacToe::from_board("XX. O.. ...").unwrap();
    let config = SearchConfig {
        gumbel_m: 16,
        ..SearchConfig::default()
    };
    let mut search = Search::new(config);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let result = search.run(&state, 64, &UniformEvaluator, &mut rng).unwrap();
    assert_eq!(result.best_move, 2);
    let expected: f32 = result
        .policy
        .iter()
        .zip(&result.q)
        .map(|(p, q)| p * q)
        .sum();
    assert!((result.policy_q - expected).abs() < 1e-5);
    assert!(
        result.policy_q > result.value + 0.2 && result.best_q > result.value + 0.2,
        "policy_q {} best_q {} root mean {}",
        result.policy_q,
        result.best_q,
        result.value
    );
}
