//! Running a Chessformer for search: the backends that evaluate a batch of positions behind
//! one trait ([`backend::Backend`]: libtorch, the native pass, a network-free material
//! count), and the batched inference server that many search threads share
//! ([`InferenceServer`], the [`Evaluator`](cfzero_mcts::Evaluator) the search calls). The
//! model, its encoding and its checkpoints are `cfzero-network`'s; search knows nothing of
//! tensors.

pub mod backend;
pub mod input;
pub mod server;

pub use input::{INPUT_FLOATS, NetInput};
pub use server::{
    DEFAULT_MAX_BATCH, InferenceHandle, InferenceOptions, InferenceServer, PendingEval,
    StatsSnapshot,
};
