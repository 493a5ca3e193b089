//! `cfzero label`: a UCI engine labels positions (its value of the position and of every
//! legal move) into a label file that `--data teacher:FILE` trains on.
//!
//! Positions come from a PGN file (every position of every game, with the plies left to its
//! end) or an EPD/FEN book (one a line). Entries are written in the source's order, one per
//! position (a label or why there is none), so a killed run started again with the same
//! command resumes at the first position without an entry: the finished file is the same as
//! that of a run never killed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use cfzero_eval::uci_client::{UciLimit, parse_option, resolve_command};
use cfzero_selfplay::replay::replay;
use cfzero_teacher::label_file::{GameHistory, LabelEntry, LabelHistory, LabelWriter};
use cfzero_teacher::pool::{EnginePool, Job, PoolEvent, PoolOptions};
use cfzero_teacher::{Method, Resumed};
use cfzero_trainer::source::pgn::{PgnFilters, open_pgn, parse_games};
use clap::Args;
use shakmaty::EnPassantMode;
use shakmaty::fen::Fen;

use crate::error::user_error;
use crate::run::progress::bar;
use crate::run::session::stop_on_ctrl_c;

/// Arguments of `cfzero label`.
#[derive(Debug, Args)]
pub struct LabelArgs {
    /// Positions to label: `pgn:FILE` (every position of every game), `epd:FILE` (one
    /// FEN or EPD position a line) or `lc0:PATH` (every position of Lc0 V6 training data: a
    /// `.gz` chunk or a directory of them).
    #[arg(long, value_name = "SOURCE")]
    pub from: String,
    /// The label file to write (`.cfl`); an existing one is resumed.
    #[arg(long)]
    pub out: PathBuf,
    /// The teacher: a UCI engine command line (e.g. `stockfish`: a bare name is looked for on
    /// PATH, then in /usr/games).
    #[arg(long)]
    pub engine: String,
    /// A UCI option of the engine, `Name=Value` (repeatable), e.g. `Threads=1`,
    /// `Hash=16`, `UCI_ShowWDL=true`.
    #[arg(long = "option", value_name = "NAME=VALUE")]
    pub options: Vec<String>,
    /// Budget of each search in nodes (the default: 1000).
    #[arg(long, conflicts_with_all = ["movetime", "depth"])]
    pub nodes: Option<u64>,
    /// Budget of each search in milliseconds.
    #[arg(long, conflicts_with = "depth")]
    pub movetime: Option<u64>,
    /// Budget of each search in plies of depth.
    #[arg(long)]
    pub depth: Option<u32>,
    /// How each legal move's value is obtained: `multipv` (one search, MultiPV = every
    /// legal move) or `searchmoves` (one search per move).
    #[arg(long, default_value = "multipv")]
    pub method: Method,
    /// Engine processes labelling at once.
    #[arg(long, default_value_t = 2)]
    pub processes: usize,
    /// Seconds an engine may take for one answer before it counts as hung and is restarted.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
    /// Tries per position before it is written as skipped.
    #[arg(long, default_value_t = 3)]
    pub attempts: usize,
    /// Label at most this many positions of the source (from its start).
    #[arg(long)]
    pub max_positions: Option<usize>,
}

/// Positions in memory at once beyond those the engines work on.
const IN_FLIGHT_PER_PROCESS: usize = 8;

/// A position to label, as its source gives it.
#[derive(Debug, Clone)]
struct SourcePosition {
    fen: String,
    /// Plies to the end of its game (PGN, Lc0 data).
    plies_left: Option<u16>,
    /// The game's plies before it (PGN).
    history: Option<LabelHistory>,
}

