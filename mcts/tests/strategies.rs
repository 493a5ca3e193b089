//! Search variants plug in as strategies: a root that visits its moves in turn, written
//! here outside the crate, runs with both interior selections, batched or not.

mod common;

use cfzero_mcts::gumbel::GumbelInterior;
use cfzero_mcts::puct::PuctInterior;
use cfzero_mcts::strategy::{InteriorSelection, RootSelection};
use cfzero_mcts::tree::{ROOT, Tree};
use cfzero_mcts::{Search, SearchConfig, Step};
use common::{HashEvaluator, Wide};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Visits the root moves in turn and plays the first move; reports uniform visits.
#[derive(Debug, Default)]
struct RoundRobin {
    next: usize,
    given_back: Option<usize>,
}

impl<M: Copy> RootSelection<M> for RoundRobin {
    fn draw_noise(&mut self, _: usize, _: &SearchConfig, _: &mut dyn rand::RngCore) {
        self.next = 0;
        self.given_back = None;
    }

    fn begin(&mut self, _: &mut Tree<M>, _: u32, _: &SearchConfig) {}

    fn waits_for_values(&self) -> bool {
        false
    }

    fn next_edge(&mut self, tree: &Tree<M>, _: &SearchConfig) -> usize {
        if let Some(edge) = self.given_back.take() {
            return edge;
        }
        let range = tree.nodes[ROOT as usize].edge_range();
        let edge = range.start + self.next % range.len();
        self.next += 1;
        edge
    }

    fn give_back(&mut self, edge: usize) {
        self.given_back = Some(edge);
    }

    fn finish(
        &mut self,
        tree: &Tree<M>,
        _: &SearchConfig,
        _: &mut Vec<f32>,
        policy: &mut Vec<f32>,
    ) -> usize {
        let range = tree.nodes[ROOT as usize].edge_range();
        policy.clear();
        policy.resize(range.len(), 1.0 / range.len() as f32);
        range.start
    }
}

/// Makes a fresh interior selection.
type MakeInterior = fn() -> Box<dyn InteriorSelection<u8>>;

#[test]
fn a_root_strategy_from_outside_runs_with_either_interior_and_any_batch() {
    let root = Wide::new(5, 30);
    let interiors: [MakeInterior; 2] = [
        || Box::new(GumbelInterior::default()),
        || Box::new(PuctInterior),
    ];
    for interior in interiors {
        for batch in [1, 3, 8] {
            let mut search = Search::with_strategies(
                SearchConfig::default(),
                Box::new(RoundRobin::default()),
                interior(),
            );
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            search.start(&root, 100, &mut rng).unwrap();
            let mut evaluations = cfzero_mcts::Evaluations::default();
            let mut batch_leaves = cfzero_mcts::LeafBatch::new();
            while search.select_leaves(batch) == Step::Evaluate {
                batch_leaves.clear();
                for i in 0..search.leaf_count() {
                    batch_leaves.push(search.leaf_state_at(i), search.leaf_moves_at(i));
                }
                use cfzero_mcts::Evaluator;
                HashEvaluator
                    .evaluate(&batch_leaves, &mut evaluations)
                    .unwrap();
                for i in 0..search.leaf_count() {
                    let logits = &evaluations.logits[batch_leaves.move_range(i)];
                    search.apply_leaf_evaluation(
                        i,
                        logits,
                        evaluations.values[i],
                        evaluations.wdl[i],
                    );
                }
            }
            let result = search.result();
            // Five moves in turn, 100 simulations: 20 each, whatever the batch.
            assert_eq!(result.visits, vec![20; 5], "batch {batch}");
            assert_eq!(result.best_move, result.moves[0]);
            assert_eq!(result.policy, vec![0.2; 5]);
        }
    }
}
