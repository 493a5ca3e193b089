//! One search over one root, driven step by step: [`Search::select_leaf`] walks to a leaf
//! that needs an evaluation (terminal leaves are answered exactly on the way),
//! [`Search::apply_evaluation`] expands it and backs its value up. The driver interleaves
//! many such searches; [`Search::run`] is the single-tree loop.
//!
//! With the solver on ([`SearchConfig::solver`]), a simulation that creates a terminal node
//! propagates its proof up the path ([`solver::propagate`]), and a simulation that reaches
//! a proven node stops there and backs up its exact value, as at a terminal: the subtree
//! below cannot change that value, so it needs no more visits.
//!
//! The tree stores no game states: every simulation replays its moves on a scratch copy
//! of the root, reusing that copy's memory.

use rand::{Rng, RngCore};

use crate::config::SearchConfig;
use crate::evaluator::{EvalError, Evaluations, Evaluator, LeafBatch};
use crate::game::{Game, Terminal};
use crate::qtransform::v_mix;
use crate::solver::{self, Proof};
use crate::strategy::{InteriorSelection, RootSelection, strategies};
use crate::tree::{NO_NODE, NodeId, NodeKind, ROOT, Tree};

/// Why a search could not run.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The root position is already decided; there is nothing to search.
    #[error("search root {index} is a finished game ({outcome:?} for the side to move)")]
    TerminalRoot {
        /// Which root (0 for a single search).
        index: usize,
        /// How the game ended.
        outcome: Terminal,
    },
    /// The evaluator failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The evaluator answered with the wrong number of logits or values.
    #[error(
        "evaluator answered {values} values and {logits} logits for {leaves} leaves with {moves} moves"
    )]
    BadEvaluation {
        /// Leaves in the batch.
        leaves: usize,
        /// Moves in the batch.
        moves: usize,
        /// Values received.
        values: usize,
        /// Logits received.
        logits: usize,
    },
    /// The driver got a different number of budgets than roots.
    #[error("{roots} roots but {budgets} budgets")]
    BudgetCount {
        /// Number of roots.
        roots: usize,
        /// Number of budgets.
        budgets: usize,
    },
}

/// What [`Search::select_leaf`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A leaf waits for its evaluation: see [`Search::leaf_state`] and [`Search::leaf_moves`].
    Evaluate,
    /// The budget is spent; see [`Search::result`].
    Finished,
}

/// The outcome of a search, over the root's legal moves in [`Game::legal_moves`] order.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult<M> {
    /// The move to play.
    pub best_move: M,
    /// The root's legal moves.
    pub moves: Vec<M>,
    /// Visits of each move.
    pub visits: Vec<u32>,
    /// The improved policy pi' (Gumbel) or the visit distribution (PUCT); sums to 1.
    pub policy: Vec<f32>,
    /// The search's value of the root for its side to move (the exact value once proven).
    pub value: f32,
    /// The search's win/draw/loss probabilities of the root for its side to move (one-hot
    /// once proven).
    pub wdl: [f32; 3],
    /// The root's proven outcome and its distance in plies (for UCI's `score mate N`, see
    /// [`Proof::mate_moves`]); `None` while unproven.
    pub proven: Option<Proof>,
    /// The evaluator's value of the root.
    pub network_value: f32,
    /// The evaluator's WDL of the root.
    pub network_wdl: [f32; 3],
    /// Q of the chosen move for the side to move (its completed Q if never visited).
    pub best_q: f32,
    /// Draw probability of the chosen move (the root's where it was never visited): with
    /// `best_q`, the W/D/L of best play.
    pub best_d: f32,
    /// Completed Q of every root move for the side to move (v_mix where never visited;
    /// the exact value of a proven move, visited or not).
    pub q: Vec<f32>,
    /// The value of best play as the search sees it: `sum(policy * q)`, the improved
    /// policy's expectation of the completed Q (exact once the root is proven). Unlike
    /// [`SearchResult::value`], the root's mean, it is not dragged towards the value of the
    /// semi-random moves that sequential halving visits once each.
    pub policy_q: f32,
    /// The proven outcome of each root move for the side to move (`Win`: the move wins),
    /// `None` where unproven (always with the solver off).
    pub move_outcomes: Vec<Option<Terminal>>,
    /// How far the search moved from the evaluator's policy: the Kullback-Leibler divergence
    /// `sum(policy * ln(policy / prior))` of [`SearchResult::policy`] from the root's priors,
    /// in nats. Large where the search found what the network missed (KataGo's policy
    /// surprise).
    pub prior_kl: f32,
    /// Simulations run (the root's own evaluation not counted).
    pub simulations: u32,
    /// Nodes in the tree.
    pub nodes: usize,
}

