//! Opening books: files of FEN or EPD lines, or PGN games (the position after each game's
//! moves is the opening).

use std::path::Path;

use cfzero_chess::{ChessState, HistoryFill, TerminalReason};
use shakmaty::fen::Fen;
use shakmaty::san::SanPlus;
use shakmaty::{CastlingMode, Chess, EnPassantMode, Position};
use std::ops::ControlFlow;

/// Why an opening file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum OpeningError {
    /// The file could not be read.
    #[error("cannot read openings {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is not a valid position.
    #[error("{path}:{line}: not a valid FEN/EPD position: {reason}")]
    BadLine {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// The parser's complaint.
        reason: String,
    },
    /// A PGN game has a move that is not legal or not SAN.
    #[error("{path}: game {game}: {reason}")]
    BadGame {
        /// The file.
        path: String,
        /// 1-based game number.
        game: usize,
        /// What is wrong.
        reason: String,
    },
    /// The file holds no position.
    #[error("{path}: no positions")]
    Empty {
        /// The file.
        path: String,
    },
    /// Every position of a self-play book is a finished game.
    #[error(
        "{path}: no playable position: all {finished} are finished games (checkmate, stalemate, \
         insufficient material or the fifty-move rule)"
    )]
    NoPlayable {
        /// The file.
        path: String,
        /// How many positions it holds, all finished.
        finished: usize,
    },
}

/// Where in a book a position comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BookPlace {
    /// 1-based line of a FEN/EPD file.
    Line(usize),
    /// 1-based game of a PGN file.
    Game(usize),
}

impl std::fmt::Display for BookPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BookPlace::Line(n) => write!(f, "line {n}"),
            BookPlace::Game(n) => write!(f, "game {n}"),
        }
    }
}

/// A book position in which the game is already over, skipped by [`read_book`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishedOpening {
    /// Where it is in the file.
    pub place: BookPlace,
    /// Its FEN.
    pub fen: String,
    /// Why the game is over.
    pub reason: TerminalReason,
}

/// A self-play opening book: the positions games can start from, and the finished ones
/// that were left out.
#[derive(Debug, Clone, Default)]
pub struct Book {
    /// FENs of the playable positions, in file order.
    pub positions: Vec<String>,
    /// Positions skipped because the game is over in them.
    pub finished: Vec<FinishedOpening>,
}

impl Book {
    /// One line that tells what was skipped (the first few places and the total); `None`
    /// when nothing was.
    pub fn skipped_warning(&self, path: &Path) -> Option<String> {
        const LISTED: usize = 5;
        if self.finished.is_empty() {
            return None;
        }
        let listed: Vec<String> = self
            .finished
            .iter()
            .take(LISTED)
            .map(|f| format!("{} ({})", f.place, f.reason.describe()))
            .collect();
        let more = if self.finished.len() > LISTED {
            ", ..."
        } else {
            ""
        };
        Some(format!(
            "{}: skipped {} finished position(s), {} kept: {}{more}",
            path.display(),
            self.finished.len(),
            self.positions.len(),
            listed.join(", ")
        ))
    }
}

/// Reads a self-play opening book as [`read_openings`] does, but leaves out the positions in
/// which the game is already over (checkmate, stalemate, insufficient material, halfmove
/// clock at 100; a PGN game's final position often is one): a game cannot start there, and
/// one such line would otherwise stop self-play, and every `--resume` after it, for good.
/// A book without any playable position is [`OpeningError::NoPlayable`].
pub fn read_book(path: &Path) -> Result<Book, OpeningError> {
    let mut book = Book::default();
    for (place, fen) in read_placed(path)? {
        // FEN lines are checked already; a PGN game's final position is checked here.
        let state = ChessState::from_fen(&fen, HistoryFill::No).map_err(|e| {
            let (path, reason) = (path.display().to_string(), e.to_string());
            match place {
                BookPlace::Line(line) => OpeningError::BadLine { path, line, reason },
                BookPlace::Game(game) => OpeningError::BadGame { path, game, reason },
            }
        })?;
        match state.terminal_reason() {
            Some(reason) => book.finished.push(FinishedOpening { place, fen, reason }),
            None => book.positions.push(fen),
        }
    }
    if book.positions.is_empty() {
        return Err(OpeningError::NoPlayable {
            path: path.display().to_string(),
            finished: book.finished.len(),
        });
    }
    Ok(book)
}

