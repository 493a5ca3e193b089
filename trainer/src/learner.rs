//! The learner: training steps on host batches, with NAdam, the schedule, clipping and SWA.

use std::path::Path;
use std::time::Instant;

use cfzero_network::autocast::bf16_autocast;
use cfzero_network::checkpoint::{
    CheckpointError, load_net, load_optimizer, load_weights_into, save_net, save_net_with,
    save_optimizer,
};
use cfzero_network::encoding::{PLANES, POLICY_SIZE, TOKEN_FLOATS};
use cfzero_network::mask::mask_illegal;
use cfzero_network::optim::nadam::{NAdam, NAdamConfig, clip_grad_norm};
use cfzero_network::optim::swa::Swa;
use cfzero_network::{ModelOutputs, Net, TrainingBatch, loss};
use tch::{Kind, Tensor};

use crate::config::{TrainConfig, TrainPrecision};
use crate::sample::HostBatch;

/// Metadata key of a published net: the training step at which it was published.
pub const STEP_KEY: &str = "cfzero.trainer_step";

/// Metadata key of a published net: the name of the trainer state saved with it (the trainer
/// session's tag), so that a resume loads that state and no other.
pub const STATE_KEY: &str = "cfzero.trainer_state";

/// Where [`Learner::save_state`] keeps the SWA average: beside the trainer weights,
/// `NAME.swa.safetensors`.
pub fn swa_path(weights: &Path) -> std::path::PathBuf {
    weights.with_extension("swa.safetensors")
}

/// What one training step measured.
#[derive(Debug, Clone, PartialEq)]
pub struct StepMetrics {
    /// Step number (1-based, after the step).
    pub step: u64,
    /// Weighted total loss.
    pub loss: f64,
    /// Each unweighted loss term, by name.
    pub terms: Vec<(&'static str, f64)>,
    /// Share of positions whose most likely legal move is the target's most likely move.
    pub policy_accuracy: f64,
    /// Mean squared error of the winner head's W - L against the game result.
    pub value_mse: f64,
    /// Learning rate used.
    pub lr: f64,
    /// Gradient norm before clipping.
    pub grad_norm: f64,
    /// Positions per second of this step.
    pub samples_per_second: f64,
}

/// A net being trained.
#[derive(Debug)]
pub struct Learner {
    net: Net,
    opt: NAdam,
    swa: Option<Swa>,
    config: TrainConfig,
    /// Whether `config.precision`, resolved for the net's device, is bf16 autocast.
    autocast: bool,
    /// Why (for the run's log).
    precision_reason: String,
}

impl Learner {
    /// Starts training `net` (its current weights) with `config`.
    pub fn new(net: Net, config: TrainConfig) -> Learner {
        // Decoupled weight decay on the dense weight matrices only (see NAdam::for_var_store).
        let opt = NAdam::for_var_store(
            &net.vs,
            NAdamConfig {
                weight_decay: config.weight_decay,
                ..NAdamConfig::default()
            },
        );
        let swa = (config.swa_every > 0).then(|| Swa::new(config.swa_max));
        let (precision, precision_reason) = config.precision.resolve(net.device());
        let autocast = precision == TrainPrecision::Bf16;
        Learner {
            net,
            opt,
            swa,
            config,
            autocast,
            precision_reason,
        }
    }

    /// The precision the steps run in (`train.precision` resolved for the net's device:
    /// `F32` or `Bf16`) and why, e.g. `(Bf16, "auto: this CPU has avx512_bf16")`.
    pub fn precision(&self) -> (TrainPrecision, &str) {
        let precision = if self.autocast {
            TrainPrecision::Bf16
        } else {
            TrainPrecision::F32
        };
        (precision, &self.precision_reason)
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.opt.step
    }

    /// The net being trained.
    pub fn net(&self) -> &Net {
        &self.net
    }

