//! PUCT selection (AlphaZero style) for analysis and play with large node counts:
//! `argmax_a [Q(a) + cpuct * P(a) * sqrt(sum_b N(b)) / (1 + N(a))]`.
//!
//! Unvisited actions get the first-play-urgency value: the parent's mean value minus
//! `fpu_reduction * sqrt(sum of the priors of visited children)`, so that a node explores
//! less eagerly once its likely moves have been tried.

use crate::config::SearchConfig;
use crate::tree::{NodeId, Tree};

/// Returns the index (into [`Tree::edges`]) of the edge to follow from the expanded `node`.
pub fn select_child<M: Copy>(tree: &Tree<M>, node: NodeId, config: &SearchConfig) -> usize {
    let n = &tree.nodes[node as usize];
    let range = n.edge_range();
    let mut total = 0u32;
    let mut visited_prior = 0.0f32;
    for e in range.clone() {
        let visits = tree.edge_visits(e);
        total += visits;
        if visits > 0 {
            visited_prior += tree.edges[e].prior;
        }
    }
    let fpu = n.mean() - config.fpu_reduction * visited_prior.sqrt();
    // With no visits yet the exploration term would vanish; max(1) lets the priors decide.
    let explore = config.cpuct * (total.max(1) as f32).sqrt();
    let mut best = range.start;
    let mut best_score = f32::NEG_INFINITY;
    for e in range {
        let visits = tree.edge_visits(e);
        let q = tree.edge_q(e).unwrap_or(fpu);
        let score = q + explore * tree.edges[e].prior / (1.0 + visits as f32);
        if score > best_score {
            best_score = score;
            best = e;
        }
    }
    best
}

/// The move PUCT plays: the most visited edge of `node`, ties broken by Q, then by prior.
pub fn best_edge<M: Copy>(tree: &Tree<M>, node: NodeId) -> usize {
    let range = tree.nodes[node as usize].edge_range();
    let key = |e: usize| {
        (
            tree.edge_visits(e),
            tree.edge_q(e).unwrap_or(f32::NEG_INFINITY),
            tree.edges[e].prior,
        )
    };
    let mut best = range.start;
    for e in range {
        let (n, q, p) = key(e);
        let (bn, bq, bp) = key(best);
        if (n, q, p) > (bn, bq, bp) {
            best = e;
        }
    }
    best
}