/// The positions of `spec` (a game's with the plies before them).
fn positions(spec: &str, max: usize) -> Result<Vec<SourcePosition>> {
    let (kind, path) = spec
        .split_once(':')
        .filter(|(_, p)| !p.is_empty())
        .ok_or_else(|| {
            user_error(format!(
                "`{spec}` is not a position source: write pgn:FILE, epd:FILE or lc0:PATH"
            ))
        })?;
    let path = PathBuf::from(path);
    match kind {
        "pgn" => {
            let reader =
                open_pgn(&path).map_err(|e| user_error(format!("pgn:{}: {e}", path.display())))?;
            let (games, stats) = parse_games(reader, PgnFilters::default(), max)
                .map_err(|e| user_error(format!("pgn:{}: {e}", path.display())))?;
            eprintln!(
                "pgn:{}: {} games; skipped {} with an unknown result, {} without a move, {} invalid",
                path.display(),
                stats.games,
                stats.unknown_result,
                stats.empty,
                stats.invalid
            );
            let mut out = Vec::new();
            for game in &games {
                let len = game.positions.len();
                let mut history = GameHistory::default();
                replay(game, |ply, state, _, mv| {
                    let left = u16::try_from(len - ply).unwrap_or(u16::MAX - 1);
                    out.push(SourcePosition {
                        fen: state.fen(),
                        plies_left: Some(left),
                        history: Some(history.of(state)),
                    });
                    history.push(state, &mv);
                })
                .map_err(|e| user_error(format!("pgn:{}: {e}", path.display())))?;
                if out.len() >= max {
                    break;
                }
            }
            out.truncate(max);
            Ok(out)
        }
        "epd" => {
            let fens = cfzero_selfplay::openings::read_openings(&path)
                .map_err(|e| user_error(format!("epd:{}: {e}", path.display())))?;
            Ok(fens
                .into_iter()
                .take(max)
                .map(|fen| SourcePosition {
                    fen,
                    plies_left: None,
                    history: None,
                })
                .collect())
        }
        "lc0" => lc0_positions(&path, max),
        _ => Err(user_error(format!(
            "`{spec}` is not a position source: write pgn:FILE, epd:FILE or lc0:PATH"
        ))),
    }
}

/// The positions of Lc0 V6 training data: a chunk (`.gz`, one game as Lc0 writes them) or a
/// directory of chunks (recursively, in name order), with the plies left in their games.
fn lc0_positions(path: &Path, max: usize) -> Result<Vec<SourcePosition>> {
    let bad = |e: &dyn std::fmt::Display| user_error(format!("lc0:{}: {e}", path.display()));
    let files = if path.is_dir() {
        cfzero_trainer::source::files_under(path, &["gz"]).map_err(|e| bad(&e))?
    } else {
        vec![path.to_path_buf()]
    };
    let (mut out, mut unreadable) = (Vec::new(), 0usize);
    for file in &files {
        let data = std::fs::read(file).map_err(|e| bad(&e))?;
        let records = cfzero_trainer::lc0_v6::decode_chunk(&data)
            .map_err(|e| user_error(format!("lc0:{}: {e}", file.display())))?;
        for r in records {
            if out.len() >= max {
                return Ok(out);
            }
            match r.position() {
                Some(p) => {
                    let fen = Fen::from_position(&p, EnPassantMode::Legal).to_string();
                    let left = (r.plies_left.is_finite() && r.plies_left >= 0.0)
                        .then(|| r.plies_left.round().min(f32::from(u16::MAX - 1)) as u16);
                    // V6 records hold history planes, not the moves between them.
                    out.push(SourcePosition {
                        fen,
                        plies_left: left,
                        history: None,
                    });
                }
                None => unreadable += 1,
            }
        }
    }
    eprintln!(
        "lc0:{}: {} positions from {} chunk(s){}",
        path.display(),
        out.len(),
        files.len(),
        if unreadable > 0 {
            format!(
                "; {unreadable} records left out (not the classical format, or no legal position)"
            )
        } else {
            String::new()
        }
    );
    Ok(out)
}

