//! The chess game state: a shakmaty position with the history that repetition and the
//! network input need, and adjudication (docs/METHODS.md §1).
//!
//! Everything follows lc0's conventions so that nets and data interoperate: the eight
//! input history steps, lc0's repetition counting and its `HistoryFill` for positions
//! set up from a FEN.

mod error;
mod history;
mod material;
mod repetition;
pub mod result;
pub mod tablebase;
mod terminal;
mod zobrist;

use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{Board, Castles, CastlingMode, Chess, Color, EnPassantMode, Move, Position};

pub use error::ChessError;
pub use history::{HISTORY_STEPS, HistoryFill};
pub use material::{PAWNS_PER_UNIT, material_balance, material_value, piece_value};
pub use result::{GameResult, Termination};
pub use terminal::TerminalReason;

use history::{FenStart, Step};
use repetition::RepetitionTracker;

/// Default maximum game length in plies; a game that reaches it is a draw.
pub const DEFAULT_MAX_PLIES: u32 = 450;

/// A chess position with its history: what the search plays moves on and what the
/// network encoder reads.
///
/// Small and cheap to copy with `clone_from` (no allocation once warm): the search clones
/// a state once per simulation. It keeps the last eight boards in a ring and, for
/// repetition counting, one key per position since the last capture or pawn move.
#[derive(Debug)]
pub struct ChessState {
    pos: Chess,
    /// Plies played since the state was created.
    ply: u32,
    max_plies: u32,
    /// The last [`HISTORY_STEPS`] boards, the current one at `head`.
    steps: [Step; HISTORY_STEPS],
    head: usize,
    /// What a state set up from a FEN keeps to fill the steps before its first position.
    fen_start: Option<FenStart>,
    /// How those steps are filled by default ([`ChessState::history_board`]).
    fill_mode: HistoryFill,
    repetitions: RepetitionTracker,
}

impl Clone for ChessState {
    fn clone(&self) -> Self {
        ChessState {
            pos: self.pos.clone(),
            ply: self.ply,
            max_plies: self.max_plies,
            steps: self.steps.clone(),
            head: self.head,
            fen_start: self.fen_start.clone(),
            fill_mode: self.fill_mode,
            repetitions: self.repetitions.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.pos.clone_from(&source.pos);
        self.ply = source.ply;
        self.max_plies = source.max_plies;
        self.steps.clone_from(&source.steps);
        self.head = source.head;
        self.fen_start.clone_from(&source.fen_start);
        self.fill_mode = source.fill_mode;
        self.repetitions.clone_from(&source.repetitions);
    }
}

impl Default for ChessState {
    fn default() -> Self {
        Self::new()
    }
}

impl ChessState {
    /// The standard start position, with no history.
    pub fn new() -> ChessState {
        Self::from_position(Chess::new(), None)
    }

    /// A position set up from a FEN (the clocks may be omitted), with `fill` deciding
    /// what the network sees as the history before it.
    pub fn from_fen(fen: &str, fill: HistoryFill) -> Result<ChessState, ChessError> {
        let invalid = |reason: String| ChessError::InvalidFen {
            fen: fen.to_string(),
            reason,
        };
        let parsed: Fen = fen.trim().parse().map_err(|e| invalid(format!("{e}")))?;
        let pos: Chess = parsed
            .into_position(CastlingMode::Standard)
            .map_err(|e| invalid(format!("{e}")))?;
        // lc0 keeps the FEN's en-passant square as given, whether or not a capture is possible.
        let ep = pos.maybe_ep_square();
        let is_start = pos.board() == &Board::new()
            && pos.turn() == Color::White
            && pos.castles().castling_rights() == Castles::new().castling_rights()
            && ep.is_none();
        let start = FenStart::new(pos.board(), pos.turn(), ep, is_start);
        let mut state = Self::from_position(pos, Some(start));
        state.fill_mode = fill;
        Ok(state)
    }

