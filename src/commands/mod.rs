//! One module per subcommand.

pub mod bench;
pub mod info;
pub mod train;
