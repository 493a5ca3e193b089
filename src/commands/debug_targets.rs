//! `cfzero debug targets`: how well each recorded search value predicts the game's result,
//! over the trainable positions of a run's games. It compares the candidate q targets
//! (the root's mean, the chosen move's Q, the improved policy's expectation of the
//! completed Q) and the network's own value: their mean against the results' mean shows a
//! bias, their mean squared error against the result how much each one knows.

use std::path::PathBuf;

use anyhow::Result;
use cfzero_selfplay::record::read_records;
use cfzero_selfplay::window::collect_record_files;
use clap::Args;
use serde::Serialize;
use shakmaty::Color;

use crate::error::user_error;
use crate::user_bail;

/// Arguments of `cfzero debug targets`.
#[derive(Debug, Args)]
pub struct TargetsArgs {
    /// A directory of game records (e.g. `runs/tiny/games`, or one generation's folder).
    #[arg(long)]
    pub games: PathBuf,
}

/// The statistics of one value over the positions.
#[derive(Debug, Default, Serialize)]
struct ValueStats {
    name: &'static str,
    mean: f64,
    mse_vs_result: f64,
}

/// The report, one JSON object.
#[derive(Debug, Serialize)]
struct TargetsReport {
    games: usize,
    positions: usize,
    result_mean: f64,
    values: Vec<ValueStats>,
}

/// Reads the records and prints the report as JSON.
pub fn run(args: &TargetsArgs) -> Result<String> {
    if !args.games.is_dir() {
        user_bail!(
            "{} is not a directory of game records",
            args.games.display()
        );
    }
    let mut files = Vec::new();
    collect_record_files(&args.games, &mut files)
        .map_err(|e| user_error(format!("reading {}: {e}", args.games.display())))?;
    files.sort();
    let names = ["network_q", "root_q", "best_q", "policy_q"];
    let mut sums = [0.0f64; 4];
    let mut squares = [0.0f64; 4];
    let (mut games, mut n, mut z_sum) = (0usize, 0usize, 0.0f64);
    for path in files {
        let records = match read_records(&path) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("warning: skipping {e}");
                continue;
            }
        };
        for game in records {
            games += 1;
            // The side to move alternates from the start position's.
            let black_first = game
                .start_fen
                .as_deref()
                .is_some_and(|f| f.split_whitespace().nth(1) == Some("b"));
            let mut turn = if black_first {
                Color::Black
            } else {
                Color::White
            };
            for p in &game.positions {
                if p.is_trainable() {
                    let z = f64::from(game.result.value_for(turn));
                    let values = [p.network_q, p.root_q, p.best_q, p.policy_q];
                    for (i, v) in values.iter().enumerate() {
                        sums[i] += f64::from(*v);
                        squares[i] += (f64::from(*v) - z).powi(2);
                    }
                    z_sum += z;
                    n += 1;
                }
                turn = !turn;
            }
        }
    }
    if n == 0 {
        user_bail!("no trainable positions under {}", args.games.display());
    }
    let report = TargetsReport {
        games,
        positions: n,
        result_mean: z_sum / n as f64,
        values: (0..4)
            .map(|i| ValueStats {
                name: names[i],
                mean: sums[i] / n as f64,
                mse_vs_result: squares[i] / n as f64,
            })
            .collect(),
    };
    Ok(serde_json::to_string_pretty(&report)? + "\n")
}
