//! Proven values (MCTS-Solver): exact game values that the search derives from terminal
//! nodes and propagates up the tree, so that it proves the mates it sees, plays the
//! shortest, never plays into a proven loss while something else is left, and spends no
//! more simulations below decided positions.
//!
//! A node is *proven* ([`Proof`]) for its side to move:
//! - a **win** if some child is a proven loss (for the child's side to move), in
//!   `1 + min` plies over such children (the winner takes the shortest win);
//! - a **loss** if every edge has a child and all are proven wins, in `1 + max` plies
//!   (the loser takes the longest loss);
//! - a **draw** if every edge has a child, all are proven, none is a loss and at least one
//!   is a draw, in `1 + min` plies over the drawn children.
//!
//! Terminal nodes are proven in 0 plies. Selection follows the proofs
//! ([`select_by_class`], [`decided_move`]); a simulation that reaches a proven node stops
//! there, since no visit below can change its value.
//!
//! Values: when a node is proven, its own sums are rewritten to `visits` times the exact
//! value, so its mean, and with it the Q of the edge into it, is -1/0/+1: completed Q,
//! v_mix and pi' at its parent see the proof, not a running mean, and the hot loops need no
//! branch for it. Later simulations stop at a proven node and back up that exact value
//! (see [`Search`](crate::Search)), which keeps it exact, and its ancestors' means move
//! towards the proof with every visit. Their past visits are not rewritten (Lc0 does rewrite
//! them when it turns a node terminal): measured on every reachable tic-tac-toe position
//! with the uniform evaluator, that rewrite cost the Gumbel search a mistake at 12800
//! simulations (1 of 4520 against 0), as every proven blunder line then adds its full -1
//! to all its ancestors at once, and with values that carry little information that swamps
//! their means. The root is never stopped at, so later simulations make its mean inexact
//! again; the search reports a proven root's exact value from its proof.

use crate::game::Terminal;
use crate::tree::{Edge, NO_NODE, NodeId, NodeKind, ROOT, Tree};

/// An exact game value proven by the search, for the side to move at a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Proof {
    /// The outcome with best play by both sides.
    pub outcome: Terminal,
    /// Plies to the end of the game (0 at a terminal node) along the proof: the winner takes
    /// its shortest proven win, the loser its longest loss. A shorter win that the search has
    /// not seen yet can exist, so this is at least the true distance. Sixteen bits keep
    /// [`Node`](crate::tree::Node) small; longer proofs saturate.
    pub plies: u16,
}

impl Proof {
    /// The proof of a terminal node.
    pub fn terminal(outcome: Terminal) -> Self {
        Proof { outcome, plies: 0 }
    }

    /// The exact value for the side to move: -1, 0 or 1.
    pub fn value(self) -> f32 {
        self.outcome.value()
    }

    /// The exact draw probability: 1 for a draw, else 0.
    pub fn draw(self) -> f32 {
        if self.outcome == Terminal::Draw {
            1.0
        } else {
            0.0
        }
    }

    /// UCI's `score mate N`: moves (not plies) until mate, positive when the side to move
    /// mates, negative when it is mated; `None` for a draw.
    pub fn mate_moves(self) -> Option<i32> {
        let plies = i32::from(self.plies);
        match self.outcome {
            Terminal::Win => Some((plies + 1) / 2),
            Terminal::Loss => Some(-plies / 2),
            Terminal::Draw => None,
        }
    }
}

/// What the proof of a child means for the side to move at its parent, ordered by how
/// much selection wants the move: a proven win at once, then unproven moves, then proven
/// draws (below the root, see [`MoveClass::for_selection`]), proven losses last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MoveClass {
    /// The move is a proven loss for the mover (its child is a proven win).
    Losing,
    /// The move is a proven draw.
    Drawn,
    /// Unproven (or not tried yet): the search decides.
    Open,
    /// The move is a proven win for the mover (its child is a proven loss).
    Winning,
}

impl MoveClass {
    /// The class of a move whose child has this proof (`None`: unproven or not created).
    pub fn of(child: Option<Proof>) -> Self {
        match child.map(|p| p.outcome) {
            Some(Terminal::Loss) => MoveClass::Winning,
            Some(Terminal::Win) => MoveClass::Losing,
            Some(Terminal::Draw) => MoveClass::Drawn,
            None => MoveClass::Open,
        }
    }