/// A reusable search: buffers and the tree survive from one search to the next.
#[derive(Debug)]
pub struct Search<G: Game> {
    config: SearchConfig,
    tree: Tree<G::Move>,
    root: Option<G>,
    root_moves: Vec<G::Move>,
    /// The simulation being walked down: its state, the state's legal moves and its path.
    scratch: Option<Leaf<G>>,
    /// Leaves waiting for their evaluations: the first `waiting` entries (the rest are
    /// spare, kept for their memory).
    leaves: Vec<Leaf<G>>,
    /// Leaves selected and not yet answered.
    waiting: usize,
    /// Of those, the ones still unanswered.
    unanswered: usize,
    /// How the root chooses ([`crate::strategy`]).
    root_selection: Box<dyn RootSelection<G::Move>>,
    /// How simulations choose below the root.
    interior: Box<dyn InteriorSelection<G::Move>>,
    budget: u32,
    simulations: u32,
    network_wdl: [f32; 3],
    sigma: Vec<f32>,
    policy: Vec<f32>,
    batch: LeafBatch<G>,
    evaluations: Evaluations,
}

impl<G: Game> Search<G> {
    /// A search with these constants.
    pub fn new(config: SearchConfig) -> Self {
        let (root_selection, interior) = strategies(&config);
        Self::with_strategies(config, root_selection, interior)
    }

    /// A search with these constants and these strategies instead of those of
    /// `config.mode` (a variant of the search that lives outside this crate).
    pub fn with_strategies(
        config: SearchConfig,
        root_selection: Box<dyn RootSelection<G::Move>>,
        interior: Box<dyn InteriorSelection<G::Move>>,
    ) -> Self {
        Search {
            config,
            tree: Tree::new(),
            root: None,
            root_moves: Vec::new(),
            scratch: None,
            leaves: Vec::new(),
            waiting: 0,
            unanswered: 0,
            root_selection,
            interior,
            budget: 0,
            simulations: 0,
            network_wdl: [0.0, 1.0, 0.0],
            sigma: Vec::new(),
            policy: Vec::new(),
            batch: LeafBatch::new(),
            evaluations: Evaluations::default(),
        }
    }

    /// The constants.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// The tree (for inspection).
    pub fn tree(&self) -> &Tree<G::Move> {
        &self.tree
    }

    /// Starts a search of `budget` simulations from `root`, drawing the root noise from `rng`.
    pub fn start<R: Rng + ?Sized>(
        &mut self,
        root: &G,
        budget: u32,
        rng: &mut R,
    ) -> Result<(), SearchError> {
        root.legal_moves(&mut self.root_moves);
        if let Some(outcome) = root.terminal(&self.root_moves) {
            return Err(SearchError::TerminalRoot { index: 0, outcome });
        }
        clone_into(&mut self.root, root);
        self.tree.reset();
        self.budget = budget;
        self.simulations = 0;
        self.waiting = 0;
        self.unanswered = 0;
        // `&mut R` is a sized generator even where `R` is not, so it can be passed on as
        // a trait object; the numbers drawn are the same.
        let mut rng = rng;
        self.root_selection.draw_noise(
            self.root_moves.len(),
            &self.config,
            &mut rng as &mut dyn RngCore,
        );
        Ok(())
    }

    /// Whether the budget is spent (the root evaluated and `budget` simulations done).
    pub fn is_finished(&self) -> bool {
        self.waiting == 0
            && self
                .tree
                .nodes
                .first()
                .is_some_and(|r| r.kind == NodeKind::Expanded)
            && self.simulations >= self.budget
    }

