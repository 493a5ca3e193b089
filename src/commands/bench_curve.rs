//! `cfzero bench curve`: how a run's strength grew with its training time. For each mark of
//! `--minutes` it takes the newest net published by then (the run's minutes of training that
//! each net records, as the ladder counts them: a pause between trainers does not count),
//! plays it against the greedy mover and, with `--engine`, a UCI engine at the in-run
//! evaluation's reference settings (the run config's `[eval]` engine options and nodes), each
//! opening with both colours, solves `--puzzles`, and writes `curve.tsv` and `curve.png` into
//! the run's directory (its cache for a run on object storage). One run gives every mark: the
//! schedule does not depend on the budget, so the net a run has at 15 minutes is the net a
//! 15-minute run ends with.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use serde::Serialize;

use super::match_cmd::MatchReport;
use super::net_measure::{MeasureFlags, NetMeasure, Opponents, match_options};
use super::net_play::{play_search, serve_net};
use crate::config::Config;
use crate::error::user_error;
use crate::flags::DeviceFlag;
use crate::plot::{ScoreSeries, score_curve};
use crate::run::deadline::parse_minutes;
use crate::run::session::stop_on_ctrl_c;
use crate::run::stored_run::StoredRun;
use crate::user_bail;
use cfzero_fsutil::write_file_atomically;
use cfzero_store::RunLocation;

/// Arguments of `cfzero bench curve`.
#[derive(Debug, Args)]
pub struct CurveBenchArgs {
    /// The run, a directory or a URL (its nets are read into the cache with the times they
    /// were published).
    #[arg(long)]
    pub run: PathBuf,
    /// The cache of a run on object storage (as `cfzero train --cache`).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// The marks, minutes of training from zero, comma-separated (e.g. `15,30,60,120`).
    #[arg(
        long,
        value_delimiter = ',',
        required = true,
        allow_negative_numbers = true
    )]
    pub minutes: Vec<f64>,
    /// Games against each opponent (each opening with both colours, in file order).
    #[arg(long, default_value_t = 200)]
    pub games: usize,
    #[command(flatten)]
    pub measure: MeasureFlags,
    #[command(flatten)]
    pub device: DeviceFlag,
    /// Print the rows as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A run whose newest net is older than this share of a mark is too short for it.
const SHORT_RUN: f64 = 0.95;

/// One measurement of one mark.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct CurveRow {
    /// The mark, in minutes.
    mark: f64,
    /// The net measured: the newest published by the mark.
    generation: u32,
    /// When it was published, in the run's minutes of training.
    minutes: f64,
    /// What was measured: an opponent's label, or `puzzles`.
    measure: String,
    /// Games played or puzzles tried.
    count: usize,
    /// Wins, draws and losses (solved, 0, failed for puzzles).
    wins: u32,
    draws: u32,
    losses: u32,
    /// The score (or the share solved) and its 95% interval.
    score: f64,
    low: f64,
    high: f64,
}

/// The header of `curve.tsv`.
const HEADER: &str =
    "mark\tgeneration\tminutes\tmeasure\tcount\twins\tdraws\tlosses\tscore\tscore_low\tscore_high";

impl CurveRow {
    fn to_line(&self) -> String {
        format!(
            "{}\t{}\t{:.2}\t{}\t{}\t{}\t{}\t{}\t{:.4}\t{:.4}\t{:.4}",
            self.mark,
            self.generation,
            self.minutes,
            self.measure.replace('\t', " "),
            self.count,
            self.wins,
            self.draws,
            self.losses,
            self.score,
            self.low,
            self.high
        )
    }
}

/// The net to measure at `mark` minutes: the newest of `published` (generation and minutes
/// of training, ascending) published by then, as that entry; `None` if the run's newest net
/// is older than [`SHORT_RUN`] of the mark (the run is too short for it).
fn net_at(published: &[(u32, f64)], mark: f64) -> Option<(u32, f64)> {
    let (_, newest) = *published.last()?;
    if newest < SHORT_RUN * mark {
        return None;
    }
    published
        .iter()
        .rev()
        .find(|(_, minutes)| *minutes <= mark)
        .copied()
}

