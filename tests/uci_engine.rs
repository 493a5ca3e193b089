//! `cfzero uci` driven by a real client, python-chess's engine module (`.venv`, set up by
//! `scripts/setup.sh`), and fed garbage by hand: it must stay alive, answer `isready` and
//! never give an illegal move.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use cfzero_chess::{ChessState, HistoryFill};
use common::uci::UciEngine;
use common::*;
use shakmaty::Position;

const CLIENT: &str = r#"
import sys
import chess
import chess.engine

engine = chess.engine.SimpleEngine.popen_uci(sys.argv[1:])
assert engine.id["name"].startswith("cfzero"), engine.id
for name in ("Net", "Threads", "Simulations", "SearchMode", "MoveOverhead"):
    assert name in engine.options, (name, list(engine.options))
engine.configure({"Threads": 1, "SearchMode": "gumbel"})

limits = [
    chess.engine.Limit(nodes=8),
    chess.engine.Limit(time=0.05),
    chess.engine.Limit(white_clock=3, black_clock=3, white_inc=0.05, black_inc=0.05),
]
for game, limit in enumerate(limits):
    board = chess.Board()
    while not board.is_game_over(claim_draw=True) and board.ply() < 40:
        result = engine.play(board, limit, info=chess.engine.INFO_ALL)
        assert result.move in board.legal_moves, (result.move, board.fen())
        board.push(result.move)
    print(f"game {game}: {board.ply()} plies")

# Analysis: the info lines parse, with a score, a WDL and a legal principal variation.
board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
info = engine.analyse(board, chess.engine.Limit(nodes=30))
assert "score" in info and "wdl" in info and "nodes" in info, info
replay = board.copy()
for mv in info["pv"]:
    assert mv in replay.legal_moves, (mv, replay.fen())
    replay.push(mv)
engine.quit()
print("ok")
"#;

#[test]
fn python_chess_plays_full_games_against_the_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let net = save_micro_net(tmp.path());
    // coreutils' `timeout`: a hung engine fails the test instead of the whole CI run.
    let out = Command::new("timeout")
        .arg("300")
        .arg(repo_root().join(".venv/bin/python3"))
        .arg("-c")
        .arg(CLIENT)
        .arg(env!("CARGO_BIN_EXE_cfzero"))
        .args(["uci", "--device", "cpu", "--sims", "16", "--net"])
        .arg(&net)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "python-chess client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("plies").count(), 3, "{stdout}");
}

#[test]
fn garbage_is_ignored_and_the_engine_stays_alive() {
    let tmp = tempfile::tempdir().unwrap();
    let net = save_micro_net(tmp.path());
    let mut engine = UciEngine::with_net(&net, &[]);
    let long = "x".repeat(100_000);
    let garbage: Vec<&[u8]> = vec![
        b"hello engine",
        b"go nodes 99999999999999999999999999999 movetime -5 wtime 3",
        b"go nodes",
        b"go depth twelve",
        b"position fen this is not a fen",
        b"position fen 8/8/8/8/8/8/8/8 w - - 0 1",
        b"position startpos moves e2e5",
        b"position startpos moves e2e4 zz",
        b"position",
        b"setoption name Threads value -1",
        b"setoption name Simulations value 0",
        b"setoption name SearchMode value minimax",
        b"setoption name Nonsense value 3",
        b"setoption",
        b"stop",
        b"ponderhit",
        b"\xff\xfe\x00\x01 binary",
        long.as_bytes(),
        b"",
    ];
    engine.send(b"uci");
    engine.until("uciok");
    for line in &garbage {
        engine.send(line);
    }
    engine.send(b"isready");
    let lines = engine.until("readyok");
    let ignored = lines
        .iter()
        .filter(|l| l.starts_with("info string"))
        .count();
    assert!(ignored >= 14, "each bad line is reported: {lines:?}");

    // The bad positions left the start position in place: its first move is legal there.
    engine.send(b"go nodes 4");
    engine.best_move(&ChessState::new());

    // A good position after the bad ones is taken, moves and all.
    engine.send(b"position startpos moves e2e4 e7e5 g1f3");
    engine.send(b"go nodes 4");
    let mut state = ChessState::new();
    state.play_uci_line("e2e4 e7e5 g1f3").unwrap();
    engine.best_move(&state);

    // A finished game: no move to give, the null move instead of an illegal one.
    engine.send(b"position fen 7k/6Q1/6K1/8/8/8/8/8 b - - 0 1");
    engine.send(b"go nodes 4");
    assert_eq!(engine.until("bestmove").last().unwrap(), "bestmove 0000");

    // `go infinite` answers only after `stop`, with a legal move and an info line first.
    engine.send(b"ucinewgame");
    engine.send(b"position startpos");
    engine.send(b"go infinite");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        engine.pending().iter().all(|l| !l.starts_with("bestmove")),
        "bestmove before stop"
    );
    engine.send(b"isready");
    engine.until("readyok");
    engine.send(b"stop");
    let lines = engine.best_move(&ChessState::new());
    assert!(
        lines.iter().any(|l| l.starts_with("info depth")),
        "{lines:?}"
    );

    engine.send(b"quit");
    let status = engine.child.wait().unwrap();
    assert!(status.success());
}

