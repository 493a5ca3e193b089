//! `cfzero info`: what a config or a net describes: the parsed config, the parameters per
//! module and in total, and the floating-point operations of one evaluation.

use std::path::PathBuf;

use anyhow::Result;
use cfzero_eval::uci_client::options_text;
use cfzero_network::checkpoint::load_net;
use cfzero_network::flops::{flops_per_evaluation, parameter_count, parameters_per_module};
use cfzero_network::{Net, NetworkConfig};
use clap::Args;
use tch::Device;

use crate::config::{Config, resolve_inference};
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
            println!();
            print_uses(&config);
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

/// What each command uses with `config` on this machine's CPU (flags override each line):
/// the settings the commands resolve, written out so nobody has to know which table is whose.
fn print_uses(config: &Config) {
    let mut config = config.clone();
    let sizing = crate::sizing::size(&mut config, crate::sizing::Machine::detect(Device::Cpu));
    let (sp, inference, eval) = (&config.selfplay, &config.inference, &config.eval);
    let (options, notice) = resolve_inference(
        inference.precision,
        inference.backend,
        Device::Cpu,
        inference.max_batch,
    );
    let backend = match inference.backend.resolve(Device::Cpu, options.kind) {
        Ok(b) => b.to_string(),
        Err(e) => format!("refused: {e}"),
    };
    println!("# what each command uses with this config on this CPU (a flag overrides its line)");
    println!("# {sizing}");
    println!(
        "# self-play (train, selfplay): {} simulations a move ({} cheap, {:.0}% full searches), \
         an evaluation cache of {} positions an actor, {} actors",
        sp.simulations,
        sp.cheap_simulations,
        100.0 * sp.full_search_fraction,
        sp.cache_entries,
        sp.actors
    );
    println!(
        "# self-play's nets: backend {} -> {backend}, {notice}; batches of up to {}, {} server(s) \
         of {} thread(s)",
        inference.backend, inference.max_batch, inference.servers, inference.threads
    );
    println!(
        "# in-run evaluation and ladder: {} simulations a move ([eval] simulations), every {} \
         generation(s)",
        eval.simulations, eval.every
    );
    let anchor = if eval.engine.trim().is_empty() {
        "the 1-ply material-greedy mover ([eval] engine empty)".to_string()
    } else {
        format!(
            "`{}` at {} nodes a move, options {} where it offers them",
            eval.engine,
            eval.engine_nodes,
            options_text(&eval.engine_options)
        )
    };
    println!(
        "# in-run evaluation's anchor: {anchor}, {} games ([eval] openings_count x 2)",
        2 * eval.openings_count
    );
    println!(
        "# match, puzzles, uci, bench learn's and bench curve's matches (--config): {} simulations \
         a move ([search] simulations), no root noise, a draw at {} plies; evaluation cache {} \
         positions (uci {})",
        config.search.simulations,
        cfzero_eval::arena::MATCH_MAX_PLIES,
        cfzero_mcts::DEFAULT_CACHE_ENTRIES,
        crate::uci::CACHE_ENTRIES
    );
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
