//! Lichess puzzles: reading the puzzle CSV and scoring a [`Player`] on it.
//!
//! A puzzle's `Moves` start with the opponent's move; the solver must then find each of its
//! own moves (every other one), the opponent's replies being played between them. A move that
//! checkmates solves the puzzle whichever it is, as on Lichess.

use std::path::Path;

use cfzero_chess::{ChessState, HistoryFill, TerminalReason};
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Move, Position};

use crate::arena::{ArenaError, GameLine, Player};

/// Why a puzzle file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PuzzleError {
    /// The file could not be read.
    #[error("cannot read puzzles {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A row is not a valid puzzle.
    #[error("{path}:{line}: {reason}")]
    BadRow {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The file holds no puzzle.
    #[error("{path}: no puzzles")]
    Empty {
        /// The file.
        path: String,
    },
    /// Every puzzle of the file was skipped: the game is over before the solver's move.
    #[error("{path}: no puzzle to solve: all {skipped} are games already over")]
    NothingToSolve {
        /// The file.
        path: String,
        /// How many were skipped.
        skipped: usize,
    },
}

/// A puzzle left out by [`read_puzzles`]: its line reaches a position where the game is
/// over before its last move (most often right after the opponent's first move), so there
/// is nothing for a player to find there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedPuzzle {
    /// 1-based line of the file.
    pub line: usize,
    /// Lichess's id.
    pub id: String,
    /// How many of the line's moves were played when the game was over (1: after the
    /// opponent's first move).
    pub after_moves: usize,
    /// Why the game is over.
    pub reason: TerminalReason,
}

/// The puzzles of a file, and the ones that were skipped.
#[derive(Debug, Clone, Default)]
pub struct PuzzleSet {
    /// Puzzles to solve, in file order.
    pub puzzles: Vec<Puzzle>,
    /// Rows skipped because the game is over before the line ends.
    pub skipped: Vec<SkippedPuzzle>,
}

impl PuzzleSet {
    /// One line that tells what was skipped (the first few and the total); `None` when
    /// nothing was.
    pub fn skipped_warning(&self, path: &Path) -> Option<String> {
        const LISTED: usize = 5;
        if self.skipped.is_empty() {
            return None;
        }
        let listed: Vec<String> = self
            .skipped
            .iter()
            .take(LISTED)
            .map(|s| {
                format!(
                    "line {} ({}: {} after {} move(s))",
                    s.line,
                    s.id,
                    s.reason.describe(),
                    s.after_moves
                )
            })
            .collect();
        let more = if self.skipped.len() > LISTED {
            ", ..."
        } else {
            ""
        };
        Some(format!(
            "{}: skipped {} puzzle(s) whose game is already over: {}{more}",
            path.display(),
            self.skipped.len(),
            listed.join(", ")
        ))
    }
}

/// One puzzle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Puzzle {
    /// Lichess's id.
    pub id: String,
    /// The position before the opponent's first move.
    pub fen: String,
    /// The opponent's move, then the solver's and the opponent's in turn (UCI).
    pub moves: Vec<String>,
    /// The puzzle's rating.
    pub rating: u32,
}

/// The outcome of one puzzle.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PuzzleOutcome {
    /// Lichess's id.
    pub id: String,
    /// The puzzle's rating.
    pub rating: u32,
    /// Whether every move was found.
    pub solved: bool,
    /// The first wrong move, as (index in `moves`, the move played), if any.
    pub wrong: Option<(usize, String)>,
}

/// The rating bands of the report.
pub const BANDS: [&str; 4] = ["<1000", "1000-1500", "1500-2000", "2000+"];

/// The band of a rating, an index into [`BANDS`].
pub fn band(rating: u32) -> usize {
    match rating {
        0..1000 => 0,
        1000..1500 => 1,
        1500..2000 => 2,
        _ => 3,
    }
}

/// Reads the first `limit` puzzles (all when `None`) of a Lichess puzzle CSV
/// (`PuzzleId,FEN,Moves,Rating,...`, header line optional). Each row's line is replayed, so
/// a bad FEN or an illegal move is an error naming its line. A row whose game is over
/// before its line ends (e.g. the opponent's first move mates or stalemates) is skipped
/// and listed in [`PuzzleSet::skipped`]: it is a bad puzzle, not a bad file, and would
/// otherwise stop a whole run when the player is asked to move in a finished game.
pub fn read_puzzles(path: &Path, limit: Option<usize>) -> Result<PuzzleSet, PuzzleError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| PuzzleError::Io {
        path: name.clone(),
        source,
    })?;
    let mut out = PuzzleSet::default();
    for (i, line) in text.lines().enumerate() {
        if out.puzzles.len() >= limit.unwrap_or(usize::MAX) {
            break;
        }
        let line = line.trim();
        if line.is_empty() || (i == 0 && line.starts_with("PuzzleId")) {
            continue;
        }
        let row = parse_row(line).map_err(|reason| PuzzleError::BadRow {
            path: name.clone(),
            line: i + 1,
            reason,
        })?;
        match row {
            Row::Puzzle(p) => out.puzzles.push(p),
            Row::Over {
                id,
                after_moves,
                reason,
            } => out.skipped.push(SkippedPuzzle {
                line: i + 1,
                id,
                after_moves,
                reason,
            }),
        }
    }
    if out.puzzles.is_empty() {
        if out.skipped.is_empty() {
            return Err(PuzzleError::Empty { path: name });
        }
        return Err(PuzzleError::NothingToSolve {
            path: name,
            skipped: out.skipped.len(),
        });
    }
    Ok(out)
}

