//! `cfzero info`: what a config (or net) describes.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::config::Config;

/// Arguments of `cfzero info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Config file (TOML) to describe.
    #[arg(long)]
    pub config: PathBuf,
}

/// Prints the parsed config.
pub fn run(args: &InfoArgs) -> Result<()> {
    let config = Config::load(&args.config)?;
    println!("# config {}", args.config.display());
    print!("{}", config.to_toml());
    Ok(())
}
