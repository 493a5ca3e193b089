//! `cfzero uci` under hostile input and faults (issue 16, classes 5 and 2), driven over
//! stdin/stdout as a GUI would: an endless line does not grow memory, a position where a
//! draw can be claimed gets a legal move (not `bestmove 0000`, which GUIs score as a loss),
//! a search that panics still answers, and a bad `Net` keeps the net the engine had.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use cfzero_mcts::chess::{ChessState, HistoryFill};
use cfzero_network::{Net, save_net};
use common::*;
use tch::Device;

/// A random micro net in `dir`.
fn micro_net(dir: &Path) -> PathBuf {
    let path = dir.join("micro.safetensors");
    let net = Net::new(&network_config(&micro_config()), Device::Cpu).unwrap();
    save_net(&net, &path).unwrap();
    path
}

/// The engine process and its stdout, a line at a time.
struct Engine {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Engine {
    fn start(net: &Path, env: &[(&str, &str)]) -> Engine {
        let mut cmd = cfzero(&["uci", "--device", "cpu", "--sims", "8", "--threads", "1"]);
        cmd.arg("--net").arg(net);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut engine = Engine {
            child,
            stdin,
            lines,
        };
        engine.send("uci");
        engine.until("uciok");
        engine
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Lines up to and including the first that starts with `prefix`.
    fn until(&mut self, prefix: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no {prefix:?} after {seen:?}"));
            let done = line.starts_with(prefix);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }

    /// Sends `go nodes 8`, waits for `bestmove` and asserts that its move is legal in
    /// `state`; all lines up to it.
    fn legal_answer(&mut self, state: &ChessState) -> Vec<String> {
        self.send("go nodes 8");
        let lines = self.until("bestmove");
        let mv = lines.last().unwrap().split_whitespace().nth(1).unwrap();
        let mut after = state.clone();
        after
            .play_uci(mv)
            .unwrap_or_else(|e| panic!("bestmove {mv} in {}: {e}; {lines:?}", state.fen()));
        lines
    }

    /// The engine's peak resident memory so far, in bytes (Linux).
    fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/PID/status");
        kb * 1024
    }

    fn quit(mut self) {
        self.send("quit");
        assert!(self.child.wait().unwrap().success());
    }
}

#[test]
fn an_endless_line_of_zero_bytes_does_not_grow_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let mut engine = Engine::start(&micro_net(tmp.path()), &[]);
    engine.send("isready");
    engine.until("readyok");
    engine.legal_answer(&ChessState::new());
    let before = engine.peak_rss();
    // 128 MiB without a newline, then one.
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..128 {
        engine.stdin.write_all(&chunk).unwrap();
    }
    engine.send("");
    engine.send("isready");
    let lines = engine.until("readyok");
    let grown = engine.peak_rss().saturating_sub(before);
    assert!(grown < 16 << 20, "peak memory grew by {grown} bytes");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("info string ignored: a line longer than")),
        "{lines:?}"
    );
    // The engine still plays.
    engine.legal_answer(&ChessState::new());
    engine.quit();
}

#[test]
fn claimable_draws_get_a_legal_move() {
    let tmp = tempfile::tempdir().unwrap();
    let mut engine = Engine::start(&micro_net(tmp.path()), &[]);
    // The start position for the third time: a draw can be claimed, the game goes on.
    let moves = "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8";
    engine.send(&format!("position startpos moves {moves}"));
    let mut state = ChessState::new();
    state.play_uci_line(moves).unwrap();
    assert!(
        state.terminal_reason().is_some(),
        "the search's rules end it"
    );
    engine.legal_answer(&state);
    // 100 plies without a capture or pawn move.
    let fen = "4k3/8/8/8/8/8/8/R3K3 w Q - 100 80";
    engine.send(&format!("position fen {fen}"));
    engine.legal_answer(&ChessState::from_fen(fen, HistoryFill::No).unwrap());
    engine.quit();
}

#[test]
fn a_search_that_panics_still_answers_and_the_engine_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let mut engine = Engine::start(&micro_net(tmp.path()), &[("CFZERO_UCI_FAULT", "panic")]);
    for _ in 0..2 {
        let lines = engine.legal_answer(&ChessState::new());
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
    let net = micro_net(tmp.path());
    let mut engine = Engine::start(&net, &[]);
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
        engine.send(&format!("setoption name Net value {}", bad.display()));
        engine.send("isready");
        let lines = engine.until("readyok");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("info string cannot load the net")),
            "{lines:?}"
        );
        engine.legal_answer(&ChessState::new());
    }
    engine.quit();
}
