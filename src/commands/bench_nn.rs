//! `cfzero bench nn`: evaluations per second of a net at several batch sizes, the FLOPs
//! behind them, and how close that comes to the machine's matmul peak measured in the same run.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use cfzero_chess::{ChessState, HistoryFill};
use cfzero_inference::backend::{
    Backend, BackendChoice, BackendOutputs, MaterialBackend, NativeBackend, ServingBackend,
    compare_backend,
};
use cfzero_inference::{INPUT_FLOATS, NetInput};
use cfzero_mcts::Game;
use cfzero_network::Net;
use cfzero_network::checkpoint::load_net;
use cfzero_network::flops::{flops_per_evaluation, flops_per_play_evaluation};
use cfzero_network::precision::{self, Bf16Support, Precision, PrecisionError, kind_name};
use cfzero_selfplay::openings::read_openings;
use clap::Args;
use serde::Serialize;
use tch::{Device, Kind, Tensor};

use crate::config::{Config, set_torch_threads};
use crate::error::user_error;
use crate::flags::DeviceFlag;
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
    #[command(flatten)]
    pub device: DeviceFlag,
    /// Which heads each forward pass computes.
    #[arg(long, value_enum, default_value = "play")]
    pub heads: Heads,
    /// Precisions to measure side by side (auto, f32, bf16). A precision that would fall back
    /// to f32 on this device is reported, not measured (`CFZERO_CPU_BF16=1` forces it).
    #[arg(long, value_delimiter = ',', default_value = "f32,bf16")]
    pub precision: Vec<Precision>,
    /// Backends to measure side by side at each batch (tch, native, material, auto); one that
    /// cannot run a precision here (native in bf16, or off the CPU) is skipped with a note.
    #[arg(long, value_delimiter = ',', default_value = "tch,native")]
    pub backends: Vec<BackendChoice>,
    /// libtorch threads (default: the config's `[inference] threads`; 0 = one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// A trained net to measure (its own shape; default: a fresh net of the config, seeded).
    #[arg(long)]
    pub net: Option<PathBuf>,
    /// Positions (FEN or EPD, one a line) on which the accuracy of lower precisions is measured
    /// against f32; up to 256 are used.
    #[arg(long, default_value = "configs/openings/4mvs_+90_+99.epd")]
    pub positions: PathBuf,
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
    /// The backend that ran it (`libtorch`, `native`, `material`).
    pub backend: &'static str,
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
        backend: "libtorch",
        batch,
        evaluations_per_second: rate,
        gflops_per_second: rate * flops / 1e9,
    }
}

/// Evaluations per second of `backend` (which computes the heads a search reads) at `batch`
/// positions per forward pass, as [`measure_inference`] measures libtorch: random inputs,
/// one warm-up pass, then about `seconds`, every output written to the host buffers.
pub fn measure_backend(
    backend: &mut dyn Backend,
    config: &cfzero_network::NetworkConfig,
    batch: usize,
    seconds: f64,
) -> Result<InferenceRate> {
    let batch = batch.max(1);
    let flops = evaluation_flops(config, Heads::Play) as f64;
    let inputs = Vec::<f32>::try_from(Tensor::rand(
        [(batch * INPUT_FLOATS) as i64],
        (Kind::Float, Device::Cpu),
    ))?;
    let mut out = BackendOutputs::default();
    backend.forward(&inputs, batch, &mut out)?;
    let start = Instant::now();
    let mut evaluations = 0usize;
    while evaluations == 0 || start.elapsed().as_secs_f64() < seconds {
        backend.forward(&inputs, batch, &mut out)?;
        evaluations += batch;
    }
    let rate = evaluations as f64 / start.elapsed().as_secs_f64().max(1e-9);
    Ok(InferenceRate {
        backend: backend.capabilities().name,
        batch,
        evaluations_per_second: rate,
        gflops_per_second: rate * flops / 1e9,
    })
}

