//! The `[selfplay]` table: how games are played to make training data.

use std::path::PathBuf;

use cfzero_chess::{GameResult, material_balance};
use cfzero_settings::InvalidSetting;
use serde::{Deserialize, Serialize};
use shakmaty::{Chess, Color, Position};

/// How self-play chooses the move to play once the temperature plies are over
/// (docs/METHODS.md §5). The policy target is the same either way: the improved policy
/// pi' = softmax(logits + sigma(completedQ)) has no noise in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum MoveChoice {
    /// The search's own move: among the most visited root moves, the best by
    /// `g + logit + sigma`, root noise g included. This is Gumbel MuZero's acting rule: every
    /// move of the game is a sample of the improved policy (at tiny's cheap budget, where each
    /// considered move gets one visit, a sample at temperature 1).
    #[default]
    Gumbel,
    /// Among the most visited root moves that are not proven losses, the best by
    /// `logit + sigma` (the largest pi'): the noise chose which moves were searched, not
    /// which is played, so the game's result follows the net's best play, as AlphaZero's
    /// temperature-zero moves do. A proven win is played either way. Self-play keeps
    /// `Gumbel`: with this choice tiny's games repeat and draw more, and its nets learn less
    /// (docs/METHODS.md §5).
    Greedy,
}

/// What self-play does with the three-piece endings whose results the tables know
/// ([`cfzero_chess::tablebase`]: king and queen, rook or pawn against a bare king)
/// (docs/METHODS.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TablebaseUse {
    /// Nothing: the game is played out and scored by the rules and the length cap.
    #[default]
    Off,
    /// The game ends at its first position of the tables, with their result. Its net never
    /// trains on those endings and so never learns to win them.
    Adjudicate,
    /// The game is played out, and its result is the tables' result of its first position
    /// of the tables (as Lc0 rescores its training games): the net trains on the endings and
    /// learns their values from their true results, not from a net that cannot yet mate.
    Rescore,
}

/// How self-play scores a game that reaches `max_plies` (docs/METHODS.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum MaxPliesResult {
    /// A draw: the cap is no result of the game.
    #[default]
    Draw,
    /// A win for the side ahead by at least [`MATERIAL_MARGIN`] pawns of material in the
    /// final position, else a draw: a net that cannot yet convert a won position still
    /// learns that a piece up is worth more than even. Self-play keeps `Draw`: with this
    /// rule tiny's nets learn to win material and not to mate, and lose to the defaults'
    /// (docs/METHODS.md §5).
    Material,
}

/// The material lead in pawns (a minor piece) that [`MaxPliesResult::Material`] scores as a
/// win. A pawn or two up at the cap is too often no win at all between nets that play as
/// weakly as an early run's.
pub const MATERIAL_MARGIN: i32 = 3;

impl MaxPliesResult {
    /// The result of a game stopped at the cap in `pos`, when this rule scores it a win.
    pub fn decisive(self, pos: &Chess) -> Option<GameResult> {
        match self {
            MaxPliesResult::Draw => None,
            MaxPliesResult::Material => material_leader(pos).map(GameResult::win_for),
        }
    }
}

/// The side ahead by at least [`MATERIAL_MARGIN`] pawns of material in `pos`, if one is.
pub fn material_leader(pos: &Chess) -> Option<Color> {
    match material_balance(pos.board(), Color::White) {
        b if b >= MATERIAL_MARGIN => Some(Color::White),
        b if b <= -MATERIAL_MARGIN => Some(Color::Black),
        _ => None,
    }
}