    /// The class that selection at `node` ranks by. Below the root a proven draw ranks
    /// under every unproven move: its value is known (and its parent's value is raised to
    /// it, [`Node::draw_secured`](crate::tree::Node::draw_secured)), so a visit there
    /// teaches nothing, and if it kept the visits that its exact Q of 0 earns, the other
    /// moves would starve and the node could never be proven (measured: the empty
    /// tic-tac-toe board is proven a draw with 100k PUCT simulations this way, never
    /// with 300k otherwise). At the root the visits are the policy, so a draw competes
    /// on its Q like any unproven move.
    pub fn for_selection(self, node: NodeId) -> Self {
        if self == MoveClass::Drawn && node == ROOT {
            MoveClass::Open
        } else {
            self
        }
    }
}

/// The proof that `node`'s children give it, if any (see the module documentation).
/// Nodes without edges (unexpanded or terminal) get none: a terminal's proof is set when
/// it is created, and an unexpanded node knows nothing yet.
pub fn proof_from_children<M: Copy>(tree: &Tree<M>, node: NodeId) -> Option<Proof> {
    let n = &tree.nodes[node as usize];
    if n.kind != NodeKind::Expanded || n.num_edges == 0 {
        return None;
    }
    let mut all_proven = true;
    let mut shortest_win: Option<u16> = None;
    let mut shortest_draw: Option<u16> = None;
    let mut longest_loss = 0u16;
    for edge in &tree.edges[n.edge_range()] {
        let proof = (edge.child != NO_NODE)
            .then(|| tree.nodes[edge.child as usize].proof)
            .flatten();
        match proof {
            None => all_proven = false,
            Some(p) => match p.outcome {
                // Outcomes are for the child's side to move: its loss is our win.
                Terminal::Loss => {
                    shortest_win = Some(shortest_win.map_or(p.plies, |w| w.min(p.plies)))
                }
                Terminal::Draw => {
                    shortest_draw = Some(shortest_draw.map_or(p.plies, |d| d.min(p.plies)))
                }
                Terminal::Win => longest_loss = longest_loss.max(p.plies),
            },
        }
    }
    let (outcome, plies) = match (shortest_win, all_proven, shortest_draw) {
        (Some(win), _, _) => (Terminal::Win, win),
        (None, false, _) => return None,
        (None, true, Some(draw)) => (Terminal::Draw, draw),
        (None, true, None) => (Terminal::Loss, longest_loss),
    };
    Some(Proof {
        outcome,
        plies: plies.saturating_add(1),
    })
}

/// Propagates a new proof up `path` (root first), whose last node has just been proven
/// (a terminal created by this simulation). Walks up while nodes become proven and stops
/// at the first whose status does not change: only a new proof below can change a node's
/// status (a new unproven child proves nothing), so nothing above it changes either.
/// Touches at most the path; no allocation.
///
/// A proven node below the root is final: the search never enters it again, so its
/// children cannot change. The root is entered by every simulation, so a later proof may
/// shorten its win; it is derived again each time.
pub fn propagate<M: Copy>(tree: &mut Tree<M>, path: &[NodeId]) {
    let Some((&leaf, ancestors)) = path.split_last() else {
        return;
    };
    let mut child = leaf;
    for &id in ancestors.iter().rev() {
        let old = tree.nodes[id as usize].proof;
        if old.is_some() && id != ROOT {
            return;
        }
        let new = proof_from_children(tree, id);
        let drawn_child = tree.nodes[child as usize]
            .proof
            .is_some_and(|p| p.outcome == Terminal::Draw);
        let n = &mut tree.nodes[id as usize];
        n.draw_secured |= drawn_child;
        if new == old {
            return;
        }
        n.proof = new;
        if let Some(proof) = new {
            // The node's own sums become exact, so its mean (and the Q of the edge into
            // it) is the proven value; later simulations stop here and keep it exact.
            let visits = f64::from(n.visits);
            n.value_sum = visits * f64::from(proof.value());
            n.draw_sum = visits * f64::from(proof.draw());
        }
        child = id;
    }
}

