//! `cfzero puzzles` end to end on the sample of `tests/data/puzzles` with a random micro net:
//! the tally adds up whatever the net plays, and bad input is a one-line error, exit code 2.

mod common;

use cfzero_network::{Net, save_net};
use common::*;
use tch::Device;

#[test]
fn a_net_is_scored_on_puzzles_by_rating_band() {
    let tmp = tempfile::tempdir().unwrap();
    let net = tmp.path().join("micro.safetensors");
    save_net(
        &Net::new(&network_config(&micro_config()), Device::Cpu).unwrap(),
        &net,
    )
    .unwrap();
    let out = cfzero(&[
        "puzzles",
        "--device",
        "cpu",
        "--net",
        net.to_str().unwrap(),
        "--file",
        "tests/data/puzzles/sample.csv",
        "--sims",
        "4",
        "--limit",
        "6",
        "--json",
    ])
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
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
