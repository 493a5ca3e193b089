//! Tic-tac-toe: a [`Game`] small enough that tests can solve it exactly.

use crate::game::{Game, Terminal};

/// The eight winning lines as bit masks over squares 0..9 (row by row).
const LINES: [u16; 8] = [
    0b000_000_111,
    0b000_111_000,
    0b111_000_000,
    0b001_001_001,
    0b010_010_010,
    0b100_100_100,
    0b100_010_001,
    0b001_010_100,
];

/// A tic-tac-toe position: one bit board per player. X moves first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TicTacToe {
    /// Squares of the side to move.
    ours: u16,
    /// Squares of the side that just moved.
    theirs: u16,
}

impl TicTacToe {
    /// The empty board, X to move.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses nine characters `X`, `O` or `.`/`-`, row by row from square 0; the side to
    /// move follows from the counts (X if equal). Returns `None` for anything else.
    pub fn from_board(board: &str) -> Option<Self> {
        let (mut x, mut o) = (0u16, 0u16);
        let cells: Vec<char> = board.chars().filter(|c| !c.is_whitespace()).collect();
        if cells.len() != 9 {
            return None;
        }
        for (i, c) in cells.iter().enumerate() {
            match c {
                'X' | 'x' => x |= 1 << i,
                'O' | 'o' => o |= 1 << i,
                '.' | '-' => {}
                _ => return None,
            }
        }
        let (nx, no) = (x.count_ones(), o.count_ones());
        match nx.checked_sub(no) {
            Some(0) => Some(TicTacToe { ours: x, theirs: o }),
            Some(1) => Some(TicTacToe { ours: o, theirs: x }),
            _ => None,
        }
    }

    /// Number of stones on the board.
    pub fn ply(&self) -> u32 {
        (self.ours | self.theirs).count_ones()
    }

    /// Whether the side that just moved has three in a row.
    fn previous_player_won(&self) -> bool {
        LINES.iter().any(|&line| line & !self.theirs == 0)
    }
}

impl Game for TicTacToe {
    /// The square, 0..9.
    type Move = u8;

    fn legal_moves(&self, out: &mut Vec<u8>) {
        out.clear();
        if self.previous_player_won() {
            return;
        }
        let occupied = self.ours | self.theirs;
        out.extend((0..9u8).filter(|&sq| occupied & (1 << sq) == 0));
    }

    fn play(&mut self, mv: u8) {
        debug_assert!(
            (self.ours | self.theirs) & (1 << mv) == 0,
            "square {mv} is taken"
        );
        let ours = self.ours | (1 << mv);
        self.ours = self.theirs;
        self.theirs = ours;
    }

    fn terminal(&self, legal: &[u8]) -> Option<Terminal> {
        if self.previous_player_won() {
            Some(Terminal::Loss)
        } else if legal.is_empty() {
            Some(Terminal::Draw)
        } else {
            None
        }
    }

    fn cache_key(&self) -> u64 {
        u64::from(self.ours) | (u64::from(self.theirs) << 16)
    }
}

/// The exact value of `state` for its side to move (-1, 0 or 1) by full minimax.
pub fn solve(state: &TicTacToe) -> i8 {
    let mut moves = Vec::with_capacity(9);
    state.legal_moves(&mut moves);
    if let Some(t) = state.terminal(&moves) {
        return t.value() as i8;
    }
    moves
        .iter()
        .map(|&mv| {
            let mut next = *state;
            next.play(mv);
            -solve(&next)
        })
        .max()
        .expect("a non-terminal position has moves")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(solve(&TicTacToe::new()), 0);
        // X to move completes the top row.
        assert_eq!(solve(&TicTacToe::from_board("XX. OO. ...").unwrap()), 1);
        // O to move cannot stop both threats of X (X has a fork).
        assert_eq!(solve(&TicTacToe::from_board("X.X .O. X.O").unwrap()), -1);
        let won = TicTacToe::from_board("XXX OO. ...").unwrap();
        let mut moves = Vec::new();
        won.legal_moves(&mut moves);
        assert_eq!(won.terminal(&moves), Some(Terminal::Loss));
        assert!(moves.is_empty());
    }

    #[test]
    fn board_parsing_rejects_bad_counts() {
        assert!(TicTacToe::from_board("XX. ... ...").is_none());
        assert!(TicTacToe::from_board("O.. ... ...").is_none());
        assert!(TicTacToe::from_board("X..").is_none());
    }
}
