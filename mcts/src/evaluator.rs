//! The [`Evaluator`] trait and the flat buffers that carry a batch of leaves to it and back.

use crate::game::Game;

/// Why an evaluation failed.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The evaluator's backend (e.g. the inference thread) is gone.
    #[error("evaluator unavailable: {0}")]
    Unavailable(String),
    /// The backend failed on this batch.
    #[error("evaluation failed: {0}")]
    Failed(String),
}

/// A batch of leaf positions with their legal moves, stored flat so that a reused batch
/// allocates nothing once warm.
#[derive(Debug, Clone)]
pub struct LeafBatch<G: Game> {
    states: Vec<G>,
    len: usize,
    moves: Vec<G::Move>,
    move_starts: Vec<usize>,
}

impl<G: Game> Default for LeafBatch<G> {
    fn default() -> Self {
        LeafBatch {
            states: Vec::new(),
            len: 0,
            moves: Vec::new(),
            move_starts: vec![0],
        }
    }
}

impl<G: Game> LeafBatch<G> {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Removes all leaves, keeping the memory.
    pub fn clear(&mut self) {
        self.len = 0;
        self.moves.clear();
        self.move_starts.truncate(1);
    }

    /// Appends a leaf: a copy of `state` (into a reused slot) and its legal moves.
    pub fn push(&mut self, state: &G, legal: &[G::Move]) {
        if self.len < self.states.len() {
            self.states[self.len].clone_from(state);
        } else {
            self.states.push(state.clone());
        }
        self.len += 1;
        self.moves.extend_from_slice(legal);
        self.move_starts.push(self.moves.len());
    }

    /// Number of leaves.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch has no leaves.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The state of leaf `i`.
    pub fn state(&self, i: usize) -> &G {
        &self.states[..self.len][i]
    }

    /// The legal moves of leaf `i`.
    pub fn moves(&self, i: usize) -> &[G::Move] {
        &self.moves[self.move_starts[i]..self.move_starts[i + 1]]
    }

    /// The range of leaf `i`'s moves in the flat move list (and in [`Evaluations::logits`]).
    pub fn move_range(&self, i: usize) -> std::ops::Range<usize> {
        self.move_starts[i]..self.move_starts[i + 1]
    }

    /// Total number of moves over all leaves.
    pub fn total_moves(&self) -> usize {
        self.moves.len()
    }
}

/// The evaluator's answer for a [`LeafBatch`], aligned with it.
#[derive(Debug, Clone, Default)]
pub struct Evaluations {
    /// Prior logits, one per move of the batch, in the batch's flat move order.
    pub logits: Vec<f32>,
    /// Value of each leaf for its side to move, in [-1, 1].
    pub values: Vec<f32>,
    /// Win/draw/loss probabilities of each leaf for its side to move.
    pub wdl: Vec<[f32; 3]>,
}

impl Evaluations {
    /// Clears and sizes the buffers for `leaves` leaves with `moves` moves in all.
    pub fn reset(&mut self, leaves: usize, moves: usize) {
        self.logits.clear();
        self.logits.resize(moves, 0.0);
        self.values.clear();
        self.values.resize(leaves, 0.0);
        self.wdl.clear();
        self.wdl.resize(leaves, [0.0, 1.0, 0.0]);
    }
}

/// Evaluates leaves: prior logits over each leaf's legal moves and a value.
///
/// Split in two so that a caller can prepare more work while a batch is being evaluated
/// (e.g. by an inference thread shared with other callers): [`Evaluator::submit`] hands a
/// batch over and returns at once; [`Evaluator::complete`] waits for its results.
pub trait Evaluator<G: Game>: Send + Sync {
    /// A batch in flight.
    type Pending: Send;

    /// Starts evaluating `batch`.
    fn submit(&self, batch: &LeafBatch<G>) -> Result<Self::Pending, EvalError>;

    /// Waits for the results of a submitted batch and writes them to `out`
    /// (which it resets to the batch's size).
    fn complete(&self, pending: Self::Pending, out: &mut Evaluations) -> Result<(), EvalError>;

    /// Evaluates `batch` and waits for the results.
    fn evaluate(&self, batch: &LeafBatch<G>, out: &mut Evaluations) -> Result<(), EvalError> {
        let pending = self.submit(batch)?;
        self.complete(pending, out)
    }
}
