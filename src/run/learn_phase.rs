//! The training phase of a generation: steps on batches from a sample source (the replay
//! window, or a mixture with Lc0 data and PGN games).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::Result;
use cfzero_trainer::sample::{HostBatch, SampleScratch, TargetOptions};
use cfzero_trainer::{EventWriter, Learner, Loader, SampleSource, Split, StepMetrics};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

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
    /// Losses on held-out games after the phase (`None` without held-out games).
    pub validation: Option<StepMetrics>,
}

/// Positions of held-out games measured after each training phase.
const VALIDATION_POSITIONS: usize = 1024;

/// `train N steps, loss L, acc A, R samples/s`, the training part of a summary line.
impl std::fmt::Display for LearnSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "train {} steps, loss {:.3}, acc {:.2}, {:.0} samples/s",
            self.steps, self.mean_loss, self.mean_accuracy, self.samples_per_second
        )?;
        if let Some(v) = &self.validation {
            write!(f, ", val loss {:.3} acc {:.2}", v.loss, v.policy_accuracy)?;
        }
        Ok(())
    }
}

/// Runs `steps` training steps on `source` (fewer if `stop` is set), logging every step to
/// TensorBoard, then measures the net to publish on `held_out`'s held-out positions (the
/// replay window's: a mixture's would blend the sources' figures).
pub fn train(
    config: &Config,
    learner: &mut Learner,
    source: &Arc<dyn SampleSource>,
    held_out: &dyn SampleSource,
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
        source.clone(),
        config.train.batch_size,
        config.train.loader_threads,
        seed,
        targets(config, learner),
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
    drop(loader);
    if !stop.load(Ordering::Relaxed) {
        summary.validation = validate(config, learner, held_out)?;
        if let Some(v) = &summary.validation {
            let step = v.step;
            tb.scalar("val/loss", step, v.loss)?;
            for (name, x) in &v.terms {
                tb.scalar(&format!("val/{name}"), step, *x)?;
            }
            tb.scalar("val/policy_accuracy", step, v.policy_accuracy)?;
            tb.scalar("val/value_mse", step, v.value_mse)?;
            tb.flush()?;
        }
    }
    Ok(summary)
}

/// How the config turns records into samples, with the history convention of the net
/// being trained (a resumed run keeps its nets' convention, whatever its frozen config says).
pub fn targets(config: &Config, learner: &Learner) -> TargetOptions {
    TargetOptions {
        q_target: config.train.q_target,
        q_ratio: config.train.q_ratio,
        capped_q_ratio: config.train.capped_q_ratio.unwrap_or(config.train.q_ratio),
        td_lambda: config.train.td_lambda,
        history_fill: learner.net().config.history_fill,
        mirror: config.train.mirror,
    }
}

/// The losses of the net the learner publishes ([`Learner::average`], else its weights) on
/// up to [`VALIDATION_POSITIONS`] held-out positions of `source` (the same draw each time for
/// the same held-out games), averaged over batches weighted by their size. `None` without
/// held-out positions.
pub fn validate(
    config: &Config,
    learner: &Learner,
    source: &dyn SampleSource,
) -> Result<Option<StepMetrics>> {
    let available = source.positions(Split::Validation);
    if available == 0 {
        return Ok(None);
    }
    let total = available.min(VALIDATION_POSITIONS);
    let per_batch = config.train.batch_size.max(1);
    let mut rng = ChaCha8Rng::seed_from_u64(config.run.seed ^ 0x5641_4C49_4441_5445);
    let mut scratch = SampleScratch::default();
    let mut batch = HostBatch::default();
    let options = targets(config, learner);
    let average = learner.average()?;
    let net = average.as_ref().unwrap_or(learner.net());
    let mut sum: Option<StepMetrics> = None;
    let mut done = 0;
    while done < total {
        let n = per_batch.min(total - done);
        batch.reset(n);
        for slot in 0..n {
            if !source.fill(
                Split::Validation,
                &mut rng,
                &mut batch,
                slot,
                &mut scratch,
                &options,
            )? {
                anyhow::bail!("held-out positions vanished during validation");
            }
        }
        let m = learner.validate_net(net, &batch);
        let weight = n as f64 / total as f64;
        let s = sum.get_or_insert_with(|| StepMetrics {
            loss: 0.0,
            terms: m.terms.iter().map(|&(name, _)| (name, 0.0)).collect(),
            policy_accuracy: 0.0,
            value_mse: 0.0,
            ..m.clone()
        });
        s.loss += weight * m.loss;
        s.policy_accuracy += weight * m.policy_accuracy;
        s.value_mse += weight * m.value_mse;
        for ((_, a), (_, b)) in s.terms.iter_mut().zip(&m.terms) {
            *a += weight * b;
        }
        done += n;
    }
    Ok(sum)
}
