//! A network-free backend that counts material: a baseline opponent and a way to run the
//! whole inference path (encoding, batching, gathering) without a net.

use super::{Backend, BackendError, BackendOutputs, Capabilities, NamedWeights, check_inputs};
use cfzero_chess::{HistoryFill, material_value, piece_value};
use cfzero_network::encoding::PLANES;
use shakmaty::Role;

/// Uniform policy; the value [`material_value`] of the material difference for the side to
/// move, with
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
                // The input's piece planes are in `Role::ALL`'s order: ours 0 to 5, theirs
                // 6 to 11 of the current position.
                for (plane, &role) in Role::ALL.iter().enumerate() {
                    balance += piece_value(role) as f32 * (token[plane] - token[6 + plane]);
                }
            }
            let v = material_value(balance);
            out.values[i] = v;
            out.wdl[i * 3..i * 3 + 3].copy_from_slice(&[(1.0 + v) / 2.0, 0.0, (1.0 - v) / 2.0]);
        }
        Ok(())
    }

    fn reload(&mut self, _weights: &NamedWeights) -> Result<(), BackendError> {
        Err(BackendError::NoWeights("the material backend"))
    }
}
