//! Opening books: files of FEN or EPD lines.

use std::path::Path;

use cfzero_mcts::chess::{ChessState, HistoryFill};

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
    /// The file holds no position.
    #[error("{path}: no positions")]
    Empty {
        /// The file.
        path: String,
    },
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

/// Reads an opening file: one position a line; blank lines and `#` comments are skipped.
/// Every position is checked, and the first bad one is an error naming its line.
pub fn read_openings(path: &Path) -> Result<Vec<String>, OpeningError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| OpeningError::Io {
        path: name.clone(),
        source,
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fen = fen_of_line(line);
        ChessState::from_fen(&fen, HistoryFill::No).map_err(|e| OpeningError::BadLine {
            path: name.clone(),
            line: i + 1,
            reason: e.to_string(),
        })?;
        out.push(fen);
    }
    if out.is_empty() {
        return Err(OpeningError::Empty { path: name });
    }
    Ok(out)
}