/// Runs the benchmark.
pub fn run(args: &CurveBenchArgs) -> Result<()> {
    for &m in &args.minutes {
        parse_minutes(m)?;
    }
    if args.games == 0 {
        user_bail!("--games must be at least 1");
    }
    let location = RunLocation::parse(&args.run.to_string_lossy()).map_err(user_error)?;
    let stored = StoredRun::open(&location, args.cache.as_deref(), None)?;
    stored.pull_ladder()?;
    let dir = stored.dir();
    let config_path = dir.config();
    if !config_path.exists() {
        user_bail!("{}: no run there (no config.toml)", args.run.display());
    }
    let config = Config::load(&config_path)?;
    let play = play_search(Some(&config_path), args.measure.sims, "--sims")?;
    let opponents = Opponents::load(&args.measure, &config.eval)?;

    let gens = dir.published()?;
    let Some(&first) = gens.first() else {
        user_bail!("{}: the run has no published net", args.run.display());
    };
    let published: Vec<(u32, f64)> = gens
        .iter()
        .map(|&g| (g, dir.minutes_between(first, g)))
        .collect();
    let newest = published.last().map_or(0.0, |p| p.1);
    let mut marks = Vec::new();
    for &mark in &args.minutes {
        match net_at(&published, mark) {
            Some((g, minutes)) => marks.push((mark, g, minutes)),
            None => eprintln!(
                "warning: mark {mark} min skipped: the run's newest net is from minute {newest:.1}"
            ),
        }
    }
    if marks.is_empty() {
        user_bail!(
            "{}: no mark reached (the run's newest net is from minute {newest:.1})",
            args.run.display()
        );
    }

    let device = args.device.parse()?;
    config.inference.use_threads();
    let stop = stop_on_ctrl_c();
    let mut rows = Vec::new();
    for (mark, g, minutes) in marks {
        eprintln!(
            "bench curve: mark {mark} min: generation {g} (published at minute {minutes:.1})"
        );
        let handle = serve_net(
            &dir.net(g),
            device,
            config.inference.precision,
            config.inference.backend,
        )?;
        let label = format!("gen-{g:04} ({} sims)", play.simulations);
        let scores = NetMeasure {
            handle: &handle,
            play: &play,
            label: &label,
            options: match_options(args.games, args.measure.max_plies),
            seed: config.run.seed,
            stop: &stop,
        }
        .scores(&opponents, false)?;
        let row = |measure: &str, report: &MatchReport| {
            let s = report.score();
            let (low, score, high) = report.score_interval();
            CurveRow {
                mark,
                generation: g,
                minutes,
                measure: measure.to_owned(),
                count: args.games,
                wins: s.wins,
                draws: s.draws,
                losses: s.losses,
                score,
                low,
                high,
            }
        };
        rows.push(row("greedy", &scores.vs_greedy));
        if let (Some(report), Some((_, name))) = (&scores.vs_engine, &opponents.engine) {
            rows.push(row(name, report));
        }
        if let Some(p) = &scores.puzzles {
            rows.push(CurveRow {
                mark,
                generation: g,
                minutes,
                measure: "puzzles".into(),
                count: p.total,
                wins: p.solved as u32,
                draws: 0,
                losses: (p.total - p.solved) as u32,
                score: p.share,
                low: p.low,
                high: p.high,
            });
        }
        for r in rows.iter().filter(|r| r.mark == mark) {
            eprintln!(
                "  {}: {:.1}% [{:.1}, {:.1}] of {}",
                r.measure,
                100.0 * r.score,
                100.0 * r.low,
                100.0 * r.high,
                r.count
            );
        }
    }

    let tsv = dir.root().join("curve.tsv");
    let png = dir.root().join("curve.png");
    write_rows(&tsv, &rows)?;
    let title = format!(
        "{}: strength by training time ({} sims, {} games an opponent)",
        args.run.display(),
        play.simulations,
        args.games
    );
    score_curve(&series(&rows), &title, &png)?;
    if args.json {
        let report = serde_json::json!({
            "run": args.run,
            "simulations": play.simulations,
            "games": args.games,
            "openings": args.measure.openings,
            "rows": rows,
        });
        println!("{report}");
    } else {
        println!("{HEADER}");
        for r in &rows {
            println!("{}", r.to_line());
        }
    }
    eprintln!("wrote {} and {}", tsv.display(), png.display());
    Ok(())
}

/// Writes `rows` to `path` with the header.
fn write_rows(path: &Path, rows: &[CurveRow]) -> Result<()> {
    let mut text = format!("{HEADER}\n");
    for r in rows {
        text.push_str(&r.to_line());
        text.push('\n');
    }
    write_file_atomically(path, text.as_bytes())
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
}

/// The rows as the plot's lines, one a measure, in the order first measured.
fn series(rows: &[CurveRow]) -> Vec<ScoreSeries> {
    let mut out: Vec<ScoreSeries> = Vec::new();
    for r in rows {
        let point = (r.minutes, r.score, r.low, r.high);
        match out.iter_mut().find(|s| s.name == r.measure) {
            Some(s) => s.points.push(point),
            None => out.push(ScoreSeries {
                name: r.measure.clone(),
                points: vec![point],
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mark_takes_the_newest_net_published_by_then() {
        let published = [(0, 0.0), (1, 4.0), (2, 9.5), (3, 15.2), (4, 29.8)];
        assert_eq!(net_at(&published, 15.0), Some((2, 9.5)));
        assert_eq!(net_at(&published, 15.2), Some((3, 15.2)));
        assert_eq!(net_at(&published, 1.0), Some((0, 0.0)));
        // The run ends at 29.8 minutes: within 5% of 30 it counts as the 30-minute net...
        assert_eq!(net_at(&published, 30.0), Some((4, 29.8)));
        // ...and a mark past it is skipped, not measured on a younger net.
        assert_eq!(net_at(&published, 60.0), None);
        assert_eq!(net_at(&[], 5.0), None);
    }

    #[test]
    fn rows_become_one_line_a_measure() {
        let row = |mark: f64, measure: &str, score: f64| CurveRow {
            mark,
            generation: mark as u32,
            minutes: mark - 0.5,
            measure: measure.into(),
            count: 200,
            wins: 1,
            draws: 2,
            losses: 3,
            score,
            low: score - 0.125,
            high: score + 0.125,
        };
        let rows = [
            row(15.0, "greedy", 0.25),
            row(15.0, "puzzles", 0.125),
            row(30.0, "greedy", 0.5),
            row(30.0, "puzzles", 0.25),
        ];
        let s = series(&rows);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "greedy");
        assert_eq!(
            s[0].points,
            vec![(14.5, 0.25, 0.125, 0.375), (29.5, 0.5, 0.375, 0.625)]
        );
        assert_eq!(s[1].name, "puzzles");
        assert_eq!(
            rows[0].to_line(),
            "15\t15\t14.50\tgreedy\t200\t1\t2\t3\t0.2500\t0.1250\t0.3750"
        );
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("curve.png");
        score_curve(&s, "test", &png).unwrap();
        assert_eq!(&std::fs::read(&png).unwrap()[..8], b"\x89PNG\r\n\x1a\n");
    }
}
