//! Small games and evaluators shared by the search tests.
#![allow(dead_code)]

use cfzero_mcts::{EvalError, Evaluations, Evaluator, Game, LeafBatch, Terminal};

/// A game with a single move per ply that ends at ply `length`, lost for the side to move
/// there (the side that made the last move won).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    pub ply: u8,
    pub length: u8,
}

impl Game for Chain {
    type Move = u8;

    fn legal_moves(&self, out: &mut Vec<u8>) {
        out.clear();
        if self.ply < self.length {
            out.push(0);
        }
    }

    fn play(&mut self, _mv: u8) {
        self.ply += 1;
    }

    fn terminal(&self, _legal: &[u8]) -> Option<Terminal> {
        (self.ply == self.length).then_some(Terminal::Loss)
    }

    fn cache_key(&self) -> u64 {
        u64::from(self.ply) | (u64::from(self.length) << 8)
    }
}

/// A game with `width` moves at every ply, drawn after `depth` plies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wide {
    pub width: u8,
    pub depth: u8,
    pub ply: u8,
    /// The moves so far, packed, so that every path is its own position.
    pub path: u64,
}

impl Wide {
    pub fn new(width: u8, depth: u8) -> Self {
        Wide {
            width,
            depth,
            ply: 0,
            path: 1,
        }
    }
}

impl Game for Wide {
    type Move = u8;

    fn legal_moves(&self, out: &mut Vec<u8>) {
        out.clear();
        if self.ply < self.depth {
            out.extend(0..self.width);
        }
    }

    fn play(&mut self, mv: u8) {
        self.ply += 1;
        self.path = self.path.wrapping_mul(31).wrapping_add(u64::from(mv) + 1);
    }

    fn terminal(&self, _legal: &[u8]) -> Option<Terminal> {
        (self.ply == self.depth).then_some(Terminal::Draw)
    }

    fn cache_key(&self) -> u64 {
        self.path
    }
}

/// A deterministic evaluator with varied answers: logits, value and WDL are functions of
/// the position's cache key (and the move's index).
#[derive(Debug, Clone, Copy, Default)]
pub struct HashEvaluator;

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A number in [-1, 1) from a hash.
fn unit(x: u64) -> f32 {
    (mix(x) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

impl<G: Game> Evaluator<G> for HashEvaluator {
    type Pending = Evaluations;

    fn submit(&self, batch: &LeafBatch<G>) -> Result<Evaluations, EvalError> {
        let mut out = Evaluations::default();
        out.reset(batch.len(), batch.total_moves());
        for leaf in 0..batch.len() {
            let key = batch.state(leaf).cache_key();
            for (i, m) in batch.move_range(leaf).enumerate() {
                out.logits[m] = 2.0 * unit(key ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9));
            }
            let value = 0.5 * unit(key);
            let draw = 0.5 * (1.0 - value.abs());
            out.values[leaf] = value;
            out.wdl[leaf] = [(1.0 + value - draw) / 2.0, draw, (1.0 - value - draw) / 2.0];
        }
        Ok(out)
    }

    fn complete(&self, pending: Evaluations, out: &mut Evaluations) -> Result<(), EvalError> {
        *out = pending;
        Ok(())
    }
}

/// Every reachable non-terminal tic-tac-toe position, in a fixed order.
pub fn tictactoe_positions() -> Vec<cfzero_mcts::tictactoe::TicTacToe> {
    use cfzero_mcts::tictactoe::TicTacToe;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut stack = vec![TicTacToe::new()];
    let mut moves = Vec::new();
    while let Some(state) = stack.pop() {
        state.legal_moves(&mut moves);
        if state.terminal(&moves).is_some() || !seen.insert(state) {
            continue;
        }
        out.push(state);
        for &mv in moves.iter().rev() {
            let mut next = state;
            next.play(mv);
            stack.push(next);
        }
    }
    out
}