/// FLOPs of one evaluation computing `heads`.
fn evaluation_flops(config: &cfzero_network::NetworkConfig, heads: Heads) -> u64 {
    match heads {
        Heads::Play => flops_per_play_evaluation(config),
        Heads::All => flops_per_evaluation(config),
    }
}

/// The matmul peak of `device` in `kind` with libtorch's current thread count, in GFLOP/s,
/// and the size it was measured at: the fastest of a few products of two random square
/// matrices (2 n^3 operations each) after a warm-up product at each size. The size doubles from 256 up to
/// `max_n` while a product takes under 50 ms, so that a kind the device only emulates (bf16
/// without native support runs at 1 GFLOP/s) is measured in seconds, not minutes.
pub fn matmul_peak(device: Device, kind: Kind, max_n: usize) -> (f64, usize) {
    let sync = || {
        if let Device::Cuda(i) = device {
            tch::Cuda::synchronize(i as i64);
        }
    };
    let product_seconds = |a: &Tensor, b: &Tensor| {
        let start = Instant::now();
        let c = a.matmul(b);
        sync();
        let t = start.elapsed().as_secs_f64();
        drop(c);
        t
    };
    let max_n = max_n.max(1);
    let mut n = max_n.min(256);
    loop {
        let a = Tensor::rand([n as i64, n as i64], (kind, device));
        let b = Tensor::rand([n as i64, n as i64], (kind, device));
        // The second product decides: the first pays for the device's set-up (a CUDA
        // device's first product creates cuBLAS's handle, tens of milliseconds).
        product_seconds(&a, &b);
        let first = product_seconds(&a, &b);
        if n < max_n && first < 0.05 {
            n = (2 * n).min(max_n);
            continue;
        }
        let best = (0..MATMUL_REPETITIONS)
            .map(|_| product_seconds(&a, &b))
            .fold(f64::INFINITY, f64::min);
        return (2.0 * (n as f64).powi(3) / best.max(1e-12) / 1e9, n);
    }
}

/// One row of the report: a measurement against the peak.
#[derive(Debug, Serialize)]
struct InferenceRow {
    #[serde(flatten)]
    rate: InferenceRate,
    /// `gflops_per_second / matmul_peak_gflops_per_second` of the row's precision.
    efficiency: f64,
}

/// The measurements of one precision.
#[derive(Debug, Serialize)]
struct PrecisionReport {
    /// The precision asked for.
    requested: Precision,
    /// The kind it runs in on this device ("f32", "bf16").
    kind: String,
    /// Which path runs and why.
    notice: String,
    /// Backends asked for that cannot run this precision here, and why.
    skipped: Vec<String>,
    /// False when the request falls back to another kind on this device (not measured).
    measured: bool,
    matmul_size: usize,
    matmul_peak_gflops_per_second: f64,
    inference: Vec<InferenceRow>,
}

/// The accuracy of a lower precision against libtorch's f32.
#[derive(Debug, Serialize)]
struct AccuracyReport {
    /// The backend computing in the lower precision.
    backend: String,
    /// The lower precision's kind.
    kind: String,
    /// Where the positions came from.
    positions_file: String,
    #[serde(flatten)]
    error: PrecisionError,
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
    precisions: Vec<PrecisionReport>,
    accuracy: Vec<AccuracyReport>,
}

/// The net to measure: the one in `path`, or a fresh one of `config`'s shape, seeded.
fn make_net(config: &Config, path: Option<&Path>, device: Device) -> Result<Net> {
    match path {
        Some(p) => load_net(p, device).map_err(user_error),
        None => Net::seeded(&config.network, device, 1).map_err(user_error),
    }
}

