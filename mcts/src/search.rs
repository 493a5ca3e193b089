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

use rand::Rng;
use rand_distr::{Distribution, Gamma};

use crate::config::{SearchConfig, SearchMode};
use crate::evaluator::{EvalError, Evaluations, Evaluator, LeafBatch};
use crate::game::{Game, Terminal};
use crate::gumbel::{GumbelRoot, root_policy};
use crate::qtransform::v_mix;
use crate::solver::{self, Proof};
use crate::tree::{NO_NODE, NodeId, NodeKind, ROOT, Tree};
use crate::{puct, select};

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
    /// Simulations run (the root's own evaluation not counted).
    pub simulations: u32,
    /// Nodes in the tree.
    pub nodes: usize,
}

/// A reusable search: buffers and the tree survive from one search to the next.
#[derive(Debug, Clone)]
pub struct Search<G: Game> {
    config: SearchConfig,
    tree: Tree<G::Move>,
    root: Option<G>,
    leaf: Option<G>,
    root_moves: Vec<G::Move>,
    leaf_moves: Vec<G::Move>,
    path: Vec<NodeId>,
    gumbel: GumbelRoot,
    dirichlet: Vec<f32>,
    budget: u32,
    simulations: u32,
    pending: bool,
    network_wdl: [f32; 3],
    sigma: Vec<f32>,
    policy: Vec<f32>,
    batch: LeafBatch<G>,
    evaluations: Evaluations,
}

impl<G: Game> Search<G> {
    /// A search with these constants.
    pub fn new(config: SearchConfig) -> Self {
        Search {
            config,
            tree: Tree::new(),
            root: None,
            leaf: None,
            root_moves: Vec::new(),
            leaf_moves: Vec::new(),
            path: Vec::new(),
            gumbel: GumbelRoot::default(),
            dirichlet: Vec::new(),
            budget: 0,
            simulations: 0,
            pending: false,
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
        self.pending = false;
        match self.config.mode {
            SearchMode::Gumbel => {
                self.gumbel
                    .draw_noise(self.root_moves.len(), self.config.gumbel_scale, rng)
            }
            SearchMode::Puct => self.draw_dirichlet(rng),
        }
        Ok(())
    }

    fn draw_dirichlet<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        self.dirichlet.clear();
        if self.config.dirichlet_epsilon <= 0.0 {
            return;
        }
        // A Dirichlet sample is a normalised vector of Gamma(alpha, 1) samples.
        let alpha = self.config.dirichlet_alpha.max(1e-3);
        let gamma = Gamma::new(alpha, 1.0).expect("alpha is positive");
        self.dirichlet
            .extend((0..self.root_moves.len()).map(|_| gamma.sample(rng)));
        let total: f32 = self.dirichlet.iter().sum();
        if total > 0.0 {
            self.dirichlet.iter_mut().for_each(|x| *x /= total);
        } else {
            self.dirichlet.clear();
        }
    }

    /// Whether the budget is spent (the root evaluated and `budget` simulations done).
    pub fn is_finished(&self) -> bool {
        !self.pending
            && self
                .tree
                .nodes
                .first()
                .is_some_and(|r| r.kind == NodeKind::Expanded)
            && self.simulations >= self.budget
    }

    /// Walks to the next leaf that needs an evaluation, backing up terminal leaves on the way.
    ///
    /// Must not be called while a leaf waits for [`Search::apply_evaluation`].
    pub fn select_leaf(&mut self) -> Step {
        assert!(
            !self.pending,
            "select_leaf called while a leaf waits for its evaluation"
        );
        let root = self.root.as_ref().expect("select_leaf called before start");
        if self.tree.nodes[ROOT as usize].kind == NodeKind::Unexpanded {
            clone_into(&mut self.leaf, root);
            self.leaf_moves.clone_from(&self.root_moves);
            self.path.clear();
            self.path.push(ROOT);
            self.pending = true;
            return Step::Evaluate;
        }
        while self.simulations < self.budget {
            if self.descend() {
                self.pending = true;
                return Step::Evaluate;
            }
        }
        Step::Finished
    }

