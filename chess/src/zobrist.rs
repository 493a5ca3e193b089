//! 64-bit Zobrist keys for boards and positions, kept up to date move by move.
//!
//! shakmaty's tables are used for the piece, turn, castling and en-passant keys; the
//! board hash is updated incrementally because the full recomputation visits every piece.

use shakmaty::zobrist::{Zobrist64, ZobristValue};
use shakmaty::{Board, Castles, CastlingSide, Color, Move, Piece, Role, Square};

/// The Zobrist hash of the pieces of `board` alone.
pub(crate) fn board_hash(board: &Board) -> u64 {
    let mut h = 0;
    for (sq, piece) in board.iter() {
        h ^= piece_key(sq, piece);
    }
    h
}

fn piece_key(sq: Square, piece: Piece) -> u64 {
    Zobrist64::zobrist_for_piece(sq, piece).0
}

/// The board hash after `color` plays `mv` on a board whose hash is `hash`.
///
/// Returns `None` for moves that standard chess does not have (drops).
pub(crate) fn update_board_hash(hash: u64, mv: Move, color: Color) -> Option<u64> {
    let mut h = hash;
    match mv {
        Move::Normal {
            role,
            from,
            capture,
            to,
            promotion,
        } => {
            h ^= piece_key(from, role.of(color));
            if let Some(captured) = capture {
                h ^= piece_key(to, captured.of(!color));
            }
            h ^= piece_key(to, promotion.unwrap_or(role).of(color));
        }
        Move::EnPassant { from, to } => {
            let captured = Square::from_coords(to.file(), from.rank());
            h ^= piece_key(from, Role::Pawn.of(color));
            h ^= piece_key(to, Role::Pawn.of(color));
            h ^= piece_key(captured, Role::Pawn.of(!color));
        }
        Move::Castle { king, rook } => {
            let side = CastlingSide::from_queen_side(rook < king);
            h ^= piece_key(king, Role::King.of(color));
            h ^= piece_key(rook, Role::Rook.of(color));
            h ^= piece_key(side.king_to(color), Role::King.of(color));
            h ^= piece_key(side.rook_to(color), Role::Rook.of(color));
        }
        Move::Put { .. } => return None,
    }
    Some(h)
}

/// The key of everything but the pieces that makes two positions equal in lc0's sense:
/// side to move, castling rights and lc0's en-passant flag.
pub(crate) fn state_key(turn: Color, castles: &Castles, ep_square: Option<Square>) -> u64 {
    let mut h = 0;
    if turn == Color::White {
        h ^= Zobrist64::zobrist_for_white_turn().0;
    }
    for color in Color::ALL {
        for side in CastlingSide::ALL {
            if castles.has(color, side) {
                h ^= Zobrist64::zobrist_for_castling_right(color, side).0;
            }
        }
    }
    if let Some(sq) = ep_square {
        h ^= Zobrist64::zobrist_for_en_passant_file(sq.file()).0;
    }
    h
}

/// A strong 64-bit mixer (splitmix64's finaliser), used to combine keys in order.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use shakmaty::{Chess, Position};

    use super::*;

    /// The incremental board hash equals the full one over long games with every kind of
    /// move (captures, promotions, castling, en passant), chosen by a fixed pseudo-random rule.
    #[test]
    fn incremental_board_hash_matches_full_hash() {
        let mut seed = 0x1234_5678_u64;
        for _game in 0..50 {
            let mut pos = Chess::new();
            let mut hash = board_hash(pos.board());
            for _ply in 0..200 {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                seed = mix(seed);
                let mv = moves[(seed % moves.len() as u64) as usize];
                hash = update_board_hash(hash, mv, pos.turn()).expect("standard move");
                pos.play_unchecked(mv);
                assert_eq!(hash, board_hash(pos.board()), "after {mv:?}");
            }
        }
    }
}
