//! Exact results of the three-piece endings that can still be won: king and queen, rook or
//! pawn against a bare king, with either side to move.
//!
//! The tables are solved from the rules on first use, by retrograde iteration over every
//! placement of the three pieces. Our own solver, not Syzygy: no crate generates tables, and
//! nothing may be downloaded at run time. Three pieces are enough for what self-play needs:
//! every way into such an ending is a capture or a promotion, which resets the fifty-move
//! count, and no win in them takes longer than the fifty moves (Syzygy's "cursed" wins start
//! at more pieces), so the result here is the result under the full rules.

use std::sync::OnceLock;

use shakmaty::{Bitboard, CastlingMode, Chess, Color, Piece, Position, Role, Setup, Square};

use crate::GameResult;

/// The stronger side's piece of each table, in table order. Promotions to bishop or knight
/// leave insufficient material, a draw by the rules.
const ROLES: [Role; 3] = [Role::Queen, Role::Rook, Role::Pawn];

/// Placements (stronger king, weaker king, piece) times the side to move.
const POSITIONS: usize = 64 * 64 * 64 * 2;

/// A child of a position: another position of the same table, or a result already known.
const CHILD_WIN: u32 = u32::MAX;
const CHILD_DRAW: u32 = u32::MAX - 1;

/// The result of a position of at most three pieces, when it is one of the tables': kings and
/// one queen, rook or pawn, no castling rights. `None` for every other position (more pieces,
/// or two kings with a bishop or a knight, which the rules already call a draw).
pub fn probe(pos: &Chess) -> Option<GameResult> {
    let board = pos.board();
    if board.occupied().count() != 3 || !pos.castles().is_empty() {
        return None;
    }
    let (piece, i) = locate(pos)?;
    let table = ROLES.iter().position(|&r| r == piece.role)?;
    let strong = piece.color;
    Some(if tables()[table][i] {
        GameResult::win_for(strong)
    } else {
        GameResult::Draw
    })
}

/// Solves the tables now rather than at the first probe (a fraction of a second, once per
/// process), so that a game's first three-piece position costs no more than any other.
pub fn prepare() {
    tables();
}

fn tables() -> &'static [Vec<bool>; 3] {
    static TABLES: OnceLock<[Vec<bool>; 3]> = OnceLock::new();
    TABLES.get_or_init(|| {
        let queen = solve(Role::Queen, &[]);
        let rook = solve(Role::Rook, &[]);
        let pawn = solve(Role::Pawn, &[(Role::Queen, &queen), (Role::Rook, &rook)]);
        [queen, rook, pawn]
    })
}

/// The one piece beside the two kings, and the position's index in the tables' frame, where
/// that piece's side is White (Black's pieces are mirrored).
fn locate(pos: &Chess) -> Option<(Piece, usize)> {
    let board = pos.board();
    let square = (board.occupied() & !board.kings()).first()?;
    let piece = board.piece_at(square)?;
    let strong = piece.color;
    let norm = |sq: Square| match strong {
        Color::White => sq,
        Color::Black => sq.flip_vertical(),
    };
    let i = index(
        norm(board.king_of(strong)?),
        norm(board.king_of(!strong)?),
        norm(square),
        pos.turn() == strong,
    );
    Some((piece, i))
}

fn index(strong_king: Square, weak_king: Square, piece: Square, strong_to_move: bool) -> usize {
    ((usize::from(strong_king) * 64 + usize::from(weak_king)) * 64 + usize::from(piece)) * 2
        + usize::from(!strong_to_move)
}

