//! One position's action values from a UCI engine.
//!
//! Two ways, measured against each other in docs/history/benchmarks-2026-11.md ("Teacher"):
//! - [`Method::MultiPv`]: `MultiPV` set to the number of legal moves and one search; every
//!   move's value is its line's deepest score. One search shares its tree across the moves.
//!   A move whose line the search did not reach (a budget too small for every line) is then
//!   searched on its own, as with searchmoves.
//! - [`Method::SearchMoves`]: one `go ... searchmoves M` per legal move, each with the whole
//!   budget: a budget per move rather than per position.

use std::collections::HashMap;
use std::time::Duration;

use cfzero_chess::ChessState;
use cfzero_eval::arena::GameLine;
use cfzero_eval::uci_client::{UciClientError, UciEngine, UciLimit};
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Move, Position};

pub use cfzero_labels::Method;

use crate::info::parse_info;
use crate::score::MoveValue;

/// An engine's values of a position's legal moves.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// Every legal move with its value for the side to move, in shakmaty's legal-move
    /// order.
    pub moves: Vec<(Move, MoveValue)>,
    /// Index into `moves` of the engine's choice: its `bestmove` with MultiPV, the move of
    /// the highest action value with searchmoves (the first of equals).
    pub best: usize,
}

impl Analysis {
    /// The value of the position: that of its best move.
    pub fn state(&self) -> MoveValue {
        self.moves[self.best].1
    }
}

/// Why a position got no analysis.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// Starting, talking to or hearing from the engine failed (hung, died, illegal move).
    #[error(transparent)]
    Engine(#[from] UciClientError),
    /// The position has no legal move (mate or stalemate): the rules are its label.
    #[error("{fen}: no legal move to label")]
    NoMoves {
        /// The position.
        fen: String,
    },
    /// The engine's answer gave no value for some legal moves.
    #[error("{fen}: the engine gave no value for {missing} of {legal} legal moves")]
    Missing {
        /// The position.
        fen: String,
        /// Legal moves without a value.
        missing: usize,
        /// Legal moves.
        legal: usize,
    },
    /// With searchmoves the engine answered a move it was not asked about.
    #[error("{fen}: asked about {asked} only, the engine answered {answered}")]
    Stray {
        /// The position.
        fen: String,
        /// The move searched.
        asked: String,
        /// The engine's `bestmove`.
        answered: String,
    },
}

/// An engine process that labels positions (one [`analyse`](Analyst::analyse) at a time).
#[derive(Debug)]
pub struct Analyst {
    engine: UciEngine,
    /// `MultiPV` as last set (engines start at 1).
    multipv: usize,
}

impl Analyst {
    /// Starts `command` with `options` (see [`UciEngine::start`]).
    pub fn start(command: &str, options: &[(String, String)]) -> Result<Analyst, UciClientError> {
        Ok(Analyst {
            engine: UciEngine::start(command, options)?,
            multipv: 1,
        })
    }

    /// The engine's `id name`.
    pub fn name(&self) -> &str {
        self.engine.name()
    }

    /// Sets `MultiPV` to `n` unless it is already.
    fn set_multipv(&mut self, n: usize) -> Result<(), UciClientError> {
        if self.multipv != n {
            self.engine.set_option("MultiPV", &n.to_string())?;
            self.multipv = n;
        }
        Ok(())
    }

    /// The value of the move `name` alone (`go ... searchmoves NAME`): the last score of its
    /// line, `None` if the engine printed none.
    fn search_move(
        &mut self,
        state: &ChessState,
        line: &GameLine<'_>,
        fen: &str,
        name: &str,
        limit: UciLimit,
        timeout: Duration,
    ) -> Result<Option<MoveValue>, AnalysisError> {
        let mut last = None;
        let go = format!("{} searchmoves {name}", limit.go_command());
        let answer = self
            .engine
            .go(line.start_fen, line.moves, &go, timeout, &mut |line| {
                if let Some(info) = parse_info(line)
                    && info.multipv == 1
                    && info.first_move == name
                {
                    last = Some(info.value);
                }
            })?;
        self.engine.legal_answer(&answer, state)?;
        if answer != name {
            return Err(AnalysisError::Stray {
                fen: fen.to_string(),
                asked: name.to_string(),
                answered: answer,
            });
        }
        Ok(last)
    }

    /// The values of every legal move of `state`, each search bounded by `limit` and each
    /// answer by `timeout`. The engine is given `line`, the position as the game reached
    /// it, so that repetitions and the fifty-move count are the engine's as much as the
    /// net's (a position one move from a threefold repetition is a draw there, not a win).
    pub fn analyse(
        &mut self,
        state: &ChessState,
        line: &GameLine<'_>,
        limit: UciLimit,
        method: Method,
        timeout: Duration,
    ) -> Result<Analysis, AnalysisError> {
        let fen = state.fen();
        let legal: Vec<Move> = state.position().legal_moves().into_iter().collect();
        if legal.is_empty() {
            return Err(AnalysisError::NoMoves { fen });
        }
        let names: Vec<String> = legal
            .iter()
            .map(|m| UciMove::from_move(*m, CastlingMode::Standard).to_string())
            .collect();
        let mut values: Vec<Option<MoveValue>> = vec![None; legal.len()];
        let best = match method {
            Method::MultiPv => {
                self.set_multipv(legal.len())?;
                // The deepest line of each move wins; at equal depth the later one.
                let mut seen: HashMap<&str, (u32, MoveValue)> = HashMap::new();
                let answer = self.engine.go(
                    line.start_fen,
                    line.moves,
                    &limit.go_command(),
                    timeout,
                    &mut |text| {
                        if let Some(info) = parse_info(text)
                            && let Some(name) = names.iter().find(|n| **n == info.first_move)
                        {
                            let slot = seen.entry(name).or_insert((info.depth, info.value));
                            if info.depth >= slot.0 {
                                *slot = (info.depth, info.value);
                            }
                        }
                    },
                )?;
                let best = self.engine.legal_answer(&answer, state)?;
                for (value, name) in values.iter_mut().zip(&names) {
                    *value = seen.get(name.as_str()).map(|&(_, v)| v);
                }
                // A budget too small for every line (Stockfish stops inside its first
                // iteration and prints only the lines it reached): the rest are searched one
                // by one, each with the same budget.
                if values.iter().any(Option::is_none) {
                    self.set_multipv(1)?;
                    for (value, name) in values.iter_mut().zip(&names) {
                        if value.is_none() {
                            *value = self.search_move(state, line, &fen, name, limit, timeout)?;
                        }
                    }
                }
                legal.iter().position(|m| *m == best)
            }
            Method::SearchMoves => {
                self.set_multipv(1)?;
                for (value, name) in values.iter_mut().zip(&names) {
                    *value = self.search_move(state, line, &fen, name, limit, timeout)?;
                }
                None
            }
        };
        let missing = values.iter().filter(|v| v.is_none()).count();
        if missing > 0 {
            return Err(AnalysisError::Missing {
                fen,
                missing,
                legal: legal.len(),
            });
        }
        let moves: Vec<(Move, MoveValue)> = legal
            .into_iter()
            .zip(values.into_iter().flatten())
            .collect();
        let best = best.unwrap_or_else(|| {
            // The first move of the highest action value.
            let mut best = 0;
            for (i, (_, v)) in moves.iter().enumerate() {
                if v.action_value() > moves[best].1.action_value() {
                    best = i;
                }
            }
            best
        });
        Ok(Analysis { moves, best })
    }
}