    /// Walks to the next leaf that needs an evaluation, backing up terminal leaves on the
    /// way: [`Search::select_leaves`] with at most one leaf.
    pub fn select_leaf(&mut self) -> Step {
        self.select_leaves(1)
    }

    /// Walks down up to `max` simulations whose leaves need an evaluation (terminal and
    /// proven leaves are backed up on the way and cost none), to be evaluated together
    /// and answered with [`Search::apply_leaf_evaluation`]. Returns
    /// [`Step::Finished`] when the budget is spent.
    ///
    /// The leaves of one call are selected before any of them is evaluated, each counted
    /// as a visit in flight along its path ([`crate::tree::Node::in_flight`]), so the next
    /// one goes elsewhere. Fewer than `max` come back when a simulation reaches a leaf
    /// already in flight (it is retried in the next call), when the Gumbel schedule ends a
    /// phase (the halving needs every value of the phase), or when the budget runs out.
    /// With `max == 1` the search is exactly the one-leaf-at-a-time search.
    ///
    /// Must not be called while leaves wait for their evaluations.
    pub fn select_leaves(&mut self, max: usize) -> Step {
        assert!(
            self.waiting == 0,
            "select_leaves called while leaves wait for their evaluations"
        );
        let max = max.max(1);
        if self.tree.nodes[ROOT as usize].kind == NodeKind::Unexpanded {
            let root = self
                .root
                .as_ref()
                .expect("select_leaves called before start");
            let scratch = scratch_leaf(&mut self.scratch, root);
            scratch.moves.clone_from(&self.root_moves);
            scratch.path.clear();
            scratch.path.push(ROOT);
            self.commit_leaf();
            return Step::Evaluate;
        }
        while self.waiting < max && self.simulations + (self.waiting as u32) < self.budget {
            if self.waiting > 0 && self.root_selection.waits_for_values() {
                break;
            }
            match self.descend() {
                Descent::Leaf => self.commit_leaf(),
                Descent::BackedUp => {}
                Descent::Collision => break,
            }
        }
        if self.waiting > 0 {
            Step::Evaluate
        } else {
            Step::Finished
        }
    }

    /// Moves the scratch simulation into the waiting leaves and marks its path in flight.
    fn commit_leaf(&mut self) {
        let scratch = self.scratch.as_mut().expect("a simulation was walked");
        if self.waiting == self.leaves.len() {
            self.leaves.push(scratch.clone());
        } else {
            std::mem::swap(&mut self.leaves[self.waiting], scratch);
        }
        self.tree
            .mark_in_flight(&self.leaves[self.waiting].path, true);
        self.leaves[self.waiting].answered = false;
        self.waiting += 1;
        self.unanswered += 1;
    }

