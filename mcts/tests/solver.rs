//! Proven values: the propagation rules on hand-built trees, proofs that agree with
//! tic-tac-toe's exact values everywhere, and how proofs steer the search.

mod common;

use std::collections::HashMap;

use cfzero_mcts::solver::{self, MoveClass, Proof};
use cfzero_mcts::tictactoe::TicTacToe;
use cfzero_mcts::tree::{NO_NODE, NodeId, ROOT, Tree};
use cfzero_mcts::{Game, Search, SearchConfig, SearchResult, Terminal, UniformEvaluator};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn proof(outcome: Terminal, plies: u16) -> Option<Proof> {
    Some(Proof { outcome, plies })
}

/// A tree whose root is expanded with `moves` moves (uniform logits, value 0).
fn tree_with_root(moves: u8) -> Tree<u8> {
    let mut tree = Tree::new();
    tree.reset();
    expand(&mut tree, ROOT, moves);
    tree
}

fn expand(tree: &mut Tree<u8>, node: NodeId, moves: u8) {
    let mvs: Vec<u8> = (0..moves).collect();
    tree.expand(node, &mvs, &vec![0.0; mvs.len()], 0.0);
}

/// The index in [`Tree::edges`] of `node`'s edge number `i`.
fn edge(tree: &Tree<u8>, node: NodeId, i: usize) -> usize {
    tree.nodes[node as usize].first_edge as usize + i
}

/// Creates the child behind `node`'s edge `i`, expanded with `moves` moves; `path` (root
/// first, ending at `node`) grows by the child.
fn inner_child(tree: &mut Tree<u8>, path: &mut Vec<NodeId>, i: usize, moves: u8) -> NodeId {
    let node = *path.last().unwrap();
    let child = tree.add_child(edge(tree, node, i));
    expand(tree, child, moves);
    path.push(child);
    child
}

/// Creates a terminal child behind `edge` `i` of the last node of `path` and propagates
/// its proof, as the search does.
fn terminal_child(tree: &mut Tree<u8>, path: &[NodeId], i: usize, outcome: Terminal) -> NodeId {
    let node = *path.last().unwrap();
    let child = tree.add_child(edge(tree, node, i));
    tree.set_terminal(child, outcome);
    let mut full = path.to_vec();
    full.push(child);
    solver::propagate(tree, &full);
    child
}

#[test]
fn terminals_are_proven_in_zero_plies() {
    let mut tree = tree_with_root(2);
    let child = terminal_child(&mut tree, &[ROOT], 0, Terminal::Draw);
    assert_eq!(tree.nodes[child as usize].proof, proof(Terminal::Draw, 0));
    assert_eq!(tree.nodes[child as usize].mean(), 0.0);
}

#[test]
fn one_losing_child_proves_a_win_and_the_root_keeps_the_shortest() {
    // Root edge 0 -> A (one move) -> B (one move) -> mate: B wins in 1, A loses in 2,
    // so the root wins in 3 even though its edge 1 was never tried.
    let mut tree = tree_with_root(2);
    let mut path = vec![ROOT];
    let a = inner_child(&mut tree, &mut path, 0, 1);
    let b = inner_child(&mut tree, &mut path, 0, 1);
    terminal_child(&mut tree, &path, 0, Terminal::Loss);
    assert_eq!(tree.nodes[b as usize].proof, proof(Terminal::Win, 1));
    assert_eq!(tree.nodes[a as usize].proof, proof(Terminal::Loss, 2));
    assert_eq!(tree.nodes[ROOT as usize].proof, proof(Terminal::Win, 3));
    assert_eq!(
        solver::decided_move(&tree, ROOT, true),
        Some(edge(&tree, ROOT, 0))
    );
    // A mate in one at edge 1: the root is entered by every simulation, so its proof is
    // derived again and the shorter win replaces the longer one.
    terminal_child(&mut tree, &[ROOT], 1, Terminal::Loss);
    assert_eq!(tree.nodes[ROOT as usize].proof, proof(Terminal::Win, 1));
    assert_eq!(
        solver::decided_move(&tree, ROOT, true),
        Some(edge(&tree, ROOT, 1))
    );
    // Without the solver nothing is decided by proofs.
    assert_eq!(solver::decided_move(&tree, ROOT, false), None);
}

