//! The search tree: a node arena and a side array of edges, both reused across searches.
//!
//! Nodes hold no game state (the search replays moves on a scratch state) and own no heap
//! memory: a node's edges are a contiguous range of [`Tree::edges`], pushed when the node
//! is expanded, and a child node is created only when its edge is first traversed.
//! Values are stored from the side to move at the node; the parent's Q of an edge is
//! the negated mean of the child. A node may carry a [`Proof`] of its exact value
//! (terminal nodes always do; [`crate::solver`] derives the others).

use crate::game::Terminal;
use crate::solver::Proof;

/// Index of a node in the arena.
pub type NodeId = u32;

/// Marks a missing node (an edge not traversed yet, or the root's parent).
pub const NO_NODE: NodeId = NodeId::MAX;

/// The root is always the first node.
pub const ROOT: NodeId = 0;

/// What is known about a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// Created, waiting for its evaluation.
    Unexpanded,
    /// Evaluated; its edges exist.
    Expanded,
    /// The game is over here, with this exact outcome for the side to move.
    Terminal(Terminal),
}

/// One node of the tree.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    /// First edge in [`Tree::edges`].
    pub first_edge: u32,
    /// Number of edges (0 until expanded, and for terminal nodes).
    pub num_edges: u32,
    /// Number of values backed up through this node (its own evaluation included).
    pub visits: u32,
    /// Sum of backed-up values, from the side to move at this node.
    pub value_sum: f64,
    /// Sum of backed-up draw probabilities.
    pub draw_sum: f64,
    /// The evaluator's value of this node (exact value for terminals).
    pub raw_value: f32,
    /// Unexpanded, expanded or terminal.
    pub kind: NodeKind,
    /// The exact value, once proven (for the side to move at this node). It fits in the
    /// padding after `kind`, so a node stays 40 bytes (a test checks).
    pub proof: Option<Proof>,
    /// Some move here is a proven draw, so the side to move can do no worse than 0: its
    /// value as seen from its parent ([`Node::value`]) is its mean raised to 0. The sums
    /// themselves stay plain averages of what was backed up, so that ancestors' means are
    /// not biased upwards (flooring each backup would average `max(v, 0)`, which exceeds
    /// `max(E[v], 0)`).
    pub draw_secured: bool,
    /// Simulations that passed through this node and wait for their leaf's evaluation (a
    /// search that evaluates several leaves at once, see [`crate::Search::select_leaves`]).
    /// Selection counts them as visits, so that the leaves of one batch spread out instead
    /// of all taking the same path; values are untouched until the evaluation arrives.
    /// It fits in the padding too.
    pub in_flight: u16,
}

impl Node {
    fn new() -> Self {
        Node {
            first_edge: 0,
            num_edges: 0,
            visits: 0,
            value_sum: 0.0,
            draw_sum: 0.0,
            raw_value: 0.0,
            kind: NodeKind::Unexpanded,
            proof: None,
            draw_secured: false,
            in_flight: 0,
        }
    }

    /// Visits plus simulations in flight: the count that selection compares.
    pub fn selection_visits(&self) -> u32 {
        self.visits + u32::from(self.in_flight)
    }

    /// Mean value from this node's side to move (0 if never visited); the exact value once
    /// the node is proven, unless it is the root (see [`crate::solver::propagate`]).
    pub fn mean(&self) -> f32 {
        if self.visits == 0 {
            0.0
        } else {
            (self.value_sum / f64::from(self.visits)) as f32
        }
    }

    /// The node's value for its side to move, as its parent's Q and the search result use
    /// it: the exact value once proven; else the mean, raised to 0 when a proven draw is in
    /// hand ([`Node::draw_secured`]), since the mover can always take the draw.
    pub fn value(&self) -> f32 {
        match self.proof {
            Some(proof) => proof.value(),
            None if self.draw_secured => self.mean().max(0.0),
            None => self.mean(),
        }
    }

    /// Mean draw probability (0 if never visited).
    pub fn draw(&self) -> f32 {
        if self.visits == 0 {
            0.0
        } else {
            (self.draw_sum / f64::from(self.visits)) as f32
        }
    }

    /// The range of this node's edges in [`Tree::edges`].
    pub fn edge_range(&self) -> std::ops::Range<usize> {
        self.first_edge as usize..(self.first_edge + self.num_edges) as usize
    }
}

/// A move out of a node, with its prior.
#[derive(Debug, Clone, Copy)]
pub struct Edge<M> {
    /// The move.
    pub mv: M,
    /// The evaluator's logit for the move.
    pub logit: f32,
    /// Softmax of the logits over the node's moves (with root noise mixed in, for PUCT).
    pub prior: f32,
    /// The child node, or [`NO_NODE`] if never traversed.
    pub child: NodeId,
}

/// The arena. [`Tree::reset`] keeps the capacity so that a reused tree stops allocating.
#[derive(Debug, Clone, Default)]
pub struct Tree<M> {
    /// All nodes; [`ROOT`] first.
    pub nodes: Vec<Node>,
    /// All edges, one contiguous range per expanded node.
    pub edges: Vec<Edge<M>>,
}

