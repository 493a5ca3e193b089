//! The seam between batching and a neural backend (as Lc0's `backend.h` or KataGo's
//! `nninterface.h`): a batch of encoded positions in, the play heads out.
//!
//! The inference server ([`crate::server`]) owns everything around it: encoding
//! positions ([`crate::NetInput`]), merging requests into batches, gathering the
//! policy logits of each position's legal moves, statistics, and (in the search's driver)
//! the evaluation cache. A backend only runs the network: [`TchBackend`] runs the
//! Chessformer through libtorch; [`MaterialBackend`] is a network-free baseline that
//! counts material, through the same server. docs/ARCHITECTURE.md says how a third (ONNX
//! Runtime, candle, TensorRT) plugs in.

mod choice;
mod compare;
mod material;
mod native;
mod tch_net;

pub use choice::{BackendChoice, ChoiceError, ServingBackend, UnknownBackend};
pub use compare::compare_backend;
pub use material::MaterialBackend;
pub use native::{NATIVE_NAME, NativeBackend, bf16_supported as native_bf16_supported};
pub use tch_net::TchBackend;

use crate::INPUT_FLOATS;
use cfzero_chess::HistoryFill;
use cfzero_network::encoding::POLICY_SIZE;

/// Why a backend could not evaluate or reload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The forward pass failed (e.g. out of device memory).
    #[error("forward pass failed: {0}")]
    Forward(String),
    /// New weights do not fit the network (a tensor missing, extra or of another shape).
    #[error("weights do not fit: {0}")]
    Weights(String),
    /// The backend has no weights to replace.
    #[error("{0} has no weights to reload")]
    NoWeights(&'static str),
    /// The asked backend cannot serve the net on its device or in its precision.
    #[error(transparent)]
    Choice(#[from] ChoiceError),
}

/// What a backend is and can do, for logs and for the server's batching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// The backend's name, e.g. `libtorch`.
    pub name: &'static str,
    /// Where it computes, e.g. `cpu` or `cuda:0`.
    pub device: String,
    /// The number format of its arithmetic, e.g. `f32` or `bf16`.
    pub precision: String,
    /// The batch size it was prepared for (larger batches still run).
    pub max_batch: usize,
    /// How the net fills the input history before a position set up from a FEN (the
    /// convention it was trained with); the inference server encodes positions with it.
    pub history_fill: HistoryFill,
}

/// The play heads of a batch of `n` positions, flat and reused between calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BackendOutputs {
    /// Policy logits over the 1858 moves of Lc0's policy map, `n * 1858`.
    pub policy: Vec<f32>,
    /// Win/draw/loss probabilities for the side to move, `n * 3`.
    pub wdl: Vec<f32>,
    /// The value the search backs up for the side to move, in [-1, 1], `n`.
    pub values: Vec<f32>,
}

impl BackendOutputs {
    /// Clears and sizes the buffers for `n` positions (values zero, WDL a certain draw).
    pub fn reset(&mut self, n: usize) {
        self.policy.clear();
        self.policy.resize(n * POLICY_SIZE, 0.0);
        self.wdl.clear();
        self.wdl.resize(n * 3, 0.0);
        for w in self.wdl.chunks_exact_mut(3) {
            w[1] = 1.0;
        }
        self.values.clear();
        self.values.resize(n, 0.0);
    }
}

/// Named weights in a backend-neutral form (row-major f32), as the trainer publishes them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamedWeights {
    /// Each tensor: its name in the net's variable store, its shape and its values.
    pub tensors: Vec<(String, Vec<i64>, Vec<f32>)>,
}

/// A neural backend: evaluates encoded positions.
///
/// Called from one inference thread at a time; a backend need not be `Sync`.
pub trait Backend: Send {
    /// What it is (name, device, precision, prepared batch).
    fn capabilities(&self) -> Capabilities;

    /// Evaluates `n` positions: `inputs` holds `n * INPUT_FLOATS` floats, each position as
    /// 64 tokens of 112 features ([`cfzero_network::encoding::encode_tokens`]); `out` is reset to
    /// `n` positions and filled.
    fn forward(
        &mut self,
        inputs: &[f32],
        n: usize,
        out: &mut BackendOutputs,
    ) -> Result<(), BackendError>;

    /// Replaces the weights between two forward passes (a new generation), after checking
    /// that every tensor fits.
    fn reload(&mut self, weights: &NamedWeights) -> Result<(), BackendError>;
}

/// Checks that `weights` fit a served net whose tensors have the shapes `served` (by name):
/// the same number of tensors, each one served, of the served shape, with as many values as
/// its shape holds. Both net backends check a reload with it before touching their weights.
fn check_fit(
    weights: &NamedWeights,
    served: impl Fn(&str) -> Option<Vec<i64>>,
    served_count: usize,
) -> Result<(), BackendError> {
    if served_count != weights.tensors.len() {
        return Err(BackendError::Weights(format!(
            "{} tensors published, {served_count} served",
            weights.tensors.len()
        )));
    }
    for (name, shape, values) in &weights.tensors {
        match served(name) {
            Some(s) if s == *shape => {}
            Some(s) => {
                return Err(BackendError::Weights(format!(
                    "tensor `{name}` has shape {shape:?}, served {s:?}"
                )));
            }
            None => {
                return Err(BackendError::Weights(format!(
                    "tensor `{name}` is not in the served net"
                )));
            }
        }
        let numel: i64 = shape.iter().product();
        if numel as usize != values.len() {
            return Err(BackendError::Weights(format!(
                "tensor `{name}` has {} values for shape {shape:?}",
                values.len()
            )));
        }
    }
    Ok(())
}

/// Checks that `inputs` holds `n` positions.
fn check_inputs(inputs: &[f32], n: usize) -> Result<(), BackendError> {
    if inputs.len() == n * INPUT_FLOATS {
        Ok(())
    } else {
        Err(BackendError::Forward(format!(
            "{} input floats for {n} positions (need {})",
            inputs.len(),
            n * INPUT_FLOATS
        )))
    }
}
