//! `cfzero match` end to end: a net against the random mover, the random mover against a real
//! UCI engine process (`tests/engines/pick_engine.py`), the random against the greedy mover,
//! the PGN it writes read back by python-chess, and one-line errors with exit code 2 for bad
//! input.

mod common;

use std::path::Path;

use cfzero_network::{Net, save_net};
use common::*;
use tch::Device;

/// The test engine's command line.
fn engine() -> String {
    pick_engine()
}

/// Runs `cfzero match ARGS --json` and returns the report.
fn match_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["match", "--json", "--device", "cpu"];
    all.extend_from_slice(args);
    let out = cfzero(&all).output().unwrap();
    assert!(
        out.status.success(),
        "cfzero {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object on stdout")
}

fn count(report: &serde_json::Value, key: &str) -> u64 {
    report["score"][key].as_u64().unwrap()
}

#[test]
fn a_net_plays_the_random_mover_from_an_opening_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let net_path = tmp.path().join("gen-0000.safetensors");
    let net = Net::new(&network_config(&micro_config()), Device::Cpu).unwrap();
    save_net(&net, &net_path).unwrap();
    let openings = repo_root().join("configs/openings/4mvs_+90_+99.epd");
    let pgn = tmp.path().join("games.pgn");
    let report = match_json(&[
        "--a-net",
        net_path.to_str().unwrap(),
        "--a-sims",
        "4",
        "--b-random",
        "--openings",
        openings.to_str().unwrap(),
        "--games",
        "4",
        "--max-plies",
        "50",
        "--pgn",
        pgn.to_str().unwrap(),
    ]);
    assert_eq!(report["games"], 4);
    assert_eq!(report["a"], "gen-0000 (4 sims)");
    assert_eq!(report["b"], "random");
    assert_eq!(
        count(&report, "wins") + count(&report, "draws") + count(&report, "losses"),
        4
    );
    assert_eq!(report["units"], 2, "two complete pairs");
    let ends: u64 = report["terminations"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(ends, 4);
    let games = python_pgn_games(&pgn);
    assert_eq!(games.len(), 4);
    // The first two games start from the suite's first opening, A white then black.
    let text = std::fs::read_to_string(&pgn).unwrap();
    assert_eq!(text.matches("[White \"gen-0000 (4 sims)\"]").count(), 2);
    assert_eq!(text.matches("[FEN ").count(), 4);
}

#[test]
fn a_uci_engine_with_options_plays_the_random_mover() {
    let tmp = tempfile::tempdir().unwrap();
    let pgn = tmp.path().join("engine.pgn");
    let engine = engine();
    let report = match_json(&[
        "--a-uci",
        &engine,
        "--a-nodes",
        "1",
        "--a-option",
        "Pick=last",
        "--b-random",
        "--games",
        "2",
        "--max-plies",
        "30",
        "--pgn",
        pgn.to_str().unwrap(),
    ]);
    assert_eq!(report["a"], format!("{engine} (1 nodes)"));
    assert_eq!(report["games"], 2);
    let games = python_pgn_games(&pgn);
    assert_eq!(games.len(), 2);
    // With Pick=last the engine's first move as white is the last legal move in UCI order.
    let first: Vec<&str> = games[0].split('\t').nth(2).unwrap().split(' ').collect();
    assert_eq!(first[0], "h2h4");
}

#[test]
fn sprt_stops_a_one_sided_match_early() {
    // Two random movers are even, far below [400, 800]: H0 comes after a few games.
    let report = match_json(&[
        "--a-random",
        "--b-random",
        "--games",
        "400",
        "--max-plies",
        "20",
        "--concurrency",
        "1",
        "--sprt",
        "400,800",
    ]);
    let games = report["games"].as_u64().unwrap();
    assert!(games < 400, "the SPRT stopped nothing: {games} games");
    assert_eq!(report["sprt"]["decision"], "h0");
    assert!(report["sprt"]["llr"].as_f64().unwrap() <= report["sprt"]["lower"].as_f64().unwrap());
}

#[test]
fn the_random_mover_loses_to_the_greedy_mover() {
    let openings = repo_root().join("configs/openings/4mvs_+90_+99.epd");
    let report = match_json(&[
        "--a-random",
        "--b-greedy",
        "--openings",
        openings.to_str().unwrap(),
        "--games",
        "20",
        "--max-plies",
        "200",
    ]);
    assert_eq!(report["a"], "random");
    assert_eq!(report["b"], "greedy");
    assert_eq!(report["games"], 20);
    assert_eq!(
        count(&report, "wins") + count(&report, "draws") + count(&report, "losses"),
        20
    );
    // Greedy takes whatever random leaves hanging: it scores about 90% in such matches.
    let score = report["score_fraction"].as_f64().unwrap();
    assert!(score < 0.4, "random scored {score} against greedy");
    assert!(count(&report, "losses") > count(&report, "wins"));
}

/// `cfzero match ARGS` must fail with exit code 2 and one line naming `expect`.
fn user_error(args: &[&str], expect: &str) {
    let mut all = vec!["match"];
    all.extend_from_slice(args);
    let out = cfzero(&all).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "cfzero {all:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains(expect), "{err:?} should mention {expect:?}");
}

