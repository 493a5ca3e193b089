//! Replaying a game record: the chess states and moves it stands for.

use cfzero_chess::{ChessState, HistoryFill, tablebase};
use cfzero_mcts::Game;
use shakmaty::Move;

use crate::config::{MATERIAL_MARGIN, MaxPliesResult};
use crate::record::GameRecord;
use crate::result::{GameResult, Termination};

/// Why a record does not replay: it names a move that is not legal, or a bad start FEN.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The start FEN does not parse.
    #[error("bad start FEN {fen:?}: {reason}")]
    BadFen {
        /// The FEN.
        fen: String,
        /// The parser's complaint.
        reason: String,
    },
    /// A played-move index is past the position's legal moves.
    #[error("ply {ply}: move {index} of {legal} legal moves")]
    BadMove {
        /// Ply of the position.
        ply: usize,
        /// The stored index.
        index: usize,
        /// Number of legal moves.
        legal: usize,
    },
    /// A trainable position's policy does not have one entry per legal move.
    #[error("ply {ply}: a policy of {entries} entries for {legal} legal moves")]
    BadPolicy {
        /// Ply of the position.
        ply: usize,
        /// Entries of the stored policy.
        entries: usize,
        /// Number of legal moves.
        legal: usize,
    },
    /// A game recorded as ended by a rule whose final position ends otherwise, or with
    /// another result.
    #[error("recorded as {recorded} ({result:?}), but the final position is {found}")]
    WrongEnd {
        /// The recorded termination.
        recorded: &'static str,
        /// The recorded result.
        result: GameResult,
        /// What the final position is by the rules ("not over" when none applies).
        found: String,
    },
}

/// The state a game record starts from.
pub fn start_state(game: &GameRecord) -> Result<ChessState, ReplayError> {
    match &game.start_fen {
        None => Ok(ChessState::new()),
        Some(fen) => ChessState::from_fen(fen, HistoryFill::No).map_err(|e| ReplayError::BadFen {
            fen: fen.clone(),
            reason: e.to_string(),
        }),
    }
}

/// Walks a game: calls `visit(ply, state_before_move, legal_moves, played_move)` for each
/// position, reusing one buffer of legal moves. Returns the final state.
pub fn replay(
    game: &GameRecord,
    visit: impl FnMut(usize, &ChessState, &[Move], Move),
) -> Result<ChessState, ReplayError> {
    let mut legal = Vec::with_capacity(64);
    replay_prefix(game, game.positions.len(), &mut legal, visit)
}

/// Like [`replay`], over the first `plies` moves only, with `legal` as the caller's
/// reusable buffer: returns the state before move `plies`.
pub fn replay_prefix(
    game: &GameRecord,
    plies: usize,
    legal: &mut Vec<Move>,
    mut visit: impl FnMut(usize, &ChessState, &[Move], Move),
) -> Result<ChessState, ReplayError> {
    let mut state = start_state(game)?;
    for (ply, pos) in game.positions[..plies].iter().enumerate() {
        state.legal_moves(legal);
        let index = usize::from(pos.played);
        let mv = *legal.get(index).ok_or(ReplayError::BadMove {
            ply,
            index,
            legal: legal.len(),
        })?;
        visit(ply, &state, legal, mv);
        state.play(mv);
    }
    Ok(state)
}

/// Checks that `game` can be trained on: it replays (a legal move at every ply), every
/// trainable position's policy has one entry per legal move, and a game recorded as ended
/// by a rule (mate, stalemate, insufficient material, fifty moves, repetition) ends so in
/// its final position, with that rule's result; one recorded as scored by the three-piece
/// tables reached their endings, and its result is theirs at its first position in them; one
/// scored by material at the length cap ends with the winner a piece ahead. The
/// replay window checks every game as it enters, so a record that passes its checksum but not
/// this is never sampled.
pub fn validate(game: &GameRecord) -> Result<(), ReplayError> {
    let mut bad_policy = None;
    // The first position after a move that the three-piece tables know, and their result.
    let mut tables_first = None;
    let last = replay(game, |ply, state, legal, _| {
        let policy = game.positions[ply].policy.len();
        if policy != 0 && policy != legal.len() && bad_policy.is_none() {
            bad_policy = Some(ReplayError::BadPolicy {
                ply,
                entries: policy,
                legal: legal.len(),
            });
        }
        if ply > 0 && tables_first.is_none() && game.termination == Termination::Tablebase {
            tables_first = tablebase::probe(state.position());
        }
    })?;
    if let Some(e) = bad_policy {
        return Err(e);
    }
    // Adjudications (the length cap, resignation) are no rule of the final position.
    if matches!(
        game.termination,
        Termination::MAX_PLIES | Termination::Resignation
    ) {
        return Ok(());
    }
    // The tables' result is that of the game's first position in them, wherever it ended.
    if game.termination == Termination::Tablebase {
        let known = match tables_first {
            Some(r) => Some(r),
            None if game.positions.is_empty() => None,
            None => tablebase::probe(last.position()),
        };
        if known == Some(game.result) {
            return Ok(());
        }
        return Err(ReplayError::WrongEnd {
            recorded: game.termination.describe(),
            result: game.result,
            found: match known {
                Some(r) => format!("the tables' {r:?}"),
                None => "no position of the tables".into(),
            },
        });
    }
    // Scored by material at the cap: the rules had not ended it, and the winner leads by a
    // piece in the final position.
    if game.termination == Termination::Material {
        let by_rules = last.terminal_reason();
        let known = MaxPliesResult::Material.decisive(last.position());
        if by_rules.is_none() && known == Some(game.result) {
            return Ok(());
        }
        return Err(ReplayError::WrongEnd {
            recorded: game.termination.describe(),
            result: game.result,
            found: match (by_rules, known) {
                (Some(r), _) => Termination::from(r).describe().to_string(),
                (None, Some(r)) => format!("a material lead for {r:?}"),
                (None, None) => format!("no material lead of {MATERIAL_MARGIN} pawns"),
            },
        });
    }
    let found = last.terminal_reason();
    let by_rules = found.map(|r| {
        (
            Termination::from(r),
            GameResult::from_terminal(r, last.turn()),
        )
    });
    if by_rules != Some((game.termination, game.result)) {
        return Err(ReplayError::WrongEnd {
            recorded: game.termination.describe(),
            result: game.result,
            found: match found {
                Some(r) => format!(
                    "{} ({:?})",
                    Termination::from(r).describe(),
                    GameResult::from_terminal(r, last.turn())
                ),
                None => "not over".into(),
            },
        });
    }
    Ok(())
}

/// The moves of a game, in order.
pub fn moves(game: &GameRecord) -> Result<Vec<Move>, ReplayError> {
    let mut out = Vec::with_capacity(game.positions.len());
    replay(game, |_, _, _, mv| out.push(mv))?;
    Ok(out)
}
