//! Matches between two players over many concurrent games, for evaluation.
//!
//! A [`Player`] picks moves for a batch of positions at once, so that a net-backed
//! player batches the leaves of all games where it is to move.

use cfzero_mcts::chess::{ChessState, HistoryFill, TerminalReason};
use cfzero_mcts::search::SearchError;
use cfzero_mcts::{Driver, Evaluator, Game, SearchConfig};
use rand::Rng;
use shakmaty::{Color, Move};

use crate::result::GameResult;

/// Something that chooses moves.
pub trait Player {
    /// A short name for logs and PGN.
    fn name(&self) -> String;
    /// Appends to `out` one legal move for each of `states` (none of them finished).
    fn pick(
        &mut self,
        states: &[ChessState],
        rng: &mut dyn rand::RngCore,
        out: &mut Vec<Move>,
    ) -> Result<(), SearchError>;
}

/// Plays uniformly random legal moves.
#[derive(Debug, Default)]
pub struct RandomPlayer {
    legal: Vec<Move>,
}

impl Player for RandomPlayer {
    fn name(&self) -> String {
        "random".into()
    }

    fn pick(
        &mut self,
        states: &[ChessState],
        rng: &mut dyn rand::RngCore,
        out: &mut Vec<Move>,
    ) -> Result<(), SearchError> {
        for s in states {
            s.legal_moves(&mut self.legal);
            out.push(self.legal[rng.random_range(0..self.legal.len())]);
        }
        Ok(())
    }
}

/// Plays the search's move (no temperature) with a fixed number of simulations.
#[derive(Debug)]
pub struct SearchPlayer<'e, E> {
    name: String,
    evaluator: &'e E,
    driver: Driver<ChessState>,
    budgets: Vec<u32>,
    simulations: u32,
}

impl<'e, E: Evaluator<ChessState>> SearchPlayer<'e, E> {
    /// A player named `name` searching with `config` and `simulations` per move.
    pub fn new(
        name: impl Into<String>,
        evaluator: &'e E,
        config: SearchConfig,
        simulations: u32,
    ) -> Self {
        SearchPlayer {
            name: name.into(),
            evaluator,
            driver: Driver::new(config, 1 << 16),
            budgets: Vec::new(),
            simulations,
        }
    }
}

impl<E: Evaluator<ChessState>> Player for SearchPlayer<'_, E> {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn pick(
        &mut self,
        states: &[ChessState],
        mut rng: &mut dyn rand::RngCore,
        out: &mut Vec<Move>,
    ) -> Result<(), SearchError> {
        self.budgets.clear();
        self.budgets.resize(states.len(), self.simulations);
        let results = self
            .driver
            .run(states, &self.budgets, self.evaluator, &mut rng)?;
        out.extend(results.iter().map(|r| r.best_move));
        Ok(())
    }
}

/// Wins, draws and losses of player A.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MatchScore {
    /// Games A won.
    pub wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// Games A lost.
    pub losses: u32,
}

impl MatchScore {
    /// Games played.
    pub fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    /// A's score in [0, 1] (draws count half); 0.5 for no games.
    pub fn score(&self) -> f64 {
        let g = self.games();
        if g == 0 {
            0.5
        } else {
            (f64::from(self.wins) + 0.5 * f64::from(self.draws)) / f64::from(g)
        }
    }
}

/// One finished arena game.
#[derive(Debug, Clone)]
pub struct ArenaGame {
    /// The starting FEN (`None`: standard start position).
    pub start_fen: Option<String>,
    /// Whether player A had white.
    pub a_is_white: bool,
    /// The moves.
    pub moves: Vec<Move>,
    /// The result.
    pub result: GameResult,
    /// Why it ended.
    pub reason: TerminalReason,
}

/// Plays every opening twice (A with white, then with black), all games at once, each
/// adjudicated a draw at `max_plies`. `openings` empty means one standard start position.
/// Returns A's score and the games.
pub fn play_match(
    a: &mut dyn Player,
    b: &mut dyn Player,
    openings: &[String],
    max_plies: u32,
    rng: &mut dyn rand::RngCore,
) -> Result<(MatchScore, Vec<ArenaGame>), SearchError> {
    let starts: Vec<Option<&String>> = if openings.is_empty() {
        vec![None]
    } else {
        openings.iter().map(Some).collect()
    };
    let mut games: Vec<(ChessState, ArenaGame)> = Vec::new();
    for fen in starts {
        for a_is_white in [true, false] {
            let mut state = match fen {
                None => ChessState::new(),
                Some(f) => ChessState::from_fen(f, HistoryFill::No).map_err(|e| {
                    SearchError::Eval(cfzero_mcts::EvalError::Failed(format!(
                        "opening {f:?}: {e}"
                    )))
                })?,
            };
            state.set_max_plies(max_plies);
            let game = ArenaGame {
                start_fen: fen.cloned(),
                a_is_white,
                moves: Vec::new(),
                result: GameResult::Draw,
                reason: TerminalReason::MaxPlies,
            };
            games.push((state, game));
        }
    }
    let mut done: Vec<ArenaGame> = Vec::with_capacity(games.len());
    let mut states = Vec::new();
    let mut which = Vec::new();
    let mut picked = Vec::new();
    // Openings that are already over count as played.
    games.retain(|(s, g)| match s.terminal_reason() {
        Some(reason) => {
            done.push(ArenaGame {
                reason,
                result: GameResult::from_terminal(reason, s.turn()),
                ..g.clone()
            });
            false
        }
        None => true,
    });
    while !games.is_empty() {
        for a_to_move in [true, false] {
            states.clear();
            which.clear();
            for (i, (s, g)) in games.iter().enumerate() {
                if ((s.turn() == Color::White) == g.a_is_white) == a_to_move {
                    states.push(s.clone());
                    which.push(i);
                }
            }
            if states.is_empty() {
                continue;
            }
            picked.clear();
            let player: &mut dyn Player = if a_to_move { &mut *a } else { &mut *b };
            player.pick(&states, rng, &mut picked)?;
            for (&i, &mv) in which.iter().zip(&picked) {
                games[i].0.play_move(mv);
                games[i].1.moves.push(mv);
            }
            // Finished games leave before the other player is asked to move in them.
            let mut i = 0;
            while i < games.len() {
                if let Some(reason) = games[i].0.terminal_reason() {
                    let (state, game) = games.swap_remove(i);
                    done.push(ArenaGame {
                        reason,
                        result: GameResult::from_terminal(reason, state.turn()),
                        ..game
                    });
                } else {
                    i += 1;
                }
            }
        }
    }
    let mut score = MatchScore::default();
    for g in &done {
        let a_color = if g.a_is_white {
            Color::White
        } else {
            Color::Black
        };
        match g.result.value_for(a_color) {
            v if v > 0.0 => score.wins += 1,
            v if v < 0.0 => score.losses += 1,
            _ => score.draws += 1,
        }
    }
    Ok((score, done))
}