    /// One simulation down to a new node, in the scratch leaf.
    fn descend(&mut self) -> Descent {
        let root = self.root.as_ref().expect("started");
        let scratch = scratch_leaf(&mut self.scratch, root);
        scratch.path.clear();
        scratch.path.push(ROOT);
        let mut node = ROOT;
        let mut root_edge = 0;
        loop {
            let edge = if node == ROOT {
                let edge = self.root_selection.next_edge(&self.tree, &self.config);
                root_edge = edge;
                edge
            } else {
                self.interior.select_child(&self.tree, node, &self.config)
            };
            let child = self.tree.edges[edge].child;
            if child != NO_NODE
                && self.tree.nodes[child as usize].kind == NodeKind::Unexpanded
                && self.tree.nodes[child as usize].proof.is_none()
            {
                // Another leaf of this batch is this node: wait for its evaluation. The
                // root's choice is given back, at whatever depth the collision is, so
                // that a planned schedule loses no visit.
                self.root_selection.give_back(root_edge);
                return Descent::Collision;
            }
            let scratch = self.scratch.as_mut().expect("set above");
            scratch.state.play(self.tree.edges[edge].mv);
            if child == NO_NODE {
                let child = self.tree.add_child(edge);
                scratch.path.push(child);
                scratch.state.legal_moves(&mut scratch.moves);
                return match scratch.state.terminal(&scratch.moves) {
                    Some(outcome) => {
                        self.tree.set_terminal(child, outcome);
                        self.back_up_proven(Proof::terminal(outcome));
                        // Only a new terminal creates a proof, so only here can
                        // proofs change.
                        if self.config.solver {
                            let path = &self.scratch.as_ref().expect("set").path;
                            solver::propagate(&mut self.tree, path);
                        }
                        Descent::BackedUp
                    }
                    None if self.config.solver
                        && scratch.state.immediate_win(&scratch.moves).is_some() =>
                    {
                        // Proven a win in one ply without an evaluation; the node stays
                        // unexpanded, as a proven node below the root is never entered.
                        let proof = Proof {
                            outcome: Terminal::Win,
                            plies: 1,
                        };
                        self.tree.nodes[child as usize].proof = Some(proof);
                        self.back_up_proven(proof);
                        let path = &self.scratch.as_ref().expect("set").path;
                        solver::propagate(&mut self.tree, path);
                        Descent::BackedUp
                    }
                    None => Descent::Leaf,
                };
            }
            scratch.path.push(child);
            let next = &self.tree.nodes[child as usize];
            // Terminal nodes are proven; other nodes only with the solver on.
            if let Some(proof) = next.proof {
                self.back_up_proven(proof);
                return Descent::BackedUp;
            }
            match next.kind {
                NodeKind::Expanded => node = child,
                NodeKind::Terminal(_) => unreachable!("terminal nodes are proven"),
                NodeKind::Unexpanded => unreachable!("leaves in flight are caught above"),
            }
        }
    }

    /// Backs up the exact value of the proven node at the end of the scratch path.
    fn back_up_proven(&mut self, proof: Proof) {
        let path = &self.scratch.as_ref().expect("a simulation was walked").path;
        self.tree.backup(path, proof.value(), proof.draw());
        self.simulations += 1;
    }

    /// Leaves waiting for their evaluations (see [`Search::select_leaves`]).
    pub fn leaf_count(&self) -> usize {
        self.waiting
    }

    /// The state of waiting leaf `i`.
    pub fn leaf_state_at(&self, i: usize) -> &G {
        &self.leaves[..self.waiting][i].state
    }

    /// The legal moves of waiting leaf `i`.
    pub fn leaf_moves_at(&self, i: usize) -> &[G::Move] {
        &self.leaves[..self.waiting][i].moves
    }

    /// The state of the (first) leaf waiting for its evaluation.
    pub fn leaf_state(&self) -> &G {
        self.leaf_state_at(0)
    }

    /// The legal moves of the (first) leaf waiting for its evaluation.
    pub fn leaf_moves(&self) -> &[G::Move] {
        self.leaf_moves_at(0)
    }

    /// Answers the (only) waiting leaf: [`Search::apply_leaf_evaluation`] of leaf 0.
    pub fn apply_evaluation(&mut self, logits: &[f32], value: f32, wdl: [f32; 3]) {
        self.apply_leaf_evaluation(0, logits, value, wdl);
    }

    /// Expands waiting leaf `i` with its evaluation (logits over [`Search::leaf_moves_at`],
    /// value and WDL for the leaf's side to move) and backs the value up. Once every
    /// waiting leaf is answered (in any order), the next selection may start.
    ///
    /// No proof propagation is needed here: the new node has no children yet, so it is
    /// unproven and changes no ancestor's status.
    pub fn apply_leaf_evaluation(&mut self, i: usize, logits: &[f32], value: f32, wdl: [f32; 3]) {
        assert!(i < self.waiting, "no waiting leaf {i}");
        let leaf = &mut self.leaves[i];
        assert!(!leaf.answered, "leaf {i} was answered already");
        assert_eq!(logits.len(), leaf.moves.len(), "one logit per legal move");
        leaf.answered = true;
        let node = *leaf.path.last().expect("path has the leaf");
        self.tree.mark_in_flight(&leaf.path, false);
        self.tree.expand(node, &leaf.moves, logits, value);
        if node == ROOT {
            self.network_wdl = wdl;
            self.prove_root_immediate_win();
            self.root_selection
                .begin(&mut self.tree, self.budget, &self.config);
        } else {
            self.simulations += 1;
        }
        self.tree.backup(&self.leaves[i].path, value, wdl[1]);
        self.unanswered -= 1;
        if self.unanswered == 0 {
            self.waiting = 0;
        }
    }

