//! The two choices a search makes, as strategies (mctx passes them as functions): how the
//! root picks each simulation's first move and the move to play ([`RootSelection`]), and
//! how a simulation walks on below the root ([`InteriorSelection`]).
//!
//! [`strategies`] is the one place that maps [`SearchMode`] to them. A new search variant
//! is a new file with two implementations and one line there; [`crate::Search`] knows
//! only the traits.

use std::fmt::Debug;

use rand::RngCore;

use crate::config::{SearchConfig, SearchMode};
use crate::gumbel::{GumbelInterior, GumbelRoot};
use crate::puct::{PuctInterior, PuctRoot};
use crate::tree::{NodeId, Tree};

/// How the root chooses: noise, the first move of each simulation, the move to play and
/// the policy the search reports.
pub trait RootSelection<M: Copy>: Debug + Send {
    /// Draws this search's root noise for `moves` moves from `rng`, before the root is
    /// evaluated (so the numbers drawn depend only on the order searches start in).
    fn draw_noise(&mut self, moves: usize, config: &SearchConfig, rng: &mut dyn RngCore);

    /// Prepares the schedule once the root is expanded (and may mix the noise into the
    /// root's priors).
    fn begin(&mut self, tree: &mut Tree<M>, budget: u32, config: &SearchConfig);

    /// Whether the next [`RootSelection::next_edge`] reads values that simulations still
    /// in flight would change (e.g. the end of a sequential halving phase): a batched
    /// search then evaluates what it has before it goes on.
    fn waits_for_values(&self) -> bool;

    /// The root edge (an index into [`Tree::edges`]) of the next simulation.
    fn next_edge(&mut self, tree: &Tree<M>, config: &SearchConfig) -> usize;

    /// Takes back an edge that [`RootSelection::next_edge`] gave to a simulation that was
    /// abandoned (it reached a leaf already in flight): the next call gives it again, so a
    /// planned schedule stays as planned.
    fn give_back(&mut self, edge: usize);

    /// The move to play (an index into [`Tree::edges`]), and the search's policy over the
    /// root moves in `policy` (root edge order; sums to 1). `scratch` is a buffer.
    fn finish(
        &mut self,
        tree: &Tree<M>,
        config: &SearchConfig,
        scratch: &mut Vec<f32>,
        policy: &mut Vec<f32>,
    ) -> usize;
}

/// How a simulation chooses below the root.
pub trait InteriorSelection<M: Copy>: Debug + Send {
    /// The edge (an index into [`Tree::edges`]) to follow from the expanded `node`.
    /// Simulations in flight ([`crate::tree::Node::in_flight`]) count as visits.
    fn select_child(&mut self, tree: &Tree<M>, node: NodeId, config: &SearchConfig) -> usize;
}

/// The root and interior strategies of `config.mode`.
pub fn strategies<M: Copy + 'static>(
    config: &SearchConfig,
) -> (Box<dyn RootSelection<M>>, Box<dyn InteriorSelection<M>>) {
    match config.mode {
        SearchMode::Gumbel => (
            Box::new(GumbelRoot::default()),
            Box::new(GumbelInterior::default()),
        ),
        SearchMode::Puct => (Box::new(PuctRoot::default()), Box::new(PuctInterior)),
    }
}
