//! Training for cfzero: sample sources (the replay window, Lc0 V6 data, PGN), training steps, schedules, SWA,
//! metrics, TensorBoard.

pub mod config;
pub mod lc0_v6;
pub mod lc0_v6_writer;
pub mod learner;
pub mod loader;
pub mod sample;
pub mod source;
pub mod tensorboard;

pub use config::{QTarget, TrainConfig, TrainPrecision};
pub use learner::{Learner, StepMetrics};
pub use loader::Loader;
pub use sample::HostBatch;
pub use source::{Mixture, SampleSource, Split};
pub use tensorboard::EventWriter;