#[test]
fn a_loss_needs_every_move_refuted_and_takes_the_longest() {
    let mut tree = tree_with_root(2);
    // Edge 0 -> A, which mates at once: A wins in 1.
    let mut path = vec![ROOT];
    let a = inner_child(&mut tree, &mut path, 0, 3);
    terminal_child(&mut tree, &path, 2, Terminal::Loss);
    assert_eq!(tree.nodes[a as usize].proof, proof(Terminal::Win, 1));
    // Edge 1 is untried: the root may still hold.
    assert_eq!(tree.nodes[ROOT as usize].proof, None);
    assert_eq!(solver::decided_move(&tree, ROOT, true), None);
    // Edge 1 -> B -> C -> D, which mates: D wins in 1, C loses in 2, B wins in 3.
    let mut path = vec![ROOT];
    let b = inner_child(&mut tree, &mut path, 1, 1);
    inner_child(&mut tree, &mut path, 0, 1);
    inner_child(&mut tree, &mut path, 0, 1);
    terminal_child(&mut tree, &path, 0, Terminal::Loss);
    assert_eq!(tree.nodes[b as usize].proof, proof(Terminal::Win, 3));
    // Every move loses; the loser takes the longest loss (3 + 1 plies, through B).
    assert_eq!(tree.nodes[ROOT as usize].proof, proof(Terminal::Loss, 4));
    assert_eq!(
        solver::decided_move(&tree, ROOT, true),
        Some(edge(&tree, ROOT, 1))
    );
}

#[test]
fn a_draw_needs_every_move_proven_and_none_winning() {
    let mut tree = tree_with_root(3);
    terminal_child(&mut tree, &[ROOT], 0, Terminal::Draw);
    let root = &tree.nodes[ROOT as usize];
    assert_eq!(root.proof, None, "two moves are untried");
    assert!(root.draw_secured);
    // Edge 1 -> A, which mates: a losing move for the root.
    let mut path = vec![ROOT];
    inner_child(&mut tree, &mut path, 1, 1);
    terminal_child(&mut tree, &path, 0, Terminal::Loss);
    assert_eq!(tree.nodes[ROOT as usize].proof, None, "one move is untried");
    // Edge 2 -> B -> a draw: B is a draw in 1, so the root is a draw in 1 + min(0, 1).
    let mut path = vec![ROOT];
    let b = inner_child(&mut tree, &mut path, 2, 1);
    terminal_child(&mut tree, &path, 0, Terminal::Draw);
    assert_eq!(tree.nodes[b as usize].proof, proof(Terminal::Draw, 1));
    assert_eq!(tree.nodes[ROOT as usize].proof, proof(Terminal::Draw, 1));
    assert_eq!(
        solver::decided_move(&tree, ROOT, true),
        None,
        "draws are the search's call"
    );
}

#[test]
fn propagation_stops_at_the_first_node_whose_status_does_not_change() {
    // Root -> A (two moves). The root's edge 1 gets a proven loss for its child without
    // propagation, so a walk that reached the root would prove it won.
    let mut tree = tree_with_root(2);
    let mut path = vec![ROOT];
    let a = inner_child(&mut tree, &mut path, 0, 2);
    let stale = tree.add_child(edge(&tree, ROOT, 1));
    tree.set_terminal(stale, Terminal::Loss);
    // A draw below A leaves A unproven (its edge 1 is untried): the walk ends at A.
    terminal_child(&mut tree, &path, 0, Terminal::Draw);
    assert_eq!(tree.nodes[a as usize].proof, None);
    assert!(tree.nodes[a as usize].draw_secured);
    assert_eq!(
        tree.nodes[ROOT as usize].proof, None,
        "the walk went past A"
    );
    // A mate below A proves A won; the walk goes on and the root is derived again.
    terminal_child(&mut tree, &path, 1, Terminal::Loss);
    assert_eq!(tree.nodes[a as usize].proof, proof(Terminal::Win, 1));
    assert_eq!(tree.nodes[ROOT as usize].proof, proof(Terminal::Win, 1));
}

