//! Sign and perspective: values are for the side to move and negate at every ply.

mod common;

use cfzero_mcts::tictactoe::TicTacToe;
use cfzero_mcts::{Proof, Search, SearchConfig, Terminal, UniformEvaluator};
use common::Chain;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() < 1e-5
}

/// Both searches with the solver off, so that every simulation runs down to the terminal
/// and the running means can be computed by hand.
fn without_solver() -> [SearchConfig; 2] {
    [SearchConfig::default(), SearchConfig::puct()].map(|c| SearchConfig { solver: false, ..c })
}

/// A chain of `length` plies ends in a loss for the side to move there. With the uniform
/// evaluator (value 0, draw 1) and `n` simulations, simulations 1..length-1 expand the
/// inner nodes and the remaining `n - length + 1` reach the terminal, so by hand:
/// Q(root move) = (n - length + 1) * s / n and root value = (n - length + 1) * s / (n + 1),
/// with s = +1 if the root's side made the last move (odd length), else -1.
#[test]
fn terminal_win_is_a_loss_for_the_side_to_move_at_every_depth() {
    let n = 20u32;
    for config in without_solver() {
        for length in 1..=12u8 {
            let root = Chain { ply: 0, length };
            let mut search = Search::new(config.clone());
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let result = search.run(&root, n, &UniformEvaluator, &mut rng).unwrap();
            let s = if length % 2 == 1 { 1.0 } else { -1.0 };
            let decided = (n + 1 - u32::from(length)) as f32;
            assert_eq!(result.visits, vec![n]);
            assert!(
                close(result.best_q, decided * s / n as f32),
                "length {length}: {result:?}"
            );
            assert!(
                close(result.value, decided * s / (n + 1) as f32),
                "length {length}"
            );
            // Draw mass: the root's and the inner nodes' evaluations, none from the terminal.
            let draw = f32::from(length) / (n + 1) as f32;
            assert!(
                close(result.wdl[1], draw),
                "length {length}: {:?}",
                result.wdl
            );
            let q = result.value;
            assert!(
                close(result.wdl[0] - result.wdl[2], q),
                "W - L = Q: {:?}",
                result.wdl
            );
            assert!(close(result.wdl.iter().sum::<f32>(), 1.0));

            // Every node on the chain holds the same number of decided values with the sign
            // of its own side to move.
            let tree = search.tree();
            let mut node = 0usize;
            for depth in 0..=u32::from(length) {
                let expected_sign = if (u32::from(length) - depth) % 2 == 0 {
                    -1.0
                } else {
                    1.0
                };
                let n = &tree.nodes[node];
                assert!(
                    close(n.value_sum as f32, decided * expected_sign),
                    "length {length}, depth {depth}: {}",
                    n.value_sum
                );
                if depth < u32::from(length) {
                    node = tree.edges[n.first_edge as usize].child as usize;
                }
            }
        }
    }
}

/// The same chains with the solver: the terminal proves every node up to the root at
/// once, each for its own side to move, `length - depth` plies from the end; Q and the
/// root's value are then exact, and later simulations stop at the root's proven child.
#[test]
fn proofs_have_the_sign_of_the_side_to_move_at_every_depth() {
    let n = 20u32;
    for config in [SearchConfig::default(), SearchConfig::puct()] {
        for length in 1..=12u8 {
            let root = Chain { ply: 0, length };
            let mut search = Search::new(config.clone());
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let result = search.run(&root, n, &UniformEvaluator, &mut rng).unwrap();
            let s = if length % 2 == 1 { 1.0 } else { -1.0 };
            let outcome = |sign: f32| {
                if sign > 0.0 {
                    Terminal::Win
                } else {
                    Terminal::Loss
                }
            };
            assert_eq!(
                result.proven,
                Some(Proof {
                    outcome: outcome(s),
                    plies: u16::from(length)
                })
            );
            assert_eq!(result.visits, vec![n]);
            assert_eq!((result.best_q, result.value), (s, s), "length {length}");
            let wdl = if s > 0.0 {
                [1.0, 0.0, 0.0]
            } else {
                [0.0, 0.0, 1.0]
            };
            assert_eq!(result.wdl, wdl);

            let tree = search.tree();
            let mut node = 0usize;
            for depth in 0..=u16::from(length) {
                let sign = if (u16::from(length) - depth) % 2 == 0 {
                    -1.0
                } else {
                    1.0
                };
                let n = &tree.nodes[node];
                let plies = u16::from(length) - depth;
                assert_eq!(
                    n.proof,
                    Some(Proof {
                        outcome: outcome(sign),
                        plies
                    }),
                    "length {length}, depth {depth}"
                );
                assert_eq!(n.mean(), sign);
                if depth < u16::from(length) {
                    node = tree.edges[n.first_edge as usize].child as usize;
                }
            }
        }
    }
}

#[test]
fn immediate_win_has_q_one_and_forced_loss_has_value_near_minus_one() {
    let mut search = Search::new(SearchConfig::default());
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    // X to move wins at square 2.
    let win = TicTacToe::from_board("XX. OO. ...").unwrap();
    let result = search.run(&win, 64, &UniformEvaluator, &mut rng).unwrap();
    assert_eq!(result.best_move, 2);
    assert_eq!(result.best_q, 1.0);
    // O to move cannot stop X's fork: every move loses.
    let lost = TicTacToe::from_board("X.X .O. X.O").unwrap();
    let result = search.run(&lost, 400, &UniformEvaluator, &mut rng).unwrap();
    assert!(result.value < -0.8, "{result:?}");
    assert!(result.wdl[2] > 0.8, "{:?}", result.wdl);
}
