//! How far a backend's outputs stray from the reference net's on the same inputs (the
//! native pass in bf16 against libtorch's f32, for `cfzero bench nn`'s accuracy table).

use cfzero_network::Net;
use cfzero_network::encoding::POLICY_SIZE;
use cfzero_network::precision::{PrecisionError, compare_outputs};
use tch::{Kind, Tensor};

use super::{Backend, BackendError, BackendOutputs};

/// [`cfzero_network::precision::compare_nets`] for a backend against the reference net:
/// `other` evaluates the inputs `[N, 64, 112]` through [`Backend::forward`]. `Ok(None)` where
/// the comparison has nothing to compare (no value head, or `legal` not one entry a
/// position).
pub fn compare_backend(
    reference: &Net,
    other: &mut dyn Backend,
    inputs: &Tensor,
    legal: &[Vec<usize>],
) -> Result<Option<PrecisionError>, BackendError> {
    let n = inputs.size().first().copied().unwrap_or(0) as usize;
    if n == 0 || legal.len() != n {
        return Ok(None);
    }
    let flat = Vec::<f32>::try_from(inputs.to_kind(Kind::Float).reshape([-1]))
        .map_err(|e| BackendError::Forward(format!("inputs: {e}")))?;
    let mut out = BackendOutputs::default();
    other.forward(&flat, n, &mut out)?;
    let policy = Tensor::from_slice(&out.policy).view([n as i64, POLICY_SIZE as i64]);
    let values = Tensor::from_slice(&out.values);
    Ok(compare_outputs(reference, inputs, legal, policy, values))
}
