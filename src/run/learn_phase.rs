//! The training phase of a generation: steps on batches from the replay window.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use anyhow::Result;
use cfzero_selfplay::window::ReplayWindow;
use cfzero_trainer::{EventWriter, Learner, Loader, StepMetrics};

use crate::config::Config;
use crate::run::progress::bar;

/// What a training phase did.
#[derive(Debug, Clone, Default)]
pub struct LearnSummary {
    /// Steps taken.
    pub steps: u64,
    /// Positions trained on per second (loading included).
    pub samples_per_second: f64,
    /// Metrics of the last step.
    pub last: Option<StepMetrics>,
    /// Mean loss over the phase.
    pub mean_loss: f64,
    /// Mean policy accuracy over the phase.
    pub mean_accuracy: f64,
}

/// `train N steps, loss L, acc A, R samples/s`, the training part of a summary line.
impl std::fmt::Display for LearnSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "train {} steps, loss {:.3}, acc {:.2}, {:.0} samples/s",
            self.steps, self.mean_loss, self.mean_accuracy, self.samples_per_second
        )
    }
}

/// Runs `steps` training steps (fewer if `stop` is set), logging every step to TensorBoard.
pub fn train(
    config: &Config,
    learner: &mut Learner,
    window: &Arc<RwLock<ReplayWindow>>,
    steps: u64,
    tb: &mut EventWriter,
    stop: &AtomicBool,
) -> Result<LearnSummary> {
    let mut summary = LearnSummary::default();
    if steps == 0 {
        return Ok(summary);
    }
    config.run.use_training_threads();
    let seed = config.run.seed ^ learner.steps().wrapping_mul(0x2545_F491_4F6C_DD1D);
    let loader = Loader::start(
        window.clone(),
        config.train.batch_size,
        config.train.loader_threads,
        seed,
    );
    let pb = bar(steps, "train", "steps");
    let start = Instant::now();
    let (mut loss_sum, mut acc_sum) = (0.0, 0.0);
    for _ in 0..steps {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let batch = loader.next();
        let m = learner.step(&batch);
        loader.recycle(batch);
        let step = m.step;
        tb.scalar("train/loss", step, m.loss)?;
        for (name, v) in &m.terms {
            tb.scalar(&format!("loss/{name}"), step, *v)?;
        }
        tb.scalar("train/policy_accuracy", step, m.policy_accuracy)?;
        tb.scalar("train/value_mse", step, m.value_mse)?;
        tb.scalar("train/lr", step, m.lr)?;
        tb.scalar("train/grad_norm", step, m.grad_norm)?;
        tb.scalar("train/samples_per_second", step, m.samples_per_second)?;
        summary.steps += 1;
        loss_sum += m.loss;
        acc_sum += m.policy_accuracy;
        pb.inc(1);
        pb.set_message(format!("loss {:.3} acc {:.2}", m.loss, m.policy_accuracy));
        summary.last = Some(m);
    }
    pb.finish_and_clear();
    tb.flush()?;
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    summary.samples_per_second = (summary.steps as usize * config.train.batch_size) as f64 / secs;
    if summary.steps > 0 {
        summary.mean_loss = loss_sum / summary.steps as f64;
        summary.mean_accuracy = acc_sum / summary.steps as f64;
    }
    Ok(summary)
}