    /// The batch as tensors on the net's device.
    fn tensors(&self, batch: &HostBatch) -> TrainingBatch {
        let b = batch.len as i64;
        let device = self.net.device();
        let t = |v: &[f32], shape: &[i64]| Tensor::from_slice(v).view(shape).to_device(device);
        TrainingBatch {
            inputs: t(
                &batch.inputs[..batch.len * TOKEN_FLOATS],
                &[b, 64, PLANES as i64],
            ),
            policy: t(&batch.policy, &[b, POLICY_SIZE as i64]),
            legal: t(&batch.legal, &[b, POLICY_SIZE as i64]),
            wdl: t(&batch.wdl, &[b, 3]),
            q: t(&batch.q, &[b]),
            st: t(&batch.st, &[b]),
            moves_left: t(&batch.moves_left, &[b]),
        }
    }

    /// The training forward pass, in the resolved precision; its outputs are f32 either way.
    fn forward(&self, inputs: &Tensor) -> ModelOutputs {
        self.forward_of(&self.net, inputs)
    }

    /// `net`'s forward pass in the training precision.
    fn forward_of(&self, net: &Net, inputs: &Tensor) -> ModelOutputs {
        if self.autocast {
            bf16_autocast(net.device(), || net.forward(inputs)).into_f32()
        } else {
            net.forward(inputs)
        }
    }

    /// The losses and accuracy of the current weights on `batch`, without training.
    /// `step`, `lr`, `grad_norm` and `samples_per_second` are those of the last step (the
    /// last two 0).
    pub fn validate(&self, batch: &HostBatch) -> StepMetrics {
        self.validate_net(&self.net, batch)
    }

    /// The SWA average as a net when it has a snapshot: what [`Learner::publish`] writes
    /// instead of the current weights.
    pub fn average(&self) -> Result<Option<Net>, CheckpointError> {
        self.swa_net(Path::new("the SWA average"))
    }

    /// As [`Learner::validate`], of `net` (the published net, [`Learner::average`] where there
    /// is one: the validation measure on held-out games is of the net that plays).
    pub fn validate_net(&self, net: &Net, batch: &HostBatch) -> StepMetrics {
        tch::no_grad(|| {
            let tb = self.tensors(batch);
            let outputs = self.forward_of(net, &tb.inputs);
            let terms = loss(&outputs, &tb, &self.config.loss);
            let (policy_accuracy, value_mse) = accuracy_and_mse(&outputs, &tb);
            StepMetrics {
                step: self.opt.step,
                loss: terms.total_value,
                terms: terms.named().to_vec(),
                policy_accuracy,
                value_mse,
                lr: self.config.lr.lr(self.opt.step.saturating_sub(1)),
                grad_norm: 0.0,
                samples_per_second: 0.0,
            }
        })
    }

    /// One optimisation step on `batch`.
    pub fn step(&mut self, batch: &HostBatch) -> StepMetrics {
        let start = Instant::now();
        let tb = self.tensors(batch);
        let lr = self.config.lr.lr(self.opt.step);
        let outputs = self.forward(&tb.inputs);
        let terms = loss(&outputs, &tb, &self.config.loss);
        self.opt.zero_grad();
        terms.total.backward();
        let grad_norm = clip_grad_norm(self.opt.params(), self.config.grad_clip);
        self.opt.step(lr);

        let (policy_accuracy, value_mse) = tch::no_grad(|| accuracy_and_mse(&outputs, &tb));
        let step = self.opt.step;
        if let Some(swa) = &mut self.swa
            && step.is_multiple_of(self.config.swa_every)
        {
            swa.update(&self.net.vs);
        }
        StepMetrics {
            step,
            loss: terms.total_value,
            terms: terms.named().to_vec(),
            policy_accuracy,
            value_mse,
            lr,
            grad_norm,
            samples_per_second: batch.len as f64 / start.elapsed().as_secs_f64().max(1e-9),
        }
    }

