//! `cfzero debug targets`: how well each recorded search value predicts the game's result,
//! over the trainable positions of a run's games. It compares the candidate q targets
//! (the root's mean, the chosen move's Q, the improved policy's expectation of the
//! completed Q) and the network's own value: their mean against the results' mean shows a
//! bias, their mean squared error against the result how much each one knows. Two yardsticks
//! stand beside them: always predicting a draw (the mean squared error is then the share of
//! decisive results), and counting material (`tanh(balance / 5)`, the material evaluator's
//! value), which any value worth its training should beat.

use std::path::PathBuf;

use anyhow::Result;
use cfzero_chess::{material_balance, material_value};
use cfzero_selfplay::record::read_records;
use cfzero_selfplay::replay::{replay, validate};
use cfzero_selfplay::window::collect_record_files;
use clap::Args;
use serde::Serialize;
use shakmaty::Position;

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
    /// Pearson's correlation with the result; `null` where the value never varies.
    correlation: Option<f64>,
}

/// The report, one JSON object.
#[derive(Debug, Serialize)]
struct TargetsReport {
    games: usize,
    positions: usize,
    result_mean: f64,
    /// The mean squared error of always predicting a draw (0): the share of positions whose
    /// game was decided.
    draw_mse: f64,
    values: Vec<ValueStats>,
}

/// Running sums of one value against the result.
#[derive(Debug, Default, Clone, Copy)]
struct Sums {
    v: f64,
    vv: f64,
    vz: f64,
    err: f64,
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
    let names = ["network_q", "root_q", "best_q", "policy_q", "material"];
    let mut sums = [Sums::default(); 5];
    let (mut games, mut n, mut z_sum, mut zz_sum) = (0usize, 0usize, 0.0f64, 0.0f64);
    for path in files {
        let records = match read_records(&path) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("warning: skipping {e}");
                continue;
            }
        };
        for game in records {
            // A game that does not replay is left out whole, as the window leaves it out.
            if let Err(e) = validate(&game) {
                eprintln!("warning: skipping a game of {}: {e}", path.display());
                continue;
            }
            games += 1;
            let replayed = replay(&game, |ply, state, _, _| {
                let p = &game.positions[ply];
                if !p.is_trainable() {
                    return;
                }
                let position = state.position();
                let z = f64::from(game.result.value_for(position.turn()));
                let material =
                    material_value(material_balance(position.board(), position.turn()) as f32);
                let values = [p.network_q, p.root_q, p.best_q, p.policy_q, material];
                for (s, v) in sums.iter_mut().zip(values) {
                    let v = f64::from(v);
                    s.v += v;
                    s.vv += v * v;
                    s.vz += v * z;
                    s.err += (v - z).powi(2);
                }
                z_sum += z;
                zz_sum += z * z;
                n += 1;
            });
            replayed.map_err(|e| user_error(format!("{}: {e}", path.display())))?;
        }
    }
    if n == 0 {
        user_bail!("no trainable positions under {}", args.games.display());
    }
    let n_f = n as f64;
    let z_var = zz_sum / n_f - (z_sum / n_f).powi(2);
    let report = TargetsReport {
        games,
        positions: n,
        result_mean: z_sum / n_f,
        draw_mse: zz_sum / n_f,
        values: names
            .iter()
            .zip(sums)
            .map(|(&name, s)| {
                let mean = s.v / n_f;
                let var = s.vv / n_f - mean * mean;
                let cov = s.vz / n_f - mean * z_sum / n_f;
                // Rounding leaves a constant value's variance a hair above zero.
                let correlation =
                    (var > 1e-12 && z_var > 1e-12).then(|| cov / (var * z_var).sqrt());
                ValueStats {
                    name,
                    mean,
                    mse_vs_result: s.err / n_f,
                    correlation,
                }
            })
            .collect(),
    };
    Ok(serde_json::to_string_pretty(&report)? + "\n")
}
