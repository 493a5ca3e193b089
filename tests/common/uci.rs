//! A `cfzero uci` process driven over stdin/stdout as a GUI drives it, for the UCI tests.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use std::path::Path;

use cfzero_chess::ChessState;

use super::cfzero;

/// The engine process, its stdin, and its stdout a line at a time (read on a thread, so that
/// a test waits with a timeout instead of hanging on an engine that stays silent).
pub struct UciEngine {
    /// The process.
    pub child: Child,
    /// Its stdin, for raw bytes; [`UciEngine::send`] writes whole lines.
    pub stdin: ChildStdin,
    lines: Receiver<String>,
}

impl UciEngine {
    /// Starts `cfzero ARGS` with the extra environment `env`; stderr is discarded.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> UciEngine {
        let mut cmd = cfzero(args);
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
        UciEngine {
            child,
            stdin,
            lines,
        }
    }

    /// `cfzero uci` on the CPU with `net`, 8 simulations a move and one libtorch thread.
    pub fn with_net(net: &Path, env: &[(&str, &str)]) -> UciEngine {
        let net = net.to_str().unwrap();
        let args = [
            "uci",
            "--device",
            "cpu",
            "--sims",
            "8",
            "--threads",
            "1",
            "--net",
            net,
        ];
        UciEngine::start(&args, env)
    }

    /// Writes `bytes` and a newline.
    pub fn send(&mut self, bytes: impl AsRef<[u8]>) {
        self.stdin.write_all(bytes.as_ref()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Lines up to and including the first that starts with `prefix` (60 s at most).
    pub fn until(&mut self, prefix: &str) -> Vec<String> {
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

    /// The lines the engine has printed and no call has read yet, without waiting.
    pub fn pending(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }

    /// Waits for `bestmove` and asserts that its move is legal in `state`; all lines up to it.
    pub fn best_move(&mut self, state: &ChessState) -> Vec<String> {
        let lines = self.until("bestmove");
        let mv = lines.last().unwrap().split_whitespace().nth(1).unwrap();
        let mut after = state.clone();
        after
            .play_uci(mv)
            .unwrap_or_else(|e| panic!("bestmove {mv} in {}: {e}; {lines:?}", state.fen()));
        lines
    }

    /// Sends `quit` and asserts that the engine exits with success.
    pub fn quit(mut self) {
        self.send("quit");
        assert!(self.child.wait().unwrap().success());
    }
}
