//! [`Game`] for [`ChessState`]: what the search needs from chess. It lives here, not in
//! `cfzero-chess`, so that the chess state does not depend on the search.

use cfzero_chess::{ChessState, TerminalReason};
use shakmaty::{Move, Position};

use crate::game::{Game, Terminal};

impl From<TerminalReason> for Terminal {
    /// The result for the side to move in the final position: checkmate loses, every
    /// other ending is a draw.
    fn from(reason: TerminalReason) -> Terminal {
        match reason {
            TerminalReason::Checkmate => Terminal::Loss,
            _ => Terminal::Draw,
        }
    }
}

impl Game for ChessState {
    type Move = Move;

    /// The legal moves in shakmaty's generation order.
    fn legal_moves(&self, out: &mut Vec<Move>) {
        out.clear();
        out.extend(self.position().legal_moves());
    }

    fn play(&mut self, mv: Move) {
        self.play_move(mv);
    }

    /// The game's end by the rules. The game-length cap ([`ChessState::set_max_plies`]) is
    /// left out: it adjudicates a game, it is no draw the search can prove (the network
    /// cannot see the ply count, so values near the cap would teach it nothing true).
    /// [`ChessState::terminal_reason`] still reports it to whoever plays the game.
    fn terminal(&self, legal: &[Move]) -> Option<Terminal> {
        self.terminal_reason_given(legal.is_empty())
            .filter(|&r| r != TerminalReason::MaxPlies)
            .map(Terminal::from)
    }

    /// The first checkmating move. Each move is played on a copy of the board (no heap
    /// memory); only moves that give check pay for the opponent's move generation.
    fn immediate_win(&self, legal: &[Move]) -> Option<usize> {
        let position = self.position();
        legal.iter().position(|&mv| {
            let mut after = position.clone();
            after.play_unchecked(mv);
            after.is_checkmate()
        })
    }

    fn cache_key(&self) -> u64 {
        self.input_key()
    }
}
