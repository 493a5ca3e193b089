//! Material: the one table of piece values (pawn 1, knight 3, bishop 3, rook 5, queen 9) that
//! every material count in the project uses: the greedy player, the material backend and the
//! search's material evaluator.

use shakmaty::{Board, Color, Role};

/// The value of a piece in pawns (the king: 0, it is never captured).
pub const fn piece_value(role: Role) -> i32 {
    match role {
        Role::Pawn => 1,
        Role::Knight | Role::Bishop => 3,
        Role::Rook => 5,
        Role::Queen => 9,
        Role::King => 0,
    }
}

/// Material difference in pawns that a material-valued evaluation maps to tanh(1) ≈ 0.76.
pub const PAWNS_PER_UNIT: f32 = 5.0;

/// `color`'s material minus its opponent's, in pawns.
pub fn material_balance(board: &Board, color: Color) -> i32 {
    board
        .iter()
        .map(|(_, piece)| {
            let value = piece_value(piece.role);
            if piece.color == color { value } else { -value }
        })
        .sum()
}

/// The value in [-1, 1] of a material balance in pawns: `tanh(balance / PAWNS_PER_UNIT)`.
pub fn material_value(balance: f32) -> f32 {
    (balance / PAWNS_PER_UNIT).tanh()
}