/// The legal position of index `i` in the table of `role` (White the stronger side), if the
/// placement is one.
fn position(role: Role, i: usize) -> Option<Chess> {
    let strong_to_move = i.is_multiple_of(2);
    let piece = Square::new(((i / 2) % 64) as u32);
    let weak_king = Square::new(((i / 128) % 64) as u32);
    let strong_king = Square::new((i / 8192) as u32);
    if strong_king == weak_king || piece == strong_king || piece == weak_king {
        return None;
    }
    if role == Role::Pawn && Bitboard::BACKRANKS.contains(piece) {
        return None;
    }
    let mut setup = Setup::empty();
    setup.board.set_piece_at(
        strong_king,
        Piece {
            color: Color::White,
            role: Role::King,
        },
    );
    setup.board.set_piece_at(
        weak_king,
        Piece {
            color: Color::Black,
            role: Role::King,
        },
    );
    setup.board.set_piece_at(
        piece,
        Piece {
            color: Color::White,
            role,
        },
    );
    setup.turn = if strong_to_move {
        Color::White
    } else {
        Color::Black
    };
    setup.position(CastlingMode::Standard).ok()
}

/// Whether the stronger side (White) wins each position of the table of `role`, by iterating
/// "a win has a move to a win" (stronger side to move) and "every move leads to a win"
/// (weaker side to move) from the checkmates until nothing changes. `solved` holds the tables
/// that promotions lead into.
fn solve(role: Role, solved: &[(Role, &Vec<bool>)]) -> Vec<bool> {
    let mut win = vec![false; POSITIONS];
    // Positions that the iteration leaves alone: illegal placements and positions without a
    // legal move (mates are wins from the start, stalemates draws).
    let mut settled = vec![true; POSITIONS];
    let mut offsets = vec![0u32; POSITIONS + 1];
    let mut children = Vec::new();
    for i in 0..POSITIONS {
        if let Some(pos) = position(role, i) {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                win[i] = pos.turn() == Color::Black && pos.is_check();
            } else {
                settled[i] = false;
                children.extend(moves.iter().map(|m| {
                    let mut child = pos.clone();
                    child.play_unchecked(*m);
                    classify(role, &child, solved)
                }));
            }
        }
        offsets[i + 1] = u32::try_from(children.len()).expect("fewer than 2^32 moves");
    }
    let is_win = |win: &[bool], c: u32| match c {
        CHILD_WIN => true,
        CHILD_DRAW => false,
        c => win[c as usize],
    };
    loop {
        let mut changed = false;
        for i in 0..POSITIONS {
            if settled[i] || win[i] {
                continue;
            }
            let mut kids = children[offsets[i] as usize..offsets[i + 1] as usize].iter();
            let wins = if i.is_multiple_of(2) {
                kids.any(|&c| is_win(&win, c))
            } else {
                kids.all(|&c| is_win(&win, c))
            };
            if wins {
                win[i] = true;
                changed = true;
            }
        }
        if !changed {
            return win;
        }
    }
}

