//! One module per subcommand.

pub mod bench;
pub mod bench_curve;
pub mod bench_data;
pub mod bench_learn;
pub mod bench_nn;
pub mod bench_selfplay;
pub mod bench_store;
pub mod bench_train;
pub mod debug;
pub mod debug_outputs;
pub mod debug_targets;
pub mod export;
pub mod export_data;
pub mod import;
pub mod info;
pub mod label;
pub mod ladder;
pub mod learn;
pub mod match_cmd;
pub mod net_measure;
pub mod net_play;
pub mod puzzles;
pub mod selfplay;
pub mod train;
