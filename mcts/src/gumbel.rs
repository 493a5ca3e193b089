//! The Gumbel root: noise drawn once per search, the top-m considered actions, sequential
//! halving over the budget, the final move rule and the improved policy pi' (docs/METHODS.md §3).
//!
//! Each action's score is `g(a) + logit(a) + sigma(completedQ(a))`. Survivors of a phase are
//! visited round-robin, best first; at the end of a phase the best half (by score) survives.
//!
//! Proofs leave the schedule alone, so the root visits still sum to the budget: a proven
//! move's completed Q is exact (+1 keeps it among the survivors, -1 drops it at the next
//! halving), and a visit to it costs no evaluation (the simulation stops at the proven
//! child). They decide the final move, though: the shortest proven win, and never a proven
//! loss while another move is not one.

use rand::Rng;
use rand_distr::{Distribution, Gumbel};

use crate::config::SearchConfig;
use crate::qtransform::{improved_policy, sigma_completed_q};
use crate::select;
use crate::seq_halving::{next_survivors, phase_count, visits_per_action};
use crate::solver::{self, MoveClass};
use crate::strategy::{InteriorSelection, RootSelection};
use crate::tree::NodeId;
use crate::tree::{ROOT, Tree};

/// The root's schedule state; all buffers are reused across searches.
#[derive(Debug, Clone, Default)]
pub struct GumbelRoot {
    /// g(a) for every root move, in root edge order.
    noise: Vec<f32>,
    /// Surviving actions (offsets into the root's edges), best first.
    survivors: Vec<u32>,
    /// Budget n of this search.
    budget: u32,
    /// Number of phases, `ceil(log2 m)`.
    phases: u32,
    /// Current phase; `== phases` once only the leftover remains.
    phase: u32,
    /// Visits per survivor in the current phase.
    visits: u32,
    /// Completed rounds over the survivors in this phase.
    round: u32,
    /// Next survivor of the current round.
    position: usize,
    /// Scratch: sigma(completedQ) of the root edges.
    sigma: Vec<f32>,
    /// Scratch: scores of the root edges.
    scores: Vec<f32>,
    /// An edge given back ([`RootSelection::give_back`]), handed out again next.
    deferred: Option<usize>,
}

impl GumbelRoot {
    /// Draws fresh noise, `scale * g` with g standard Gumbel, for `moves` root moves. Done
    /// before the root is evaluated, so that the random numbers a search uses depend only
    /// on the order in which searches start. The draws happen even at scale 0, so that the
    /// generator advances the same way whatever the scale.
    pub fn draw_noise<R: Rng + ?Sized>(&mut self, moves: usize, scale: f32, rng: &mut R) {
        let gumbel = Gumbel::new(0.0f32, 1.0).expect("standard Gumbel parameters are valid");
        self.noise.clear();
        self.noise
            .extend((0..moves).map(|_| scale * gumbel.sample(rng)));
    }

    /// The noise of each root move.
    pub fn noise(&self) -> &[f32] {
        &self.noise
    }

    /// Chooses the m considered actions by `g + logits` once the root is expanded.
    pub fn begin<M: Copy>(&mut self, tree: &Tree<M>, budget: u32, config: &SearchConfig) {
        let root = &tree.nodes[ROOT as usize];
        let legal = root.num_edges;
        let m = considered(config, legal, budget);
        let first = root.first_edge as usize;
        self.scores.clear();
        self.scores
            .extend((0..legal as usize).map(|i| self.noise[i] + tree.edges[first + i].logit));
        self.survivors.clear();
        self.survivors.extend(0..legal);
        sort_by_score(&mut self.survivors, &self.scores);
        // A move proven to win when the root was expanded (a mate in one) is always
        // considered: left out, it would get no visit, and the improved policy, the target
        // the net learns from, would miss the mate. It takes the last considered place.
        let winning = |&i: &u32| {
            tree.edge_proof(first + i as usize)
                .is_some_and(|p| p.outcome == crate::game::Terminal::Loss)
        };
        if let Some(pos) = self.survivors.iter().position(winning)
            && pos >= m as usize
        {
            let mate = self.survivors.remove(pos);
            self.survivors.insert(m as usize - 1, mate);
        }
        self.survivors.truncate(m as usize);
        self.deferred = None;
        self.budget = budget;
        self.phases = phase_count(m);
        self.phase = 0;
        self.round = 0;
        self.position = 0;
        self.visits = visits_per_action(budget, self.phases, m);
    }

    /// Whether the next [`GumbelRoot::next_action`] ends a phase (and so ranks the
    /// survivors by the values backed up so far).
    pub fn phase_ends(&self) -> bool {
        self.phase < self.phases && self.round == self.visits
    }

    /// The root edge (index into [`Tree::edges`]) of the next simulation.
    ///
    /// A phase ends lazily, at the first call after its last visit, so that the halving
    /// sees that visit's backed-up value.
    pub fn next_action<M: Copy>(&mut self, tree: &Tree<M>, config: &SearchConfig) -> usize {
        if self.phase_ends() {
            self.phase += 1;
            self.round = 0;
            self.position = 0;
            let k = next_survivors(self.survivors.len() as u32);
            self.rank_survivors(tree, config);
            self.survivors.truncate(k as usize);
            self.visits = visits_per_action(self.budget, self.phases, k);
        }
        let chosen = self.survivors[self.position];
        self.position += 1;
        if self.position == self.survivors.len() {
            self.position = 0;
            if self.phase < self.phases {
                self.round += 1;
            }
        }
        tree.nodes[ROOT as usize].first_edge as usize + chosen as usize
    }

