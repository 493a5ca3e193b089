//! `cfzero uci` under hostile input and faults, driven over
//! stdin/stdout as a GUI would: an endless line does not grow memory, a position where a
//! draw can be claimed gets a legal move (not `bestmove 0000`, which GUIs score as a loss),
//! a search that panics still answers, and a bad `Net` keeps the net the engine had.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use cfzero_chess::{ChessState, HistoryFill};
use common::save_micro_net;
use common::uci::UciEngine;

/// Sends `go nodes 8` and waits for a legal `bestmove` in `state`; all lines up to it.
fn legal_answer(engine: &mut UciEngine, state: &ChessState) -> Vec<String> {
    engine.send("go nodes 8");
    engine.best_move(state)
}

/// The engine's peak resident memory so far, in bytes (Linux).
fn peak_rss(engine: &UciEngine) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", engine.child.id())).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kb * 1024
}

/// The engine on a fresh micro net in `dir`, after `uci` / `uciok`.
fn start(dir: &Path, env: &[(&str, &str)]) -> (UciEngine, PathBuf) {
    let net = save_micro_net(dir);
    let mut engine = UciEngine::with_net(&net, env);
    engine.send("uci");
    engine.until("uciok");
    (engine, net)
}

#[test]
fn an_endless_line_of_zero_bytes_does_not_grow_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut engine, _) = start(tmp.path(), &[]);
    engine.send("isready");
    engine.until("readyok");
    legal_answer(&mut engine, &ChessState::new());
    let before = peak_rss(&engine);
    // 128 MiB without a newline, then one.
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..128 {
        engine.stdin.write_all(&chunk).unwrap();
    }
    engine.send("");
    engine.send("isready");
    let lines = engine.until("readyok");
    let grown = peak_rss(&engine).saturating_sub(before);
    assert!(grown < 16 << 20, "peak memory grew by {grown} bytes");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("info string ignored: a line longer than")),
        "{lines:?}"
    );
    // The engine still plays.
    legal_answer(&mut engine, &ChessState::new());
    engine.quit();
}

#[test]
fn claimable_draws_get_a_legal_move() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut engine, _) = start(tmp.path(), &[]);
    // The start position for the third time: a draw can be claimed, the game goes on.
    let moves = "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8";
    engine.send(format!("position startpos moves {moves}"));
    let mut state = ChessState::new();
    state.play_uci_line(moves).unwrap();
    assert!(
        state.terminal_reason().is_some(),
        "the search's rules end it"
    );
    legal_answer(&mut engine, &state);
    // 100 plies without a capture or pawn move.
    let fen = "4k3/8/8/8/8/8/8/R3K3 w Q - 100 80";
    engine.send(format!("position fen {fen}"));
    legal_answer(
        &mut engine,
        &ChessState::from_fen(fen, HistoryFill::No).unwrap(),
    );
    engine.quit();
}

#[test]
fn a_search_that_panics_still_answers_and_the_engine_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut engine, _) = start(tmp.path(), &[("CFZERO_UCI_FAULT", "panic")]);
    for _ in 0..2 {
        let lines = legal_answer(&mut engine, &ChessState::new());
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("info string search failed: panic")),
            "{lines:?}"
        );
        engine.send("isready");
        engine.until("readyok");
    }
    engine.quit();
}

#[test]
fn a_bad_net_option_keeps_the_net_the_engine_had() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut engine, net) = start(tmp.path(), &[]);
    engine.send("isready");
    engine.until("readyok");
    let garbage = tmp.path().join("garbage.safetensors");
    std::fs::write(&garbage, b"\x08\x00\x00\x00\x00\x00\x00\x00{\"a\":1}").unwrap();
    let truncated = tmp.path().join("truncated.safetensors");
    let bytes = std::fs::read(&net).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    for bad in [
        &garbage,
        &truncated,
        &tmp.path().join("missing.safetensors"),
    ] {
        engine.send(format!("setoption name Net value {}", bad.display()));
        engine.send("isready");
        let lines = engine.until("readyok");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("info string cannot load the net")),
            "{lines:?}"
        );
        legal_answer(&mut engine, &ChessState::new());
    }
    engine.quit();
}
