//! Built-in evaluators for tests and benchmarks: [`UniformEvaluator`] for any game and
//! [`MaterialEvaluator`] for chess.

use cfzero_chess::ChessState;

use crate::evaluator::{EvalError, Evaluations, Evaluator, LeafBatch};
use crate::game::Game;

/// Equal priors (all logits 0), value 0 and WDL [0, 1, 0] for every position.
#[derive(Debug, Clone, Copy, Default)]
pub struct UniformEvaluator;

/// Sizes of a batch handed to an evaluator that computes its answer later.
#[derive(Debug, Clone, Copy)]
pub struct BatchShape {
    leaves: usize,
    moves: usize,
}

impl<G: Game> Evaluator<G> for UniformEvaluator {
    type Pending = BatchShape;

    fn submit(&self, batch: &LeafBatch<G>) -> Result<BatchShape, EvalError> {
        Ok(BatchShape {
            leaves: batch.len(),
            moves: batch.total_moves(),
        })
    }

    fn complete(&self, pending: BatchShape, out: &mut Evaluations) -> Result<(), EvalError> {
        out.reset(pending.leaves, pending.moves);
        Ok(())
    }
}

/// Equal priors and a value from the material balance ([`cfzero_chess::material_balance`]):
/// `tanh(balance / scale)` for the side to move. WDL puts the value's mass on
/// win or loss and the rest on draw.
#[derive(Debug, Clone, Copy)]
pub struct MaterialEvaluator {
    /// Pawns of advantage for which the value is tanh(1) ≈ 0.76.
    pub scale: f32,
}

impl Default for MaterialEvaluator {
    fn default() -> Self {
        MaterialEvaluator {
            scale: cfzero_chess::PAWNS_PER_UNIT,
        }
    }
}

impl MaterialEvaluator {
    /// The value of a position for its side to move.
    pub fn value(&self, state: &ChessState) -> f32 {
        use shakmaty::Position;
        let pos = state.position();
        let balance = cfzero_chess::material_balance(pos.board(), pos.turn());
        (balance as f32 / self.scale).tanh()
    }
}

/// Values computed at submission, moved out at completion.
#[derive(Debug)]
pub struct MaterialPending {
    values: Vec<f32>,
    moves: usize,
}

impl Evaluator<ChessState> for MaterialEvaluator {
    type Pending = MaterialPending;

    fn submit(&self, batch: &LeafBatch<ChessState>) -> Result<MaterialPending, EvalError> {
        let values = (0..batch.len())
            .map(|i| self.value(batch.state(i)))
            .collect();
        Ok(MaterialPending {
            values,
            moves: batch.total_moves(),
        })
    }

    fn complete(&self, pending: MaterialPending, out: &mut Evaluations) -> Result<(), EvalError> {
        out.reset(pending.values.len(), pending.moves);
        for (i, &v) in pending.values.iter().enumerate() {
            out.values[i] = v;
            out.wdl[i] = [v.max(0.0), 1.0 - v.abs(), (-v).max(0.0)];
        }
        Ok(())
    }
}