#[test]
fn a_missing_net_is_a_one_line_error_with_exit_code_2() {
    let out = cfzero(&["uci", "--net", "/nonexistent/net.safetensors"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/net.safetensors"), "{err}");
}

/// Searches `fen` with 32 nodes; the last info line's score and the best move played.
fn score_and_move(engine: &mut UciEngine, fen: &str) -> (String, ChessState) {
    let state = ChessState::from_fen(fen, HistoryFill::No).unwrap();
    engine.send(format!("position fen {fen}").as_bytes());
    engine.send(b"go nodes 32");
    let lines = engine.best_move(&state);
    let info = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("info depth"))
        .unwrap();
    let score = info.split(" score ").nth(1).unwrap();
    let score = score
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    let mv = lines.last().unwrap().split_whitespace().nth(1).unwrap();
    let mut after = state.clone();
    after.play_uci(mv).unwrap();
    (score, after)
}

#[test]
fn proven_mates_are_announced_as_score_mate() {
    let tmp = tempfile::tempdir().unwrap();
    let net = save_micro_net(tmp.path());
    let mut engine = UciEngine::with_net(&net, &[]);
    engine.send(b"uci");
    engine.until("uciok");
    // A position of sunfish's mate-in-one suite (tests/data/suites); any mating move will do.
    let (score, after) = score_and_move(
        &mut engine,
        "8/pp6/2p2p2/6p1/1P6/2Q1P3/k1K2PPP/5B1R w - - 0 38",
    );
    assert_eq!(score, "mate 1");
    assert!(after.position().is_checkmate());
    // Black's only move, Kg8, is met by Ra8#: mated in one.
    let (score, _) = score_and_move(&mut engine, "7k/8/6K1/8/8/8/8/R7 b - - 0 1");
    assert_eq!(score, "mate -1");
    engine.send(b"quit");
}

/// The `nodes` of the last `info depth` line among `lines`.
fn reported_nodes(lines: &[String]) -> u64 {
    let info = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("info depth"))
        .unwrap_or_else(|| panic!("no info line in {lines:?}"));
    let mut words = info.split_whitespace();
    words.find(|&w| w == "nodes").unwrap();
    words.next().unwrap().parse().unwrap()
}

#[test]
fn a_config_file_and_the_options_reach_the_batched_search() {
    let tmp = tempfile::tempdir().unwrap();
    let net = save_micro_net(tmp.path());
    // A run's config (the `[search]` table is what the engine takes from it).
    let config = micro_with(
        &tmp.path().join("search.toml"),
        &[("[search]", "[search]\nmode = \"puct\"\nbatch = 7")],
    );
    let net = net.to_str().unwrap();
    let args = [
        "uci",
        "--device",
        "cpu",
        "--threads",
        "1",
        "--net",
        net,
        "--config",
        config.to_str().unwrap(),
    ];
    let mut engine = UciEngine::start(&args, &[]);
    engine.send(b"uci");
    let lines = engine.until("uciok");
    // The file's constants are the engine's defaults.
    assert!(
        lines
            .iter()
            .any(|l| l == "option name Batch type spin default 7 min 1 max 1024"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("option name SearchMode type combo default puct")),
        "{lines:?}"
    );
    // Without --sims, the config's `[search] simulations` (micro's 8).
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("option name Simulations type spin default 8 ")),
        "{lines:?}"
    );
    // Every batch size spends the node budget exactly: the root plus 200 simulations.
    for (mode, batch) in [("puct", 7), ("gumbel", 1), ("gumbel", 16), ("gumbel", 64)] {
        engine.send(format!("setoption name SearchMode value {mode}"));
        engine.send(format!("setoption name Batch value {batch}"));
        engine.send(b"position startpos moves d2d4 g8f6");
        engine.send(b"go nodes 200");
        let mut state = ChessState::new();
        state.play_uci_line("d2d4 g8f6").unwrap();
        let lines = engine.best_move(&state);
        assert_eq!(
            reported_nodes(&lines),
            201,
            "{mode} batch {batch}: {lines:?}"
        );
    }
    // Bad values are reported and ignored.
    engine.send(b"setoption name Batch value 0");
    engine.send(b"setoption name Config value /nonexistent/config.toml");
    engine.send(b"isready");
    let lines = engine.until("readyok");
    let ignored: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("info string ignored"))
        .collect();
    assert_eq!(ignored.len(), 2, "{lines:?}");
    engine.quit();
}

#[test]
fn a_bad_config_file_is_a_one_line_error_with_exit_code_2() {
    let tmp = tempfile::tempdir().unwrap();
    let config = micro_with(
        &tmp.path().join("bad.toml"),
        &[("[search]", "[search]\nbatch = 0")],
    );
    let out = cfzero(&["uci", "--config", config.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("batch"), "{err}");
}
