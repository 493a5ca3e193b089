//! Whole training runs: the run directory and the phases of a generation.

pub mod data;
pub mod deadline;
pub mod dir;
pub mod evaluate;
pub mod learn_phase;
pub mod lease_keeper;
pub mod progress;
pub mod selfplay_phase;
pub mod session;
pub mod spool;
pub mod stored_run;
pub mod teacher_feed;
pub mod teacher_phase;
pub mod uploader;