    /// With the solver on, a root that can mate at once is proven at once: the mating
    /// child is created as the terminal it is. Below the root the same check happens
    /// before evaluation (see `descend`); here the root's evaluation is needed anyway for
    /// its policy.
    fn prove_root_immediate_win(&mut self) {
        if !self.config.solver {
            return;
        }
        let root = self.root.as_ref().expect("started");
        if let Some(i) = root.immediate_win(&self.root_moves) {
            let edge = self.tree.nodes[ROOT as usize].first_edge as usize + i;
            let child = self.tree.add_child(edge);
            self.tree.set_terminal(child, Terminal::Loss);
            solver::propagate(&mut self.tree, &[ROOT, child]);
        }
    }

    /// The result of the finished (or interrupted, once the root is evaluated) search.
    pub fn result(&mut self) -> SearchResult<G::Move> {
        let root = self.tree.nodes[ROOT as usize];
        assert!(
            root.kind == NodeKind::Expanded,
            "result needs an evaluated root"
        );
        let range = root.edge_range();
        let best =
            self.root_selection
                .finish(&self.tree, &self.config, &mut self.sigma, &mut self.policy);
        // A proven root reports its exact value: later simulations through the root may
        // still back up inexact values from moves that the proof does not follow.
        let (q, d) = match root.proof {
            Some(proof) => (proof.value(), proof.draw()),
            None => (root.value(), root.draw()),
        };
        let wdl = [
            ((1.0 + q - d) / 2.0).clamp(0.0, 1.0),
            d,
            ((1.0 - q - d) / 2.0).clamp(0.0, 1.0),
        ];
        let completed_q = range_q(&self.tree, range.clone(), v_mix(&self.tree, ROOT));
        SearchResult {
            best_move: self.tree.edges[best].mv,
            moves: self.tree.edges[range.clone()]
                .iter()
                .map(|e| e.mv)
                .collect(),
            visits: range.clone().map(|e| self.tree.edge_visits(e)).collect(),
            policy: self.policy.clone(),
            value: q,
            wdl,
            proven: root.proof,
            network_value: root.raw_value,
            network_wdl: self.network_wdl,
            best_q: self
                .tree
                .edge_q(best)
                .unwrap_or_else(|| v_mix(&self.tree, ROOT)),
            best_d: self.tree.edge_d(best).unwrap_or(d),
            q: completed_q.clone(),
            policy_q: match root.proof {
                Some(proof) => proof.value(),
                None => {
                    let sum: f32 = self
                        .policy
                        .iter()
                        .zip(&completed_q)
                        .map(|(p, q)| p * q)
                        .sum();
                    sum.clamp(-1.0, 1.0)
                }
            },
            move_outcomes: range
                .clone()
                .map(|e| {
                    self.tree
                        .edge_proof(e)
                        .filter(|_| self.config.solver)
                        .map(|p| p.outcome.flip())
                })
                .collect(),
            prior_kl: kl_divergence(
                &self.policy,
                self.tree.edges[range.clone()].iter().map(|e| e.prior),
            ),
            simulations: self.simulations,
            nodes: self.tree.nodes.len(),
        }
    }

    /// Runs a whole search with one leaf per evaluator call.
    pub fn run<E: Evaluator<G>, R: Rng + ?Sized>(
        &mut self,
        root: &G,
        budget: u32,
        evaluator: &E,
        rng: &mut R,
    ) -> Result<SearchResult<G::Move>, SearchError> {
        self.start(root, budget, rng)?;
        while self.select_leaf() == Step::Evaluate {
            self.batch.clear();
            let leaf = &self.leaves[0];
            self.batch.push(&leaf.state, &leaf.moves);
            evaluator.evaluate(&self.batch, &mut self.evaluations)?;
            check_evaluations(&self.batch, &self.evaluations)?;
            let (value, wdl) = (self.evaluations.values[0], self.evaluations.wdl[0]);
            let logits = std::mem::take(&mut self.evaluations.logits);
            self.apply_evaluation(&logits, value, wdl);
            self.evaluations.logits = logits;
        }
        Ok(self.result())
    }
}

