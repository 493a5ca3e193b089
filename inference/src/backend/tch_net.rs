//! The Chessformer through libtorch: the backend of training runs, matches and UCI.

use tch::{Kind, Tensor};

use super::{
    Backend, BackendError, BackendOutputs, Capabilities, NamedWeights, check_fit, check_inputs,
};
use crate::INPUT_FLOATS;
use cfzero_network::model::Net;
use cfzero_network::precision::kind_name;

/// A [`Net`] readied for serving ([`Net::prepare_serving`]): eval mode, the inference
/// precision, its attention weights fused for the batch size.
pub struct TchBackend {
    net: Net,
    max_batch: usize,
}

impl std::fmt::Debug for TchBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TchBackend")
            .field("capabilities", &self.capabilities())
            .finish()
    }
}

impl TchBackend {
    /// Serves `net` in `kind` (`Float` or `BFloat16`), prepared for batches of `max_batch`.
    pub fn new(mut net: Net, kind: Kind, max_batch: usize) -> Self {
        net.prepare_serving(kind, max_batch);
        TchBackend { net, max_batch }
    }

    /// The served net.
    pub fn net(&self) -> &Net {
        &self.net
    }

    /// The weights of `net` as a backend-neutral set (what [`Backend::reload`] takes).
    pub fn weights_of(net: &Net) -> Result<NamedWeights, BackendError> {
        tch::no_grad(|| {
            let mut tensors = Vec::new();
            for (name, t) in net.vs.variables() {
                let shape = t.size();
                let values = Vec::<f32>::try_from(
                    t.to_device(tch::Device::Cpu)
                        .to_kind(Kind::Float)
                        .contiguous()
                        .view([-1]),
                )
                .map_err(|e| BackendError::Weights(format!("tensor `{name}`: {e}")))?;
                tensors.push((name, shape, values));
            }
            Ok(NamedWeights { tensors })
        })
    }
}

impl Backend for TchBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: "libtorch",
            device: format!("{:?}", self.net.device()).to_lowercase(),
            precision: kind_name(self.net.kind()),
            max_batch: self.max_batch,
            history_fill: self.net.config.history_fill,
        }
    }

    fn forward(
        &mut self,
        inputs: &[f32],
        n: usize,
        out: &mut BackendOutputs,
    ) -> Result<(), BackendError> {
        check_inputs(inputs, n)?;
        let copy = |t: &Tensor, into: &mut Vec<f32>| {
            let flat = t
                .to_device(tch::Device::Cpu)
                .to_kind(Kind::Float)
                .contiguous()
                .view([-1]);
            if flat.numel() != into.len() {
                return Err(BackendError::Forward(format!(
                    "a head gave {} values, expected {}",
                    flat.numel(),
                    into.len()
                )));
            }
            let len = into.len();
            flat.copy_data(into, len);
            Ok(())
        };
        out.reset(n);
        tch::no_grad(|| {
            let x = Tensor::from_slice(inputs).view([n as i64, 64, (INPUT_FLOATS / 64) as i64]);
            let heads = self.net.forward_play(&x);
            let (wdl, values) = heads.play_values().ok_or_else(|| {
                BackendError::Forward("the net has neither a winner head nor a q head".into())
            })?;
            copy(&heads.policy, &mut out.policy)?;
            copy(&wdl, &mut out.wdl)?;
            copy(&values, &mut out.values)
        })
    }

    fn reload(&mut self, weights: &NamedWeights) -> Result<(), BackendError> {
        let vars = self.net.vs.variables();
        check_fit(weights, |name| vars.get(name).map(|v| v.size()), vars.len())?;
        let device = self.net.device();
        tch::no_grad(|| {
            for (name, shape, values) in &weights.tensors {
                let src = Tensor::from_slice(values)
                    .view(shape.as_slice())
                    .to_device(device);
                vars[name].shallow_clone().copy_(&src);
            }
        });
        // The fused attention weights are derived from the plain ones: derive them again.
        let form = self.net.model.shaw_form;
        self.net.model.prepare_inference(form);
        Ok(())
    }
}
