//! The `[train]` table: how the net learns from the replay window.

use cfzero_network::LossWeights;
use cfzero_network::optim::schedule::LrSchedule;
use cfzero_network::precision::Bf16Support;
use cfzero_settings::InvalidSetting;
use serde::{Deserialize, Serialize};

/// Training options (docs/METHODS.md §2, §6, §7). A key left out, or the whole `[train]`
/// table, takes [`TrainConfig::default`]'s value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Positions per training step.
    pub batch_size: usize,
    /// Learning-rate schedule over the run's total steps.
    pub lr: LrSchedule,
    /// Global gradient-norm clip.
    pub grad_clip: f64,
    /// Weight decay of NAdam, decoupled from the gradient (AdamW-style): each step multiplies
    /// the dense layers' weight matrices by `1 - lr * weight_decay`; biases, norms, gates and
    /// Shaw tables are not decayed (`cfzero_network::optim::nadam::decays`). 0 = none.
    pub weight_decay: f64,
    /// Stochastic weight averaging of the published net: add a snapshot every this many
    /// steps (0 publishes the raw weights).
    pub swa_every: u64,
    /// SWA: the most snapshots the average weighs equally (then older ones fade).
    pub swa_max: u64,
    /// Loader threads that build batches ahead of the trainer.
    pub loader_threads: usize,
    /// Loss weights of each head.
    pub loss: LossWeights,
    /// Which search value of a position is the q target (and, with `q_ratio`, part of the
    /// WDL target).
    pub q_target: QTarget,
    /// Share of the WDL (winner) target taken from the search's value instead of the
    /// game's result (Lc0's `q_ratio`): 0 trains on results only. The search value gives
    /// every position of a game its own label, where the result gives them all one.
    pub q_ratio: f32,
    /// `q_ratio` for the positions of games adjudicated a draw at the game-length cap
    /// (`selfplay.max_plies`); absent, `q_ratio`. That draw is no result of the game: the net
    /// cannot see the ply count, and a side a queen up that has not mated by the cap is
    /// labelled as drawn as a dead-equal position. 1 trains such positions on the search's
    /// value alone.
    pub capped_q_ratio: Option<f32>,
    /// TD(lambda) value targets: the game's result in the WDL target is replaced by the
    /// return that weighs each later position's search value `(1 - td_lambda) *
    /// td_lambda^(k - 1)`, k plies on, and the result the rest (`cfzero_trainer::sample::td_wdl`;
    /// per ply, so 0.97 looks about 33 plies ahead). Absent, the result alone (lambda 1).
    /// Applies to self-play's records; PGN games carry their result as every search value.
    pub td_lambda: Option<f32>,
    /// Mirror each training sample left to right (file a <-> file h) with probability 1/2
    /// where no side can castle: the rules are the same on the mirrored board, so each such
    /// position is two (`cfzero_network::encoding::mirror`). Held-out samples are not mirrored.
    pub mirror: bool,
    /// Precision of the training step's forward pass: `"auto"` (default; see
    /// [`TrainPrecision::Auto`]), `"f32"` or `"bf16"`, libtorch's autocast
    /// (`cfzero_network::autocast`): products in bf16 on bf16 copies of the f32 weights, the
    /// weights, gradients, optimizer, softmax, norms and losses in f32.
    pub precision: TrainPrecision,
}

/// The precision of a training step (`train.precision`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrainPrecision {
    /// bf16 autocast where it was measured faster at the presets' batch of 256: on a CPU with
    /// native bf16 (`avx512_bf16`: tiny's step 1.45x, docs/history/benchmarks-2026-11.md "Training in bf16 on
    /// the CPU"); f32 on a GPU (no gain there at batch 256, launch-bound steps) and on CPUs
    /// that would emulate bf16 (tens of times slower).
    #[default]
    Auto,
    /// Everything in f32.
    F32,
    /// The forward pass under bf16 autocast (f32 master weights).
    Bf16,
}

impl TrainPrecision {
    /// The precision a step runs in on `device` (`F32` or `Bf16`, never `Auto`) and one line
    /// saying why, for the run's log.
    pub fn resolve(self, device: tch::Device) -> (TrainPrecision, String) {
        match self {
            TrainPrecision::F32 | TrainPrecision::Bf16 => (self, format!("{self} requested")),
            TrainPrecision::Auto if device.is_cuda() => (
                TrainPrecision::F32,
                "auto: f32 on a GPU, where bf16 gained nothing at batch 256".to_owned(),
            ),
            TrainPrecision::Auto => {
                let support = Bf16Support::detect(device);
                let precision = if support.native {
                    TrainPrecision::Bf16
                } else {
                    TrainPrecision::F32
                };
                (precision, format!("auto: {}", support.reason))
            }
        }
    }
}

/// A training precision name that is none of `auto`, `f32`, `bf16`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown training precision `{0}`: expected auto, f32 or bf16")]
pub struct UnknownTrainPrecision(pub String);