/// The FEN of a FEN or EPD line: EPD's four position fields get `0 1` as move counters;
/// a full FEN is kept as it is. Opcodes after the fields are dropped.
pub fn fen_of_line(line: &str) -> String {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let counters = fields.len() >= 6
        && fields[4].parse::<u32>().is_ok()
        && fields[5].trim_end_matches(';').parse::<u32>().is_ok();
    if counters {
        format!(
            "{} {}",
            fields[..5].join(" "),
            fields[5].trim_end_matches(';')
        )
    } else {
        format!("{} 0 1", fields[..fields.len().min(4)].join(" "))
    }
}

/// Reads an opening file. A `.pgn` file gives the final position of each game; any other
/// file is one FEN or EPD position a line, blank lines and `#` comments skipped. Every
/// position is checked, and the first bad one is an error naming its line or game.
pub fn read_openings(path: &Path) -> Result<Vec<String>, OpeningError> {
    Ok(read_placed(path)?.into_iter().map(|(_, fen)| fen).collect())
}

/// [`read_openings`] with the place of each position.
fn read_placed(path: &Path) -> Result<Vec<(BookPlace, String)>, OpeningError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| OpeningError::Io {
        path: name.clone(),
        source,
    })?;
    let is_pgn = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pgn"));
    let out = if is_pgn {
        pgn_final_positions(&text)
            .map_err(|(game, reason)| OpeningError::BadGame {
                path: name.clone(),
                game,
                reason,
            })?
            .into_iter()
            .enumerate()
            .map(|(i, fen)| (BookPlace::Game(i + 1), fen))
            .collect()
    } else {
        fen_lines(&text, &name)?
    };
    if out.is_empty() {
        return Err(OpeningError::Empty { path: name });
    }
    Ok(out)
}

fn fen_lines(text: &str, name: &str) -> Result<Vec<(BookPlace, String)>, OpeningError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fen = fen_of_line(line);
        ChessState::from_fen(&fen, HistoryFill::No).map_err(|e| OpeningError::BadLine {
            path: name.to_string(),
            line: i + 1,
            reason: e.to_string(),
        })?;
        out.push((BookPlace::Line(i + 1), fen));
    }
    Ok(out)
}

/// The FEN after the main line of each PGN game of `text` (read with `pgn-reader`:
/// comments, variations, NAGs and move numbers skipped; a `FEN` tag sets the start).
/// Errors are (1-based game, reason).
pub fn pgn_final_positions(text: &str) -> Result<Vec<String>, (usize, String)> {
    let mut reader = pgn_reader::Reader::new(text.as_bytes());
    let mut out = Vec::new();
    loop {
        let game = out.len() + 1;
        match reader.read_game(&mut FinalPosition) {
            Ok(None) => return Ok(out),
            Ok(Some(Ok(pos))) => {
                out.push(Fen::from_position(&pos, EnPassantMode::Legal).to_string())
            }
            Ok(Some(Err(reason))) => return Err((game, reason)),
            Err(e) => return Err((game, format!("unreadable PGN: {e}"))),
        }
    }
}

/// Plays a game's main line; its output is the final position or why not.
struct FinalPosition;

impl pgn_reader::Visitor for FinalPosition {
    type Tags = Result<Chess, String>;
    type Movetext = Chess;
    type Output = Result<Chess, String>;

    fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
        ControlFlow::Continue(Ok(Chess::default()))
    }

    fn tag(
        &mut self,
        tags: &mut Self::Tags,
        name: &[u8],
        value: pgn_reader::RawTag<'_>,
    ) -> ControlFlow<Self::Output> {
        if name == b"FEN" {
            let text = value.decode_utf8_lossy();
            *tags = text
                .parse::<Fen>()
                .map_err(|e| e.to_string())
                .and_then(|f| {
                    f.into_position(CastlingMode::Standard)
                        .map_err(|e| e.to_string())
                })
                .map_err(|e| format!("FEN tag {text:?}: {e}"));
        }
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Self::Output, Self::Movetext> {
        match tags {
            Ok(pos) => ControlFlow::Continue(pos),
            Err(e) => ControlFlow::Break(Err(e)),
        }
    }

    fn san(&mut self, pos: &mut Chess, san_plus: SanPlus) -> ControlFlow<Self::Output> {
        match san_plus.san.to_move(pos) {
            Ok(mv) => {
                pos.play_unchecked(mv);
                ControlFlow::Continue(())
            }
            Err(_) => ControlFlow::Break(Err(format!("{san_plus} is not legal here"))),
        }
    }

    fn end_game(&mut self, pos: Chess) -> Self::Output {
        Ok(pos)
    }
}
