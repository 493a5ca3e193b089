//! One module per subcommand.

pub mod bench;
pub mod bench_nn;
pub mod debug;
pub mod info;
pub mod learn;
pub mod match_cmd;
pub mod selfplay;
pub mod train;
