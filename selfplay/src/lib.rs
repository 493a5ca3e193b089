//! Self-play for cfzero, without libtorch: actors that play many games at once, game records
//! and their results, opening books, training targets, resignation, the replay window on disk
//! and PGN output. What plays and scores finished nets (matches, the UCI client, Elo, SPRT,
//! ladder ratings, puzzles) is the `cfzero-eval` crate; the two share how a game ended through
//! the chess crate (`cfzero_chess::result`), and neither depends on the other.

pub mod actor;
pub mod config;
pub mod openings;
pub mod pgn;
pub mod record;
pub mod record_scan;
pub mod replay;
pub mod resign;
/// How a game ended, as the chess crate defines it for self-play and matches alike.
pub use cfzero_chess::result;
pub mod targets;
pub mod window;

pub use actor::{
    ActorId, ActorStats, Assignment, FinishedGame, GameInFlight, MoveCount, SelfplayError,
    play_games,
};
pub use config::{MATERIAL_MARGIN, MaxPliesResult, MoveChoice, SelfplayConfig, TablebaseUse};
pub use record::{GameRecord, PositionRecord, RecordError};
pub use result::{GameResult, Termination};