    fn from_position(pos: Chess, fen_start: Option<FenStart>) -> ChessState {
        let first = Step::new(pos.board().clone(), 0);
        let key = first.hash ^ zobrist::state_key(pos.turn(), pos.castles(), pos.maybe_ep_square());
        let mut repetitions = RepetitionTracker::default();
        repetitions.reset(key, pos.halfmoves());
        ChessState {
            steps: std::array::from_fn(|_| first.clone()),
            pos,
            ply: 0,
            max_plies: DEFAULT_MAX_PLIES,
            head: 0,
            fen_start,
            fill_mode: HistoryFill::default(),
            repetitions,
        }
    }

    /// Sets the game length (in plies from this state's first position) at which the game
    /// is drawn. The default is [`DEFAULT_MAX_PLIES`].
    pub fn set_max_plies(&mut self, n: u32) {
        self.max_plies = n;
    }

    /// The maximum game length in plies.
    pub fn max_plies(&self) -> u32 {
        self.max_plies
    }

    /// The current position.
    pub fn position(&self) -> &Chess {
        &self.pos
    }

    /// The side to move.
    pub fn turn(&self) -> Color {
        self.pos.turn()
    }

    /// Plies played since this state's first position (the start position or the FEN).
    pub fn ply(&self) -> u32 {
        self.ply
    }

    /// The halfmove clock: plies since the last capture or pawn move.
    pub fn halfmove_clock(&self) -> u32 {
        self.pos.halfmoves()
    }

    /// The castling rights of the current position.
    pub fn castles(&self) -> &Castles {
        self.pos.castles()
    }

    /// lc0's repetition count of the current position (2 = third occurrence).
    pub fn repetitions(&self) -> u32 {
        self.steps[self.head].repetitions
    }

    /// The board of history step `t` (0 = current, 7 = seven plies ago) as the network
    /// input shows it, in absolute coordinates, or `None` where that step is empty.
    /// Before the first position this is the [`HistoryFill`] stand-in, if any.
    pub fn history_board(&self, t: usize) -> Option<&Board> {
        self.history_board_filled(t, self.fill_mode)
    }

    /// [`ChessState::history_board`] with the steps before the first position filled as
    /// `mode` says, whatever the state's own mode: each net reads positions set up from a
    /// FEN with the convention it was trained with.
    pub fn history_board_filled(&self, t: usize, mode: HistoryFill) -> Option<&Board> {
        self.step(t, mode).map(|s| &s.board)
    }

    /// How the steps before the first position are filled by default.
    pub fn history_fill(&self) -> HistoryFill {
        self.fill_mode
    }

    /// Sets how the steps before the first position are filled by default.
    pub fn set_history_fill(&mut self, mode: HistoryFill) {
        self.fill_mode = mode;
    }

    /// Whether history step `t` has occurred before (lc0's repetition plane).
    pub fn history_repeated(&self, t: usize) -> bool {
        // Stand-ins never carry a repetition flag, so the fill mode does not matter here.
        self.step(t, HistoryFill::No)
            .is_some_and(|s| s.repetitions >= 1)
    }

    /// Whether history step `t` is a real position of this game (not a fill or empty).
    pub fn history_is_real(&self, t: usize) -> bool {
        t < HISTORY_STEPS && (t as u64) <= u64::from(self.ply)
    }

    fn step(&self, t: usize, mode: HistoryFill) -> Option<&Step> {
        if t >= HISTORY_STEPS {
            return None;
        }
        if self.history_is_real(t) {
            return Some(&self.steps[(self.head + HISTORY_STEPS - t) % HISTORY_STEPS]);
        }
        let first_missing = self.ply as usize + 1;
        self.fen_start
            .as_ref()
            .and_then(|start| start.stand_in(mode, t == first_missing))
    }

