//! `cfzero`: train chess networks from zero by self-play, evaluate and play them.

mod commands;
mod config;
mod error;
mod flags;
#[cfg(test)]
mod fuzz_tests;
mod malloc;
mod plot;
mod run;
mod sizing;
mod uci;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Train chess networks from zero by self-play (Chessformer + Gumbel search).
#[derive(Debug, Parser)]
#[command(name = "cfzero", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the whole training loop: self-play, train, publish, repeat.
    Train(run::session::RunArgs),
    /// Self-play worker: plays games with the newest net of a run directory.
    Selfplay(commands::selfplay::SelfplayArgs),
    /// Trainer: learns from the games that workers write to a run directory.
    Learn(commands::learn::LearnArgs),
    /// Play a match between two nets or engines.
    Match(Box<commands::match_cmd::MatchArgs>),
    /// Rate all generations of a run against each other.
    Ladder(commands::ladder::LadderArgs),
    /// Play a net as a UCI engine.
    Uci(uci::UciArgs),
    /// Solve Lichess puzzles with a net.
    Puzzles(commands::puzzles::PuzzlesArgs),
    /// Export a net to Lc0's format or the native one.
    Export(commands::export::ExportArgs),
    /// Export a run's games as training data for other tools (Lc0's V6 format).
    ExportData(commands::export_data::ExportDataArgs),
    /// Label positions with a UCI engine's values (a teacher for `--data teacher:FILE`).
    Label(commands::label::LabelArgs),
    /// Import an Lc0 attention-body net.
    Import(commands::import::ImportArgs),
    /// Measure search, inference, self-play and training speed.
    Bench(commands::bench::BenchArgs),
    /// Describe a config or a net.
    Info(commands::info::InfoArgs),
    /// Inspect the encoding: the policy move list, a position's input planes.
    Debug(commands::debug::DebugArgs),
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Info(args) => commands::info::run(&args),
        Command::Bench(args) => commands::bench::run(&args),
        Command::Train(args) => commands::train::run(&args),
        Command::Selfplay(args) => commands::selfplay::run(&args),
        Command::Learn(args) => commands::learn::run(&args),
        Command::Debug(args) => commands::debug::run(&args),
        Command::Match(args) => commands::match_cmd::run(&args),
        Command::Uci(args) => uci::run(&args),
        Command::Ladder(args) => commands::ladder::run(&args),
        Command::Puzzles(args) => commands::puzzles::run(&args),
        Command::Export(args) => commands::export::run(&args),
        Command::ExportData(args) => commands::export_data::run(&args),
        Command::Import(args) => commands::import::run(&args),
        Command::Label(args) => commands::label::run(&args),
    }
}

fn main() {
    malloc::keep_large_blocks();
    let cli = Cli::parse();
    if let Err(err) = run(cli) {
        eprintln!("error: {err:#}");
        std::process::exit(error::exit_code(&err));
    }
}
