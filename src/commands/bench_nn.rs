//! `cfzero bench nn`: evaluations per second of a net at several batch sizes, the FLOPs
//! behind them, and training samples per second.

use std::time::Instant;

use anyhow::Result;
use cfzero_network::encoding::POLICY_SIZE;
use cfzero_network::flops::flops_per_evaluation;
use cfzero_network::{Net, parse_device};
use cfzero_trainer::{HostBatch, Learner};
use clap::Args;
use serde::Serialize;
use tch::{Kind, Tensor};

use crate::config::Config;
use crate::error::user_error;

/// Arguments of `cfzero bench nn`.
#[derive(Debug, Args)]
pub struct NnArgs {
    /// Config whose `[network]` (and `[train]`) is measured.
    #[arg(long, default_value = "configs/tiny.toml")]
    pub config: std::path::PathBuf,
    /// Batch sizes of the inference measurement.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64,256")]
    pub batches: Vec<usize>,
    /// Seconds per measurement (after one warm-up pass).
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Training steps measured (0 skips training).
    #[arg(long, default_value_t = 5)]
    pub train_steps: usize,
    /// Device: cpu, cuda, cuda:N or auto.
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One inference measurement.
#[derive(Debug, Serialize)]
struct InferenceRate {
    batch: usize,
    evaluations_per_second: f64,
    gflops_per_second: f64,
}

/// The whole report.
#[derive(Debug, Serialize)]
struct NnReport {
    parameters: usize,
    mflops_per_evaluation: f64,
    device: String,
    threads: i32,
    inference: Vec<InferenceRate>,
    train_batch: usize,
    train_samples_per_second: Option<f64>,
}

/// Runs the measurement.
pub fn run(args: &NnArgs) -> Result<()> {
    let config = Config::load(&args.config)?;
    let device = parse_device(&args.device).map_err(user_error)?;
    config.run.use_training_threads();
    tch::manual_seed(1);
    let net = Net::new(&config.network, device).map_err(user_error)?;
    let flops = flops_per_evaluation(&config.network) as f64;
    let mut inference = Vec::new();
    for &batch in &args.batches {
        let x = Tensor::rand([batch.max(1) as i64, 64, 112], (Kind::Float, device));
        let run_once = || {
            tch::no_grad(|| {
                let out = net.forward(&x);
                // Reading the results back is part of every real evaluation.
                let _ = out.policy.to_device(tch::Device::Cpu);
            })
        };
        run_once();
        let start = Instant::now();
        let mut evaluations = 0usize;
        while start.elapsed().as_secs_f64() < args.seconds {
            run_once();
            evaluations += batch.max(1);
        }
        let rate = evaluations as f64 / start.elapsed().as_secs_f64();
        inference.push(InferenceRate {
            batch,
            evaluations_per_second: rate,
            gflops_per_second: rate * flops / 1e9,
        });
    }
    let parameters = net.parameter_count();
    let train_batch = config.train.batch_size;
    let train_samples_per_second = (args.train_steps > 0).then(|| {
        let mut learner = Learner::new(net, config.train.clone());
        let batch = synthetic_batch(train_batch);
        learner.step(&batch);
        let start = Instant::now();
        for _ in 0..args.train_steps {
            learner.step(&batch);
        }
        (args.train_steps * train_batch) as f64 / start.elapsed().as_secs_f64()
    });
    let report = NnReport {
        parameters,
        mflops_per_evaluation: flops / 1e6,
        device: format!("{device:?}"),
        threads: tch::get_num_threads(),
        inference,
        train_batch,
        train_samples_per_second,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "{} parameters, {:.2} MFLOP per evaluation, {} ({} threads)",
        report.parameters, report.mflops_per_evaluation, report.device, report.threads
    );
    for r in &report.inference {
        println!(
            "batch {:>4}: {:>10.0} evaluations/s  {:>7.1} GFLOP/s",
            r.batch, r.evaluations_per_second, r.gflops_per_second
        );
    }
    if let Some(s) = report.train_samples_per_second {
        println!("training, batch {train_batch}: {s:.0} samples/s");
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