/// Selection below a node: the edge of `edges` (those of `node`) with the best `score`,
/// ties to the first move so that selection is reproducible; by [`select_by_class`] when
/// `by_proofs` (the solver is on and some child is proven). `score` gets each edge with its
/// offset; returns the offset of the chosen edge. The plain loop is the search's hottest,
/// so proofs cost it nothing where there are none.
pub fn select<M: Copy>(
    tree: &Tree<M>,
    node: NodeId,
    edges: &[Edge<M>],
    by_proofs: bool,
    score: impl Fn(usize, &Edge<M>) -> f32,
) -> usize {
    if by_proofs {
        return select_by_class(tree, node, edges, score);
    }
    let mut best = 0;
    let mut best_score = f32::NEG_INFINITY;
    for (i, edge) in edges.iter().enumerate() {
        let s = score(i, edge);
        if s > best_score {
            best_score = s;
            best = i;
        }
    }
    best
}

/// Selection among `edges` (those of `node`) where some child is proven: the shortest
/// proven win if there is one, else the best `score` among unproven moves, then (below the
/// root) among proven draws, and only if every move is a proven loss, among those. Ties
/// go to the first move. `score` gets each edge with its offset; returns the offset of
/// the chosen edge.
pub fn select_by_class<M: Copy>(
    tree: &Tree<M>,
    node: NodeId,
    edges: &[Edge<M>],
    score: impl Fn(usize, &Edge<M>) -> f32,
) -> usize {
    let mut best = 0;
    let mut best_key = (MoveClass::Losing, f32::NEG_INFINITY);
    for (i, edge) in edges.iter().enumerate() {
        let proof = tree.child_of(edge).and_then(|c| c.proof);
        let class = MoveClass::of(proof).for_selection(node);
        let key = match (class, proof) {
            (MoveClass::Winning, Some(p)) => (class, -f32::from(p.plies)),
            _ => (class, score(i, edge)),
        };
        if key > best_key {
            best_key = key;
            best = i;
        }
    }
    best
}

/// The class of `edge` for the mover at its parent and the plies of its proof (0 if
/// none). With the solver off (`enabled` false) every move is [`MoveClass::Open`], so that
/// selection and the final move work as in plain MCTS.
pub fn edge_class<M: Copy>(tree: &Tree<M>, edge: usize, enabled: bool) -> (MoveClass, u16) {
    if !enabled {
        return (MoveClass::Open, 0);
    }
    let proof = tree.edge_proof(edge);
    (MoveClass::of(proof), proof.map_or(0, |p| p.plies))
}

/// The move that proofs dictate at `node`, if any: the shortest proven win; else, when
/// every move is a proven loss, the longest one (the opponent may still go wrong). `None`
/// leaves the choice to the search, which must then avoid [`MoveClass::Losing`] moves
/// (some move is not one). Always `None` with the solver off (`enabled` false).
pub fn decided_move<M: Copy>(tree: &Tree<M>, node: NodeId, enabled: bool) -> Option<usize> {
    if !enabled {
        return None;
    }
    let mut shortest_win: Option<(u16, usize)> = None;
    let mut longest_loss: Option<(u16, usize)> = None;
    let mut all_losing = true;
    for e in tree.nodes[node as usize].edge_range() {
        let proof = tree.edge_proof(e);
        match (MoveClass::of(proof), proof) {
            (MoveClass::Winning, Some(p)) => {
                // Strict comparisons: ties go to the first move, so the choice is reproducible.
                if shortest_win.is_none_or(|(plies, _)| p.plies < plies) {
                    shortest_win = Some((p.plies, e));
                }
            }
            (MoveClass::Losing, Some(p)) => {
                if longest_loss.is_none_or(|(plies, _)| p.plies > plies) {
                    longest_loss = Some((p.plies, e));
                }
            }
            _ => all_losing = false,
        }
    }
    match (shortest_win, all_losing) {
        (Some((_, e)), _) => Some(e),
        (None, true) => longest_loss.map(|(_, e)| e),
        (None, false) => None,
    }
}
