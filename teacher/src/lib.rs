//! A teacher for cfzero: any UCI engine (Stockfish and the like) labels positions with its
//! value of the position and of every legal move, as ChessBench does (Ruoss et al. 2024).
//!
//! - [`score`]: an engine's centipawns, mates and W/D/L as win probabilities;
//! - [`info`]: the `info` lines an engine prints while it searches;
//! - [`analysis`]: one position's action values, by MultiPV over every legal move or by one
//!   `go searchmoves` per move;
//! - [`label_file`]: the label files (`cfzero-labels`, re-exported), compact, checksummed and
//!   append-only, that a killed labelling run resumes without losing or repeating a label;
//! - [`pool`]: engine processes that label positions in parallel and are restarted when one
//!   hangs, dies or answers garbage.
//!
//! The trainer turns labels into targets (`cfzero_trainer::source::teacher`).

pub mod analysis;
pub mod info;
pub mod pool;
pub mod score;

pub use analysis::{Analysis, AnalysisError, Analyst, Method};
pub use cfzero_eval::uci_client::UciLimit;
pub use cfzero_labels::label_file;
pub use cfzero_labels::{
    ActionValues, GameHistory, Label, LabelEntry, LabelFileError, LabelHeader, LabelHistory,
    LabelMove, LabelReader, LabelWriter, Resumed,
};
pub use pool::{EnginePool, PoolOptions};
pub use score::{EngineScore, MoveValue};
