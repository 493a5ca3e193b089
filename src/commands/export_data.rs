//! `cfzero export-data`: a run's self-play games as Lc0 V6 training data, one gzip chunk per
//! game as Lc0 writes them, for Lc0's trainer (lczero-training) and rescorer.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use cfzero_fsutil::write_file_atomically;
use cfzero_network::checkpoint::read_net_config;
use cfzero_selfplay::record::read_records;
use cfzero_selfplay::window::sorted_record_files;
use cfzero_trainer::lc0_v6::encode_chunk;
use cfzero_trainer::lc0_v6_writer::game_to_v6;
use clap::{Args, ValueEnum};

use crate::error::user_error;
use crate::run::dir::RunDir;
use crate::run::progress::bar;
use crate::run::stored_run::StoredRun;
use cfzero_store::RunLocation;

/// Training data formats written.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DataFormat {
    /// Lc0's V6 records (8,356 bytes a position), one `.gz` chunk per game.
    Lc0V6,
}

/// Arguments of `cfzero export-data`.
#[derive(Debug, Args)]
pub struct ExportDataArgs {
    /// The run whose games are exported: a directory or a URL (`s3://BUCKET/PREFIX`, ...).
    #[arg(long)]
    pub run: PathBuf,
    /// Object storage: the local cache the games are downloaded into (default
    /// `~/.cache/cfzero/runs/<run>`, or under `$CFZERO_CACHE`).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "lc0-v6")]
    pub format: DataFormat,
    /// Output directory (created): `game_000000.gz`, ... in the games' order.
    #[arg(long)]
    pub out: PathBuf,
}

/// Runs `cfzero export-data`.
pub fn run(args: &ExportDataArgs) -> Result<()> {
    let DataFormat::Lc0V6 = args.format;
    // A run on object storage is read through its cache, like every run.
    let location = RunLocation::parse(&args.run.to_string_lossy()).map_err(user_error)?;
    let stored = StoredRun::open(&location, args.cache.as_deref(), None)?;
    let pulled = stored.pull_games()?;
    if pulled > 0 {
        eprintln!(
            "{pulled} chunk(s) of games downloaded from {location} into {}",
            stored.dir().root().display()
        );
    }
    let root = stored.dir().root().to_owned();
    let games_dir = RunDir::new(&root).root().join("games");
    if !games_dir.is_dir() {
        return Err(user_error(format!(
            "{}: not a run directory with games (no {})",
            args.run.display(),
            games_dir.display()
        )));
    }
    // The run's convention for the history before a FEN start: its newest net's (a resumed
    // run keeps its nets' convention), else its frozen config's.
    let dir = RunDir::new(&root);
    let fill = match dir.published()?.last() {
        Some(&g) => {
            read_net_config(&dir.net(g))
                .map_err(user_error)?
                .history_fill
        }
        None => {
            crate::config::Config::load(&dir.config())?
                .network
                .history_fill
        }
    };
    let files = sorted_record_files(&games_dir)
        .with_context(|| format!("listing {}", games_dir.display()))?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let start = Instant::now();
    let pb = bar(files.len() as u64, "export", "files");
    let (mut games, mut positions, mut skipped) = (0usize, 0usize, 0usize);
    for file in &files {
        pb.inc(1);
        let records = match read_records(file) {
            Ok(r) => r,
            Err(e) => {
                pb.suspend(|| eprintln!("warning: skipping {}: {e}", file.display()));
                skipped += 1;
                continue;
            }
        };
        for game in &records {
            let v6 = match game_to_v6(game, fill) {
                Ok(v) if !v.is_empty() => v,
                Ok(_) => continue,
                Err(e) => {
                    pb.suspend(|| eprintln!("warning: skipping a game of {}: {e}", file.display()));
                    skipped += 1;
                    continue;
                }
            };
            let path = args.out.join(format!("game_{games:06}.gz"));
            write_file_atomically(&path, &encode_chunk(&v6)?)
                .with_context(|| format!("writing {}", path.display()))?;
            games += 1;
            positions += v6.len();
        }
    }
    pb.finish_and_clear();
    eprintln!(
        "exported {games} games, {positions} positions to {} in {:.1} s{}",
        args.out.display(),
        start.elapsed().as_secs_f64(),
        if skipped > 0 {
            format!(" ({skipped} unreadable files or games skipped)")
        } else {
            String::new()
        }
    );
    Ok(())
}