/// Labels the positions of `--from` into `--out`, resuming it if it exists.
pub fn run(args: &LabelArgs) -> Result<()> {
    let options = args
        .options
        .iter()
        .map(|o| parse_option(o).map_err(user_error))
        .collect::<Result<Vec<_>>>()?;
    let limit = match (args.nodes, args.movetime, args.depth) {
        (_, Some(ms), _) => UciLimit::Movetime(ms.max(1)),
        (_, _, Some(d)) => UciLimit::Depth(d.max(1)),
        (n, _, _) => UciLimit::Nodes(n.unwrap_or(1000).max(1)),
    };
    if args.processes == 0 || args.attempts == 0 || args.timeout == 0 {
        return Err(user_error(
            "--processes, --attempts and --timeout must be at least 1",
        ));
    }
    let pool_options = PoolOptions {
        command: resolve_command(&args.engine),
        options,
        limit,
        method: args.method,
        processes: args.processes,
        timeout: Duration::from_secs(args.timeout),
        attempts: args.attempts,
    };
    let header = pool_options.header(&args.from);
    let max = args.max_positions.unwrap_or(usize::MAX);
    let positions = positions(&args.from, max)?;
    // The engine first: a command that does not start must leave no file behind.
    let pool = EnginePool::start(&pool_options).map_err(user_error)?;
    let Resumed {
        mut writer,
        entries: done,
        cut,
    } = LabelWriter::open(&args.out, &header).map_err(user_error)?;
    if cut {
        eprintln!(
            "{}: cut off a partial last entry (a killed run); that position is labelled again",
            args.out.display()
        );
    }
    if done > 0 {
        eprintln!(
            "{}: resuming after {done} of {} positions",
            args.out.display(),
            positions.len()
        );
    }
    if done >= positions.len() {
        eprintln!(
            "{}: every position already has an entry",
            args.out.display()
        );
        return Ok(());
    }
    eprintln!(
        "labelling {} positions with {} ({limit}, {:?}, {} processes)",
        positions.len() - done,
        pool.name(),
        args.method,
        args.processes
    );
    let stop = stop_on_ctrl_c();
    let total = positions.len();
    let progress = bar((total - done) as u64, "label", "positions");
    let started = Instant::now();
    let mut next = done;
    let mut written = done;
    let mut ready: BTreeMap<u64, LabelEntry> = BTreeMap::new();
    let (mut labels, mut skipped, mut warnings) = (0u64, 0u64, 0u64);
    let window = args.processes * IN_FLIGHT_PER_PROCESS;
    while written < total {
        while next < total && next - written < window && !stop.load(Ordering::Relaxed) {
            let SourcePosition {
                fen,
                plies_left,
                history,
            } = positions[next].clone();
            pool.submit(Job {
                index: next as u64,
                fen,
                plies_left,
                history,
            });
            next += 1;
        }
        if stop.load(Ordering::Relaxed) && ready.is_empty() && next == written {
            break;
        }
        match pool.next_event(Duration::from_millis(500)) {
            Some(PoolEvent::Done(index, entry)) => {
                ready.insert(index, entry);
            }
            Some(PoolEvent::Warning(w)) => {
                warnings += 1;
                progress.suspend(|| eprintln!("warning: {w}"));
            }
            Some(PoolEvent::Failed(reason, job)) => {
                progress.suspend(|| eprintln!("error: {reason}"));
                pool.submit(job);
            }
            None => {}
        }
        // While the pool lives a worker ends only when its engine cannot be restarted.
        if pool.all_failed() {
            writer.sync().map_err(user_error)?;
            return Err(user_error(format!(
                "{}: every engine failed; {written} of {total} positions have an entry, run the same command again to resume",
                args.out.display()
            )));
        }
        // Entries go out in the source's order: the file is always a prefix of the run.
        while let Some(entry) = ready.remove(&(written as u64)) {
            match &entry {
                LabelEntry::Label(_) => labels += 1,
                LabelEntry::Skipped { .. } => skipped += 1,
            }
            writer
                .append(&entry)
                .with_context(|| format!("writing {}", args.out.display()))?;
            written += 1;
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    writer.sync().map_err(user_error)?;
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    eprintln!(
        "{}: {labels} labels and {skipped} skipped in {secs:.1} s ({:.1} positions/s), {warnings} engine warnings; {written} of {total} positions done",
        args.out.display(),
        (labels + skipped) as f64 / secs
    );
    if written < total {
        eprintln!("stopped: run the same command again to resume");
    }
    Ok(())
}
