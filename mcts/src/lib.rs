//! Game-agnostic search for cfzero: the [`Game`] and [`Evaluator`] traits, Gumbel root
//! search with sequential halving, PUCT, the node arena, proven values ([`solver`]), and
//! a driver that runs many searches at once and batches their leaves. The chess game
//! state lives in [`cfzero_chess`]; its [`Game`] impl is here (`chess_game.rs`).

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

pub use config::{InvalidSetting, QNormalization, SearchConfig, SearchMode};
pub use driver::{Driver, DriverStats, Limits};
pub use evaluators::{MaterialEvaluator, UniformEvaluator};
pub use search::{Search, SearchError, SearchResult, Step};
pub use solver::Proof;
