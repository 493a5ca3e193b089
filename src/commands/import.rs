//! `cfzero import`: an Lc0 attention-body net as a cfzero net, to evaluate it or to
//! continue training from it (`cfzero train --init-from`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use cfzero_export::lc0::read_lc0_file;
use cfzero_network::checkpoint::save_net;
use clap::Args;
use tch::Device;

use crate::config::Config;
use crate::error::user_error;

/// Arguments of `cfzero import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The Lc0 net (`.pb.gz`).
    #[arg(long)]
    pub lc0: PathBuf,
    /// The cfzero net to write (`.safetensors`).
    #[arg(long)]
    pub out: PathBuf,
    /// Also write a run config for `train --init-from`: this base config with its
    /// `[network]` replaced by the imported net's shape.
    #[arg(long, requires = "base_config")]
    pub config_out: Option<PathBuf>,
    /// The config whose run and training settings `--config-out` keeps.
    #[arg(long)]
    pub base_config: Option<PathBuf>,
}

/// Runs `cfzero import`.
pub fn run(args: &ImportArgs) -> Result<()> {
    // Every way reading can fail is about the file the user named.
    let net = read_lc0_file(&args.lc0, Device::Cpu).map_err(user_error)?;
    save_net(&net, &args.out)?;
    let c = &net.config;
    println!(
        "wrote {}: {} layers, d_model {}, {} heads, dff {}, {}, {} parameters",
        args.out.display(),
        c.layers,
        c.d_model,
        c.heads,
        c.dff,
        match c.attention.position {
            cfzero_network::config::PositionEncoding::Smolgen => "smolgen",
            _ => "no position term",
        },
        net.parameter_count()
    );
    if let (Some(out), Some(base)) = (&args.config_out, &args.base_config) {
        let mut config = Config::load(base)?;
        config.network = net.config.clone();
        std::fs::write(out, config.to_toml())
            .with_context(|| format!("writing {}", out.display()))?;
        println!(
            "wrote {}: continue training with `cfzero train --config {} --run DIR --init-from {}`",
            out.display(),
            out.display(),
            args.out.display()
        );
    }
    Ok(())
}
