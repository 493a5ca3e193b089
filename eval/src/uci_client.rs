//! A client for external UCI engines (Stockfish and the like): starts the process, sets its
//! options and asks it for moves, with a deadline on every answer (not on every line: an
//! engine that prints `info` forever is as hung as a silent one) so a hung engine cannot
//! hang a match. Its output is read in bounded lines ([`crate::lines`]), bytes that are not
//! UTF-8 replaced, so a misbehaving engine can neither grow memory nor end the reader.

use std::io::{BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use crate::lines::{MAX_LINE, read_line_bounded};

use cfzero_chess::ChessState;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Move};

use crate::arena::{ArenaError, GameLine, Player};

/// What an engine is asked to search for each move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UciLimit {
    /// `go nodes N`.
    Nodes(u64),
    /// `go movetime MS`.
    Movetime(u64),
    /// `go depth D`.
    Depth(u32),
}

impl UciLimit {
    /// The `go` command of this limit.
    pub fn go_command(self) -> String {
        match self {
            UciLimit::Nodes(n) => format!("go nodes {n}"),
            UciLimit::Movetime(ms) => format!("go movetime {ms}"),
            UciLimit::Depth(d) => format!("go depth {d}"),
        }
    }

    /// How long an answer may take before the engine counts as hung.
    pub fn timeout(self) -> Duration {
        match self {
            UciLimit::Movetime(ms) => Duration::from_millis(ms.saturating_mul(4) + 10_000),
            _ => Duration::from_secs(120),
        }
    }
}

impl std::fmt::Display for UciLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UciLimit::Nodes(n) => write!(f, "{n} nodes"),
            UciLimit::Movetime(ms) => write!(f, "{ms} ms"),
            UciLimit::Depth(d) => write!(f, "depth {d}"),
        }
    }
}

/// Why talking to an engine failed.
#[derive(Debug, thiserror::Error)]
pub enum UciClientError {
    /// The command line is empty.
    #[error("empty UCI engine command")]
    EmptyCommand,
    /// The process could not be started.
    #[error("cannot start UCI engine `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The engine closed its output or could not be written to.
    #[error("UCI engine `{command}` exited or closed its pipes while {doing}")]
    Closed {
        /// The command line.
        command: String,
        /// What the client was waiting for.
        doing: &'static str,
    },
    /// The engine did not answer in time.
    #[error("UCI engine `{command}` did not answer within {seconds} s while {doing}")]
    Timeout {
        /// The command line.
        command: String,
        /// What the client was waiting for.
        doing: &'static str,
        /// The timeout.
        seconds: u64,
    },
    /// An option is not of the form `Name=Value`.
    #[error("engine option {0:?} is not of the form Name=Value")]
    BadOption(String),
    /// The engine answered a move that is not legal in the position.
    #[error("UCI engine `{command}` played {mv:?}, not a legal move in {fen}")]
    IllegalMove {
        /// The command line.
        command: String,
        /// The engine's move.
        mv: String,
        /// The position.
        fen: String,
    },
}

/// A running UCI engine process.
#[derive(Debug)]
pub struct UciEngine {
    command: String,
    name: String,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// The names of the options the engine offered in its `option name ...` lines.
    offered: Vec<String>,
}

impl UciEngine {
    /// Starts `command` (split at whitespace into program and arguments), runs the `uci`
    /// handshake and sets `options` (`(name, value)` pairs), then waits for `readyok`.
    pub fn start(command: &str, options: &[(String, String)]) -> Result<UciEngine, UciClientError> {
        let mut engine = Self::launch(command)?;
        engine.configure(options)?;
        Ok(engine)
    }

