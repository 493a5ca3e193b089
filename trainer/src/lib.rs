//! Training for cfzero: sampling from the replay window, training steps, schedules, SWA,
//! metrics, TensorBoard.

pub mod config;
pub mod learner;
pub mod loader;
pub mod sample;
pub mod tensorboard;

pub use config::{QTarget, TrainConfig};
pub use learner::{Learner, StepMetrics};
pub use loader::Loader;
pub use sample::HostBatch;
pub use tensorboard::EventWriter;
