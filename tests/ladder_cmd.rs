//! `cfzero ladder` on a two-generation micro run: a CSV with a rating per generation,
//! generation 0 at 0 Elo, a PNG plot, and results that later calls reuse.

mod common;

use std::path::Path;

use common::*;

fn ladder(run: &Path, games: &str) -> std::process::Output {
    ladder_at(run, games, "2")
}

/// `cfzero ladder` with `games` a pair at `sims` simulations a move.
fn ladder_at(run: &Path, games: &str, sims: &str) -> std::process::Output {
    let out = cfzero(&[
        "ladder",
        "--device",
        "cpu",
        "--run",
        run.to_str().unwrap(),
        "--games",
        games,
        "--sims",
        sims,
        "--max-plies",
        "16",
        "--openings",
        "configs/openings/4mvs_+90_+99.epd",
    ])
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "ladder failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// (a, b, games) of each pair in `results.json`.
fn pairs(run: &Path) -> Vec<(u64, u64, u64)> {
    let text = std::fs::read_to_string(run.join("ladder/results.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap();
            (n("a"), n("b"), n("wins") + n("draws") + n("losses"))
        })
        .collect()
}

#[test]
fn a_run_gets_a_rating_per_generation_and_a_plot() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let config = micro_with(
        &tmp.path().join("micro.toml"),
        &[("every = 1", "every = 0")],
    );
    train_run(&config, &run, 2, &[]);

    ladder(&run, "2");
    assert_eq!(pairs(&run), [(1, 0, 2), (2, 1, 2), (2, 0, 2)]);
    let csv = std::fs::read_to_string(run.join("ladder/ratings.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(
        csv.lines().next().unwrap(),
        "generation,step,minutes,elo,elo_low,elo_high,games"
    );
    assert_eq!(rows.len(), 3);
    assert_eq!(&rows[0][..6], ["0", "0", "0.0", "0.0", "0.0", "0.0"]);
    // micro trains 4 steps a generation; generation 1 played 2 games with each neighbour.
    assert_eq!((rows[1][0], rows[1][1], rows[1][6]), ("1", "4", "4"));
    for row in &rows[1..] {
        let [lo, elo, hi] = [row[4], row[3], row[5]].map(|x| x.parse::<f64>().unwrap());
        assert!(lo < elo && elo < hi, "{row:?}");
    }
    let png = std::fs::read(run.join("ladder/elo.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 5_000, "a plot with axes and labels");

    // More games per pair: only the missing ones are played.
    ladder(&run, "4");
    assert_eq!(pairs(&run), [(1, 0, 4), (2, 1, 4), (2, 0, 4)]);

    // Another number of simulations plays its own games, kept apart from the others', and
    // rates from them alone.
    ladder_at(&run, "2", "3");
    assert_eq!(
        pairs(&run),
        [
            (1, 0, 4),
            (2, 1, 4),
            (2, 0, 4),
            (1, 0, 2),
            (2, 1, 2),
            (2, 0, 2)
        ]
    );
    let text = std::fs::read_to_string(run.join("ladder/results.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let sims: Vec<u64> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["sims"].as_u64().unwrap())
        .collect();
    assert_eq!(sims, [2, 2, 2, 3, 3, 3]);
    let csv = std::fs::read_to_string(run.join("ladder/ratings.csv")).unwrap();
    let gen1: Vec<&str> = csv.lines().nth(2).unwrap().split(',').collect();
    assert_eq!((gen1[0], gen1[6]), ("1", "4"), "{csv}");
}

#[test]
fn a_directory_without_a_run_is_a_user_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = cfzero(&["ladder", "--run", tmp.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run"));
}
