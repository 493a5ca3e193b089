//! The Chessformer network of cfzero: the lc0-compatible input encoding and move index,
//! the model, its losses and optimizer, and checkpoints. Running it for search (the backends
//! and the batched inference server) is `cfzero-inference`'s.

pub mod autocast;
pub mod checkpoint;
pub mod config;
pub mod device;
pub mod encoding;
pub mod flops;
pub mod loss;
pub mod mask;
pub mod model;
pub mod optim;
pub mod precision;
pub mod seeded;

pub use checkpoint::{CheckpointError, load_net, save_net};
pub use config::{HeadsConfig, LossWeights, NetworkConfig};
pub use device::parse_device;
pub use loss::{LossTerm, LossTerms, TrainingBatch, loss};
pub use model::{ModelOutputs, Net};
pub use precision::{Bf16Support, Precision, ResolvedPrecision};
pub use seeded::{SeededDraws, seeded};
