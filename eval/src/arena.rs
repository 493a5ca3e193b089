//! Matches between two players over many concurrent games, for evaluation.
//!
//! A [`Player`] picks moves for a batch of positions at once, so that a net-backed
//! player batches the leaves of all games where it is to move. Each opening is played
//! twice, A with white and then with black, and the two games form a pair for the
//! statistics of [`crate::elo`].

use std::sync::atomic::{AtomicBool, Ordering};

use cfzero_chess::{ChessState, HistoryFill, TerminalReason};
use cfzero_mcts::search::SearchError;
use cfzero_mcts::{Driver, Evaluator, Game, SearchConfig};
use rand::Rng;
use shakmaty::{Color, Move};

use crate::elo::ScoreSample;
pub use crate::greedy::GreedyPlayer;
use crate::uci_client::UciClientError;
use cfzero_chess::{GameResult, Termination};

/// Why a match could not be played.
#[derive(Debug, thiserror::Error)]
pub enum ArenaError {
    /// A net player's search failed.
    #[error("search failed: {0}")]
    Search(#[from] SearchError),
    /// An external engine failed.
    #[error(transparent)]
    Engine(#[from] UciClientError),
    /// The match was called off before its end (see [`StoppablePlayer`]).
    #[error("the match was stopped")]
    Stopped,
    /// An opening is not a valid position.
    #[error("opening {fen:?}: {reason}")]
    BadOpening {
        /// The FEN.
        fen: String,
        /// What is wrong.
        reason: String,
    },
}

/// How a game got to the position a player must move in: what an external engine needs
/// to see the game's history (repetitions, the fifty-move count).
#[derive(Debug, Clone, Copy)]
pub struct GameLine<'a> {
    /// The starting FEN (`None`: the standard start position).
    pub start_fen: Option<&'a str>,
    /// The moves played since.
    pub moves: &'a [Move],
}

/// Something that chooses moves.
pub trait Player {
    /// A short name for logs and PGN.
    fn name(&self) -> String;
    /// Appends to `out` one legal move for each of `states` (none of them finished);
    /// `lines[i]` is how the game of `states[i]` got there.
    fn pick(
        &mut self,
        states: &[ChessState],
        lines: &[GameLine<'_>],
        rng: &mut dyn rand::RngCore,
        out: &mut Vec<Move>,
    ) -> Result<(), ArenaError>;
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
        _lines: &[GameLine<'_>],
        rng: &mut dyn rand::RngCore,
        out: &mut Vec<Move>,
    ) -> Result<(), ArenaError> {
        for s in states {
            s.legal_moves(&mut self.legal);
            out.push(self.legal[rng.random_range(0..self.legal.len())]);
        }
        Ok(())
    }
}

/// Another player that gives up with [`ArenaError::Stopped`] once `stop` is set, so that a
/// match ends within one move of a Ctrl-C or a deadline instead of playing its games out.
pub struct StoppablePlayer<'p> {
    inner: &'p mut dyn Player,
    stop: &'p AtomicBool,
}

impl<'p> StoppablePlayer<'p> {
    /// `inner`, stopped by `stop`.
    pub fn new(inner: &'p mut dyn Player, stop: &'p AtomicBool) -> Self {
        StoppablePlayer { inner, stop }
    }
}

impl Player for StoppablePlayer<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn pick(
        &mut self,
        states: &[ChessState],
        lines: &[GameLine<'_>],
        rng: &mut dyn rand::RngCore,
        out: &mut Vec<Move>,
    ) -> Result<(), ArenaError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(ArenaError::Stopped);
        }
        self.inner.pick(states, lines, rng, out)
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
            driver: Driver::new(config, cfzero_mcts::DEFAULT_CACHE_ENTRIES),
            budgets: Vec::new(),
            simulations,
        }
    }
}

impl<E> SearchPlayer<'_, E> {
    /// The same player evaluating up to `leaves` leaves of each search together (see
    /// [`Driver::with_leaves_per_tree`]); 1 is the sequential search.
    pub fn with_leaves_per_search(mut self, leaves: usize) -> Self {
        self.driver = self.driver.with_leaves_per_tree(leaves);
        self
    }
}

impl<E: Evaluator<ChessState>> Player for SearchPlayer<'_, E> {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn pick(
        &mut self,
        states: &[ChessState],
        _lines: &[GameLine<'_>],
        mut rng: &mut dyn rand::RngCore,
        out: &mut Vec<Move>,
    ) -> Result<(), ArenaError> {
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
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

    /// The tally of `games`.
    pub fn of(games: &[ArenaGame]) -> MatchScore {
        let mut score = MatchScore::default();
        for g in games {
            match g.score_of_a() {
                s if s > 0.5 => score.wins += 1,
                s if s < 0.5 => score.losses += 1,
                _ => score.draws += 1,
            }
        }
        score
    }
}

/// One finished arena game.
#[derive(Debug, Clone)]
pub struct ArenaGame {
    /// The game pair it belongs to (the same opening, colours reversed), in schedule order.
    pub pair: usize,
    /// The starting FEN (`None`: standard start position).
    pub start_fen: Option<String>,
    /// Whether player A had white.
    pub a_is_white: bool,
    /// The moves.
    pub moves: Vec<Move>,
    /// The result.
    pub result: GameResult,
    /// Why it ended.
    pub termination: Termination,
}

impl ArenaGame {
    /// The game ended for `reason` with `turn` to move.
    fn ended(self, reason: TerminalReason, turn: Color) -> ArenaGame {
        ArenaGame {
            termination: reason.into(),
            result: GameResult::from_terminal(reason, turn),
            ..self
        }
    }

