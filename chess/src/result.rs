//! How a game ended: the result and the reason (here, where self-play that records games and
//! the matches that score them both read it).

use crate::TerminalReason;
use shakmaty::Color;

/// The result of a finished game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GameResult {
    /// White won.
    WhiteWin,
    /// Drawn.
    Draw,
    /// Black won.
    BlackWin,
}

impl GameResult {
    /// The result with the given side as the winner.
    pub fn win_for(color: Color) -> GameResult {
        match color {
            Color::White => GameResult::WhiteWin,
            Color::Black => GameResult::BlackWin,
        }
    }

    /// The result of a game that ended by `reason` with `turn` to move in the final
    /// position: a checkmate is a win for the other side, every other ending a draw.
    pub fn from_terminal(reason: TerminalReason, turn: Color) -> GameResult {
        match reason {
            TerminalReason::Checkmate => GameResult::win_for(!turn),
            _ => GameResult::Draw,
        }
    }

    /// The game's value for `color`: 1 win, 0 draw, -1 loss.
    pub fn value_for(self, color: Color) -> f32 {
        match (self, color) {
            (GameResult::Draw, _) => 0.0,
            (GameResult::WhiteWin, Color::White) | (GameResult::BlackWin, Color::Black) => 1.0,
            _ => -1.0,
        }
    }

    /// The PGN result tag: `1-0`, `1/2-1/2` or `0-1`.
    pub fn pgn(self) -> &'static str {
        match self {
            GameResult::WhiteWin => "1-0",
            GameResult::Draw => "1/2-1/2",
            GameResult::BlackWin => "0-1",
        }
    }

    /// The record format's byte (self-play's game records).
    pub fn to_byte(self) -> u8 {
        self as u8
    }

    /// The result of a record format's byte, if it is one.
    pub fn from_byte(b: u8) -> Option<GameResult> {
        [GameResult::WhiteWin, GameResult::Draw, GameResult::BlackWin]
            .get(usize::from(b))
            .copied()
    }
}

/// Why a game ended: one of the chess rules' endings (the list lives once, in
/// [`TerminalReason`]), or a resignation, which only players decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Termination {
    /// The rules (or the configured maximum length) ended the game.
    Rule(TerminalReason),
    /// A side resigned because the search judged its position lost.
    Resignation,
    /// The game reached a three-piece ending whose result the tables know
    /// ([`crate::tablebase`]) and was scored so.
    Tablebase,
    /// Self-play scored the game a win for a side a piece or more ahead in material: at the
    /// configured maximum length, or once such a lead had lasted as long as the config asks.
    Material,
}

impl From<TerminalReason> for Termination {
    fn from(reason: TerminalReason) -> Termination {
        Termination::Rule(reason)
    }
}

impl Termination {
    /// The game reached the configured maximum length and was adjudicated a draw.
    pub const MAX_PLIES: Termination = Termination::Rule(TerminalReason::MaxPlies);

    /// Words for the PGN `Termination` tag and for logs.
    pub fn describe(self) -> &'static str {
        match self {
            Termination::Rule(reason) => reason.describe(),
            Termination::Resignation => "resignation",
            Termination::Tablebase => "adjudication: tablebase",
            Termination::Material => "adjudication: material",
        }
    }

    /// The record format's byte: the rule's index in [`TerminalReason::ALL`], then
    /// resignation, the tablebase and material.
    pub fn to_byte(self) -> u8 {
        let rules = TerminalReason::ALL.len() as u8;
        match self {
            Termination::Rule(reason) => reason as u8,
            Termination::Resignation => rules,
            Termination::Tablebase => rules + 1,
            Termination::Material => rules + 2,
        }
    }

    /// The termination of a record format's byte, if it is one.
    pub fn from_byte(b: u8) -> Option<Termination> {
        let rules = TerminalReason::ALL.len();
        match usize::from(b) {
            i if i < rules => Some(Termination::Rule(TerminalReason::ALL[i])),
            i if i == rules => Some(Termination::Resignation),
            i if i == rules + 1 => Some(Termination::Tablebase),
            i if i == rules + 2 => Some(Termination::Material),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_termination_survives_its_record_byte() {
        let all = TerminalReason::ALL
            .iter()
            .map(|&r| Termination::Rule(r))
            .chain([
                Termination::Resignation,
                Termination::Tablebase,
                Termination::Material,
            ]);
        for (i, t) in all.enumerate() {
            assert_eq!(usize::from(t.to_byte()), i);
            assert_eq!(Termination::from_byte(t.to_byte()), Some(t));
        }
        assert_eq!(
            Termination::from_byte(TerminalReason::ALL.len() as u8 + 3),
            None
        );
    }
}
