//! `cfzero export`: a net in Lc0's format (to play it in Lc0), as an ONNX graph (for ONNX
//! Runtime, TensorRT, or Lc0's ONNX backends inside an Lc0 net file), or in the native format
//! (safetensors and a JSON config, for other tools such as the PyTorch reference).

use std::path::{Path, PathBuf};

use std::time::Instant;

use anyhow::{Context, Result};
use cfzero_export::lc0::{LayerEncoding, write_lc0_file};
use cfzero_export::onnx::{
    OPSET, OnnxError, OnnxExport, OnnxHeads, OnnxOptions, OnnxPrecision, write_lc0_onnx_file,
    write_onnx_file,
};
use cfzero_network::Net;
use cfzero_network::checkpoint::{load_net, save_net};
use clap::{Args, ValueEnum};
use tch::Device;

use crate::error::user_error;
use crate::user_bail;

/// The target format.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// Lc0's gzip-compressed protobuf (`.pb.gz`): LayerNorm + smolgen nets only.
    Lc0,
    /// A plain ONNX model (`.onnx`) of any net: Lc0's input planes and outputs.
    Onnx,
    /// The ONNX model inside an Lc0 net file (`.pb.gz`), for Lc0's ONNX backends.
    #[value(name = "lc0-onnx")]
    Lc0Onnx,
    /// A directory with `model.safetensors` (cfzero's tensor names) and `config.json`.
    Native,
}

/// How Lc0 weights are stored.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum EncodingArg {
    /// 16-bit codes per layer: half the size, every Lc0 since 0.30.
    Linear16,
    /// Exact f32: Lc0 0.33 and later.
    Float32,
}

/// The float type of an ONNX graph.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PrecisionArg {
    /// 32-bit floats.
    F32,
    /// Half precision.
    F16,
    /// bfloat16.
    Bf16,
}

/// Which heads an ONNX graph outputs.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HeadsArg {
    /// Policy, WDL (or value) and moves left: what an engine reads.
    Play,
    /// Every head of the net.
    All,
}

/// Arguments of `cfzero export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The net to export (a cfzero .safetensors file).
    #[arg(long)]
    pub net: PathBuf,
    /// Target format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output: a `.pb.gz` file for lc0 and lc0-onnx, a `.onnx` file for onnx, a directory
    /// for native.
    #[arg(long)]
    pub out: PathBuf,
    /// lc0 only: how the weights are stored [default: linear16].
    #[arg(long, value_enum)]
    pub encoding: Option<EncodingArg>,
    /// onnx and lc0-onnx only: the float type of the graph's weights, input and outputs
    /// [default: f32].
    #[arg(long, value_enum)]
    pub precision: Option<PrecisionArg>,
    /// onnx and lc0-onnx only: which heads become outputs [default: play].
    #[arg(long, value_enum)]
    pub heads: Option<HeadsArg>,
}

