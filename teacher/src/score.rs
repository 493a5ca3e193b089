//! What an engine's score means as a probability.
//!
//! UCI engines report a score from the side to move's point of view, in centipawns or as a
//! mate distance, and some (Stockfish with `UCI_ShowWDL`) a W/D/L estimate in permille. A
//! label keeps every move's action value (ChessBench's: the win probability of its score by
//! Lichess's formula, [`MoveValue::action_value`]) and the W/D/L of the position (the
//! engine's own when it reports one).

/// Lichess's logistic slope from centipawns to win probability (ChessBench uses the same).
pub const LICHESS_SLOPE: f64 = 0.003_682_08;

/// A UCI `score`: `cp X` or `mate N` (N > 0: the side to move mates in N moves; N < 0: it
/// is mated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineScore {
    /// Centipawns for the side to move.
    Cp(i32),
    /// Moves to mate: positive when the side to move mates, negative when it is mated.
    Mate(i32),
}

impl EngineScore {
    /// The win probability of the score by Lichess's formula
    /// `1 / (1 + exp(-0.00368208 cp))`; a mate for the side to move is 1, against it 0.
    /// `mate 0` (the side to move is mated now) is 0.
    pub fn win_probability(self) -> f32 {
        match self {
            EngineScore::Cp(cp) => (1.0 / (1.0 + (-LICHESS_SLOPE * f64::from(cp)).exp())) as f32,
            EngineScore::Mate(n) if n > 0 => 1.0,
            EngineScore::Mate(_) => 0.0,
        }
    }
}

/// An engine's value of one move (or of the position, through its best move).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoveValue {
    /// The score as reported.
    pub score: EngineScore,
    /// The engine's W/D/L in permille, when it reports one (`wdl W D L`).
    pub wdl: Option<[u32; 3]>,
}

impl MoveValue {
    /// W/D/L probabilities for the side to move: the engine's own when it reports them
    /// (normalised to sum 1), else `[p, 0, 1 - p]` from [`EngineScore::win_probability`]:
    /// a centipawn score carries an expectation only, no draw share.
    pub fn wdl(&self) -> [f32; 3] {
        if let Some([w, d, l]) = self.wdl {
            let total = (w + d + l) as f32;
            if total > 0.0 {
                return [w as f32 / total, d as f32 / total, l as f32 / total];
            }
        }
        let p = self.score.win_probability();
        [p, 0.0, 1.0 - p]
    }

    /// The move's action value as ChessBench defines it: the win probability of its score by
    /// Lichess's formula ([`EngineScore::win_probability`]), whatever W/D/L the engine adds.
    ///
    /// Not the expected score (W + D/2) of the engine's W/D/L, as labels had before:
    /// Stockfish's W/D/L reaches 1000/0/0 a few pawns up (and 0/0/1000 a few down), so every
    /// move that keeps a won position won scored exactly 1 and the policy target was flat
    /// over them; in the labels of a teacher's hour (396,003 self-play positions, Stockfish at
    /// 1,000 nodes) 46% had every move tied and 70% a best move tied with others
    /// (docs/history/benchmarks-2026-11.md, "Action values from centipawns"). The logistic of the centipawns keeps
    /// them apart up to about 20 pawns.
    pub fn action_value(&self) -> f32 {
        self.score.win_probability()
    }
}
