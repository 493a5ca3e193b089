//! The `[train]` table: how the net learns from the replay window.

use cfzero_network::LossWeights;
use cfzero_network::optim::schedule::LrSchedule;
use serde::{Deserialize, Serialize};

/// Training options (DESIGN.md §3, §5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// Positions per training step.
    pub batch_size: usize,
    /// Learning-rate schedule over the run's total steps.
    pub lr: LrSchedule,
    /// Global gradient-norm clip.
    #[serde(default = "default_clip")]
    pub grad_clip: f64,
    /// Weight decay of NAdam (decoupled, 0 = none).
    #[serde(default)]
    pub weight_decay: f64,
    /// Stochastic weight averaging of the published net: add a snapshot every this many
    /// steps (0 publishes the raw weights).
    #[serde(default = "default_swa_every")]
    pub swa_every: u64,
    /// SWA: the most snapshots the average weighs equally (then older ones fade).
    #[serde(default = "default_swa_max")]
    pub swa_max: u64,
    /// Loader threads that build batches ahead of the trainer.
    #[serde(default = "default_loaders")]
    pub loader_threads: usize,
    /// Loss weights of each head.
    #[serde(default)]
    pub loss: LossWeights,
}

fn default_clip() -> f64 {
    10.0
}
fn default_swa_every() -> u64 {
    10
}
fn default_swa_max() -> u64 {
    10
}
fn default_loaders() -> usize {
    1
}
