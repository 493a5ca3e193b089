//! Errors of the chess game state: bad FENs and bad or illegal moves.

/// What went wrong when setting up or playing a chess position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChessError {
    /// The FEN could not be parsed or describes an impossible position.
    #[error("invalid FEN \"{fen}\": {reason}")]
    InvalidFen {
        /// The FEN as given.
        fen: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The move is not written in UCI notation (e.g. `e2e4`, `e7e8q`).
    #[error("invalid UCI move \"{uci}\"")]
    InvalidUci {
        /// The move as given.
        uci: String,
    },
    /// The move is well formed but not legal in the position.
    #[error("illegal move \"{uci}\" in position {fen}")]
    IllegalMove {
        /// The move as given.
        uci: String,
        /// The position it was tried in.
        fen: String,
    },
}