/// Runs `cfzero export`.
pub fn run(args: &ExportArgs) -> Result<()> {
    let onnx = matches!(args.format, ExportFormat::Onnx | ExportFormat::Lc0Onnx);
    if args.encoding.is_some() && !matches!(args.format, ExportFormat::Lc0) {
        user_bail!("--encoding applies to --format lc0 only");
    }
    if !onnx && (args.precision.is_some() || args.heads.is_some()) {
        user_bail!("--precision and --heads apply to --format onnx and lc0-onnx only");
    }
    let net = load_net(&args.net, Device::Cpu).map_err(user_error)?;
    match args.format {
        ExportFormat::Onnx | ExportFormat::Lc0Onnx => {
            let options = OnnxOptions {
                precision: match args.precision.unwrap_or(PrecisionArg::F32) {
                    PrecisionArg::F32 => OnnxPrecision::F32,
                    PrecisionArg::F16 => OnnxPrecision::F16,
                    PrecisionArg::Bf16 => OnnxPrecision::Bf16,
                },
                heads: match args.heads.unwrap_or(HeadsArg::Play) {
                    HeadsArg::Play => OnnxHeads::Play,
                    HeadsArg::All => OnnxHeads::All,
                },
            };
            let start = Instant::now();
            let written = if matches!(args.format, ExportFormat::Onnx) {
                write_onnx_file(&net, &args.out, options)
            } else {
                write_lc0_onnx_file(&net, &args.out, options)
            };
            // A net that cannot be exported and an --out that cannot be written are the
            // user's input (exit 2).
            let export = written.map_err(|e| match e {
                OnnxError::NotExportable(_) | OnnxError::Io { .. } => user_error(e),
                other @ OnnxError::Tensor(_) => anyhow::Error::new(other),
            })?;
            describe_onnx(args, &net, &export, start.elapsed().as_secs_f64())?;
        }
        ExportFormat::Lc0 => {
            let encoding = match args.encoding.unwrap_or(EncodingArg::Linear16) {
                EncodingArg::Linear16 => LayerEncoding::Linear16,
                EncodingArg::Float32 => LayerEncoding::Float32,
            };
            write_lc0_file(&net, &args.out, encoding).map_err(user_error)?;
            let h = &net.config.outputs;
            let dropped: Vec<&str> = [(h.soft_policy, "soft policy"), (h.q, "q"), (h.st, "st")]
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, name)| *name)
                .collect();
            println!(
                "wrote {} (Lc0 attention body, {} layers, d_model {}, {} encoding{})",
                args.out.display(),
                net.config.layers,
                net.config.d_model,
                match encoding {
                    LayerEncoding::Linear16 => "LINEAR16",
                    LayerEncoding::Float32 => "FLOAT32, needs Lc0 0.33 or later",
                },
                if dropped.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; heads Lc0 does not read were left out: {}",
                        dropped.join(", ")
                    )
                }
            );
            println!("play it: lc0 --weights={}", args.out.display());
        }
        ExportFormat::Native => {
            write_native(&net, &args.out)?;
            println!(
                "wrote {} and {}",
                args.out.join(NATIVE_WEIGHTS).display(),
                args.out.join(NATIVE_CONFIG).display()
            );
        }
    }
    Ok(())
}

/// Prints what an ONNX export wrote and how to run it.
fn describe_onnx(args: &ExportArgs, net: &Net, export: &OnnxExport, seconds: f64) -> Result<()> {
    let size = std::fs::metadata(&args.out)
        .with_context(|| format!("reading {}", args.out.display()))?
        .len();
    let o = &export.outputs;
    let outputs: Vec<&str> = std::iter::once(o.policy.as_str())
        .chain(o.wdl.as_deref())
        .chain(o.value.as_deref())
        .chain(o.mlh.as_deref())
        .collect();
    let graph = export.model.graph.as_ref();
    println!(
        "wrote {} ({:.1} MB, {:?}, ONNX opset {OPSET}, {} nodes, {:.2} s; input /input/planes [batch, 112, 8, 8]; outputs {}{})",
        args.out.display(),
        size as f64 / 1e6,
        export.precision,
        graph.map_or(0, |g| g.node.len()),
        seconds,
        outputs.join(", "),
        match graph.map(|g| g.output.len()) {
            Some(n) if n > outputs.len() => format!(" and {} more heads", n - outputs.len()),
            _ => String::new(),
        }
    );
    let fill = net.config.history_fill.name();
    match args.format {
        ExportFormat::Lc0Onnx => println!(
            "play it: lc0 --backend=onnx-cpu --weights={} --history-fill={fill} (onnx-cuda, onnx-trt or onnx-dml on a GPU)",
            args.out.display()
        ),
        _ => println!(
            "run it: onnxruntime.InferenceSession(\"{}\"); fill history before a FEN as Lc0's --history-fill={fill}",
            args.out.display()
        ),
    }
    Ok(())
}

/// Weights file of a native export.
pub const NATIVE_WEIGHTS: &str = "model.safetensors";
/// Config file of a native export: the `[network]` table as JSON.
pub const NATIVE_CONFIG: &str = "config.json";

/// Writes the native export of `net` into directory `dir` (created if needed).
fn write_native(net: &Net, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    save_net(net, &dir.join(NATIVE_WEIGHTS))?;
    let config = dir.join(NATIVE_CONFIG);
    cfzero_fsutil::write_file_atomically(&config, net.config.to_json().as_bytes())
        .with_context(|| format!("writing {}", config.display()))
}
