//! Training machinery: NAdam, gradient clipping, the learning-rate schedule, SWA.

pub mod nadam;
pub mod schedule;
pub mod swa;

pub use nadam::{NAdam, NAdamConfig, clip_grad_norm};
pub use schedule::LrSchedule;
pub use swa::Swa;
