//! `cfzero export`: a net in Lc0's format (to play it in Lc0) or the native one
//! (safetensors and a JSON config, for other tools such as the PyTorch reference).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cfzero_network::Net;
use cfzero_network::checkpoint::{load_net, save_net};
use cfzero_network::lc0::{LayerEncoding, write_lc0_file};
use clap::{Args, ValueEnum};
use tch::Device;

use crate::error::user_error;

/// The target format.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// Lc0's gzip-compressed protobuf (`.pb.gz`).
    Lc0,
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

/// Arguments of `cfzero export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The net to export (a cfzero .safetensors file).
    #[arg(long)]
    pub net: PathBuf,
    /// Target format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output: a `.pb.gz` file for lc0, a directory for native.
    #[arg(long)]
    pub out: PathBuf,
    /// Lc0 only: how the weights are stored.
    #[arg(long, value_enum, default_value = "linear16")]
    pub encoding: EncodingArg,
}

/// Runs `cfzero export`.
pub fn run(args: &ExportArgs) -> Result<()> {
    let net = load_net(&args.net, Device::Cpu).map_err(user_error)?;
    match args.format {
        ExportFormat::Lc0 => {
            let encoding = match args.encoding {
                EncodingArg::Linear16 => LayerEncoding::Linear16,
                EncodingArg::Float32 => LayerEncoding::Float32,
            };
            write_lc0_file(&net, &args.out, encoding).map_err(|e| match e {
                cfzero_network::lc0::Lc0Error::Io { .. } => anyhow::Error::new(e),
                other => user_error(other),
            })?;
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
