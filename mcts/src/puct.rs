//! PUCT selection (AlphaZero style) for analysis and play with large node counts:
//! `argmax_a [Q(a) + cpuct * P(a) * sqrt(sum_b N(b)) / (1 + N(a))]`.
//!
//! Unvisited actions get the first-play-urgency value: the parent's mean value minus
//! `fpu_reduction * sqrt(sum of the priors of visited children)`, so that a node explores
//! less eagerly once its likely moves have been tried.
//!
//! With the solver on, proofs come first ([`solver::select_by_class`]): a proven win is
//! taken (the shortest), proven draws are entered below the root only when no unproven
//! move is left, and a proven loss is entered, or played, only if every move is one.

use rand_distr::{Distribution, Gamma};

use crate::config::SearchConfig;
use crate::solver::{self, MoveClass};
use crate::strategy::{InteriorSelection, RootSelection};
use crate::tree::{Edge, NodeId, ROOT, Tree};

/// The PUCT root: Dirichlet noise mixed into the priors, PUCT selection, the most visited
/// move, and the visit distribution as the policy.
#[derive(Debug, Clone, Default)]
pub struct PuctRoot {
    /// The noise of each root move (empty when `dirichlet_epsilon` is 0).
    dirichlet: Vec<f32>,
}

impl<M: Copy> RootSelection<M> for PuctRoot {
    fn draw_noise(&mut self, moves: usize, config: &SearchConfig, rng: &mut dyn rand::RngCore) {
        self.dirichlet.clear();
        if config.dirichlet_epsilon <= 0.0 {
            return;
        }
        // A Dirichlet sample is a normalised vector of Gamma(alpha, 1) samples.
        let alpha = config.dirichlet_alpha.max(1e-3);
        let gamma = Gamma::new(alpha, 1.0).expect("alpha is positive");
        self.dirichlet
            .extend((0..moves).map(|_| gamma.sample(&mut *rng)));
        let total: f32 = self.dirichlet.iter().sum();
        if total > 0.0 {
            self.dirichlet.iter_mut().for_each(|x| *x /= total);
        } else {
            self.dirichlet.clear();
        }
    }

    fn begin(&mut self, tree: &mut Tree<M>, _budget: u32, config: &SearchConfig) {
        if self.dirichlet.is_empty() {
            return;
        }
        let eps = config.dirichlet_epsilon;
        let range = tree.nodes[ROOT as usize].edge_range();
        for (edge, noise) in tree.edges[range].iter_mut().zip(&self.dirichlet) {
            edge.prior = (1.0 - eps) * edge.prior + eps * noise;
        }
    }

    fn waits_for_values(&self) -> bool {
        false
    }

    fn next_edge(&mut self, tree: &Tree<M>, config: &SearchConfig) -> usize {
        select_child(tree, ROOT, config)
    }

    fn give_back(&mut self, _edge: usize) {}

    fn finish(
        &mut self,
        tree: &Tree<M>,
        config: &SearchConfig,
        _scratch: &mut Vec<f32>,
        policy: &mut Vec<f32>,
    ) -> usize {
        visit_policy(tree, policy);
        best_edge(tree, ROOT, config)
    }
}

/// PUCT selection below the root.
#[derive(Debug, Clone, Copy, Default)]
pub struct PuctInterior;

impl<M: Copy> InteriorSelection<M> for PuctInterior {
    fn select_child(&mut self, tree: &Tree<M>, node: NodeId, config: &SearchConfig) -> usize {
        select_child(tree, node, config)
    }
}

/// The root's visit counts normalised into `policy` (the priors if nothing was visited).
fn visit_policy<M: Copy>(tree: &Tree<M>, policy: &mut Vec<f32>) {
    let range = tree.nodes[ROOT as usize].edge_range();
    policy.clear();
    policy.extend(range.clone().map(|e| tree.edge_visits(e) as f32));
    let total: f32 = policy.iter().sum();
    if total > 0.0 {
        policy.iter_mut().for_each(|p| *p /= total);
    } else {
        policy.clear();
        policy.extend(tree.edges[range].iter().map(|e| e.prior));
    }
}

/// Returns the index (into [`Tree::edges`]) of the edge to follow from the expanded `node`.
pub fn select_child<M: Copy>(tree: &Tree<M>, node: NodeId, config: &SearchConfig) -> usize {
    let n = &tree.nodes[node as usize];
    let range = n.edge_range();
    let edges = &tree.edges[range.clone()];
    let mut total = 0u32;
    let mut visited_prior = 0.0f32;
    let mut any_proven = false;
    for edge in edges {
        if let Some(child) = tree.child_of(edge) {
            total += child.selection_visits();
            if child.visits > 0 {
                visited_prior += edge.prior;
            }
            any_proven |= child.proof.is_some();
        }
    }
    let fpu = n.mean() - config.fpu_reduction * visited_prior.sqrt();
    // With no visits yet the exploration term would vanish; max(1) lets the priors decide.
    let explore = config.cpuct * (total.max(1) as f32).sqrt();
    // Simulations in flight count as visits in the exploration term only (a virtual visit,
    // not a virtual loss): the leaves of one batch spread out, and Q stays the mean of
    // what was backed up.
    let score = |edge: &Edge<M>| match tree.child_of(edge) {
        Some(c) if c.visits > 0 => {
            -c.value() + explore * edge.prior / (1.0 + c.selection_visits() as f32)
        }
        Some(c) => fpu + explore * edge.prior / (1.0 + c.selection_visits() as f32),
        None => fpu + explore * edge.prior,
    };
    let best = solver::select(tree, node, edges, any_proven && config.solver, |_, edge| {
        score(edge)
    });
    range.start + best
}

/// The move PUCT plays: the move that proofs dictate (with the solver on, see
/// [`solver::decided_move`]), else the most visited edge of `node` that is not a proven
/// loss, ties broken by Q, then by prior.
pub fn best_edge<M: Copy>(tree: &Tree<M>, node: NodeId, config: &SearchConfig) -> usize {
    if let Some(e) = solver::decided_move(tree, node, config.solver) {
        return e;
    }
    let range = tree.nodes[node as usize].edge_range();
    let key = |e: usize| {
        (
            solver::edge_class(tree, e, config.solver).0 != MoveClass::Losing,
            tree.edge_visits(e),
            tree.edge_q(e).unwrap_or(f32::NEG_INFINITY),
            tree.edges[e].prior,
        )
    };
    let mut best = range.start;
    for e in range {
        if key(e) > key(best) {
            best = e;
        }
    }
    best
}