#[test]
fn bad_input_is_a_one_line_error_with_exit_code_2() {
    user_error(&["--b-random"], "player a: give exactly one of");
    user_error(
        &["--a-greedy", "--a-random", "--b-random"],
        "player a: give exactly one of",
    );
    user_error(
        &["--a-random", "--a-net", "x.safetensors", "--b-random"],
        "player a",
    );
    user_error(
        &["--a-random", "--b-random", "--b-nodes", "5"],
        "are for a UCI engine",
    );
    user_error(
        &["--a-random", "--b-uci", "/bin/engine"],
        "needs one of --b-nodes",
    );
    user_error(
        &[
            "--a-random",
            "--b-uci",
            "/nonexistent/engine",
            "--b-depth",
            "3",
        ],
        "/nonexistent/engine",
    );
    user_error(&["--a-random", "--b-random", "--sprt", "50,0"], "--sprt");
    user_error(
        &["--a-net", "/nonexistent/net.safetensors", "--b-random"],
        "/nonexistent/net.safetensors",
    );
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty.epd");
    std::fs::write(&empty, "").unwrap();
    user_error(
        &[
            "--a-random",
            "--b-random",
            "--openings",
            Path::new(&empty).to_str().unwrap(),
        ],
        "no position",
    );
}

#[test]
fn a_match_replays_game_for_game_from_its_seed() {
    // A match is a measurement: the same net, opponent, openings and seed give the same games
    // however the games in flight share the inference server's batches, and another seed
    // other games (the greedy mover breaks its ties by the seed).
    let tmp = tempfile::tempdir().unwrap();
    let net_path = save_micro_net(tmp.path());
    let openings = repo_root().join("configs/openings/4mvs_+90_+99.epd");
    let play = |seed: &str, name: &str| {
        let pgn = tmp.path().join(name);
        match_json(&[
            "--a-net",
            net_path.to_str().unwrap(),
            "--a-sims",
            "8",
            "--b-greedy",
            "--openings",
            openings.to_str().unwrap(),
            "--games",
            "12",
            "--concurrency",
            "12",
            "--max-plies",
            "60",
            "--seed",
            seed,
            "--pgn",
            pgn.to_str().unwrap(),
        ]);
        std::fs::read_to_string(pgn).unwrap()
    };
    let first = play("1", "first.pgn");
    assert_eq!(first.matches("[Event ").count(), 12);
    assert_eq!(
        first,
        play("1", "again.pgn"),
        "the same seed replayed other games"
    );
    assert_ne!(
        first,
        play("2", "other.pgn"),
        "another seed replayed the same games"
    );
}

#[test]
fn a_net_against_itself_scores_exactly_half() {
    // Without root noise the search is deterministic and a position evaluates the same in any
    // batch, so both games of a pair are the same game with the colours swapped.
    let tmp = tempfile::tempdir().unwrap();
    let net_path = save_micro_net(tmp.path());
    let pgn = tmp.path().join("self.pgn");
    let net_s = net_path.to_str().unwrap();
    let openings = repo_root().join("configs/openings/4mvs_+90_+99.epd");
    let report = match_json(&[
        "--a-net",
        net_s,
        "--b-net",
        net_s,
        "--a-sims",
        "8",
        "--b-sims",
        "8",
        "--openings",
        openings.to_str().unwrap(),
        "--games",
        "6",
        "--max-plies",
        "40",
        "--pgn",
        pgn.to_str().unwrap(),
    ]);
    assert_eq!(report["games"], 6);
    assert_eq!(report["score_fraction"], 0.5);
    assert_eq!(count(&report, "wins"), count(&report, "losses"));
    let games = python_pgn_games(&pgn);
    assert_eq!(games.len(), 6);
    // PGN order is the order the games ended; group them by their moves: three pairs.
    let moves: Vec<&str> = games
        .iter()
        .map(|g| g.split('\t').nth(2).unwrap())
        .collect();
    for m in &moves {
        assert_eq!(
            moves.iter().filter(|x| *x == m).count() % 2,
            0,
            "{m} unpaired"
        );
    }
}

/// One resolver sets a net's simulations: `--a-sims` when given, else the `--config`'s
/// `[search] simulations` (micro: 8), else that table's default.
#[test]
fn a_nets_simulations_come_from_the_flag_the_config_or_the_default() {
    let tmp = tempfile::tempdir().unwrap();
    let net = save_micro_net(tmp.path());
    let net = net.to_str().unwrap();
    let config = micro_config();
    let label = |extra: &[&str]| {
        let mut args = vec![
            "--a-net",
            net,
            "--b-random",
            "--games",
            "2",
            "--max-plies",
            "6",
        ];
        args.extend_from_slice(extra);
        match_json(&args)["a"].as_str().unwrap().to_owned()
    };
    let default = cfzero_mcts::SearchConfig::default().simulations;
    assert_eq!(label(&[]), format!("micro ({default} sims)"));
    assert_eq!(
        label(&["--config", config.to_str().unwrap()]),
        "micro (8 sims)"
    );
    assert_eq!(
        label(&["--config", config.to_str().unwrap(), "--a-sims", "3"]),
        "micro (3 sims)"
    );
}
