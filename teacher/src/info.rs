//! The `info` lines an engine prints while it searches, as far as a label needs them.

use crate::score::{EngineScore, MoveValue};

/// One `info` line that carries a score and a principal variation.
#[derive(Debug, Clone, PartialEq)]
pub struct InfoLine {
    /// `depth`, 0 when absent.
    pub depth: u32,
    /// `multipv`, 1 when absent (engines omit it with MultiPV 1).
    pub multipv: u32,
    /// The score and, with `UCI_ShowWDL`, the W/D/L.
    pub value: MoveValue,
    /// The first move of `pv`, as UCI text.
    pub first_move: String,
}

/// Parses an `info` line; `None` for lines without both a score and a `pv`, and for bound
/// scores (`lowerbound`, `upperbound`): those are no value of the move, only a limit.
pub fn parse_info(line: &str) -> Option<InfoLine> {
    let mut tokens = line.split_whitespace();
    if tokens.next() != Some("info") {
        return None;
    }
    let mut depth = 0;
    let mut multipv = 1;
    let mut score = None;
    let mut wdl = None;
    let mut first_move = None;
    while let Some(token) = tokens.next() {
        match token {
            "depth" => depth = tokens.next()?.parse().ok()?,
            "multipv" => multipv = tokens.next()?.parse().ok()?,
            "score" => {
                let kind = tokens.next()?;
                let n: i32 = tokens.next()?.parse().ok()?;
                score = Some(match kind {
                    "cp" => EngineScore::Cp(n),
                    "mate" => EngineScore::Mate(n),
                    _ => return None,
                });
            }
            "lowerbound" | "upperbound" => return None,
            "wdl" => {
                let mut next = || tokens.next()?.parse::<u32>().ok();
                wdl = Some([next()?, next()?, next()?]);
            }
            // The rest of the line is the variation (and `string` a free text).
            "pv" => {
                first_move = tokens.next().map(str::to_string);
                break;
            }
            "string" => return None,
            _ => {}
        }
    }
    Some(InfoLine {
        depth,
        multipv,
        value: MoveValue { score: score?, wdl },
        first_move: first_move?,
    })
}
