//! Lc0's network file (a gzip-compressed `pblczero.Net` protobuf): export of cfzero nets
//! whose shape Lc0 can run, and import of Lc0 attention-body nets of the same family.
//!
//! The two models agree on every operation (post-LN encoders with alpha = (2N)^(-1/4),
//! smolgen, Mish, the attention policy with its promotion offsets, the WDL and moves-left
//! heads), so a net moves between them by renaming and rearranging tensors
//! ([`bindings`]) with three exceptions: the input gates are stored transposed, plane 109
//! (the halfmove clock) is fed raw to Lc0 but divided by 99 in cfzero, and moves left are
//! plies in Lc0 but units of 20 plies in cfzero. Each is folded into the weights.

pub mod bindings;
pub mod bounds;
pub mod format;
pub mod layer;
pub mod proto;

mod export;
mod import;

pub use export::{check_exportable, export_net, write_lc0_file};
pub use import::{import_net, read_lc0_file};
pub use layer::LayerEncoding;

use std::path::PathBuf;

/// What a check of an Lc0 file found wrong, before the file's path is attached to it (as
/// [`Lc0Error::Corrupt`] or [`Lc0Error::Unsupported`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Lc0Finding(pub String);

impl From<String> for Lc0Finding {
    fn from(s: String) -> Lc0Finding {
        Lc0Finding(s)
    }
}

impl From<&str> for Lc0Finding {
    fn from(s: &str) -> Lc0Finding {
        Lc0Finding(s.to_owned())
    }
}

/// Why a net could not be exported or imported.
#[derive(Debug, thiserror::Error)]
pub enum Lc0Error {
    /// The net's shape has no Lc0 counterpart.
    #[error("this net cannot be exported to Lc0: {0}")]
    NotExportable(String),
    /// The file is an Lc0 net of a kind cfzero cannot represent exactly.
    #[error("{path}: unsupported Lc0 net: {reason}")]
    Unsupported {
        /// The file.
        path: String,
        /// What differs.
        reason: String,
    },
    /// The file is not a readable Lc0 net (bad gzip, protobuf, magic or layer sizes).
    #[error("{path}: not a valid Lc0 net: {reason}")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}
