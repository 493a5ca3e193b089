//! PGN output of games, readable by standard chess tools.

use std::fmt::Write;

use shakmaty::san::SanPlus;
use shakmaty::{Chess, Move, Position};

use crate::record::GameRecord;
use crate::replay::{ReplayError, start_state};
use crate::result::{GameResult, Termination};

/// Tags of a PGN game beyond those taken from the record.
#[derive(Debug, Clone)]
pub struct PgnTags<'a> {
    /// `Event` tag.
    pub event: &'a str,
    /// `Round` tag (e.g. the game number).
    pub round: u64,
    /// `White` player name.
    pub white: &'a str,
    /// `Black` player name.
    pub black: &'a str,
}

/// Renders a game record as one PGN game (tags, SAN movetext, result), ending in a blank line.
pub fn game_to_pgn(game: &GameRecord, tags: &PgnTags<'_>) -> Result<String, ReplayError> {
    let start = start_state(game)?;
    let moves = crate::replay::moves(game)?;
    Ok(moves_to_pgn(
        game.start_fen.as_deref(),
        start.position(),
        &moves,
        game.result,
        game.termination,
        tags,
    ))
}

/// Renders the game of `moves` from `start` (whose FEN, if not the standard start, is
/// `start_fen`) as one PGN game ending in a blank line. The moves must be legal.
pub fn moves_to_pgn(
    start_fen: Option<&str>,
    start: &Chess,
    moves: &[Move],
    result: GameResult,
    termination: Termination,
    tags: &PgnTags<'_>,
) -> String {
    let mut out = String::new();
    let result = result.pgn();
    let tag = |out: &mut String, k: &str, v: &str| {
        let v = v.replace('\\', "\\\\").replace('"', "\\\"");
        let _ = writeln!(out, "[{k} \"{v}\"]");
    };
    tag(&mut out, "Event", tags.event);
    tag(&mut out, "Site", "cfzero");
    tag(&mut out, "Round", &tags.round.to_string());
    tag(&mut out, "White", tags.white);
    tag(&mut out, "Black", tags.black);
    tag(&mut out, "Result", result);
    tag(&mut out, "Termination", termination.describe());
    tag(&mut out, "PlyCount", &moves.len().to_string());
    if let Some(fen) = start_fen {
        tag(&mut out, "SetUp", "1");
        tag(&mut out, "FEN", fen);
    }
    out.push('\n');

    let mut pos = start.clone();
    let mut line = String::new();
    for (i, mv) in moves.iter().enumerate() {
        let number = pos.fullmoves();
        let token = if pos.turn().is_white() {
            format!("{number}. ")
        } else if i == 0 {
            format!("{number}... ")
        } else {
            String::new()
        };
        let san = SanPlus::from_move_and_play_unchecked(&mut pos, *mv);
        let piece = format!("{token}{san}");
        if line.len() + piece.len() + 1 > 79 {
            out.push_str(line.trim_end());
            out.push('\n');
            line.clear();
        }
        line.push_str(&piece);
        line.push(' ');
    }
    line.push_str(result);
    out.push_str(&line);
    out.push_str("\n\n");
    out
}
