//! `cfzero bench nn`: evaluations per second of a net at several batch sizes, the FLOPs
//! behind them, and how close that comes to the machine's matmul peak measured in the same run.

use std::time::Instant;

use anyhow::Result;
use cfzero_network::flops::{flops_per_evaluation, flops_per_play_evaluation};
use cfzero_network::{Net, parse_device};
use clap::Args;
use serde::Serialize;
use tch::{Device, Kind, Tensor};

use crate::config::Config;
use crate::error::user_error;
use crate::run::progress::bar;
use crate::user_bail;

/// Timed products of the matmul peak (after one warm-up product); the best one counts.
const MATMUL_REPETITIONS: usize = 3;

/// Arguments of `cfzero bench nn`.
#[derive(Debug, Args)]
pub struct NnArgs {
    /// Config whose `[network]` is measured.
    #[arg(long, default_value = "configs/tiny.toml")]
    pub config: std::path::PathBuf,
    /// Batch sizes of the inference measurement.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64,256")]
    pub batches: Vec<usize>,
    /// Seconds per measurement (after one warm-up pass).
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Size n of the n x n matrices whose product measures the matmul peak.
    #[arg(long, default_value_t = 2048)]
    pub matmul_size: usize,
    /// Device: cpu, cuda, cuda:N or auto.
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// Which heads each forward pass computes.
    #[arg(long, value_enum, default_value = "play")]
    pub heads: Heads,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The heads a measured forward pass computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Heads {
    /// What a search reads (policy and value): self-play, matches and UCI.
    Play,
    /// Every head of the config, as training computes them.
    All,
}

/// One inference measurement: forward passes of one batch size, results read back to the host.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct InferenceRate {
    /// Positions per forward pass.
    pub batch: usize,
    /// Positions evaluated per second.
    pub evaluations_per_second: f64,
    /// `evaluations_per_second` times the FLOPs of one evaluation, in GFLOP/s.
    pub gflops_per_second: f64,
}

/// Evaluations per second of `net` at `batch` positions per forward pass, over about
/// `seconds` after one warm-up pass, with libtorch's current thread count. Inputs are random
/// on the net's device; the policy is copied back to the host each pass, as a real
/// evaluation does (on a GPU that also waits for the pass to finish).
pub fn measure_inference(net: &Net, heads: Heads, batch: usize, seconds: f64) -> InferenceRate {
    let batch = batch.max(1);
    let flops = evaluation_flops(&net.config, heads) as f64;
    let x = Tensor::rand([batch as i64, 64, 112], (Kind::Float, net.device()));
    let run_once = || {
        tch::no_grad(|| {
            let out = match heads {
                Heads::Play => net.forward_play(&x),
                Heads::All => net.forward(&x),
            };
            let _ = out.policy.to_device(Device::Cpu);
        })
    };
    run_once();
    let start = Instant::now();
    let mut evaluations = 0usize;
    while evaluations == 0 || start.elapsed().as_secs_f64() < seconds {
        run_once();
        evaluations += batch;
    }
    let rate = evaluations as f64 / start.elapsed().as_secs_f64().max(1e-9);
    InferenceRate {
        batch,
        evaluations_per_second: rate,
        gflops_per_second: rate * flops / 1e9,
    }
}

/// FLOPs of one evaluation computing `heads`.
fn evaluation_flops(config: &cfzero_network::NetworkConfig, heads: Heads) -> u64 {
    match heads {
        Heads::Play => flops_per_play_evaluation(config),
        Heads::All => flops_per_evaluation(config),
    }
}

/// The matmul peak of `device` with libtorch's current thread count, in GFLOP/s: the
/// fastest of a few products of two random `n` x `n` f32 matrices (2 n^3 operations each)
/// after one warm-up product.
pub fn matmul_peak(device: Device, n: usize) -> f64 {
    let n = n.max(1) as i64;
    let a = Tensor::rand([n, n], (Kind::Float, device));
    let b = Tensor::rand([n, n], (Kind::Float, device));
    let sync = || {
        if let Device::Cuda(i) = device {
            tch::Cuda::synchronize(i as i64);
        }
    };
    let _ = a.matmul(&b);
    sync();
    let mut best = f64::INFINITY;
    for _ in 0..MATMUL_REPETITIONS {
        let start = Instant::now();
        let c = a.matmul(&b);
        sync();
        best = best.min(start.elapsed().as_secs_f64());
        drop(c);
    }
    2.0 * (n as f64).powi(3) / best.max(1e-12) / 1e9
}

/// One row of the report: a measurement against the peak.
#[derive(Debug, Serialize)]
struct InferenceRow {
    #[serde(flatten)]
    rate: InferenceRate,
    /// `gflops_per_second / matmul_peak_gflops_per_second`.
    efficiency: f64,
}

/// The whole report.
#[derive(Debug, Serialize)]
struct NnReport {
    parameters: usize,
    mflops_per_evaluation: f64,
    /// The heads each timed forward pass computed.
    heads: Heads,
    device: String,
    threads: i32,
    matmul_size: usize,
    matmul_peak_gflops_per_second: f64,
    inference: Vec<InferenceRow>,
}

/// Runs the measurement.
pub fn run(args: &NnArgs) -> Result<()> {
    let config = Config::load(&args.config)?;
    let device = parse_device(&args.device).map_err(user_error)?;
    if args.batches.contains(&0) {
        user_bail!("--batches: every batch size must be at least 1");
    }
    if args.seconds.is_nan() || args.seconds <= 0.0 {
        user_bail!("--seconds must be more than 0 (got {})", args.seconds);
    }
    config.run.use_training_threads();
    tch::manual_seed(1);
    let net = Net::new(&config.network, device).map_err(user_error)?;
    let pb = bar(args.batches.len() as u64 + 1, "nn", "measurements");
    pb.set_message("matmul peak");
    let peak = matmul_peak(device, args.matmul_size);
    pb.inc(1);
    let mut inference = Vec::new();
    for &batch in &args.batches {
        pb.set_message(format!("batch {batch}"));
        let rate = measure_inference(&net, args.heads, batch, args.seconds);
        inference.push(InferenceRow {
            rate,
            efficiency: rate.gflops_per_second / peak,
        });
        pb.inc(1);
    }
    pb.finish_and_clear();
    let report = NnReport {
        parameters: net.parameter_count(),
        mflops_per_evaluation: evaluation_flops(&config.network, args.heads) as f64 / 1e6,
        heads: args.heads,
        device: format!("{device:?}"),
        threads: tch::get_num_threads(),
        matmul_size: args.matmul_size,
        matmul_peak_gflops_per_second: peak,
        inference,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "{} parameters, {:.2} MFLOP per evaluation ({}), {} ({} threads)",
        report.parameters,
        report.mflops_per_evaluation,
        match report.heads {
            Heads::Play => "the heads a search reads",
            Heads::All => "every head",
        },
        report.device,
        report.threads
    );
    println!(
        "matmul peak: {:.1} GFLOP/s (f32, {n} x {n} @ {n} x {n}, best of {MATMUL_REPETITIONS})",
        report.matmul_peak_gflops_per_second,
        n = report.matmul_size
    );
    println!(
        "{:>6} {:>14} {:>10} {:>11}",
        "batch", "evaluations/s", "GFLOP/s", "of peak"
    );
    for r in &report.inference {
        println!(
            "{:>6} {:>14.0} {:>10.1} {:>10.1}%",
            r.rate.batch,
            r.rate.evaluations_per_second,
            r.rate.gflops_per_second,
            100.0 * r.efficiency
        );
    }
    Ok(())
}
