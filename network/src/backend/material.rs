//! A network-free backend that counts material: a baseline opponent and a way to run the
//! whole inference path (encoding, batching, gathering) without a net.

use super::{Backend, BackendError, BackendOutputs, Capabilities, NamedWeights, check_inputs};
use crate::encoding::PLANES;
use cfzero_chess::HistoryFill;

/// Values of pawn, knight, bishop, rook, queen and king, in the order of the input's piece
/// planes (ours are planes 0 to 5, theirs 6 to 11 of the current position).
const PIECE_VALUES: [f32; 6] = [1.0, 3.0, 3.0, 5.0, 9.0, 0.0];

/// Material difference (in pawns) that maps to a value of tanh(1) = 0.76.
const PAWNS_PER_UNIT: f32 = 5.0;

/// Uniform policy; the value `tanh(material difference / 5)` for the side to move, with
/// no draws in its WDL.
#[derive(Debug, Clone, Copy, Default)]
pub struct MaterialBackend;

impl Backend for MaterialBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: "material",
            device: "cpu".into(),
            precision: "f32".into(),
            max_batch: usize::MAX,
            // Material ignores the history.
            history_fill: HistoryFill::default(),
        }
    }

    fn forward(
        &mut self,
        inputs: &[f32],
        n: usize,
        out: &mut BackendOutputs,
    ) -> Result<(), BackendError> {
        check_inputs(inputs, n)?;
        out.reset(n);
        for (i, position) in inputs.chunks_exact(64 * PLANES).enumerate() {
            let mut balance = 0.0;
            for token in position.chunks_exact(PLANES) {
                for (role, value) in PIECE_VALUES.iter().enumerate() {
                    balance += value * (token[role] - token[6 + role]);
                }
            }
            let v = (balance / PAWNS_PER_UNIT).tanh();
            out.values[i] = v;
            out.wdl[i * 3..i * 3 + 3].copy_from_slice(&[(1.0 + v) / 2.0, 0.0, (1.0 - v) / 2.0]);
        }
        Ok(())
    }

    fn reload(&mut self, _weights: &NamedWeights) -> Result<(), BackendError> {
        Err(BackendError::NoWeights("the material backend"))
    }
}
