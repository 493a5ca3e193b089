//! [`SearchConfig`]: every constant of the search, with the defaults of docs/METHODS.md §3.
//!
//! Seeds are not part of the config: callers pass the random number generator.

use serde::{Deserialize, Serialize};

/// Which search to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Gumbel root search with sequential halving and deterministic non-root selection
    /// (self-play, small budgets).
    #[default]
    Gumbel,
    /// PUCT everywhere (analysis and play with large node counts).
    Puct,
}

/// How Q values are mapped to [0, 1] before `sigma` scales them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum QNormalization {
    /// Rescale by the minimum and maximum of the completed Q values at that node
    /// (mctx's default, docs/METHODS.md §3); all equal values map to 0. The improved policy then
    /// moves well away from the prior even while values are close: measured on the tiny
    /// preset's first generation, the self-play policy targets had an entropy of 2.31 nats
    /// (most likely move 0.26) against 3.04 (0.13) with `Fixed`, over 28 legal moves on
    /// average, and with `Fixed` they stayed near uniform for 15 generations, so the policy
    /// learned nothing. Where values are exactly flat (the uniform evaluator) it blows
    /// rounding up to the full scale, which leaves tic-tac-toe mistakes that no budget removes.
    #[default]
    MinMax,
    /// Fixed bounds: q = (Q + 1) / 2, natural for values bounded by -1 and 1.
    Fixed,
}

/// All constants of the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Gumbel or PUCT.
    pub mode: SearchMode,
    /// Simulations per search when a caller does not give a budget of its own.
    pub simulations: u32,
    /// Gumbel: the root noise is `gumbel_scale * g(a)`. 1 in self-play (the noise is what makes
    /// the improved policy an unbiased improvement); 0 for strongest play, where the root
    /// picks the best actions by logits and Q alone.
    pub gumbel_scale: f32,
    /// Gumbel: at most this many root actions are considered (m = min(gumbel_m, legal, n)).
    pub gumbel_m: u32,
    /// Gumbel: `sigma(q) = (c_visit + max_b N(b)) * c_scale * q`.
    pub c_visit: f32,
    /// Gumbel: see `c_visit`.
    pub c_scale: f32,
    /// How Q is mapped to [0, 1] for `sigma`.
    pub q_normalization: QNormalization,
    /// PUCT: exploration constant.
    pub cpuct: f32,
    /// PUCT: an unvisited child gets the parent's Q minus
    /// `fpu_reduction * sqrt(sum of the priors of visited children)`.
    pub fpu_reduction: f32,
    /// PUCT: concentration of the Dirichlet noise mixed into the root priors.
    pub dirichlet_alpha: f32,
    /// PUCT: weight of the Dirichlet noise at the root (0 disables it).
    pub dirichlet_epsilon: f32,
    /// Propagate proven values up the tree ([`crate::solver`]): proven nodes get exact
    /// values, simulations stop at them, and selection and the final move follow proofs.
    /// A node that has a mating move ([`crate::Game::immediate_win`]) is proven when first
    /// reached, without an evaluation: this is what lets a search with an evaluator that
    /// knows nothing find mates in two (every one of sunfish's 212 at 800 simulations,
    /// against 70 of 212 at 2000 without), at about a third of the uniform evaluator's
    /// nodes per second (a network's evaluations cost far more).
    /// Off, only terminal nodes are proven (they are exact anyway) and their ancestors
    /// keep running means, as in plain MCTS; for comparisons and for tests of the backup
    /// arithmetic.
    pub solver: bool,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            mode: SearchMode::Gumbel,
            simulations: 200,
            gumbel_scale: 1.0,
            gumbel_m: 16,
            c_visit: 50.0,
            c_scale: 0.1,
            q_normalization: QNormalization::MinMax,
            cpuct: 1.25,
            fpu_reduction: 0.3,
            dirichlet_alpha: 0.3,
            dirichlet_epsilon: 0.0,
            solver: true,
        }
    }
}

impl SearchConfig {
    /// The default PUCT configuration.
    pub fn puct() -> Self {
        SearchConfig {
            mode: SearchMode::Puct,
            ..SearchConfig::default()
        }
    }
}