#[test]
fn a_proven_node_gets_its_exact_mean_and_its_ancestors_keep_theirs() {
    let mut tree = tree_with_root(2);
    let mut path = vec![ROOT];
    let a = inner_child(&mut tree, &mut path, 0, 2);
    // A's running mean says it is bad for its side to move...
    tree.backup(&path, -0.6, 0.2);
    tree.backup(&path, -0.4, 0.2);
    assert!((tree.edge_q(edge(&tree, ROOT, 0)).unwrap() - 0.5).abs() < 1e-6);
    // ...until A's side to move finds a mate.
    terminal_child(&mut tree, &path, 1, Terminal::Loss);
    let n = &tree.nodes[a as usize];
    assert_eq!(n.proof, proof(Terminal::Win, 1));
    assert_eq!((n.visits, n.value_sum, n.draw_sum), (2, 2.0, 0.0));
    assert_eq!(tree.edge_q(edge(&tree, ROOT, 0)), Some(-1.0));
    // The root (unproven: its edge 1 is untried) keeps its history; the proof reaches it
    // through later visits.
    let root = &tree.nodes[ROOT as usize];
    assert_eq!(root.proof, None);
    assert!((root.value_sum - 1.0).abs() < 1e-6, "{}", root.value_sum);
    assert!((root.draw_sum - 0.4).abs() < 1e-6, "{}", root.draw_sum);
}

#[test]
fn a_secured_draw_raises_the_value_without_biasing_the_means() {
    let mut tree = tree_with_root(2);
    terminal_child(&mut tree, &[ROOT], 0, Terminal::Draw);
    let mut path = vec![ROOT];
    let a = inner_child(&mut tree, &mut path, 1, 1);
    // 0.5 for A's side to move is -0.5 for the root, which would rather take its draw.
    tree.backup(&path, 0.5, 0.25);
    let (root, a) = (&tree.nodes[ROOT as usize], &tree.nodes[a as usize]);
    assert!(root.draw_secured);
    // The sums hold what was backed up (no flooring, so no upward bias above)...
    assert_eq!((a.value_sum, a.draw_sum), (0.5, 0.25));
    assert_eq!((root.value_sum, root.draw_sum), (-0.5, 0.25));
    assert_eq!(root.mean(), -0.5);
    // ...and the value the root's parent and the search result read is the draw it holds.
    assert_eq!(root.value(), 0.0);
    // A line better than the draw counts in full: mean (-0.5 + 0.5) / 2 = 0, then
    // (-0.5 + 0.5 + 0.9) / 3 = 0.3.
    tree.backup(&path, -0.5, 0.25);
    tree.backup(&path, -0.9, 0.0);
    let root = &tree.nodes[ROOT as usize];
    assert!((root.value() - 0.3).abs() < 1e-6, "{}", root.value());
    // The expectation of max(v, 0) over these backups would be (0 + 0.5 + 0.9) / 3:
    // flooring every backup overstates the mean.
    assert!(root.value() < (0.5 + 0.9) / 3.0);
}

#[test]
fn proofs_read_as_uci_mate_scores_and_classes() {
    assert_eq!(proof(Terminal::Win, 1).unwrap().mate_moves(), Some(1));
    assert_eq!(proof(Terminal::Win, 3).unwrap().mate_moves(), Some(2));
    assert_eq!(proof(Terminal::Loss, 2).unwrap().mate_moves(), Some(-1));
    assert_eq!(proof(Terminal::Loss, 4).unwrap().mate_moves(), Some(-2));
    assert_eq!(proof(Terminal::Draw, 9).unwrap().mate_moves(), None);
    // A child's loss is the mover's win.
    assert_eq!(MoveClass::of(proof(Terminal::Loss, 0)), MoveClass::Winning);
    assert_eq!(MoveClass::of(proof(Terminal::Win, 1)), MoveClass::Losing);
    assert_eq!(MoveClass::of(None), MoveClass::Open);
    assert!(MoveClass::Losing < MoveClass::Drawn && MoveClass::Drawn < MoveClass::Open);
    assert!(MoveClass::Open < MoveClass::Winning);
    // Below the root a proven draw yields to unproven moves; at the root it competes.
    assert_eq!(MoveClass::Drawn.for_selection(ROOT), MoveClass::Open);
    assert_eq!(MoveClass::Drawn.for_selection(ROOT + 1), MoveClass::Drawn);
}