/// A position after a move in the table of `role`: the same table, a promotion into a solved
/// one, or a capture of the stronger side's piece (two kings: a draw).
fn classify(role: Role, child: &Chess, solved: &[(Role, &Vec<bool>)]) -> u32 {
    // Only the stronger side (White here) can own the piece: the weaker has a bare king.
    let Some((piece, i)) = locate(child) else {
        return CHILD_DRAW;
    };
    if piece.role == role {
        return u32::try_from(i).expect("an index fits in u32");
    }
    match solved.iter().find(|(r, _)| *r == piece.role) {
        Some((_, table)) if table[i] => CHILD_WIN,
        _ => CHILD_DRAW,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::fen::Fen;

    fn probe_fen(fen: &str) -> Option<GameResult> {
        let pos: Chess = fen
            .parse::<Fen>()
            .expect("a FEN")
            .into_position(CastlingMode::Standard)
            .expect("a legal position");
        probe(&pos)
    }

    #[test]
    fn queen_and_rook_win_unless_the_piece_falls_at_once() {
        assert_eq!(
            probe_fen("8/8/8/4k3/8/8/8/KQ6 w - - 0 1"),
            Some(GameResult::WhiteWin)
        );
        assert_eq!(
            probe_fen("8/8/8/4k3/8/8/8/KQ6 b - - 0 1"),
            Some(GameResult::WhiteWin)
        );
        assert_eq!(
            probe_fen("8/8/8/4k3/8/8/8/R3K3 b - - 0 1"),
            Some(GameResult::WhiteWin)
        );
        // The queen stands next to the black king, unprotected: Kxc2.
        assert_eq!(
            probe_fen("8/8/8/8/8/8/1kQ5/7K b - - 0 1"),
            Some(GameResult::Draw)
        );
        // Stalemate: the black king on a8 has no move and is not in check.
        assert_eq!(
            probe_fen("k7/2Q5/1K6/8/8/8/8/8 b - - 0 1"),
            Some(GameResult::Draw)
        );
        // Black's rook wins too: the tables mirror the stronger side to White.
        assert_eq!(
            probe_fen("3k4/8/8/8/8/8/8/r6K w - - 0 1"),
            Some(GameResult::BlackWin)
        );
    }

    #[test]
    fn king_and_pawn_follow_the_opposition() {
        // Kings in opposition in front of the pawn: whoever must move gives way.
        assert_eq!(
            probe_fen("8/4k3/8/4K3/4P3/8/8/8 w - - 0 1"),
            Some(GameResult::Draw)
        );
        assert_eq!(
            probe_fen("8/4k3/8/4K3/4P3/8/8/8 b - - 0 1"),
            Some(GameResult::WhiteWin)
        );
        // The king on the sixth rank in front of its pawn wins whoever moves.
        assert_eq!(
            probe_fen("4k3/8/4K3/4P3/8/8/8/8 w - - 0 1"),
            Some(GameResult::WhiteWin)
        );
        // The first two with Black's pawn, mirrored.
        assert_eq!(
            probe_fen("8/8/8/4p3/4k3/8/4K3/8 b - - 0 1"),
            Some(GameResult::Draw)
        );
        assert_eq!(
            probe_fen("8/8/8/4p3/4k3/8/4K3/8 w - - 0 1"),
            Some(GameResult::BlackWin)
        );
        // A rook's pawn with the defending king in the corner is a draw whoever moves.
        assert_eq!(
            probe_fen("k7/8/K7/P7/8/8/8/8 w - - 0 1"),
            Some(GameResult::Draw)
        );
        // A pawn the defending king cannot catch promotes and wins.
        assert_eq!(
            probe_fen("7k/8/8/8/P7/8/8/K7 w - - 0 1"),
            Some(GameResult::WhiteWin)
        );
    }

    #[test]
    fn other_positions_are_not_in_the_tables() {
        // Four pieces, the start position, a bishop (insufficient material) and castling rights.
        assert_eq!(probe_fen("8/8/8/4k3/8/8/p7/KQ6 w - - 0 1"), None);
        assert_eq!(
            probe_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"),
            None
        );
        assert_eq!(probe_fen("8/8/8/4k3/8/8/8/KB6 w - - 0 1"), None);
        assert_eq!(probe_fen("4k3/8/8/8/8/8/8/4K2R w K - 0 1"), None);
    }

    /// Every table entry agrees with its children: a stronger side to move wins exactly when
    /// a move wins, a weaker side to move loses exactly when it is mated or every move loses.
    #[test]
    fn every_result_agrees_with_the_results_after_each_move() {
        for (t, &role) in ROLES.iter().enumerate() {
            // Every 97th index: all three tables, both sides to move, in a fraction of the time.
            for i in (0..POSITIONS).step_by(97) {
                let Some(pos) = position(role, i) else {
                    continue;
                };
                let moves = pos.legal_moves();
                let after: Vec<bool> = moves
                    .iter()
                    .map(|m| {
                        let mut child = pos.clone();
                        child.play_unchecked(*m);
                        probe(&child) == Some(GameResult::WhiteWin)
                    })
                    .collect();
                let expected = match pos.turn() {
                    Color::White => after.iter().any(|&w| w),
                    Color::Black if moves.is_empty() => pos.is_check(),
                    Color::Black => after.iter().all(|&w| w),
                };
                assert_eq!(tables()[t][i], expected, "{role:?} table, index {i}");
            }
        }
    }
}