    /// One simulation down to a new node. Returns true if that node needs an evaluation,
    /// false if it was terminal (and has been backed up).
    fn descend(&mut self) -> bool {
        let leaf = self
            .leaf
            .get_or_insert_with(|| self.root.clone().expect("started"));
        leaf.clone_from(self.root.as_ref().expect("started"));
        self.path.clear();
        self.path.push(ROOT);
        let mut node = ROOT;
        loop {
            let edge = if node == ROOT {
                match self.config.mode {
                    SearchMode::Gumbel => self.gumbel.next_action(&self.tree, &self.config),
                    SearchMode::Puct => puct::select_child(&self.tree, node, &self.config),
                }
            } else {
                match self.config.mode {
                    SearchMode::Gumbel => select::select_child(
                        &self.tree,
                        node,
                        &self.config,
                        &mut self.sigma,
                        &mut self.policy,
                    ),
                    SearchMode::Puct => puct::select_child(&self.tree, node, &self.config),
                }
            };
            leaf.play(self.tree.edges[edge].mv);
            let child = self.tree.edges[edge].child;
            if child == NO_NODE {
                let child = self.tree.add_child(edge);
                self.path.push(child);
                leaf.legal_moves(&mut self.leaf_moves);
                return match leaf.terminal(&self.leaf_moves) {
                    Some(outcome) => {
                        self.tree.set_terminal(child, outcome);
                        self.back_up_proven(Proof::terminal(outcome));
                        // Only a new terminal creates a proof, so only here can
                        // proofs change.
                        if self.config.solver {
                            solver::propagate(&mut self.tree, &self.path);
                        }
                        false
                    }
                    None if self.config.solver
                        && leaf.immediate_win(&self.leaf_moves).is_some() =>
                    {
                        // Proven a win in one ply without an evaluation; the node stays
                        // unexpanded, as a proven node below the root is never entered.
                        let proof = Proof {
                            outcome: Terminal::Win,
                            plies: 1,
                        };
                        self.tree.nodes[child as usize].proof = Some(proof);
                        self.back_up_proven(proof);
                        solver::propagate(&mut self.tree, &self.path);
                        false
                    }
                    None => true,
                };
            }
            self.path.push(child);
            let next = &self.tree.nodes[child as usize];
            // Terminal nodes are proven; other nodes only with the solver on.
            if let Some(proof) = next.proof {
                self.back_up_proven(proof);
                return false;
            }
            match next.kind {
                NodeKind::Expanded => node = child,
                NodeKind::Terminal(_) => unreachable!("terminal nodes are proven"),
                NodeKind::Unexpanded => unreachable!("a tree has at most one pending leaf"),
            }
        }
    }

    /// Backs up the exact value of the proven node at the end of the path.
    fn back_up_proven(&mut self, proof: Proof) {
        self.tree.backup(&self.path, proof.value(), proof.draw());
        self.simulations += 1;
    }

    /// The state of the leaf waiting for its evaluation.
    pub fn leaf_state(&self) -> &G {
        self.leaf.as_ref().expect("a leaf was selected")
    }

    /// The legal moves of the leaf waiting for its evaluation.
    pub fn leaf_moves(&self) -> &[G::Move] {
        &self.leaf_moves
    }

    /// Expands the pending leaf with its evaluation (logits over [`Search::leaf_moves`],
    /// value and WDL for the leaf's side to move) and backs the value up.
    ///
    /// No proof propagation is needed here: the new node has no children yet, so it is
    /// unproven and changes no ancestor's status.
    pub fn apply_evaluation(&mut self, logits: &[f32], value: f32, wdl: [f32; 3]) {
        assert!(
            self.pending,
            "apply_evaluation called without a pending leaf"
        );
        assert_eq!(
            logits.len(),
            self.leaf_moves.len(),
            "one logit per legal move"
        );
        let leaf = *self.path.last().expect("path has the leaf");
        self.tree.expand(leaf, &self.leaf_moves, logits, value);
        if leaf == ROOT {
            self.network_wdl = wdl;
            self.prove_root_immediate_win();
            match self.config.mode {
                SearchMode::Gumbel => self.gumbel.begin(&self.tree, self.budget, &self.config),
                SearchMode::Puct => self.mix_root_noise(),
            }
        } else {
            self.simulations += 1;
        }
        self.tree.backup(&self.path, value, wdl[1]);
        self.pending = false;
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

    fn mix_root_noise(&mut self) {
        if self.dirichlet.is_empty() {
            return;
        }
        let eps = self.config.dirichlet_epsilon;
        let range = self.tree.nodes[ROOT as usize].edge_range();
        for (edge, noise) in self.tree.edges[range].iter_mut().zip(&self.dirichlet) {
            edge.prior = (1.0 - eps) * edge.prior + eps * noise;
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
        let best = match self.config.mode {
            SearchMode::Gumbel => {
                root_policy(&self.tree, &self.config, &mut self.sigma, &mut self.policy);
                self.gumbel.best_action(&self.tree, &self.config)
            }
            SearchMode::Puct => {
                self.visit_policy();
                puct::best_edge(&self.tree, ROOT, &self.config)
            }
        };
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
            simulations: self.simulations,
            nodes: self.tree.nodes.len(),
        }
    }

    /// Visit counts normalised into `self.policy` (the priors if nothing was visited).
    fn visit_policy(&mut self) {
        let range = self.tree.nodes[ROOT as usize].edge_range();
        self.policy.clear();
        self.policy
            .extend(range.clone().map(|e| self.tree.edge_visits(e) as f32));
        let total: f32 = self.policy.iter().sum();
        if total > 0.0 {
            self.policy.iter_mut().for_each(|p| *p /= total);
        } else {
            self.policy.clear();
            self.policy
                .extend(self.tree.edges[range].iter().map(|e| e.prior));
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
            let leaf = self.leaf.as_ref().expect("a leaf was selected");
            self.batch.push(leaf, &self.leaf_moves);
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

/// Completed Q of each edge in `range`: its Q if visited, else `unvisited`.
fn range_q<M: Copy>(tree: &Tree<M>, range: std::ops::Range<usize>, unvisited: f32) -> Vec<f32> {
    range.map(|e| tree.edge_q(e).unwrap_or(unvisited)).collect()
}