/// Checks that `evaluations` has one value and WDL per leaf and one logit per move of `batch`.
pub fn check_evaluations<G: Game>(
    batch: &LeafBatch<G>,
    evaluations: &Evaluations,
) -> Result<(), SearchError> {
    let ok = evaluations.values.len() == batch.len()
        && evaluations.wdl.len() == batch.len()
        && evaluations.logits.len() == batch.total_moves();
    if ok {
        Ok(())
    } else {
        Err(SearchError::BadEvaluation {
            leaves: batch.len(),
            moves: batch.total_moves(),
            values: evaluations.values.len(),
            logits: evaluations.logits.len(),
        })
    }
}

/// `*slot = state.clone()`, reusing the slot's memory when it holds a state already.
fn clone_into<G: Clone>(slot: &mut Option<G>, state: &G) {
    match slot {
        Some(s) => s.clone_from(state),
        None => *slot = Some(state.clone()),
    }
}

/// A simulation's end: the state reached, its legal moves and the path from the root.
#[derive(Debug, Clone)]
struct Leaf<G: Game> {
    state: G,
    moves: Vec<G::Move>,
    path: Vec<NodeId>,
    /// Whether its evaluation has been applied.
    answered: bool,
}

/// How a simulation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Descent {
    /// At a new node that needs an evaluation.
    Leaf,
    /// At a terminal or proven node, whose exact value has been backed up.
    BackedUp,
    /// At a leaf already waiting for its evaluation; nothing was changed.
    Collision,
}

/// The scratch leaf reset to `root` (allocating only the first time).
fn scratch_leaf<'a, G: Game>(slot: &'a mut Option<Leaf<G>>, root: &G) -> &'a mut Leaf<G> {
    match slot {
        Some(leaf) => {
            leaf.state.clone_from(root);
            leaf
        }
        None => slot.insert(Leaf {
            state: root.clone(),
            moves: Vec::new(),
            path: Vec::new(),
            answered: false,
        }),
    }
}

/// Completed Q of each edge in `range`: its Q if visited, else `unvisited`.
fn range_q<M: Copy>(tree: &Tree<M>, range: std::ops::Range<usize>, unvisited: f32) -> Vec<f32> {
    range.map(|e| tree.edge_q(e).unwrap_or(unvisited)).collect()
}

/// `sum(p * ln(p / q))` over the moves where `p` is positive, in nats; a prior that rounds
/// to zero counts as the smallest positive `f32`, so that the sum stays finite.
fn kl_divergence(p: &[f32], q: impl Iterator<Item = f32>) -> f32 {
    p.iter()
        .zip(q)
        .filter(|(p, _)| **p > 0.0)
        .map(|(&p, q)| p * (p / q.max(f32::MIN_POSITIVE)).ln())
        .sum::<f32>()
        .max(0.0)
}

#[cfg(test)]
mod tests {
    use super::kl_divergence;

    #[test]
    fn the_divergence_of_a_policy_from_its_prior_is_known_in_nats() {
        let prior = [0.5, 0.25, 0.25];
        assert_eq!(kl_divergence(&prior, prior.into_iter()), 0.0);
        // All mass on the second move: ln(1 / 0.25).
        let kl = kl_divergence(&[0.0, 1.0, 0.0], prior.into_iter());
        assert!((kl - 4f32.ln()).abs() < 1e-6, "{kl}");
        // Half on each of the last two: 2 * 0.5 * ln(0.5 / 0.25) = ln 2.
        let kl = kl_divergence(&[0.0, 0.5, 0.5], prior.into_iter());
        assert!((kl - 2f32.ln()).abs() < 1e-6, "{kl}");
        // A prior of zero gives a large, finite surprise.
        let kl = kl_divergence(&[1.0, 0.0], [0.0, 1.0].into_iter());
        assert!(kl.is_finite() && kl > 80.0, "{kl}");
    }
}
