//! The 1858-entry policy index of lc0 (docs/METHODS.md §1).
//!
//! Entry order: for each from-square 0..63, every to-square in increasing order reachable
//! by a queen line or a knight jump (1792 entries); then for each from-square on rank 7
//! and each to-square on rank 8 at most one file away, promotions to queen, rook and
//! bishop in that order (66 entries). Moves are seen from the side to move (ranks mirrored
//! for black), castling is king-takes-rook and a knight promotion uses the plain move.

use std::sync::OnceLock;

use shakmaty::{Color, Move, Role, Square};

use super::POLICY_SIZE;

const NONE: u16 = u16::MAX;

/// Promotion pieces with their own policy entries, in entry order.
const PROMOTION_ROLES: [Role; 3] = [Role::Queen, Role::Rook, Role::Bishop];

/// A policy entry: a move in side-to-move coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PolicyMove {
    /// Origin square (the king for castling).
    pub from: Square,
    /// Target square (the rook for castling).
    pub to: Square,
    /// Queen, rook or bishop for the promotion entries; `None` otherwise.
    pub promotion: Option<Role>,
}

/// The four index tables, computed at compile time.
struct Tables {
    /// Entry of each plain from*64+to move, or `NONE`.
    plain: [u16; 4096],
    /// Entry of each promotion, at from_file*24 + to_file*3 + piece (q=0, r=1, b=2), or `NONE`.
    promotion: [u16; 192],
    /// (from, to, piece + 1 or 0) of each entry.
    entries: [(u8, u8, u8); POLICY_SIZE],
    /// The entry of each entry's move mirrored left to right (file a <-> file h).
    mirrored: [u16; POLICY_SIZE],
}

const fn is_policy_move(from: usize, to: usize) -> bool {
    let (ff, fr) = ((from % 8) as i32, (from / 8) as i32);
    let (tf, tr) = ((to % 8) as i32, (to / 8) as i32);
    let (df, dr) = ((ff - tf).abs(), (fr - tr).abs());
    let queen_line = df == 0 || dr == 0 || df == dr;
    let knight = (df == 1 && dr == 2) || (df == 2 && dr == 1);
    from != to && (queen_line || knight)
}

const fn build_tables() -> Tables {
    let mut t = Tables {
        plain: [NONE; 4096],
        promotion: [NONE; 192],
        entries: [(0, 0, 0); POLICY_SIZE],
        mirrored: [NONE; POLICY_SIZE],
    };
    let mut n = 0;
    let mut from = 0;
    while from < 64 {
        let mut to = 0;
        while to < 64 {
            if is_policy_move(from, to) {
                t.plain[from * 64 + to] = n as u16;
                t.entries[n] = (from as u8, to as u8, 0);
                n += 1;
            }
            to += 1;
        }
        from += 1;
    }
    let mut from_file = 0;
    while from_file < 8 {
        let mut to_file = 0;
        while to_file < 8 {
            if (from_file as i32 - to_file as i32).abs() <= 1 {
                let mut piece = 0;
                while piece < 3 {
                    t.promotion[from_file * 24 + to_file * 3 + piece] = n as u16;
                    t.entries[n] = (
                        (48 + from_file) as u8,
                        (56 + to_file) as u8,
                        piece as u8 + 1,
                    );
                    n += 1;
                    piece += 1;
                }
            }
            to_file += 1;
        }
        from_file += 1;
    }
    assert!(n == POLICY_SIZE, "policy table size");
    // A queen line, a knight jump or a promotion mirrors to another: the file distance stays.
    let mut i = 0;
    while i < POLICY_SIZE {
        let (from, to, piece) = t.entries[i];
        let (from, to) = (from as usize ^ 7, to as usize ^ 7);
        t.mirrored[i] = if piece == 0 {
            t.plain[from * 64 + to]
        } else {
            t.promotion[(from % 8) * 24 + (to % 8) * 3 + piece as usize - 1]
        };
        assert!(t.mirrored[i] != NONE, "every entry mirrors to an entry");
        i += 1;
    }
    t
}

static TABLES: Tables = build_tables();

/// The policy entry of `mv`, a legal move of a position with `turn` to move.
///
/// # Panics
/// On a drop (`Move::Put`) or a move no chess piece can make: both are bugs in the caller.
#[inline]
pub fn move_index(mv: &Move, turn: Color) -> usize {
    let (from, to, promotion) = match *mv {
        Move::Normal {
            from,
            to,
            promotion,
            ..
        } => (from, to, promotion),
        Move::EnPassant { from, to } => (from, to, None),
        Move::Castle { king, rook } => (king, rook, None),
        Move::Put { .. } => panic!("drops have no policy index: {mv:?}"),
    };
    let flip = if turn == Color::Black { 56 } else { 0 };
    let from = usize::from(from) ^ flip;
    let to = usize::from(to) ^ flip;
    let entry = match promotion_piece(promotion) {
        Some(piece) if from / 8 == 6 => TABLES.promotion[(from % 8) * 24 + (to % 8) * 3 + piece],
        _ => TABLES.plain[from * 64 + to],
    };
    assert!(
        entry != NONE,
        "no policy index for {mv:?} with {turn:?} to move"
    );
    usize::from(entry)
}

/// 0, 1, 2 for queen, rook, bishop promotions; `None` for no promotion or a knight.
fn promotion_piece(role: Option<Role>) -> Option<usize> {
    match role {
        Some(Role::Queen) => Some(0),
        Some(Role::Rook) => Some(1),
        Some(Role::Bishop) => Some(2),
        _ => None,
    }
}

/// The move of policy entry `index` (< [`POLICY_SIZE`]) in side-to-move coordinates.
pub fn policy_move(index: usize) -> PolicyMove {
    let (from, to, piece) = TABLES.entries[index];
    PolicyMove {
        from: Square::new(u32::from(from)),
        to: Square::new(u32::from(to)),
        promotion: piece
            .checked_sub(1)
            .map(|p| PROMOTION_ROLES[usize::from(p)]),
    }
}

/// The policy entry of entry `index`'s move mirrored left to right (an involution; see
/// [`super::mirror`]).
#[inline]
pub fn mirrored_index(index: usize) -> usize {
    usize::from(TABLES.mirrored[index])
}

/// The legal move (of `legal`, with `turn` to move) whose policy entry is `index`.
pub fn legal_move_for_index(legal: &[Move], turn: Color, index: usize) -> Option<Move> {
    legal
        .iter()
        .copied()
        .find(|mv| move_index(mv, turn) == index)
}

/// The UCI strings of the 1858 entries, in index order (`e1h1` for O-O, `a7a8q`, ...).
pub fn move_strings() -> &'static [String] {
    static STRINGS: OnceLock<Vec<String>> = OnceLock::new();
    STRINGS.get_or_init(|| {
        (0..POLICY_SIZE)
            .map(|i| {
                let m = policy_move(i);
                let promotion = m
                    .promotion
                    .map(|r| r.char().to_string())
                    .unwrap_or_default();
                format!("{}{}{}", m.from, m.to, promotion)
            })
            .collect()
    })
}

/// The (from_file, to_file, piece) promotion slot and (from, to) plain slot of each entry,
/// for the attention gather map.
pub(crate) fn entry(index: usize) -> (usize, usize, Option<usize>) {
    let (from, to, piece) = TABLES.entries[index];
    (
        usize::from(from),
        usize::from(to),
        piece.checked_sub(1).map(usize::from),
    )
}
