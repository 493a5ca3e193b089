//! [`SearchConfig`]: every constant of the search, with the defaults of docs/METHODS.md §3.
//!
//! Seeds are not part of the config: callers pass the random number generator.

use cfzero_settings::InvalidSetting;
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
    /// Fewer considered moves give the finalists more visits, but self-play with 8 at tiny's
    /// budget drew more of its games and learned less (docs/METHODS.md §3).
    pub gumbel_m: u32,
    /// Gumbel: `sigma(q) = (c_visit + max_b N(b)) * c_scale * q`.
    pub c_visit: f32,
    /// Gumbel: see `c_visit`.
    pub c_scale: f32,
    /// How Q is mapped to [0, 1] for `sigma`.
    pub q_normalization: QNormalization,
    /// Under [`QNormalization::MinMax`], the smallest spread of the completed Q values that is
    /// stretched to the full scale: a spread below it maps to a share of [0, 1] in proportion,
    /// so that Q values the net cannot tell apart do not swing `sigma` as much as a real
    /// difference. 0 rescales every spread to [0, 1]; 2 (the whole range of a value) is
    /// [`QNormalization::Fixed`] up to a constant, which changes no choice.
    pub q_range_floor: f32,
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
    /// Leaves that a lone search (a UCI `go`, [`crate::Driver::search`]) evaluates in one
    /// batch, selected with visits in flight ([`crate::Search::select_leaves`]); 1 is the
    /// sequential search. Searches of many games at once (self-play, matches) take one
    /// leaf per game and ignore it.
    pub batch: u32,
    /// Gumbel: consider every legal root move instead of `gumbel_m` when the budget gives
    /// each of them at least one visit in every phase of sequential halving. Play
    /// ([`SearchConfig::for_play`]) turns it on: with no root noise, a move left out is
    /// never looked at. Self-play keeps it off: its improved policy needs the noise's
    /// sample of `gumbel_m` moves.
    pub consider_all: bool,
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
            q_range_floor: 0.0,
            cpuct: 1.25,
            fpu_reduction: 0.3,
            dirichlet_alpha: 0.3,
            dirichlet_epsilon: 0.0,
            solver: true,
            batch: 32,
            consider_all: false,
        }
    }
}

impl SearchConfig {
    /// These constants for play (matches, UCI, puzzles, evaluation), where the strongest
    /// move is wanted: no root noise (Gumbel or Dirichlet), and under Gumbel every root
    /// move considered when the budget allows ([`SearchConfig::consider_all`]). The one
    /// place that defines play.
    pub fn for_play(&self) -> Self {
        SearchConfig {
            gumbel_scale: 0.0,
            dirichlet_epsilon: 0.0,
            consider_all: true,
            ..self.clone()
        }
    }

    /// The default PUCT configuration.
    pub fn puct() -> Self {
        SearchConfig {
            mode: SearchMode::Puct,
            ..SearchConfig::default()
        }
    }
}

impl SearchConfig {
    /// Checks every setting's range: a search needs at least one simulation and one root
    /// action, and finite, non-negative constants (a NaN would make every choice a tie).
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        InvalidSetting::at_least("simulations", self.simulations.into(), 1)?;
        InvalidSetting::at_least("gumbel_m", self.gumbel_m.into(), 1)?;
        InvalidSetting::at_least("batch", self.batch.into(), 1)?;
        if self.batch > u32::from(u16::MAX) {
            return Err(InvalidSetting::new(
                "batch",
                format!("must be at most {} (got {})", u16::MAX, self.batch),
            ));
        }
        let inf = f64::INFINITY;
        for (key, v) in [
            ("gumbel_scale", self.gumbel_scale),
            ("c_visit", self.c_visit),
            ("c_scale", self.c_scale),
            ("cpuct", self.cpuct),
        ] {
            InvalidSetting::in_range(key, v.into(), 0.0, false, inf)?;
        }
        // A negative reduction is a first-play bonus: odd but meaningful.
        InvalidSetting::in_range("fpu_reduction", self.fpu_reduction.into(), -inf, false, inf)
            .map_err(|_| InvalidSetting::new("fpu_reduction", "must be a finite number"))?;
        InvalidSetting::in_range(
            "dirichlet_alpha",
            self.dirichlet_alpha.into(),
            0.0,
            true,
            inf,
        )?;
        InvalidSetting::in_range("q_range_floor", self.q_range_floor.into(), 0.0, false, 2.0)?;
        InvalidSetting::in_range(
            "dirichlet_epsilon",
            self.dirichlet_epsilon.into(),
            0.0,
            false,
            1.0,
        )
    }
}
