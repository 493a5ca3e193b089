//! `cfzero info`: what a config or a net describes: the parsed config, the parameters per
//! module and in total, and the floating-point operations of one evaluation.

use std::path::PathBuf;

use anyhow::Result;
use cfzero_network::checkpoint::load_net;
use cfzero_network::flops::{flops_per_evaluation, parameter_count, parameters_per_module};
use cfzero_network::{Net, NetworkConfig};
use clap::Args;
use tch::Device;

use crate::config::Config;
use crate::error::user_error;
use crate::user_bail;

/// Nets larger than this are described from the config alone (building them costs memory).
const BUILD_LIMIT: u64 = 50_000_000;

/// Arguments of `cfzero info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Config file (TOML) to describe.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Net file (.safetensors written by cfzero) to describe.
    #[arg(long, conflicts_with = "config")]
    pub net: Option<PathBuf>,
}

/// Prints the description.
pub fn run(args: &InfoArgs) -> Result<()> {
    let net = match (&args.config, &args.net) {
        (Some(path), None) => {
            let config = Config::load(path)?;
            println!("# config {}", path.display());
            print!("{}", config.to_toml());
            let total = parameter_count(&config.network);
            if total > BUILD_LIMIT {
                println!();
                describe_size(&config.network, total, None);
                return Ok(());
            }
            Net::new(&config.network, Device::Cpu).map_err(user_error)?
        }
        (None, Some(path)) => {
            let net = load_net(path, Device::Cpu).map_err(user_error)?;
            println!("# net {}", path.display());
            println!("{}", toml::to_string(&net.config)?);
            net
        }
        _ => user_bail!("give --config FILE or --net FILE"),
    };
    println!();
    let total = net.parameter_count() as u64;
    describe_size(&net.config, total, Some(&net));
    Ok(())
}

fn describe_size(cfg: &NetworkConfig, total: u64, net: Option<&Net>) {
    if let Some(net) = net {
        println!("# parameters per module");
        for (module, n) in parameters_per_module(net) {
            println!("{module:<16} {n:>12}");
        }
    }
    println!("{:<16} {total:>12}", "total");
    let flops = flops_per_evaluation(cfg);
    println!(
        "# {:.2} MFLOP per evaluation (batch 1, forward, matrix products)",
        flops as f64 / 1e6
    );
}
