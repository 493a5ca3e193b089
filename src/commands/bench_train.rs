//! `cfzero bench train`: training samples per second of a config (its `[network]` and
//! `[train]` tables) through the learner's step, on synthetic batches of the config's size.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use cfzero_network::Net;
use cfzero_network::encoding::POLICY_SIZE;
use cfzero_network::flops::flops_per_evaluation;
use cfzero_trainer::{HostBatch, Learner, TrainConfig, TrainPrecision};
use clap::Args;
use serde::Serialize;

use crate::config::Config;
use crate::error::user_error;
use crate::flags::DeviceFlag;
use crate::run::progress::bar;
use crate::user_bail;

/// Arguments of `cfzero bench train`.
#[derive(Debug, Args)]
pub struct TrainBenchArgs {
    /// Config whose `[network]` and `[train]` are measured.
    #[arg(long, default_value = "configs/tiny.toml")]
    pub config: PathBuf,
    /// Training steps measured (after one warm-up step).
    #[arg(long, default_value_t = 10)]
    pub steps: usize,
    #[command(flatten)]
    pub device: DeviceFlag,
    /// Precisions of the step, measured one after the other from the same initial weights:
    /// f32, bf16 (autocast, see `train.precision`), auto (what a run picks here), or several
    /// (`f32,bf16`).
    #[arg(long, value_delimiter = ',', default_value = "f32")]
    pub precision: Vec<String>,
    /// Positions per step (default: the config's `train.batch_size`).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The report.
#[derive(Debug, Serialize)]
struct TrainReport {
    parameters: usize,
    device: String,
    threads: i32,
    batch: usize,
    steps: usize,
    /// One row per precision, in the order asked.
    rows: Vec<TrainRow>,
}

/// One precision's measurement.
#[derive(Debug, Serialize)]
struct TrainRow {
    precision: String,
    seconds: f64,
    samples_per_second: f64,
    milliseconds_per_step: f64,
    /// Estimate: a training step costs about three forward passes (forward, two for backward).
    gflops_per_second: f64,
    /// The loss of the warm-up step and of the last step: the same synthetic batch each step,
    /// so the two precisions' fall can be compared.
    first_loss: f64,
    last_loss: f64,
}

/// Runs the measurement.
pub fn run(args: &TrainBenchArgs) -> Result<()> {
    let config = Config::load(&args.config)?;
    let device = args.device.parse()?;
    if args.steps == 0 {
        user_bail!("--steps must be at least 1");
    }
    let precisions = args
        .precision
        .iter()
        .map(|p| p.parse::<TrainPrecision>().map_err(user_error))
        .collect::<Result<Vec<_>>>()?;
    let batch_size = args.batch.unwrap_or(config.train.batch_size);
    if batch_size == 0 {
        user_bail!("--batch must be at least 1");
    }
    config.run.use_training_threads();
    let batch = synthetic_batch(batch_size);
    let mut rows = Vec::new();
    let mut parameters = 0;
    for &precision in &precisions {
        let net =
            Net::seeded(&config.network, device, config.run.seed as i64).map_err(user_error)?;
        parameters = net.parameter_count();
        let mut learner = Learner::new(
            net,
            TrainConfig {
                precision,
                ..config.train.clone()
            },
        );
        let name = match learner.precision() {
            (resolved, _) if precision == TrainPrecision::Auto => format!("{resolved} (auto)"),
            (resolved, _) => resolved.to_string(),
        };
        let pb = bar(args.steps as u64 + 1, "train", "steps");
        pb.set_message(format!("{name} warm-up"));
        let first_loss = learner.step(&batch).loss;
        pb.inc(1);
        pb.set_message(name.clone());
        let start = Instant::now();
        let mut last_loss = first_loss;
        for _ in 0..args.steps {
            last_loss = learner.step(&batch).loss;
            pb.inc(1);
        }
        let seconds = start.elapsed().as_secs_f64().max(1e-9);
        pb.finish_and_clear();
        let samples_per_second = (args.steps * batch_size) as f64 / seconds;
        rows.push(TrainRow {
            precision: name,
            seconds,
            samples_per_second,
            milliseconds_per_step: 1e3 * seconds / args.steps as f64,
            gflops_per_second: 3.0
                * flops_per_evaluation(&config.network) as f64
                * samples_per_second
                / 1e9,
            first_loss,
            last_loss,
        });
    }
    let report = TrainReport {
        parameters,
        device: format!("{device:?}"),
        threads: tch::get_num_threads(),
        batch: batch_size,
        steps: args.steps,
        rows,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "{} parameters, {} ({} threads), batch {}, synthetic batches (no loading)",
        report.parameters, report.device, report.threads, report.batch
    );
    for row in &report.rows {
        println!(
            "training {}: {:.0} samples/s, {:.1} ms per step, about {:.1} GFLOP/s ({} steps, {:.2} s), loss {:.4} -> {:.4}",
            row.precision,
            row.samples_per_second,
            row.milliseconds_per_step,
            row.gflops_per_second,
            report.steps,
            row.seconds,
            row.first_loss,
            row.last_loss
        );
    }
    Ok(())
}

/// A batch with plausible shapes: sparse 0/1 inputs, 30 legal moves, one-hot targets.
fn synthetic_batch(len: usize) -> HostBatch {
    let mut b = HostBatch::default();
    b.reset(len);
    for i in 0..len {
        for j in 0..64 * 112 {
            if (i * 7 + j * 13) % 11 == 0 {
                b.inputs[i * 64 * 112 + j] = 1.0;
            }
        }
        for m in 0..30 {
            b.legal[i * POLICY_SIZE + (i * 31 + m * 61) % POLICY_SIZE] = 1.0;
        }
        b.policy[i * POLICY_SIZE + (i * 31) % POLICY_SIZE] = 1.0;
        b.wdl[i * 3 + i % 3] = 1.0;
        b.moves_left[i] = 40.0;
    }
    b
}