impl<M: Copy> Tree<M> {
    /// An empty tree.
    pub fn new() -> Self {
        Tree {
            nodes: Vec::new(),
            edges: Vec::new(),
        }
    }

    /// Removes all nodes and edges and creates an unexpanded root.
    pub fn reset(&mut self) {
        self.nodes.clear();
        self.edges.clear();
        self.nodes.push(Node::new());
    }

    /// Creates the child of `edge` (an index into [`Tree::edges`]) and returns it.
    pub fn add_child(&mut self, edge: usize) -> NodeId {
        let id = NodeId::try_from(self.nodes.len()).expect("tree has fewer than 2^32 nodes");
        self.nodes.push(Node::new());
        self.edges[edge].child = id;
        id
    }

    /// Expands `node` with its moves and their logits; priors are the softmax of the logits.
    pub fn expand(&mut self, node: NodeId, moves: &[M], logits: &[f32], value: f32) {
        debug_assert_eq!(moves.len(), logits.len());
        let first = self.edges.len();
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut total = 0.0;
        for (&mv, &logit) in moves.iter().zip(logits) {
            let weight = (logit - max).exp();
            total += weight;
            self.edges.push(Edge {
                mv,
                logit,
                prior: weight,
                child: NO_NODE,
            });
        }
        for edge in &mut self.edges[first..] {
            edge.prior /= total;
        }
        let n = &mut self.nodes[node as usize];
        n.first_edge = u32::try_from(first).expect("tree has fewer than 2^32 edges");
        n.num_edges = moves.len() as u32;
        n.raw_value = value;
        n.kind = NodeKind::Expanded;
    }

    /// Marks `node` terminal with its exact outcome, proven in 0 plies.
    pub fn set_terminal(&mut self, node: NodeId, outcome: Terminal) {
        let n = &mut self.nodes[node as usize];
        n.kind = NodeKind::Terminal(outcome);
        n.raw_value = outcome.value();
        n.proof = Some(Proof::terminal(outcome));
    }

    /// Backs up `value` and `draw` (both for the side to move at the last node of `path`)
    /// through `path`, negating the value at each ply up (negamax). Values are backed up
    /// as they are: proofs and secured draws act where a node's value is read
    /// ([`Node::value`]), not on the sums.
    pub fn backup(&mut self, path: &[NodeId], value: f32, draw: f32) {
        let mut v = f64::from(value);
        let d = f64::from(draw);
        for &id in path.iter().rev() {
            let n = &mut self.nodes[id as usize];
            n.visits += 1;
            n.value_sum += v;
            n.draw_sum += d;
            v = -v;
        }
    }

    /// Adds (`+1`) or removes (`-1`) a simulation in flight on every node of `path`.
    pub fn mark_in_flight(&mut self, path: &[NodeId], add: bool) {
        for &id in path {
            let n = &mut self.nodes[id as usize];
            n.in_flight = if add {
                n.in_flight
                    .checked_add(1)
                    .expect("fewer than 65536 leaves in flight")
            } else {
                n.in_flight - 1
            };
        }
    }

    /// The node behind an edge, if it was traversed.
    pub fn child(&self, edge: usize) -> Option<&Node> {
        self.child_of(&self.edges[edge])
    }

    /// The node behind `edge` (one of [`Tree::edges`]), if it was traversed.
    pub fn child_of(&self, edge: &Edge<M>) -> Option<&Node> {
        (edge.child != NO_NODE).then(|| &self.nodes[edge.child as usize])
    }

    /// The proof of the child behind `edge` (`None` if it is unproven or not created).
    pub fn edge_proof(&self, edge: usize) -> Option<Proof> {
        self.child(edge).and_then(|c| c.proof)
    }

    /// Visits plus simulations in flight of the child behind `edge` (0 if none).
    pub fn edge_selection_visits(&self, edge: usize) -> u32 {
        self.child(edge).map_or(0, Node::selection_visits)
    }

    /// Visits of the child behind `edge` (0 if none).
    pub fn edge_visits(&self, edge: usize) -> u32 {
        self.child(edge).map_or(0, |c| c.visits)
    }

    /// Q of `edge` for the side to move at its parent: the negated [`Node::value`] of the
    /// child if visited, and the exact value of a proven child even before its first
    /// visit (a mate found when the child was created is known without a visit).
    pub fn edge_q(&self, edge: usize) -> Option<f32> {
        self.child(edge)
            .filter(|c| c.visits > 0 || c.proof.is_some())
            .map(|c| -c.value())
    }

    /// Draw probability of the move along `edge` (its child's mean, or its proof's), if the
    /// child was visited or proven.
    pub fn edge_d(&self, edge: usize) -> Option<f32> {
        self.child(edge).and_then(|c| match c.proof {
            Some(proof) => Some(proof.draw()),
            None if c.visits > 0 => Some(c.draw()),
            None => None,
        })
    }

    /// Bytes the arena has allocated: node and edge capacity times their sizes.
    pub fn arena_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.edges.capacity() * std::mem::size_of::<Edge<M>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_stays_forty_bytes() {
        // The arena is the search's working set; the in-flight counter and the proof live
        // in padding.
        assert_eq!(std::mem::size_of::<Node>(), 40);
    }
}