    /// A's score in this game: 1, 0.5 or 0.
    pub fn score_of_a(&self) -> f64 {
        let a = if self.a_is_white {
            Color::White
        } else {
            Color::Black
        };
        f64::from(self.result.value_for(a) + 1.0) / 2.0
    }
}

/// The independent units of `games` for Elo intervals and the SPRT: the mean score of each
/// complete pair; when no pair is complete, each game on its own.
pub fn score_sample(games: &[ArenaGame]) -> ScoreSample {
    let mut by_pair: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
    for g in games {
        by_pair.entry(g.pair).or_default().push(g.score_of_a());
    }
    let pairs: Vec<f64> = by_pair
        .values()
        .filter(|s| s.len() == 2)
        .map(|s| (s[0] + s[1]) / 2.0)
        .collect();
    if pairs.is_empty() {
        ScoreSample::new(games.iter().map(ArenaGame::score_of_a).collect())
    } else {
        ScoreSample::new(pairs)
    }
}

/// The plies at which a match game is adjudicated a draw unless told otherwise (`cfzero
/// match`, `bench learn`, `bench curve`): far past the length of decided games, so that only
/// shuffling between nets that cannot mate is cut.
pub const MATCH_MAX_PLIES: u32 = 400;

/// How a match is played.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchOptions {
    /// Games in all; pair `p` plays opening `p mod openings` with both colours.
    pub games: usize,
    /// Games played at the same time.
    pub concurrency: usize,
    /// Games reaching this many plies are adjudicated a draw.
    pub max_plies: u32,
}

/// Plays a match of `options.games` games between A and B from `openings` (FENs; empty means
/// the standard start position), at most `options.concurrency` at a time. `on_game` sees
/// each game as it ends; when it returns false no new game starts, and the games under way
/// are played out. Returns the games in schedule order.
pub fn run_match(
    a: &mut dyn Player,
    b: &mut dyn Player,
    openings: &[String],
    options: &MatchOptions,
    rng: &mut dyn rand::RngCore,
    on_game: &mut dyn FnMut(&ArenaGame) -> bool,
) -> Result<Vec<ArenaGame>, ArenaError> {
    let mut schedule = (0..options.games).map(|g| {
        let pair = g / 2;
        let fen = if openings.is_empty() {
            None
        } else {
            Some(&openings[pair % openings.len()])
        };
        (pair, fen, g % 2 == 0)
    });
    let mut active: Vec<(ChessState, ArenaGame)> = Vec::new();
    let mut done: Vec<ArenaGame> = Vec::with_capacity(options.games);
    let mut accepting = true;
    let mut states = Vec::new();
    let mut which = Vec::new();
    let mut picked = Vec::new();
    loop {
        while accepting && active.len() < options.concurrency.max(1) {
            let Some((pair, fen, a_is_white)) = schedule.next() else {
                break;
            };
            let mut state = match fen {
                None => ChessState::new(),
                Some(f) => ChessState::from_fen(f, HistoryFill::No).map_err(|e| {
                    ArenaError::BadOpening {
                        fen: f.clone(),
                        reason: e.to_string(),
                    }
                })?,
            };
            state.set_max_plies(options.max_plies);
            let game = ArenaGame {
                pair,
                start_fen: fen.cloned(),
                a_is_white,
                moves: Vec::new(),
                result: GameResult::Draw,
                termination: Termination::MAX_PLIES,
            };
            // An opening that is already over counts as played.
            if let Some(reason) = state.terminal_reason() {
                let game = game.ended(reason, state.turn());
                accepting &= on_game(&game);
                done.push(game);
            } else {
                active.push((state, game));
            }
        }
        if active.is_empty() {
            break;
        }
        for a_to_move in [true, false] {
            states.clear();
            which.clear();
            for (i, (s, g)) in active.iter().enumerate() {
                if ((s.turn() == Color::White) == g.a_is_white) == a_to_move {
                    states.push(s.clone());
                    which.push(i);
                }
            }
            if states.is_empty() {
                continue;
            }
            picked.clear();
            let lines: Vec<GameLine<'_>> = which
                .iter()
                .map(|&i| GameLine {
                    start_fen: active[i].1.start_fen.as_deref(),
                    moves: &active[i].1.moves,
                })
                .collect();
            let player: &mut dyn Player = if a_to_move { &mut *a } else { &mut *b };
            player.pick(&states, &lines, rng, &mut picked)?;
            drop(lines);
            for (&i, &mv) in which.iter().zip(&picked) {
                active[i].0.play_move(mv);
                active[i].1.moves.push(mv);
            }
            // Finished games leave before the other player is asked to move in them.
            let mut i = 0;
            while i < active.len() {
                if let Some(reason) = active[i].0.terminal_reason() {
                    let (state, game) = active.swap_remove(i);
                    let game = game.ended(reason, state.turn());
                    accepting &= on_game(&game);
                    done.push(game);
                } else {
                    i += 1;
                }
            }
        }
    }
    done.sort_by_key(|g| (g.pair, !g.a_is_white));
    Ok(done)
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
) -> Result<(MatchScore, Vec<ArenaGame>), ArenaError> {
    let options = MatchOptions {
        games: 2 * openings.len().max(1),
        concurrency: usize::MAX,
        max_plies,
    };
    let games = run_match(a, b, openings, &options, rng, &mut |_| true)?;
    Ok((MatchScore::of(&games), games))
}