    /// Starts `command` and runs the `uci` handshake, recording the options the engine offers
    /// ([`UciEngine::offers`]); [`UciEngine::configure`] then sets options before the first
    /// search.
    pub fn launch(command: &str) -> Result<UciEngine, UciClientError> {
        let mut parts = command.split_whitespace();
        let program = parts.next().ok_or(UciClientError::EmptyCommand)?;
        let mut command_line = Command::new(program);
        command_line
            .args(parts)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // A process group of its own: a Ctrl-C meant for cfzero (which then stops cleanly)
        // does not kill the engine in the middle of an answer.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command_line, 0);
        let mut child = command_line
            .spawn()
            .map_err(|source| UciClientError::Spawn {
                command: command.to_string(),
                source,
            })?;
        let stdin = child.stdin.take().ok_or_else(|| UciClientError::Closed {
            command: command.to_string(),
            doing: "starting",
        })?;
        let stdout = child.stdout.take().ok_or_else(|| UciClientError::Closed {
            command: command.to_string(),
            doing: "starting",
        })?;
        // A reader thread turns the blocking pipe into a channel that can time out.
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut bytes = Vec::new();
            // A line too long to be UCI is dropped (it is no command the client waits for).
            while let Ok(Some(too_long)) = read_line_bounded(&mut reader, MAX_LINE, &mut bytes) {
                if too_long {
                    continue;
                }
                let line = String::from_utf8_lossy(&bytes);
                let line = line.trim_end_matches(['\n', '\r']).to_string();
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut engine = UciEngine {
            command: command.to_string(),
            name: program.rsplit('/').next().unwrap_or(program).to_string(),
            child,
            stdin,
            lines,
            offered: Vec::new(),
        };
        engine.send("uci", "starting")?;
        let setup = Duration::from_secs(30);
        let deadline = Instant::now() + setup;
        loop {
            let line = engine.receive(deadline, setup, "waiting for uciok")?;
            if let Some(name) = line.strip_prefix("id name ") {
                engine.name = name.trim().to_string();
            }
            if let Some(name) = offered_option(&line) {
                engine.offered.push(name.to_string());
            }
            if line.trim() == "uciok" {
                break;
            }
        }
        Ok(engine)
    }

    /// Sets `options` (`(name, value)` pairs) and waits for `readyok`.
    pub fn configure(&mut self, options: &[(String, String)]) -> Result<(), UciClientError> {
        for (name, value) in options {
            self.set_option(name, value)?;
        }
        self.send("isready", "waiting for readyok")?;
        let setup = Duration::from_secs(30);
        let deadline = Instant::now() + setup;
        while self.receive(deadline, setup, "waiting for readyok")?.trim() != "readyok" {}
        Ok(())
    }

    /// Whether the engine offered the option `name` in its handshake (UCI option names
    /// compare without case).
    pub fn offers(&self, name: &str) -> bool {
        self.offered.iter().any(|o| o.eq_ignore_ascii_case(name))
    }

    /// The engine's `id name`, or its program name when it gave none.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Asks for the move in the position reached from `start_fen` (`None`: the standard
    /// start) by `moves`; `state` is that position, used to check the answer.
    pub fn best_move(
        &mut self,
        start_fen: Option<&str>,
        moves: &[Move],
        state: &ChessState,
        limit: UciLimit,
    ) -> Result<Move, UciClientError> {
        let answer = self.go(
            start_fen,
            moves,
            &limit.go_command(),
            limit.timeout(),
            &mut |_| {},
        )?;
        self.legal_answer(&answer, state)
    }

    /// Sets one option (`setoption name NAME value VALUE`); the engine applies it before it
    /// answers the next command.
    pub fn set_option(&mut self, name: &str, value: &str) -> Result<(), UciClientError> {
        self.send(
            &format!("setoption name {name} value {value}"),
            "setting options",
        )
    }

    /// Sends the position reached from `start_fen` (`None`: the standard start) by `moves`
    /// and `go_args` (a whole `go ...` command), hands every line the engine prints before
    /// `bestmove` to `on_line`, and returns the text of the best move (unchecked). The whole
    /// answer must come within `timeout`.
    pub fn go(
        &mut self,
        start_fen: Option<&str>,
        moves: &[Move],
        go_args: &str,
        timeout: Duration,
        on_line: &mut dyn FnMut(&str),
    ) -> Result<String, UciClientError> {
        let mut line = match start_fen {
            None => String::from("position startpos"),
            Some(fen) => format!("position fen {fen}"),
        };
        if !moves.is_empty() {
            line.push_str(" moves");
            for mv in moves {
                line.push(' ');
                line.push_str(&UciMove::from_move(*mv, CastlingMode::Standard).to_string());
            }
        }
        self.send(&line, "sending the position")?;
        self.send(go_args, "searching")?;
        let deadline = Instant::now() + timeout;
        loop {
            let line = self.receive(deadline, timeout, "waiting for bestmove")?;
            if let Some(rest) = line.trim().strip_prefix("bestmove") {
                return Ok(rest.split_whitespace().next().unwrap_or("").to_string());
            }
            on_line(&line);
        }
    }

    /// `answer` (UCI move text) as a legal move of `state`, or [`UciClientError::IllegalMove`].
    pub fn legal_answer(&self, answer: &str, state: &ChessState) -> Result<Move, UciClientError> {
        let illegal = || UciClientError::IllegalMove {
            command: self.command.clone(),
            mv: answer.to_string(),
            fen: state.fen(),
        };
        let uci = UciMove::from_ascii(answer.as_bytes()).map_err(|_| illegal())?;
        uci.to_move(state.position()).map_err(|_| illegal())
    }

    fn send(&mut self, line: &str, doing: &'static str) -> Result<(), UciClientError> {
        writeln!(self.stdin, "{line}")
            .and_then(|()| self.stdin.flush())
            .map_err(|_| UciClientError::Closed {
                command: self.command.clone(),
                doing,
            })
    }

    /// The next line, if it comes before `deadline` (the end of the whole answer that began
    /// `timeout` before it).
    fn receive(
        &mut self,
        deadline: Instant,
        timeout: Duration,
        doing: &'static str,
    ) -> Result<String, UciClientError> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(UciClientError::Timeout {
                command: self.command.clone(),
                doing,
                seconds: timeout.as_secs(),
            }),
            Err(RecvTimeoutError::Disconnected) => Err(UciClientError::Closed {
                command: self.command.clone(),
                doing,
            }),
        }
    }
}

