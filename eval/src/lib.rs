//! Playing and scoring finished nets for cfzero, without libtorch: matches between two players
//! over many concurrent games ([`arena`]) with the players that are not a net (random,
//! [`greedy`], a UCI engine through [`uci_client`]), the match statistics (Elo with intervals,
//! SPRT: [`elo`]), ratings of a run's generations from their pairwise results ([`ratings`]),
//! puzzle solving ([`puzzles`]), and a measure's mean over replicate training runs
//! ([`replicates`]). The game results these score are the chess crate's
//! (`cfzero_chess::result`), which self-play records too; the search players come from
//! `cfzero-mcts`.

pub mod arena;
pub mod elo;
pub mod greedy;
pub mod lines;
pub mod puzzles;
pub mod ratings;
pub mod replicates;
pub mod uci_client;