    /// The move to play: the move that proofs dictate (with the solver on, see
    /// [`solver::decided_move`]), else among the most visited root actions that are not
    /// proven losses, the best by score.
    pub fn best_action<M: Copy>(&mut self, tree: &Tree<M>, config: &SearchConfig) -> usize {
        if let Some(e) = solver::decided_move(tree, ROOT, config.solver) {
            return e;
        }
        self.compute_scores(tree, config);
        let first = tree.nodes[ROOT as usize].first_edge as usize;
        // Some move is not a proven loss (else `decided_move` would have chosen).
        let playable =
            |i: usize| solver::edge_class(tree, first + i, config.solver).0 != MoveClass::Losing;
        let visits = |i: usize| tree.edge_visits(first + i);
        let most = (0..self.scores.len())
            .filter(|&i| playable(i))
            .map(visits)
            .max()
            .unwrap_or(0);
        let mut best = 0;
        let mut best_score = f32::NEG_INFINITY;
        for (i, &score) in self.scores.iter().enumerate() {
            if visits(i) == most && playable(i) && score > best_score {
                best = i;
                best_score = score;
            }
        }
        first + best
    }

    /// Sorts the survivors by score, best first.
    fn rank_survivors<M: Copy>(&mut self, tree: &Tree<M>, config: &SearchConfig) {
        self.compute_scores(tree, config);
        sort_by_score(&mut self.survivors, &self.scores);
    }

    /// `scores[i] = g(i) + logit(i) + sigma(completedQ(i))` for every root edge.
    fn compute_scores<M: Copy>(&mut self, tree: &Tree<M>, config: &SearchConfig) {
        sigma_completed_q(tree, ROOT, config, &mut self.sigma);
        let first = tree.nodes[ROOT as usize].first_edge as usize;
        self.scores.clear();
        self.scores.extend(
            self.sigma
                .iter()
                .zip(&self.noise)
                .enumerate()
                .map(|(i, (s, g))| g + tree.edges[first + i].logit + s),
        );
    }
}

impl<M: Copy> RootSelection<M> for GumbelRoot {
    fn draw_noise(&mut self, moves: usize, config: &SearchConfig, rng: &mut dyn rand::RngCore) {
        GumbelRoot::draw_noise(self, moves, config.gumbel_scale, rng);
        self.deferred = None;
    }

    fn begin(&mut self, tree: &mut Tree<M>, budget: u32, config: &SearchConfig) {
        GumbelRoot::begin(self, tree, budget, config);
    }

    fn waits_for_values(&self) -> bool {
        self.deferred.is_none() && self.phase_ends()
    }

    fn next_edge(&mut self, tree: &Tree<M>, config: &SearchConfig) -> usize {
        match self.deferred.take() {
            Some(edge) => edge,
            None => self.next_action(tree, config),
        }
    }

    fn give_back(&mut self, edge: usize) {
        debug_assert!(self.deferred.is_none(), "one edge given back at a time");
        self.deferred = Some(edge);
    }

    fn finish(
        &mut self,
        tree: &Tree<M>,
        config: &SearchConfig,
        scratch: &mut Vec<f32>,
        policy: &mut Vec<f32>,
    ) -> usize {
        root_policy(tree, config, scratch, policy);
        self.best_action(tree, config)
    }
}

/// Deterministic selection below the root ([`select::select_child`]) with its scratch
/// buffers.
#[derive(Debug, Clone, Default)]
pub struct GumbelInterior {
    sigma: Vec<f32>,
    policy: Vec<f32>,
}

impl<M: Copy> InteriorSelection<M> for GumbelInterior {
    fn select_child(&mut self, tree: &Tree<M>, node: NodeId, config: &SearchConfig) -> usize {
        select::select_child(tree, node, config, &mut self.sigma, &mut self.policy)
    }
}

/// Writes the improved policy `pi' = softmax(logits + sigma(completedQ))` over all root
/// moves to `out` (in root edge order); `sigma` is a scratch buffer.
pub fn root_policy<M: Copy>(
    tree: &Tree<M>,
    config: &SearchConfig,
    sigma: &mut Vec<f32>,
    out: &mut Vec<f32>,
) {
    sigma_completed_q(tree, ROOT, config, sigma);
    let range = tree.nodes[ROOT as usize].edge_range();
    improved_policy(tree.edges[range].iter().map(|e| e.logit), sigma, out);
}

/// The number of considered actions m: `min(gumbel_m, legal, budget)`, or every legal
/// move with [`SearchConfig::consider_all`] when the budget gives each at least one visit
/// in every phase.
pub fn considered(config: &SearchConfig, legal: u32, budget: u32) -> u32 {
    let all = u64::from(legal) * u64::from(phase_count(legal));
    if config.consider_all && all <= u64::from(budget) {
        return legal.max(1);
    }
    config.gumbel_m.min(legal).min(budget).max(1)
}

/// Sorts action offsets by descending score; ties keep the lower offset first.
fn sort_by_score(actions: &mut [u32], scores: &[f32]) {
    actions.sort_unstable_by(|&a, &b| {
        scores[b as usize]
            .total_cmp(&scores[a as usize])
            .then(a.cmp(&b))
    });
}