    /// The SWA average as a net, if it has a snapshot.
    fn swa_net(&self, path: &Path) -> Result<Option<Net>, CheckpointError> {
        match &self.swa {
            Some(swa) if swa.count() > 0 => {
                let mut net = Net::new(&self.net.config, self.net.device()).map_err(|e| {
                    CheckpointError::Mismatch {
                        path: path.to_path_buf(),
                        msg: e.to_string(),
                    }
                })?;
                swa.copy_into(&mut net.vs);
                Ok(Some(net))
            }
            _ => Ok(None),
        }
    }

    /// Writes the net to publish (the SWA average when there is one, else the current
    /// weights) to `path`, atomically, with the training step in its metadata
    /// ([`STEP_KEY`]), from which a run that lost its trainer state continues its schedule,
    /// and the caller's entries `extra` (the run names the trainer state saved with it,
    /// [`STATE_KEY`], and its minutes of training).
    pub fn publish(&self, path: &Path, extra: &[(&str, String)]) -> Result<(), CheckpointError> {
        let mut meta = vec![(STEP_KEY, self.opt.step.to_string())];
        meta.extend(extra.iter().map(|(k, v)| (*k, v.clone())));
        match self.swa_net(path)? {
            Some(average) => save_net_with(&average, path, &meta),
            None => save_net_with(&self.net, path, &meta),
        }
    }

    /// Saves the raw weights, the optimizer state (moments, step) and the SWA average
    /// (beside the weights, [`swa_path`]) for an exact resume.
    pub fn save_state(&self, weights: &Path, optimizer: &Path) -> Result<(), CheckpointError> {
        save_net(&self.net, weights)?;
        let swa_path = swa_path(weights);
        let swa_n = match self.swa_net(&swa_path)? {
            Some(average) => {
                save_net(&average, &swa_path)?;
                self.swa.as_ref().map_or(0, Swa::count)
            }
            None => 0,
        };
        save_optimizer(&self.opt, &format!("{{\"swa_n\":{swa_n}}}"), optimizer)
    }

    /// Restores what [`Learner::save_state`] wrote, the SWA average included (a state
    /// written before it was saved restarts the average).
    pub fn load_state(&mut self, weights: &Path, optimizer: &Path) -> Result<(), CheckpointError> {
        load_weights_into(&mut self.net, weights)?;
        let extra = load_optimizer(&mut self.opt, optimizer)?;
        let swa_n = serde_json::from_str::<serde_json::Value>(&extra)
            .ok()
            .and_then(|v| v["swa_n"].as_u64())
            .unwrap_or(0);
        let swa_path = swa_path(weights);
        if let Some(swa) = &mut self.swa
            && swa_n > 0
        {
            let average = load_net(&swa_path, self.net.device())?;
            swa.restore(&average.vs, swa_n);
        }
        Ok(())
    }

    /// Continues the step counter (and with it the learning-rate schedule) at `step`, for a
    /// run whose optimizer state is lost; the fresh moments keep their own count from zero
    /// (`NAdam::moment_steps`), so their bias correction is that of a first step.
    pub fn set_steps(&mut self, step: u64) {
        self.opt.step = step;
    }

