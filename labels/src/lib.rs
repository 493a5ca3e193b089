//! Label files: a teacher's values of positions and of their legal moves, written by
//! `cfzero label` and a teacher beside self-play (`cfzero-teacher`), read by training
//! (`cfzero_trainer::source::teacher`). A crate of its own so that what reads labels needs no
//! engine, UCI client or match code.
//!
//! - [`label_file`]: compact, checksummed, append-only files of labels that a killed
//!   labelling run resumes without losing or repeating a label;
//! - [`Method`]: how the labels' action values were obtained (MultiPV or searchmoves).

pub mod label_file;
mod method;

pub use label_file::{
    ActionValues, GameHistory, Label, LabelEntry, LabelFileError, LabelHeader, LabelHistory,
    LabelMove, LabelReader, LabelWriter, Resumed,
};
pub use method::Method;
