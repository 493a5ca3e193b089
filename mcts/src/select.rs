//! Deterministic selection below the root of a Gumbel search:
//! `argmax_a [pi'(a) - N(a) / (1 + sum_b N(b))]`, with `pi' = softmax(logits + sigma(completedQ))`.
//!
//! It drives the visit distribution towards pi' without noise: the action whose share of
//! visits lags furthest behind its improved policy is visited next. With the solver on,
//! proofs come first ([`solver::select_by_class`]): a proven win would be taken (the node
//! is then proven itself, so the search never asks), proven draws are entered only when no
//! unproven move is left, and proven losses only if every move is one.

use crate::config::SearchConfig;
use crate::qtransform::{improved_policy, sigma_completed_q};
use crate::solver;
use crate::tree::{Edge, NodeId, Tree};

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
    let edges = &tree.edges[range.clone()];
    let mut total = 0u32;
    let mut any_proven = false;
    for edge in edges {
        if let Some(child) = tree.child_of(edge) {
            total += child.selection_visits();
            any_proven |= child.proof.is_some();
        }
    }
    let denominator = 1.0 + total as f32;
    // Simulations in flight count as visits: the next leaf of a batch goes where the
    // visits lag furthest behind pi' once those already on their way are counted.
    let visits = |edge: &Edge<M>| tree.child_of(edge).map_or(0, |c| c.selection_visits());
    let best = solver::select(tree, node, edges, any_proven && config.solver, |i, edge| {
        policy[i] - visits(edge) as f32 / denominator
    });
    range.start + best
}