impl std::str::FromStr for TrainPrecision {
    type Err = UnknownTrainPrecision;

    fn from_str(s: &str) -> Result<TrainPrecision, UnknownTrainPrecision> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(TrainPrecision::Auto),
            "f32" | "float32" => Ok(TrainPrecision::F32),
            "bf16" | "bfloat16" => Ok(TrainPrecision::Bf16),
            _ => Err(UnknownTrainPrecision(s.to_owned())),
        }
    }
}

impl std::fmt::Display for TrainPrecision {
    /// The name `train.precision` takes: `auto`, `f32` or `bf16`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TrainPrecision::Auto => "auto",
            TrainPrecision::F32 => "f32",
            TrainPrecision::Bf16 => "bf16",
        })
    }
}

/// Which recorded search value trains the q head.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QTarget {
    /// The value of the move the search chose (Lc0's `best_q`).
    #[default]
    Best,
    /// The improved policy's expectation of the completed Q.
    Policy,
    /// The root's mean value: biased towards the value of the weak moves that sequential
    /// halving visits once each; kept to compare with older runs.
    Root,
}

impl Default for TrainConfig {
    fn default() -> TrainConfig {
        TrainConfig {
            batch_size: 256,
            lr: LrSchedule::default(),
            grad_clip: 10.0,
            weight_decay: 0.0,
            swa_every: 10,
            swa_max: 10,
            loader_threads: 1,
            loss: LossWeights::default(),
            q_target: QTarget::default(),
            q_ratio: 0.0,
            capped_q_ratio: None,
            td_lambda: None,
            mirror: false,
            precision: TrainPrecision::default(),
        }
    }
}

impl TrainConfig {
    /// Checks every setting's range: a batch needs a position, a loader thread and a
    /// positive gradient clip, and every weight and rate must be finite (a NaN or an
    /// infinity would spread to every weight of the net at the first step).
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        InvalidSetting::at_least("batch_size", self.batch_size as u64, 1)?;
        self.lr.validate().map_err(|e| e.within("lr"))?;
        let inf = f64::INFINITY;
        InvalidSetting::in_range("grad_clip", self.grad_clip, 0.0, true, inf)?;
        InvalidSetting::in_range("weight_decay", self.weight_decay, 0.0, false, inf)?;
        InvalidSetting::at_least("swa_max", self.swa_max, 1)?;
        InvalidSetting::at_least("loader_threads", self.loader_threads as u64, 1)?;
        let l = &self.loss;
        for term in cfzero_network::LossTerm::ALL {
            let w = l.weight(term);
            InvalidSetting::in_range(term.name(), w, 0.0, false, inf)
                .map_err(|e| e.within("loss"))?;
        }
        // Wider than the 32 buckets would make every target the same flat one.
        InvalidSetting::in_range("hl_gauss_sigma", l.hl_gauss_sigma, 0.0, false, 32.0)
            .map_err(|e| e.within("loss"))?;
        InvalidSetting::in_range("q_ratio", self.q_ratio.into(), 0.0, false, 1.0)?;
        if let Some(r) = self.capped_q_ratio {
            InvalidSetting::in_range("capped_q_ratio", r.into(), 0.0, false, 1.0)?;
        }
        if let Some(l) = self.td_lambda {
            InvalidSetting::in_range("td_lambda", l.into(), 0.0, false, 1.0)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::TrainPrecision;

    #[test]
    fn a_precision_prints_the_name_it_parses_from() {
        for p in [
            TrainPrecision::Auto,
            TrainPrecision::F32,
            TrainPrecision::Bf16,
        ] {
            assert_eq!(p.to_string().parse::<TrainPrecision>(), Ok(p));
        }
        assert_eq!(
            " BFloat16 ".parse::<TrainPrecision>(),
            Ok(TrainPrecision::Bf16)
        );
        assert!("f16".parse::<TrainPrecision>().is_err());
    }

    #[test]
    fn auto_trains_in_f32_on_a_gpu_and_as_the_cpu_check_says_on_a_cpu() {
        use cfzero_network::precision::Bf16Support;
        use tch::Device;
        assert_eq!(
            TrainPrecision::Auto.resolve(Device::Cuda(0)).0,
            TrainPrecision::F32
        );
        let native = Bf16Support::detect(Device::Cpu).native;
        let (cpu, why) = TrainPrecision::Auto.resolve(Device::Cpu);
        let expected = if native {
            TrainPrecision::Bf16
        } else {
            TrainPrecision::F32
        };
        assert_eq!(cpu, expected, "{why}");
        assert!(
            why.contains("avx512_bf16") || why.contains("CFZERO_CPU_BF16"),
            "{why}"
        );
        for p in [TrainPrecision::F32, TrainPrecision::Bf16] {
            for device in [Device::Cpu, Device::Cuda(0)] {
                assert_eq!(p.resolve(device).0, p);
            }
        }
    }
}
