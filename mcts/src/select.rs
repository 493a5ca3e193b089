//! Deterministic selection below the root of a Gumbel search:
//! `argmax_a [pi'(a) - N(a) / (1 + sum_b N(b))]`, with `pi' = softmax(logits + sigma(completedQ))`.
//!
//! It drives the visit distribution towards pi' without noise: the action whose share of
//! visits lags furthest behind its improved policy is visited next.

use crate::config::SearchConfig;
use crate::qtransform::{improved_policy, sigma_completed_q};
use crate::tree::{NodeId, Tree};

/// Returns the index (into [`Tree::edges`]) of the edge to follow from the expanded `node`.
/// `sigma` and `policy` are scratch buffers.
pub fn select_child<M: Copy>(
    tree: &Tree<M>,
    node: NodeId,
    config: &SearchConfig,
    sigma: &mut Vec<f32>,
    policy: &mut Vec<f32>,
) -> usize {
    let range = tree.nodes[node as usize].edge_range();
    sigma_completed_q(tree, node, config, sigma);
    improved_policy(
        tree.edges[range.clone()].iter().map(|e| e.logit),
        sigma,
        policy,
    );
    let total: u32 = range.clone().map(|e| tree.edge_visits(e)).sum();
    let denominator = 1.0 + total as f32;
    let mut best = range.start;
    let mut best_score = f32::NEG_INFINITY;
    for (i, e) in range.enumerate() {
        let score = policy[i] - tree.edge_visits(e) as f32 / denominator;
        // Strictly greater: ties go to the first move, so selection is reproducible.
        if score > best_score {
            best_score = score;
            best = e;
        }
    }
    best
}
