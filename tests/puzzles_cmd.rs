//! `cfzero puzzles` end to end: a known answer (the material backend on hand-made puzzles
//! solves exactly the five it can), the tally of the Lichess sample with a random micro net,
//! and bad input as a one-line error, exit code 2.

mod common;

use common::*;

/// The JSON report of `cfzero puzzles --device cpu --net NET --json ARGS...`, which must succeed.
fn puzzles_report(net: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec![
        "puzzles",
        "--device",
        "cpu",
        "--json",
        "--net",
        net.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let out = cfzero(&all).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_net_is_scored_on_puzzles_by_rating_band() {
    let tmp = tempfile::tempdir().unwrap();
    let net = save_micro_net(tmp.path());
    let report = puzzles_report(
        &net,
        &[
            "--file",
            "tests/data/puzzles/sample.csv",
            "--sims",
            "4",
            "--limit",
            "6",
        ],
    );
    assert_eq!(report["tally"]["all"][1], 6);
    // The first six rows: three under 1000, three in 1000-1500.
    assert_eq!(report["tally"]["bands"][0][1], 3);
    assert_eq!(report["tally"]["bands"][1][1], 3);
    let outcomes = report["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), 6);
    let solved = outcomes.iter().filter(|o| o["solved"] == true).count();
    assert_eq!(report["tally"]["all"][0], solved);
    assert_eq!(outcomes[0]["id"], "3IQ26");

    let err = cfzero(&[
        "puzzles",
        "--net",
        net.to_str().unwrap(),
        "--file",
        "nope.csv",
    ])
    .output()
    .unwrap();
    assert_eq!(err.status.code(), Some(2));
    let text = String::from_utf8_lossy(&err.stderr);
    assert!(
        text.contains("nope.csv") && text.trim().lines().count() == 1,
        "{text}"
    );
}

/// The material-counting searcher on `tests/data/puzzles/known.csv`: it finds the three mates in
/// one (any searcher does: a checkmate solves a puzzle) and takes the two free queens, and
/// fails the two puzzles whose listed solution is a quiet move beside a free queen. A scorer
/// that compared the wrong move, counted a wrong move as solved or a mate as wrong, or sorted
/// the bands wrong gives another answer.
#[test]
fn the_material_searcher_solves_exactly_the_puzzles_it_can() {
    let tmp = tempfile::tempdir().unwrap();
    let net = save_micro_net(tmp.path());
    let report = puzzles_report(
        &net,
        &[
            "--backend",
            "material",
            "--file",
            "tests/data/puzzles/known.csv",
            "--sims",
            "64",
        ],
    );
    let solved: Vec<&str> = report["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["solved"] == true)
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        solved,
        ["kaMate1", "kaMate2", "kaMate3", "kaQueen1", "kaQueen2"]
    );
    assert_eq!(report["tally"]["all"][0], 5);
    assert_eq!(report["tally"]["all"][1], 7);
    // Ratings 600-800 fall in the band under 1000, 1100-1200 in 1000-1500, 1600-1700 in
    // 1500-2000: (solved, total) per band.
    assert_eq!(report["tally"]["bands"][0], serde_json::json!([3, 3]));
    assert_eq!(report["tally"]["bands"][1], serde_json::json!([2, 2]));
    assert_eq!(report["tally"]["bands"][2], serde_json::json!([0, 2]));
}
