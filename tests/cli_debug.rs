//! `cfzero debug` and bad input on the command line: a one-line message naming the bad
//! thing, exit code 2, never a panic.

use std::path::PathBuf;
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

/// SHA-256 of the 1858 UCI strings, one a line (docs/METHODS.md §1).
const MOVES_SHA256: &str = "eb2483cf8f53bb000dd6ca437c4ecd383b391bb5fee468b6c30f7f167fb591c5";
const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

fn cfzero(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cfzero"))
        .args(args)
        .output()
        .expect("cfzero runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The command failed as bad user input: exit code 2 and one line on stderr that
/// contains every one of `names`.
fn assert_user_error(args: &[&str], names: &[&str]) {
    let out = cfzero(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: stderr {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    for name in names {
        assert!(err.contains(name), "{args:?}: {err:?} should name {name:?}");
    }
}

#[test]
fn debug_moves_prints_the_policy_index() {
    let out = cfzero(&["debug", "moves"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1858);
    let hash: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(hash, MOVES_SHA256);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        (lines[0], lines[103], lines[1792]),
        ("a1b1", "e1h1", "a7a8q")
    );
}

/// The plane lines of `debug planes` output as (index, rest of the line).
fn plane_lines(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (index, rest) = l.trim_start().split_once(' ').unwrap();
            (index.parse().unwrap(), rest.trim().to_string())
        })
        .collect()
}

#[test]
fn debug_planes_prints_the_non_zero_planes() {
    let out = cfzero(&["debug", "planes", "--fen", START]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(text.starts_with(&format!("# {START}")), "{text}");
    let planes = plane_lines(&text);
    // 12 piece planes, 4 castling planes and the plane of ones; the clock is 0.
    let indices: Vec<usize> = planes.iter().map(|p| p.0).collect();
    let mut expected: Vec<usize> = (0..12).collect();
    expected.extend([104, 105, 106, 107, 111]);
    assert_eq!(indices, expected, "{text}");
    assert!(planes[0].1.contains("our pawns"), "{text}");
    assert!(planes[0].1.ends_with("a2 b2 c2 d2 e2 f2 g2 h2"), "{text}");
    assert!(planes[5].1.ends_with("e1"), "{text}");

    // After 1.e4 e5 2.Nf3 black is to move: mirrored board, history, clock 1.
    let out = cfzero(&[
        "debug",
        "planes",
        "--fen",
        START,
        "--moves",
        "e2e4 e7e5 g1f3",
    ]);
    assert!(out.status.success());
    let text = stdout(&out);
    let planes = plane_lines(&text);
    let line = |i: usize| &planes.iter().find(|p| p.0 == i).unwrap().1;
    assert!(line(0).ends_with("a2 b2 c2 d2 f2 g2 h2 e4"), "{text}");
    assert!(
        line(7).ends_with("f6 b8"),
        "their knights f3, b1 mirrored: {text}"
    );
    assert!(line(108).contains("black to move"), "{text}");
    assert!(line(109).contains("value 1 on all squares"), "{text}");
    assert!(
        planes.iter().any(|p| p.0 == 13 * 3),
        "t3 = start position: {text}"
    );
    assert!(planes.iter().all(|p| p.0 < 13 * 4 || p.0 >= 104), "{text}");
}

#[test]
fn bad_fen_and_moves_are_one_line_errors() {
    assert_user_error(&["debug", "planes", "--fen", "not a fen"], &["not a fen"]);
    assert_user_error(
        &["debug", "planes", "--fen", "8/8/8/8/8/8/8/8 w - - 0 1"],
        &["invalid FEN"],
    );
    assert_user_error(
        &["debug", "planes", "--fen", START, "--moves", "e2e4 e2e4"],
        &["illegal move", "e2e4", "--moves"],
    );
    assert_user_error(
        &["debug", "planes", "--moves", "e2e4 e7e9"],
        &["invalid UCI move", "e7e9"],
    );
}

/// `cfzero info --config` on a machine of `cores` cores (`CFZERO_CORES`).
fn info_on_cores(config: &str, cores: usize) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cfzero"))
        .args(["info", "--config", config])
        .env("CFZERO_CORES", cores.to_string())
        .output()
        .expect("cfzero runs")
}

/// `cfzero info --config` says what each command uses: tiny's three simulation counts, its
/// cache, and the inference settings sized to the machine (two cores here).
#[test]
fn info_says_what_each_command_uses() {
    let out = info_on_cores("configs/tiny.toml", 2);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    for line in [
        "# self-play: 2 actor(s) x 32 games in flight, 2 inference server(s), batches of up to 256 (auto for 2 cores, CPU)",
        "# self-play (train, selfplay): 32 simulations a move (8 cheap, 40% full searches), an evaluation cache of 65536 positions an actor, 2 actors",
        "# in-run evaluation and ladder: 16 simulations a move ([eval] simulations), every 6 generation(s)",
        "# match, puzzles, uci, bench learn's and bench curve's matches (--config): 64 simulations a move ([search] simulations), no root noise, a draw at 400 plies; evaluation cache 65536 positions (uci 262144)",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("# self-play's nets: backend auto -> ")
                && l.ends_with("batches of up to 256, 2 server(s) of 1 thread(s)")),
        "{text}"
    );
}

/// The counts tiny leaves to `auto` follow the cores; those a config sets (micro's one actor,
/// batches of 64) stay.
#[test]
fn auto_counts_are_sized_to_the_cores() {
    let line = |config: &str, cores: usize| {
        let out = info_on_cores(config, cores);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout(&out)
            .lines()
            .find(|l| l.starts_with("# self-play: "))
            .unwrap_or_else(|| panic!("no sizing line for {config}"))
            .to_owned()
    };
    assert_eq!(
        line("configs/tiny.toml", 16),
        "# self-play: 16 actor(s) x 32 games in flight, 16 inference server(s), batches of up to 256 (auto for 16 cores, CPU)"
    );
    assert_eq!(
        line("configs/micro.toml", 16),
        "# self-play: 1 actor(s) x 4 games in flight, 1 inference server(s), batches of up to 64 (auto for 16 cores, CPU)"
    );
}

#[test]
fn bad_config_files_are_one_line_errors() {
    assert_user_error(
        &["info", "--config", "/nonexistent.toml"],
        &["/nonexistent.toml"],
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("cli_debug_unknown_key_{}.toml", std::process::id()));
    std::fs::write(&path, "[network]\nlayers = 1\nbogus_key = 3\n").unwrap();
    let shown = path.display().to_string();
    assert_user_error(
        &["info", "--config", &shown],
        &[shown.as_str(), "bogus_key", "line 3"],
    );
    std::fs::write(&path, "[network]\nlayers = \"many\"\n").unwrap();
    assert_user_error(&["info", "--config", &shown], &[shown.as_str(), "line 2"]);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn debug_attention_draws_one_query_square() {
    use cfzero_network::{Net, NetworkConfig, save_net};
    let tmp = tempfile::tempdir().unwrap();
    let net = tmp.path().join("micro.safetensors");
    let micro = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("configs/micro.toml"),
    )
    .unwrap();
    let network: toml::Table = toml::from_str(&micro).unwrap();
    let config: NetworkConfig = network["network"].clone().try_into().unwrap();
    save_net(&Net::new(&config, tch::Device::Cpu).unwrap(), &net).unwrap();
    let png = tmp.path().join("map.png");
    let (net_s, png_s) = (net.to_str().unwrap(), png.to_str().unwrap());
    // Black to move: the net sees the board mirrored, the map is drawn as the board stands.
    let out = cfzero(&[
        "debug",
        "attention",
        "--net",
        net_s,
        "--moves",
        "e2e4",
        "--layer",
        "0",
        "--head",
        "1",
        "--square",
        "e7",
        "--out",
        png_s,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("layer 0, head 1, query e7"), "{text}");
    assert_eq!(
        lines.len(),
        6,
        "a title and the five strongest squares: {text}"
    );
    let percents: Vec<f64> = lines[1..]
        .iter()
        .map(|l| {
            l.split_whitespace()
                .nth(1)
                .unwrap()
                .trim_end_matches('%')
                .parse()
                .unwrap()
        })
        .collect();
    assert!(percents.windows(2).all(|w| w[0] >= w[1]), "{percents:?}");
    assert!(percents.iter().sum::<f64>() <= 100.05);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");

    assert_user_error(
        &[
            "debug",
            "attention",
            "--net",
            net_s,
            "--square",
            "e9",
            "--out",
            png_s,
        ],
        &["--square"],
    );
    assert_user_error(
        &[
            "debug",
            "attention",
            "--net",
            net_s,
            "--square",
            "e4",
            "--layer",
            "1",
            "--out",
            png_s,
        ],
        &["--layer 1"],
    );
    assert_user_error(
        &[
            "debug",
            "attention",
            "--net",
            net_s,
            "--square",
            "e4",
            "--head",
            "2",
            "--out",
            png_s,
        ],
        &["--head 2"],
    );
}

/// `debug targets` over one game written to a fresh directory: its JSON report.
fn debug_targets_report(game: cfzero_selfplay::GameRecord) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    cfzero_selfplay::record::write_records(&dir.path().join("g00000.cfzg"), &[game]).unwrap();
    let out = cfzero(&["debug", "targets", "--games", dir.path().to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// One named value's statistics in a `debug targets` report.
fn target_stats<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["values"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap()
}

/// `debug targets` on a hand-made game: the means and errors of each recorded value
/// against the result, by hand.
#[test]
fn debug_targets_scores_each_value_against_the_results() {
    use cfzero_selfplay::{GameRecord, GameResult, PositionRecord, Termination};
    // Values are multiples of 1/32767 (the record's quantisation) where it matters: 0.5
    // and -0.25 are not, so compare with a tolerance.
    let position = |root_q: f32, best_q: f32, trainable: bool| PositionRecord {
        played: 0,
        policy: if trainable {
            vec![65535; 20]
        } else {
            Vec::new()
        },
        network_q: 0.0,
        root_q,
        root_d: 0.0,
        best: 0,
        best_d: 0.0,
        best_q,
        played_q: best_q,
        policy_q: best_q,
        st: 0.0,
        surprise: 0.0,
    };
    // White wins: White's position (ply 0) has z = 1, Black's (ply 1) z = -1; ply 2 is not
    // trained on.
    let report = debug_targets_report(GameRecord {
        start_fen: None,
        result: GameResult::WhiteWin,
        termination: Termination::Resignation,
        generation: 0,
        positions: vec![
            position(0.5, 1.0, true),
            position(-0.25, -1.0, true),
            position(0.0, 0.0, false),
        ],
    });
    assert_eq!(report["games"], 1);
    assert_eq!(report["positions"], 2);
    assert_eq!(report["result_mean"], 0.0);
    let value = |name: &str| {
        let v = target_stats(&report, name);
        (
            v["mean"].as_f64().unwrap(),
            v["mse_vs_result"].as_f64().unwrap(),
        )
    };
    let close = |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).abs() < 1e-4 && (a.1 - b.1).abs() < 1e-4;
    // root_q: mean (0.5 - 0.25) / 2; errors (0.5 - 1)^2 and (-0.25 + 1)^2.
    assert!(
        close(value("root_q"), (0.125, (0.25 + 0.5625) / 2.0)),
        "{report}"
    );
    assert!(close(value("best_q"), (0.0, 0.0)), "{report}");
    assert!(close(value("network_q"), (0.0, 1.0)), "{report}");
    // No capture in two plies: material says 0 for both sides, an error of 1 each.
    assert!(close(value("material"), (0.0, 1.0)), "{report}");
    // Both trainable positions' games were decided: always "draw" misses by 1 each.
    assert_eq!(report["draw_mse"], 1.0);
    let correlation = |name: &str| target_stats(&report, name)["correlation"].as_f64();
    // Two points that rise with the result correlate perfectly; a constant has no correlation.
    assert!(
        (correlation("root_q").unwrap() - 1.0).abs() < 1e-6,
        "{report}"
    );
    assert_eq!(correlation("network_q"), None, "{report}");
    assert_eq!(correlation("material"), None, "{report}");
    assert_user_error(
        &["debug", "targets", "--games", "/nonexistent"],
        &["/nonexistent"],
    );
}

/// `debug targets` counts material for the side to move of each position.
#[test]
fn debug_targets_counts_material_from_the_side_to_move() {
    use cfzero_selfplay::{GameRecord, GameResult, PositionRecord, Termination};
    // Black to move has only h6 and h5, after either White has 27 moves and no capture was
    // made: White is a queen against a pawn ahead, 8 pawns, before and after Black's move.
    let position = |legal: usize| PositionRecord {
        played: 0,
        policy: vec![65535 / legal as u16; legal],
        ..PositionRecord::default()
    };
    let report = debug_targets_report(GameRecord {
        start_fen: Some("7k/5K1p/8/8/8/8/8/1Q6 b - - 0 1".into()),
        result: GameResult::WhiteWin,
        termination: Termination::Resignation,
        generation: 0,
        positions: vec![position(2), position(27)],
    });
    let material = target_stats(&report, "material");
    // Black (lost, z = -1) sees tanh(-8 / 5), White (won, z = 1) tanh(8 / 5).
    let miss = (1.0 - (8.0f64 / 5.0).tanh()).powi(2);
    assert!(material["mean"].as_f64().unwrap().abs() < 1e-6, "{report}");
    assert!(
        (material["mse_vs_result"].as_f64().unwrap() - miss).abs() < 1e-6,
        "{report}"
    );
    assert!(
        (material["correlation"].as_f64().unwrap() - 1.0).abs() < 1e-6,
        "{report}"
    );
    assert_eq!(report["draw_mse"], 1.0);
}