/// A row of the file: a puzzle, or one whose game is over before its line ends.
enum Row {
    Puzzle(Puzzle),
    Over {
        id: String,
        after_moves: usize,
        reason: TerminalReason,
    },
}

fn parse_row(line: &str) -> Result<Row, String> {
    let fields: Vec<&str> = line.split(',').collect();
    let [id, fen, moves, rating, ..] = fields[..] else {
        return Err("expected PuzzleId,FEN,Moves,Rating,...".into());
    };
    let rating = rating
        .trim()
        .parse()
        .map_err(|_| format!("rating {rating:?} is not a whole number"))?;
    let moves: Vec<String> = moves.split_whitespace().map(str::to_string).collect();
    if moves.len() < 2 {
        return Err("a puzzle needs the opponent's move and at least one answer".into());
    }
    let mut state =
        ChessState::from_fen(fen, HistoryFill::No).map_err(|e| format!("FEN {fen:?}: {e}"))?;
    // As `solve_puzzles` plays it: only the rules of chess end a puzzle, never a length.
    state.set_max_plies(u32::MAX);
    for (played, mv) in moves.iter().enumerate() {
        if let Some(reason) = state.terminal_reason() {
            return Ok(Row::Over {
                id: id.to_string(),
                after_moves: played,
                reason,
            });
        }
        state.play_uci(mv).map_err(|e| e.to_string())?;
    }
    Ok(Row::Puzzle(Puzzle {
        id: id.to_string(),
        fen: fen.to_string(),
        moves,
        rating,
    }))
}

/// A puzzle being solved.
struct Attempt {
    index: usize,
    state: ChessState,
    played: Vec<Move>,
    /// The index in `moves` of the solver's next move.
    next: usize,
}

/// Plays `puzzles` with `player`, at most `concurrency` at a time (the player is asked for
/// all of their moves at once); `on_done` sees each outcome as it is known. Returns the
/// outcomes in puzzle order.
pub fn solve_puzzles(
    puzzles: &[Puzzle],
    player: &mut dyn Player,
    concurrency: usize,
    rng: &mut dyn rand::RngCore,
    on_done: &mut dyn FnMut(&PuzzleOutcome),
) -> Result<Vec<PuzzleOutcome>, ArenaError> {
    let mut outcomes: Vec<Option<PuzzleOutcome>> = vec![None; puzzles.len()];
    let mut queue = 0..puzzles.len();
    let mut active: Vec<Attempt> = Vec::new();
    let mut states = Vec::new();
    let mut picked = Vec::new();
    loop {
        while active.len() < concurrency.max(1) {
            let Some(index) = queue.next() else { break };
            let p = &puzzles[index];
            let mut state = ChessState::from_fen(&p.fen, HistoryFill::No).map_err(|e| {
                ArenaError::BadOpening {
                    fen: p.fen.clone(),
                    reason: e.to_string(),
                }
            })?;
            state.set_max_plies(u32::MAX);
            let first = play(&mut state, &p.moves[0]);
            active.push(Attempt {
                index,
                state,
                played: vec![first],
                next: 1,
            });
        }
        if active.is_empty() {
            break;
        }
        states.clear();
        states.extend(active.iter().map(|a| a.state.clone()));
        let lines: Vec<GameLine<'_>> = active
            .iter()
            .map(|a| GameLine {
                start_fen: Some(&puzzles[a.index].fen),
                moves: &a.played,
            })
            .collect();
        picked.clear();
        player.pick(&states, &lines, rng, &mut picked)?;
        drop(lines);
        let mut i = 0;
        while i < active.len() {
            let a = &mut active[i];
            let p = &puzzles[a.index];
            let mv = picked[i];
            let text = UciMove::from_move(mv, CastlingMode::Standard).to_string();
            a.state.play_move(mv);
            a.played.push(mv);
            let mates = a.state.position().is_checkmate();
            let done = if text == p.moves[a.next] || mates {
                a.next += 2;
                (mates || a.next >= p.moves.len()).then_some(None)
            } else {
                Some(Some((a.next, text)))
            };
            match done {
                None => {
                    let reply = play(&mut a.state, &p.moves[a.next - 1]);
                    a.played.push(reply);
                    i += 1;
                }
                Some(wrong) => {
                    let a = active.swap_remove(i);
                    picked.swap_remove(i);
                    let outcome = PuzzleOutcome {
                        id: p.id.clone(),
                        rating: p.rating,
                        solved: wrong.is_none(),
                        wrong,
                    };
                    on_done(&outcome);
                    outcomes[a.index] = Some(outcome);
                }
            }
        }
    }
    Ok(outcomes
        .into_iter()
        .map(|o| o.expect("every puzzle ends"))
        .collect())
}

/// Plays a move of the puzzle's line, legal since [`read_puzzles`] replayed it.
fn play(state: &mut ChessState, uci: &str) -> Move {
    state
        .play_uci(uci)
        .expect("the puzzle's line was replayed when it was read")
}

/// Solved puzzles and puzzles in all and in each rating band of [`BANDS`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PuzzleTally {
    /// (solved, total) over all puzzles.
    pub all: (usize, usize),
    /// (solved, total) in each band.
    pub bands: [(usize, usize); 4],
}

impl PuzzleTally {
    /// Counts `outcomes`.
    pub fn of(outcomes: &[PuzzleOutcome]) -> PuzzleTally {
        let mut t = PuzzleTally::default();
        for o in outcomes {
            let b = &mut t.bands[band(o.rating)];
            b.1 += 1;
            t.all.1 += 1;
            if o.solved {
                b.0 += 1;
                t.all.0 += 1;
            }
        }
        t
    }
}
