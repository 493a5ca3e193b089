//! Batched inference: the [`Evaluator`](cfzero_mcts::Evaluator) that search uses.

pub mod input;
pub mod server;

pub use input::{INPUT_FLOATS, NetInput};
pub use server::{
    DEFAULT_MAX_BATCH, InferenceHandle, InferenceOptions, InferenceServer, PendingEval,
    StatsSnapshot,
};