    /// Snapshots in the SWA average (0 without SWA).
    pub fn swa_count(&self) -> u64 {
        self.swa.as_ref().map_or(0, Swa::count)
    }
}

/// Policy accuracy (the most likely legal move is one of the target's most likely moves) and
/// the winner head's mean squared error of W - L against the WDL target's W - L.
///
/// A move tied with the target's best counts: a teacher's target gives every move of the same
/// score the same share (all the mates of a won position, moves of equal centipawns), and
/// comparing with one arbitrary index of them undercounted agreement. Rows without a policy
/// target (positions trained for their value alone) are left out of the accuracy; a batch
/// with none has accuracy NaN.
fn accuracy_and_mse(outputs: &cfzero_network::ModelOutputs, tb: &TrainingBatch) -> (f64, f64) {
    let legal = tb.legal.gt(0.5);
    let predicted = mask_illegal(&outputs.policy, &legal).argmax(-1, true);
    let best = tb.policy.amax([-1i64].as_slice(), true);
    let targeted = best.gt(0.0).to_kind(Kind::Float);
    let agree = tb
        .policy
        .gather(-1, &predicted, false)
        .ge_tensor(&(&best * (1.0 - 1e-6)))
        .to_kind(Kind::Float);
    let rows = targeted.sum(Kind::Float).double_value(&[]);
    let acc = if rows > 0.0 {
        (agree * &targeted).sum(Kind::Float).double_value(&[]) / rows
    } else {
        f64::NAN
    };
    let mse = outputs.wdl.as_ref().map_or(f64::NAN, |wdl| {
        let p = wdl.softmax(-1, Kind::Float);
        let v = p.select(1, 0) - p.select(1, 2);
        let z = tb.wdl.select(1, 0) - tb.wdl.select(1, 2);
        (v - z).square().mean(Kind::Float).double_value(&[])
    });
    (acc, mse)
}

#[cfg(test)]
mod tests {
    use super::accuracy_and_mse;
    use cfzero_network::encoding::POLICY_SIZE;
    use cfzero_network::{ModelOutputs, TrainingBatch};
    use tch::Tensor;

    /// Rows of `POLICY_SIZE` with the given (index, value) entries, the rest `fill`.
    fn rows(entries: &[&[(usize, f32)]], fill: f32) -> Tensor {
        let mut v = vec![fill; entries.len() * POLICY_SIZE];
        for (r, row) in entries.iter().enumerate() {
            for &(i, x) in *row {
                v[r * POLICY_SIZE + i] = x;
            }
        }
        Tensor::from_slice(&v).view([entries.len() as i64, POLICY_SIZE as i64])
    }

    #[test]
    fn accuracy_counts_a_move_tied_with_the_best_and_ignores_illegal_ones_and_untargeted_rows() {
        let legal_moves: &[(usize, f32)] = &[(0, 1.0), (1, 1.0), (2, 1.0), (3, 1.0)];
        let targets = rows(
            &[
                // Moves 1 and 2 tied: the net's 2 agrees.
                &[(1, 0.4), (2, 0.4), (3, 0.2)],
                // 1 is the best alone: the net's 2 does not agree.
                &[(1, 0.6), (2, 0.4)],
                // The net's largest logit is on an illegal move; its best legal one is 1.
                &[(1, 0.7), (3, 0.3)],
                // No policy target (a position trained for its value alone): not counted.
                &[],
            ],
            0.0,
        );
        let logits = rows(
            &[
                &[(2, 3.0), (1, 1.0)],
                &[(2, 3.0), (1, 1.0)],
                &[(10, 9.0), (1, 2.0)],
                &[(2, 3.0), (1, 1.0)],
            ],
            0.0,
        );
        let n = 4;
        let outputs = ModelOutputs {
            policy: logits,
            soft_policy: None,
            wdl: None,
            q: None,
            st: None,
            moves_left: None,
        };
        let batch = TrainingBatch {
            inputs: Tensor::zeros([n, 1], (tch::Kind::Float, tch::Device::Cpu)),
            policy: targets,
            legal: rows(&[legal_moves, legal_moves, legal_moves, legal_moves], 0.0),
            wdl: Tensor::zeros([n, 3], (tch::Kind::Float, tch::Device::Cpu)),
            q: Tensor::zeros([n], (tch::Kind::Float, tch::Device::Cpu)),
            st: Tensor::zeros([n], (tch::Kind::Float, tch::Device::Cpu)),
            moves_left: Tensor::zeros([n], (tch::Kind::Float, tch::Device::Cpu)),
        };
        let (accuracy, mse) = accuracy_and_mse(&outputs, &batch);
        assert!((accuracy - 2.0 / 3.0).abs() < 1e-6, "{accuracy}");
        assert!(mse.is_nan(), "no winner head, no mean squared error");
    }
}