impl Drop for UciEngine {
    fn drop(&mut self) {
        // Ask politely, then make sure the process does not outlive the match.
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A match player backed by external engine processes: one process per game played at
/// the same time, asked in parallel.
#[derive(Debug)]
pub struct UciPlayer {
    engines: Vec<UciEngine>,
    limit: UciLimit,
}

impl UciPlayer {
    /// Starts `instances` copies of `command` with `options`, each move searched with `limit`.
    pub fn start(
        command: &str,
        options: &[(String, String)],
        limit: UciLimit,
        instances: usize,
    ) -> Result<UciPlayer, UciClientError> {
        let engines = (0..instances.max(1))
            .map(|_| UciEngine::start(command, options))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(UciPlayer { engines, limit })
    }

    /// A player of engines already started and configured, each move searched with `limit`;
    /// `None` without an engine.
    pub fn from_engines(engines: Vec<UciEngine>, limit: UciLimit) -> Option<UciPlayer> {
        (!engines.is_empty()).then_some(UciPlayer { engines, limit })
    }
}

impl Player for UciPlayer {
    fn name(&self) -> String {
        self.engines[0].name().to_string()
    }

    fn pick(
        &mut self,
        states: &[ChessState],
        lines: &[GameLine<'_>],
        _rng: &mut dyn rand::RngCore,
        out: &mut Vec<Move>,
    ) -> Result<(), ArenaError> {
        let per_engine = states.len().div_ceil(self.engines.len()).max(1);
        let limit = self.limit;
        let answers: Vec<Result<Vec<Move>, UciClientError>> = std::thread::scope(|scope| {
            let workers: Vec<_> = self
                .engines
                .iter_mut()
                .zip(states.chunks(per_engine).zip(lines.chunks(per_engine)))
                .map(|(engine, (states, lines))| {
                    scope.spawn(move || {
                        states
                            .iter()
                            .zip(lines)
                            .map(|(s, l)| engine.best_move(l.start_fen, l.moves, s, limit))
                            .collect()
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().expect("an engine thread does not panic"))
                .collect()
        });
        for moves in answers {
            out.extend(moves?);
        }
        Ok(())
    }
}

/// Where a bare program name (no `/`) is looked for after `PATH`: Debian installs Stockfish
/// there, outside the `PATH` of root and of many services.
const GAMES_DIR: &str = "/usr/games";

/// `command` with its program (the first word) found: a bare name is looked up on `PATH`,
/// then in [`GAMES_DIR`]; a path, or a name found nowhere, is left as it is (starting it
/// then says why it does not run). The standard library has the lookup's parts, and the
/// `which` crate would still need the second directory.
pub fn resolve_command(command: &str) -> String {
    let trimmed = command.trim();
    let (program, args) = trimmed
        .split_once(char::is_whitespace)
        .unwrap_or((trimmed, ""));
    if program.is_empty() || program.contains('/') {
        return command.to_string();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain(std::iter::once(std::path::PathBuf::from(GAMES_DIR)))
        .map(|dir| dir.join(program))
        .find(|p| p.is_file());
    match found {
        Some(p) if args.is_empty() => p.display().to_string(),
        Some(p) => format!("{} {args}", p.display()),
        None => command.to_string(),
    }
}

/// The name of the option an `option name NAME type ...` line offers (a name may contain
/// spaces, so it ends at the ` type ` token).
fn offered_option(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix("option name ")?;
    let name = rest
        .split_once(" type ")
        .map_or(rest, |(name, _)| name)
        .trim();
    (!name.is_empty()).then_some(name)
}

/// `options` as `Name=value, Name=value`: how the run's first lines and labels show what an
/// engine was set to.
pub fn options_text<'a>(options: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    options
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses `Name=Value` into its two halves (the name may contain spaces).
pub fn parse_option(text: &str) -> Result<(String, String), UciClientError> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(UciClientError::BadOption(text.to_string())),
    }
}