fn configs() -> [SearchConfig; 2] {
    [SearchConfig::default(), SearchConfig::puct()]
}

fn run(config: &SearchConfig, state: &TicTacToe, budget: u32, seed: u64) -> SearchResult<u8> {
    let mut search = Search::new(config.clone());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    search
        .run(state, budget, &UniformEvaluator, &mut rng)
        .unwrap()
}

#[test]
fn a_win_in_one_proves_the_root_won_in_one_ply() {
    for config in configs() {
        // X to move completes the top row at square 2.
        let state = TicTacToe::from_board("XX. OO. ...").unwrap();
        let result = run(&config, &state, 64, 1);
        assert_eq!(result.proven, proof(Terminal::Win, 1), "{config:?}");
        assert_eq!(result.best_move, 2);
        assert_eq!(
            (result.value, result.wdl, result.best_q),
            (1.0, [1.0, 0.0, 0.0], 1.0)
        );
    }
}

#[test]
fn when_every_move_loses_the_root_is_proven_lost() {
    for config in configs() {
        // O to move cannot stop both threats of X's fork: X mates on the next move.
        let state = TicTacToe::from_board("X.X .O. X.O").unwrap();
        let result = run(&config, &state, 400, 2);
        assert_eq!(result.proven, proof(Terminal::Loss, 2), "{config:?}");
        assert_eq!((result.value, result.wdl), (-1.0, [0.0, 0.0, 1.0]));
        assert!(result.q.iter().all(|&q| q == -1.0), "{:?}", result.q);
        assert!((result.policy.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        assert!(
            result.policy.iter().all(|&p| p > 0.0),
            "{:?}",
            result.policy
        );
    }
}

/// The empty board is a draw; proving it takes every line refuted or drawn. Measured
/// with these seeds: PUCT proves it with 100k simulations (52k nodes), Gumbel with 400k
/// (300k before backups through a secured draw stopped being floored at the draw: the
/// means above such nodes are now plain averages, which explore a little longer).
#[test]
fn the_empty_board_is_proven_a_draw() {
    let gumbel = SearchConfig {
        gumbel_m: 256,
        ..SearchConfig::default()
    };
    for (config, budget) in [(SearchConfig::puct(), 100_000), (gumbel, 400_000)] {
        let result = run(&config, &TicTacToe::new(), budget, 1);
        assert_eq!(result.proven, proof(Terminal::Draw, 9), "{config:?}");
        assert_eq!((result.value, result.wdl), (0.0, [0.0, 1.0, 0.0]));
        assert_eq!(result.visits.iter().sum::<u32>(), budget);
        assert!((result.policy.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        assert!(
            result.policy.iter().all(|&p| p > 0.0),
            "{:?}",
            result.policy
        );
    }
}

/// Exact value and distance of every tic-tac-toe position for its side to move: the
/// winner takes the shortest win, the loser the longest loss.
struct Oracle(HashMap<TicTacToe, (i8, u16)>);

impl Oracle {
    fn solve(&mut self, state: TicTacToe) -> (i8, u16) {
        if let Some(&known) = self.0.get(&state) {
            return known;
        }
        let mut moves = Vec::new();
        state.legal_moves(&mut moves);
        let answer = match state.terminal(&moves) {
            Some(t) => (t.value() as i8, 0),
            None => moves
                .iter()
                .map(|&mv| {
                    let mut next = state;
                    next.play(mv);
                    let (value, plies) = self.solve(next);
                    (-value, plies + 1)
                })
                .max_by_key(|&(value, plies)| {
                    (
                        value,
                        if value > 0 {
                            -i32::from(plies)
                        } else {
                            i32::from(plies)
                        },
                    )
                })
                .unwrap(),
        };
        self.0.insert(state, answer);
        answer
    }
}

/// Checks every proven node of `tree` (rooted at `state`) against the oracle.
fn check_proofs(tree: &Tree<u8>, node: NodeId, state: TicTacToe, oracle: &mut Oracle) -> usize {
    let n = &tree.nodes[node as usize];
    let mut checked = 0;
    if let Some(p) = n.proof {
        let (value, plies) = oracle.solve(state);
        assert_eq!(p.outcome.value() as i8, value, "{state:?}: {p:?}");
        match p.outcome {
            // Along the proof found; a shorter win may be unseen, so at least the distance.
            Terminal::Win | Terminal::Loss => assert!(p.plies >= plies, "{state:?}: {p:?}"),
            Terminal::Draw => {}
        }
        checked += 1;
    }
    for e in n.edge_range() {
        let child = tree.edges[e].child;
        if child != NO_NODE {
            let mut next = state;
            next.play(tree.edges[e].mv);
            checked += check_proofs(tree, child, next, oracle);
        }
    }
    checked
}

#[test]
fn every_proof_on_every_tic_tac_toe_position_is_right() {
    let positions = common::tictactoe_positions();
    let mut oracle = Oracle(HashMap::new());
    for config in configs() {
        let mut search = Search::new(config.clone());
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let (mut proven_roots, mut proven_nodes) = (0, 0);
        for &state in &positions {
            let result = search
                .run(&state, 200, &UniformEvaluator, &mut rng)
                .unwrap();
            let tree = search.tree();
            proven_nodes += check_proofs(tree, ROOT, state, &mut oracle);
            proven_roots += usize::from(result.proven.is_some());
            // Never a proven loss while some move is not one; the shortest proven win.
            let classes: Vec<_> = tree.nodes[ROOT as usize]
                .edge_range()
                .map(|e| (MoveClass::of(tree.edge_proof(e)), tree.edge_proof(e)))
                .collect();
            let best = result
                .moves
                .iter()
                .position(|&m| m == result.best_move)
                .unwrap();
            if classes.iter().any(|(c, _)| *c != MoveClass::Losing) {
                assert_ne!(classes[best].0, MoveClass::Losing, "{state:?}");
            }
            let shortest = classes
                .iter()
                .filter(|(c, _)| *c == MoveClass::Winning)
                .map(|(_, p)| p.unwrap().plies)
                .min();
            if let Some(plies) = shortest {
                assert_eq!(classes[best].0, MoveClass::Winning, "{state:?}");
                assert_eq!(classes[best].1.unwrap().plies, plies, "{state:?}");
                assert_eq!(result.proven, proof(Terminal::Win, plies + 1));
            }
            assert_eq!(result.visits.iter().sum::<u32>(), 200, "{state:?}");
        }
        // Measured: Gumbel proves 4306 of the 4520 roots (73101 proven nodes checked),
        // PUCT 4332 (51423).
        assert!(proven_roots > 4200, "{proven_roots} proven roots");
        assert!(proven_nodes > 40_000, "{proven_nodes} proven nodes");
    }
}

#[test]
fn improved_policy_stays_a_distribution_and_the_schedule_adds_up_with_proofs() {
    // Positions decided within a few plies, so that root moves are proven mid-schedule.
    let boards = [
        "XX. OO. ...",
        "X.X .O. X.O",
        "XO. .X. ..O",
        "X.. .O. ..X",
        "XOX ... ...",
    ];
    for board in boards {
        let state = TicTacToe::from_board(board).unwrap();
        for budget in [1, 7, 16, 50, 200] {
            let result = run(&SearchConfig::default(), &state, budget, 4);
            assert_eq!(
                result.visits.iter().sum::<u32>(),
                budget,
                "{board} {budget}"
            );
            assert_eq!(result.simulations, budget);
            assert!((result.policy.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            assert!(
                result.policy.iter().all(|&p| p > 0.0),
                "{:?}",
                result.policy
            );
        }
    }
}
