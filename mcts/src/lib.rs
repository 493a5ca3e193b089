//! The search of cfzero, written for any [`Game`]: the [`Game`] and [`Evaluator`] traits,
//! Gumbel root search with sequential halving, PUCT, the node arena, proven values
//! ([`solver`]), and a driver that runs many searches at once and batches their leaves.
//! Beside that game-agnostic core it holds the games the search is used and tested on: the
//! [`Game`] impl of [`cfzero_chess`]'s state (`chess_game.rs`, here so that the chess state
//! does not depend on the search), evaluators that need no net ([`evaluators`]), a
//! tic-tac-toe with exact answers for the tests ([`tictactoe`]) and the search benchmark
//! behind `cfzero bench mcts` ([`bench`]).

pub mod bench;
pub mod cache;
mod chess_game;
pub mod config;
pub mod driver;
pub mod evaluator;
pub mod evaluators;
pub mod game;
pub mod gumbel;
pub mod puct;
pub mod qtransform;
pub mod search;
pub mod select;
pub mod seq_halving;
pub mod solver;
pub mod strategy;
pub mod tictactoe;
pub mod tree;

pub use evaluator::{EvalError, Evaluations, Evaluator, LeafBatch};
pub use game::{Game, Terminal};

pub use cache::DEFAULT_CACHE_ENTRIES;
pub use config::{QNormalization, SearchConfig, SearchMode};
pub use driver::{Driver, DriverStats, Limits};
pub use evaluators::{MaterialEvaluator, UniformEvaluator};
pub use search::{Search, SearchError, SearchResult, Step};
pub use solver::Proof;