/// Inputs `[N, 64, 112]` and the legal policy indices of the first `max` positions of `path`.
fn real_positions(path: &Path, max: usize) -> Result<(Tensor, Vec<Vec<usize>>)> {
    let fens = read_openings(path).map_err(user_error)?;
    let mut inputs = Vec::new();
    let mut legal = Vec::new();
    let mut moves = Vec::new();
    for fen in fens.iter().take(max) {
        let state = ChessState::from_fen(fen, HistoryFill::No).map_err(user_error)?;
        let mut tokens = vec![0.0f32; INPUT_FLOATS];
        state.encode(state.history_fill(), &mut tokens);
        state.legal_moves(&mut moves);
        if moves.is_empty() {
            continue;
        }
        inputs.extend_from_slice(&tokens);
        legal.push(moves.iter().map(|m| state.policy_index(m)).collect());
    }
    if legal.is_empty() {
        user_bail!("{}: no position with a legal move", path.display());
    }
    let n = legal.len() as i64;
    Ok((Tensor::from_slice(&inputs).view([n, 64, 112]), legal))
}

/// Runs the measurement.
pub fn run(args: &NnArgs) -> Result<()> {
    let config = Config::load(&args.config)?;
    let device = args.device.parse()?;
    if args.batches.contains(&0) {
        user_bail!("--batches: every batch size must be at least 1");
    }
    if args.seconds.is_nan() || args.seconds <= 0.0 {
        user_bail!("--seconds must be more than 0 (got {})", args.seconds);
    }
    set_torch_threads(args.threads.unwrap_or(config.inference.threads));
    let support = Bf16Support::detect(device);
    if args.backends.is_empty() {
        user_bail!("--backends: name at least one backend");
    }
    let per_precision = (args.batches.len() * args.backends.len()) as u64 + 1;
    let pb = bar(
        per_precision * args.precision.len() as u64,
        "nn",
        "measurements",
    );
    let mut precisions = Vec::new();
    let mut accuracy = Vec::new();
    let mut parameters = 0;
    let mut kinds_done = Vec::new();
    for &requested in &args.precision {
        let resolved = precision::resolve(requested, &support);
        let kind = resolved.kind;
        // The accuracy of a lower precision does not depend on its speed: measured even where
        // the device only emulates it.
        let lower = match requested {
            Precision::Bf16 => Some(Kind::BFloat16),
            _ => (kind != Kind::Float).then_some(kind),
        };
        if let Some(lower) = lower.filter(|k| {
            !accuracy
                .iter()
                .any(|a: &AccuracyReport| a.kind == kind_name(*k))
        }) {
            pb.set_message(format!("{} accuracy", kind_name(lower)));
            let (inputs, legal) = real_positions(&args.positions, 256)?;
            let mut reference = make_net(&config, args.net.as_deref(), device)?;
            reference.prepare_serving(Kind::Float, legal.len());
            let mut other = make_net(&config, args.net.as_deref(), device)?;
            other.prepare_serving(lower, legal.len());
            let report = |backend: ServingBackend, error: Option<PrecisionError>| {
                Ok::<_, anyhow::Error>(AccuracyReport {
                    backend: backend.to_string(),
                    kind: kind_name(lower),
                    positions_file: args.positions.display().to_string(),
                    error: error
                        .ok_or_else(|| user_error("the net has no value head to compare"))?,
                })
            };
            let error = precision::compare_nets(&reference, &other, &inputs, &legal);
            accuracy.push(report(ServingBackend::Tch, error)?);
            // The native pass computes bf16 its own way: measured on its own where it runs.
            let native = args
                .backends
                .iter()
                .any(|c| c.resolve(device, lower) == Ok(ServingBackend::Native));
            if native {
                let mut b = NativeBackend::from_net(&reference, lower, legal.len())?;
                let error = compare_backend(&reference, &mut b, &inputs, &legal)?;
                accuracy.push(report(ServingBackend::Native, error)?);
            }
        }
        let measured = !resolved.fell_back && !kinds_done.contains(&kind);
        let mut report = PrecisionReport {
            requested,
            kind: kind_name(kind),
            notice: resolved.notice,
            skipped: Vec::new(),
            measured,
            matmul_size: 0,
            matmul_peak_gflops_per_second: 0.0,
            inference: Vec::new(),
        };
        if !measured {
            pb.inc(per_precision);
            precisions.push(report);
            continue;
        }
        kinds_done.push(kind);
        let mut net = make_net(&config, args.net.as_deref(), device)?;
        parameters = net.parameter_count();
        pb.set_message(format!("{} matmul peak", kind_name(kind)));
        let (peak, n) = matmul_peak(device, kind, args.matmul_size);
        (report.matmul_peak_gflops_per_second, report.matmul_size) = (peak, n);
        pb.inc(1);
        for &batch in &args.batches {
            for &choice in &args.backends {
                pb.inc(1);
                let backend = match choice.resolve(device, kind) {
                    Ok(b) if args.heads == Heads::All && b != ServingBackend::Tch => {
                        let why = format!("{b}: computes only the heads a search reads");
                        if !report.skipped.contains(&why) {
                            report.skipped.push(why);
                        }
                        continue;
                    }
                    Ok(b) => b,
                    Err(e) => {
                        let why = format!("{choice}: {e}");
                        if !report.skipped.contains(&why) {
                            report.skipped.push(why);
                        }
                        continue;
                    }
                };
                pb.set_message(format!("{} {backend} batch {batch}", kind_name(kind)));
                let rate = match backend {
                    ServingBackend::Native => {
                        let mut b = NativeBackend::from_net(&net, kind, batch)?;
                        measure_backend(&mut b, &net.config, batch, args.seconds)?
                    }
                    ServingBackend::Material => {
                        measure_backend(&mut MaterialBackend, &net.config, batch, args.seconds)?
                    }
                    ServingBackend::Tch => {
                        // As a server whose largest batch is this one runs it (the Shaw form
                        // follows it).
                        net.prepare_serving(kind, batch);
                        measure_inference(&net, args.heads, batch, args.seconds)
                    }
                };
                report.inference.push(InferenceRow {
                    rate,
                    efficiency: rate.gflops_per_second / peak,
                });
            }
        }
        precisions.push(report);
    }
    pb.finish_and_clear();
    let report = NnReport {
        parameters,
        mflops_per_evaluation: evaluation_flops(&config.network, args.heads) as f64 / 1e6,
        heads: args.heads,
        device: format!("{device:?}"),
        threads: tch::get_num_threads(),
        precisions,
        accuracy,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    print_report(&report);
    Ok(())
}

/// The report as text: one table per measured precision, side by side by batch.
fn print_report(report: &NnReport) {
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
    for p in &report.precisions {
        println!("{}", p.notice);
        if !p.measured {
            println!("  not measured: it runs as {} here", p.kind);
            continue;
        }
        println!(
            "  matmul peak: {:.1} GFLOP/s ({kind}, {n} x {n} @ {n} x {n}, best of {MATMUL_REPETITIONS})",
            p.matmul_peak_gflops_per_second,
            kind = p.kind,
            n = p.matmul_size
        );
        for why in &p.skipped {
            println!("  not measured: {why}");
        }
        println!(
            "  {:>6} {:>9} {:>14} {:>10} {:>11}",
            "batch", "backend", "evaluations/s", "GFLOP/s", "of peak"
        );
        for r in &p.inference {
            println!(
                "  {:>6} {:>9} {:>14.0} {:>10.1} {:>10.1}%",
                r.rate.batch,
                r.rate.backend,
                r.rate.evaluations_per_second,
                r.rate.gflops_per_second,
                100.0 * r.efficiency
            );
        }
    }
    for a in &report.accuracy {
        println!(
            "{} {} against libtorch f32 on {} positions of {}: policy KL mean {:.2e} max {:.2e} nats; value difference mean {:.2e} max {:.2e}",
            a.backend,
            a.kind,
            a.error.positions,
            a.positions_file,
            a.error.mean_policy_kl,
            a.error.max_policy_kl,
            a.error.mean_value_difference,
            a.error.max_value_difference
        );
    }
}