/// Self-play options (docs/METHODS.md §5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SelfplayConfig {
    /// Actor threads, each playing `games_per_actor` games at once; `"auto"` (0): sized to
    /// the machine (`cfzero info --config` shows the choice).
    #[serde(with = "cfzero_settings::auto")]
    pub actors: usize,
    /// Games each actor keeps in flight (their leaves are batched together); `"auto"` (0):
    /// sized to the machine.
    #[serde(with = "cfzero_settings::auto")]
    pub games_per_actor: usize,
    /// Simulations of a full search (a training position).
    pub simulations: u32,
    /// Playout cap randomisation: share of moves searched with the full budget. The
    /// others use `cheap_simulations` and are not trained on.
    pub full_search_fraction: f32,
    /// Simulations of a cheap search.
    pub cheap_simulations: u32,
    /// For the first this many plies, the move is sampled from the improved policy.
    pub temperature_plies: u32,
    /// Temperature of that sampling (1 = the policy itself).
    pub temperature: f32,
    /// How the move is chosen after the temperature plies.
    pub move_choice: MoveChoice,
    /// Opening book: a file of FEN/EPD lines; each game starts from a random one.
    pub openings: Option<PathBuf>,
    /// Resign when the value of the best move has been below this on
    /// `resign_consecutive` full searches of the side's moves in a row (e.g. -0.95); `None`
    /// never resigns. `cfzero train` starts from it and then calibrates it each generation
    /// from the playthrough games (see [`crate::resign`]).
    pub resign_threshold: Option<f32>,
    /// Full searches in a row below the threshold before a side resigns.
    pub resign_consecutive: u32,
    /// Share of games that play on past a resignation, to measure false positives and
    /// calibrate the threshold.
    pub resign_playthrough: f32,
    /// The largest share of wrong resignations (the resigning side did not lose) that
    /// calibration accepts.
    pub resign_false_positive_target: f32,
    /// A game reaching this many plies is adjudicated, by `max_plies_result`.
    pub max_plies: u32,
    /// How a game that reaches `max_plies` is scored.
    pub max_plies_result: MaxPliesResult,
    /// Ends a game as a win for a side that has led by at least [`MATERIAL_MARGIN`] pawns of
    /// material after each of this many plies in a row; 0 never does.
    pub material_adjudication_plies: u32,
    /// What the three-piece tables do to a game that reaches one of their endings.
    pub tablebase: TablebaseUse,
    /// Evaluation cache entries per actor.
    pub cache_entries: usize,
    /// Whether a generation's self-play stops once it has its games, handing the games still
    /// in flight to the next generation's net, every slot taking a new game as soon as its
    /// game ends. `false`: a generation starts its games together and waits for the last.
    pub carry_over: bool,
}

impl Default for SelfplayConfig {
    fn default() -> Self {
        SelfplayConfig {
            actors: 0,
            games_per_actor: 0,
            simulations: 64,
            full_search_fraction: 0.25,
            cheap_simulations: 16,
            temperature_plies: 16,
            temperature: 1.0,
            move_choice: MoveChoice::default(),
            openings: None,
            resign_threshold: Some(-0.95),
            resign_consecutive: 3,
            resign_playthrough: 0.1,
            resign_false_positive_target: 0.05,
            max_plies: 450,
            max_plies_result: MaxPliesResult::default(),
            material_adjudication_plies: 0,
            tablebase: TablebaseUse::default(),
            cache_entries: cfzero_mcts::DEFAULT_CACHE_ENTRIES,
            carry_over: false,
        }
    }
}

impl SelfplayConfig {
    /// Checks every setting's range and the relations between them: a zero share of full
    /// searches would leave the learner waiting forever for training positions, and a cheap
    /// search with more simulations than a full one inverts playout cap randomisation.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        InvalidSetting::at_least("simulations", self.simulations.into(), 1)?;
        InvalidSetting::at_least("cheap_simulations", self.cheap_simulations.into(), 1)?;
        if self.cheap_simulations > self.simulations {
            return Err(InvalidSetting::new(
                "cheap_simulations",
                format!(
                    "({}) must not exceed `simulations` ({})",
                    self.cheap_simulations, self.simulations
                ),
            ));
        }
        let fraction = f64::from(self.full_search_fraction);
        InvalidSetting::in_range("full_search_fraction", fraction, 0.0, true, 1.0)?;
        // 0 is meaningful: the most likely move, no sampling.
        let temperature = f64::from(self.temperature);
        InvalidSetting::in_range("temperature", temperature, 0.0, false, f64::INFINITY)?;
        if let Some(t) = self.resign_threshold {
            InvalidSetting::in_range("resign_threshold", t.into(), -1.0, false, 1.0)?;
        }
        InvalidSetting::at_least("resign_consecutive", self.resign_consecutive.into(), 1)?;
        let playthrough = f64::from(self.resign_playthrough);
        InvalidSetting::in_range("resign_playthrough", playthrough, 0.0, false, 1.0)?;
        let target = f64::from(self.resign_false_positive_target);
        InvalidSetting::in_range("resign_false_positive_target", target, 0.0, false, 1.0)?;
        InvalidSetting::at_least("max_plies", self.max_plies.into(), 1)
    }
}
