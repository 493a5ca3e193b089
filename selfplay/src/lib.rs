//! Self-play and play for cfzero, without libtorch: actors that play many games at once, game
//! records, the replay window on disk, PGN output; and what plays and scores finished nets
//! (matches and their players, the UCI client, Elo, SPRT, ladder ratings, puzzles), which
//! share the game records' results and the search players with self-play.

pub mod actor;
pub mod arena;
pub mod config;
pub mod elo;
pub mod greedy;
pub mod lines;
pub mod openings;
pub mod pgn;
pub mod puzzles;
pub mod ratings;
pub mod record;
pub mod replay;
pub mod resign;
pub mod result;
pub mod targets;
pub mod uci_client;
pub mod window;

pub use actor::{
    ActorId, ActorStats, Assignment, FinishedGame, MoveCount, SelfplayError, play_games,
};
pub use config::SelfplayConfig;
pub use record::{GameRecord, PositionRecord, RecordError};
pub use result::{GameResult, Termination};