    /// Parses `uci` (castling as `e1g1` or `e1h1`) and plays it if legal.
    pub fn play_uci(&mut self, uci: &str) -> Result<Move, ChessError> {
        let parsed: UciMove = uci.parse().map_err(|_| ChessError::InvalidUci {
            uci: uci.to_string(),
        })?;
        let mv = parsed
            .to_move(&self.pos)
            .map_err(|_| ChessError::IllegalMove {
                uci: uci.to_string(),
                fen: Fen::from_position(&self.pos, EnPassantMode::Legal).to_string(),
            })?;
        self.play_move(mv);
        Ok(mv)
    }

    /// Plays a whitespace-separated list of UCI moves, stopping at the first bad one.
    pub fn play_uci_line(&mut self, moves: &str) -> Result<(), ChessError> {
        for uci in moves.split_whitespace() {
            self.play_uci(uci)?;
        }
        Ok(())
    }

    /// Plays `mv`, which must be legal in the current position.
    pub fn play_move(&mut self, mv: Move) {
        let mover = self.pos.turn();
        let old_hash = self.steps[self.head].hash;
        self.pos.play_unchecked(mv);
        let board = self.pos.board();
        let hash = zobrist::update_board_hash(old_hash, mv, mover)
            .unwrap_or_else(|| zobrist::board_hash(board));
        // lc0 flags en passant after a double push only when an enemy pawn could take.
        let ep = self.pos.pseudo_legal_ep_square();
        let key = hash ^ zobrist::state_key(self.pos.turn(), self.pos.castles(), ep);
        let repetitions = self.repetitions.push(key, self.pos.halfmoves());
        self.head = (self.head + 1) % HISTORY_STEPS;
        let step = &mut self.steps[self.head];
        step.board.clone_from(board);
        step.hash = hash;
        step.repetitions = repetitions;
        self.ply += 1;
    }

    /// Whether the game is over and why, computing the legal moves itself.
    pub fn terminal_reason(&self) -> Option<TerminalReason> {
        let no_moves = self.pos.legal_moves().is_empty();
        self.terminal_reason_given(no_moves)
    }

    /// Adjudication given whether the side to move has no legal move, for callers that
    /// have generated the legal moves already (the search). Checkmate and stalemate come
    /// first, so a mate on the 100th quiet ply still wins.
    pub fn terminal_reason_given(&self, no_moves: bool) -> Option<TerminalReason> {
        if no_moves {
            return Some(if self.pos.is_check() {
                TerminalReason::Checkmate
            } else {
                TerminalReason::Stalemate
            });
        }
        if self.pos.is_insufficient_material() {
            Some(TerminalReason::InsufficientMaterial)
        } else if self.pos.halfmoves() >= 100 {
            Some(TerminalReason::FiftyMoveRule)
        } else if self.repetitions() >= 2 {
            Some(TerminalReason::ThreefoldRepetition)
        } else if self.ply >= self.max_plies {
            Some(TerminalReason::MaxPlies)
        } else {
            None
        }
    }

    /// The FEN of the current position (en-passant square only when a capture is legal).
    pub fn fen(&self) -> String {
        Fen::from_position(&self.pos, EnPassantMode::Legal).to_string()
    }

    /// A hash of everything the network input depends on: the eight history boards and
    /// their repetition flags, castling rights, side to move and halfmove clock, plus the
    /// legal en-passant square (it changes the legal moves).
    /// The key is the same under either [`HistoryFill`]: it hashes the `FenOnly` steps,
    /// which include every stand-in board that `No` can show.
    pub fn input_key(&self) -> u64 {
        let mut h = 0u64;
        for t in 0..HISTORY_STEPS {
            let step_key = match self.step(t, HistoryFill::FenOnly) {
                Some(s) => {
                    s.hash
                        ^ if s.repetitions >= 1 {
                            0x5bd1_e995_c6a4_a793
                        } else {
                            0
                        }
                }
                None => 0,
            };
            h = zobrist::mix(h ^ step_key);
        }
        let state = zobrist::state_key(
            self.pos.turn(),
            self.pos.castles(),
            self.pos.legal_ep_square(),
        );
        zobrist::mix(
            h ^ state ^ u64::from(self.pos.halfmoves()).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        )
    }
}
