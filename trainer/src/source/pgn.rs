//! Games in PGN (human or engine) as a sample source, read with `pgn-reader`.
//!
//! Each game becomes a [`GameRecord`] whose policy target is the played move (one-hot over
//! the legal moves) and whose value targets are the result (from the side to move; the
//! search values of a self-play record are the result too), so the records go into a
//! replay window of their own and are sampled exactly as self-play games are. The
//! moves-left target is the plies to the end of the game, as for self-play.
//!
//! Games are skipped, and counted by reason, when their result is unknown (`*`), they have
//! no move, a move is
//! illegal or not SAN, the variant is not standard chess, or a filter rejects them
//! (ratings below [`PgnFilters::min_rating`], base time below [`PgnFilters::min_base_seconds`];
//! a filter passes a game whose headers do not say).

use std::fs::File;
use std::io::{BufReader, Read};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use pgn_reader::{KnownOutcome, Outcome, RawTag, Reader, SanPlus, Visitor};
use rand_chacha::ChaCha8Rng;
use shakmaty::{Color, Move};

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_mcts::Game;
use cfzero_selfplay::record::quantize_probability;
use cfzero_selfplay::window::{ReplayWindow, WindowConfig};
use cfzero_selfplay::{GameRecord, GameResult, PositionRecord, Termination};

use super::{SampleSource, SourceError, Split};
use crate::sample::{HostBatch, SampleScratch, TargetOptions};

/// Which games of a PGN file are trained on.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PgnFilters {
    /// Both players rated at least this (`WhiteElo`, `BlackElo`); 0 for any.
    pub min_rating: u32,
    /// Base time of the `TimeControl` header at least this many seconds; 0 for any.
    pub min_base_seconds: u32,
}

/// How much of a file is read and held out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PgnLimits {
    /// Stop reading after this many positions.
    pub max_positions: usize,
    /// Share of games held out for validation: every `1 / share`-th.
    pub validation_share: f64,
}

/// What reading a PGN file found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PgnStats {
    /// Games kept.
    pub games: usize,
    /// Positions of the kept games.
    pub positions: usize,
    /// Games with result `*`.
    pub unknown_result: usize,
    /// Games rejected by a filter.
    pub filtered: usize,
    /// Games without a move (abandoned before the first).
    pub empty: usize,
    /// Games with a move that is not legal SAN, a bad FEN or a non-standard variant.
    pub invalid: usize,
}

/// PGN games in a replay window of their own (see the module docs).
#[derive(Debug)]
pub struct PgnSource {
    path: PathBuf,
    window: RwLock<ReplayWindow>,
    stats: PgnStats,
}

impl PgnSource {
    /// Reads `path` (plain, or compressed as its extension says: `.zst`, `.gz`, `.bz2`).
    /// Errors only when the file cannot be opened or read; bad games are counted.
    pub fn open(path: &Path, filters: PgnFilters, limits: PgnLimits) -> std::io::Result<PgnSource> {
        let (window, stats) = read_games(open_pgn(path)?, filters, limits)?;
        Ok(PgnSource {
            path: path.to_path_buf(),
            window: RwLock::new(window),
            stats,
        })
    }

    /// What reading the file found.
    pub fn stats(&self) -> &PgnStats {
        &self.stats
    }
}

/// The text of the PGN file `path`, decompressed as its extension says (`.zst`, `.gz`,
/// `.bz2`; anything else is read as it is).
pub fn open_pgn(path: &Path) -> std::io::Result<Box<dyn Read>> {
    let file = BufReader::new(File::open(path)?);
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    Ok(match ext {
        "zst" => Box::new(zstd::Decoder::new(file)?),
        "gz" => Box::new(flate2::read::MultiGzDecoder::new(file)),
        "bz2" => Box::new(bzip2::read::MultiBzDecoder::new(file)),
        _ => Box::new(file),
    })
}

/// Reads games from `reader` into a window that holds all of them.
pub fn read_games(
    reader: impl Read,
    filters: PgnFilters,
    limits: PgnLimits,
) -> std::io::Result<(ReplayWindow, PgnStats)> {
    let cap = limits.max_positions.max(1);
    let mut window = ReplayWindow::new(WindowConfig {
        min_positions: cap,
        max_positions: cap,
        validation_share: limits.validation_share.clamp(0.0, 1.0),
        validation_positions: cap,
        ..WindowConfig::default()
    });
    let (games, stats) = parse_games(reader, filters, cap)?;
    for game in games {
        window.add(Arc::new(game));
    }
    Ok((window, stats))
}

/// The games of `reader` as records, until `max_positions` positions are read.
pub fn parse_games(
    reader: impl Read,
    filters: PgnFilters,
    max_positions: usize,
) -> std::io::Result<(Vec<GameRecord>, PgnStats)> {
    let mut stats = PgnStats::default();
    let mut games = Vec::new();
    let mut pgn = Reader::new(reader);
    let mut visitor = RecordBuilder { filters };
    while stats.positions < max_positions {
        let Some(outcome) = pgn.read_game(&mut visitor)? else {
            break;
        };
        match outcome {
            Built::Game(game) => {
                stats.games += 1;
                stats.positions += game.positions.len();
                games.push(game);
            }
            Built::UnknownResult => stats.unknown_result += 1,
            Built::Filtered => stats.filtered += 1,
            Built::Empty => stats.empty += 1,
            Built::Invalid => stats.invalid += 1,
        }
    }
    Ok((games, stats))
}

/// One game read.
enum Built {
    Game(GameRecord),
    UnknownResult,
    Filtered,
    Empty,
    Invalid,
}

/// The headers that matter.
#[derive(Default)]
struct Headers {
    white_elo: Option<u32>,
    black_elo: Option<u32>,
    base_seconds: Option<u32>,
    fen: Option<String>,
    standard: bool,
}

/// A game being replayed.
struct Moves {
    state: ChessState,
    /// Side to move at the first position.
    first: Color,
    start_fen: Option<String>,
    positions: Vec<PositionRecord>,
    legal: Vec<Move>,
    outcome: Option<KnownOutcome>,
}

struct RecordBuilder {
    filters: PgnFilters,
}

impl Visitor for RecordBuilder {
    type Tags = Headers;
    type Movetext = Moves;
    type Output = Built;

    fn begin_tags(&mut self) -> ControlFlow<Built, Headers> {
        ControlFlow::Continue(Headers {
            standard: true,
            ..Headers::default()
        })
    }

    fn tag(&mut self, tags: &mut Headers, name: &[u8], value: RawTag<'_>) -> ControlFlow<Built> {
        let text = value.decode_utf8_lossy();
        let number = || text.trim().parse::<u32>().ok();
        match name {
            b"WhiteElo" => tags.white_elo = number(),
            b"BlackElo" => tags.black_elo = number(),
            b"TimeControl" => {
                tags.base_seconds = text.split('+').next().and_then(|b| b.trim().parse().ok())
            }
            b"FEN" => tags.fen = Some(text.to_string()),
            b"Variant" => {
                let v = text.to_ascii_lowercase();
                tags.standard = matches!(v.as_str(), "standard" | "chess" | "from position" | "");
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Headers) -> ControlFlow<Built, Moves> {
        let below = |have: Option<u32>, min: u32| min > 0 && have.is_some_and(|h| h < min);
        if below(tags.white_elo, self.filters.min_rating)
            || below(tags.black_elo, self.filters.min_rating)
            || below(tags.base_seconds, self.filters.min_base_seconds)
        {
            return ControlFlow::Break(Built::Filtered);
        }
        if !tags.standard {
            return ControlFlow::Break(Built::Invalid);
        }
        let state = match &tags.fen {
            None => ChessState::new(),
            Some(fen) => match ChessState::from_fen(fen, HistoryFill::No) {
                Ok(s) => s,
                Err(_) => return ControlFlow::Break(Built::Invalid),
            },
        };
        let mut state = state;
        // A long game is still a game: the cap adjudicates self-play only.
        state.set_max_plies(u32::MAX);
        ControlFlow::Continue(Moves {
            first: state.turn(),
            state,
            start_fen: tags.fen,
            positions: Vec::new(),
            legal: Vec::new(),
            outcome: None,
        })
    }

    fn san(&mut self, m: &mut Moves, san_plus: SanPlus) -> ControlFlow<Built> {
        let Ok(mv) = san_plus.san.to_move(m.state.position()) else {
            return ControlFlow::Break(Built::Invalid);
        };
        m.state.legal_moves(&mut m.legal);
        let Some(index) = m.legal.iter().position(|l| *l == mv) else {
            return ControlFlow::Break(Built::Invalid);
        };
        let mut policy = vec![0u16; m.legal.len()];
        policy[index] = quantize_probability(1.0);
        m.positions.push(PositionRecord {
            // At most 218 legal moves in chess.
            played: index as u8,
            policy,
            network_q: 0.0,
            root_q: 0.0,
            root_d: 0.0,
            best: index as u8,
            best_d: 0.0,
            best_q: 0.0,
            played_q: 0.0,
            policy_q: 0.0,
            st: 0.0,
            // A game's moves are one-hot targets of no search: nothing to weigh.
            surprise: 0.0,
        });
        m.state.play(mv);
        ControlFlow::Continue(())
    }

    fn outcome(&mut self, m: &mut Moves, outcome: Outcome) -> ControlFlow<Built> {
        if let Outcome::Known(k) = outcome {
            m.outcome = Some(k);
        }
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, m: Moves) -> Built {
        let Some(outcome) = m.outcome else {
            return Built::UnknownResult;
        };
        if m.positions.is_empty() {
            return Built::Empty;
        }
        let result = match outcome {
            KnownOutcome::Decisive { winner } => GameResult::win_for(winner),
            KnownOutcome::Draw => GameResult::Draw,
        };
        // The record format has no reason for agreement, time or resignation: a game that
        // did not end on the board is recorded as resigned.
        let termination = m
            .state
            .terminal_reason()
            .map_or(Termination::Resignation, Termination::from);
        let mut positions = m.positions;
        // Every position's value targets are the result, from its side to move.
        let first = m.first;
        for (ply, p) in positions.iter_mut().enumerate() {
            let turn = if ply % 2 == 0 { first } else { !first };
            let z = result.value_for(turn);
            p.root_q = z;
            p.best_q = z;
            p.played_q = z;
            p.policy_q = z;
            p.network_q = z;
            p.st = z;
            p.root_d = if result == GameResult::Draw { 1.0 } else { 0.0 };
            p.best_d = p.root_d;
        }
        Built::Game(GameRecord {
            start_fen: m.start_fen,
            result,
            termination,
            generation: 0,
            positions,
        })
    }
}

impl SampleSource for PgnSource {
    fn describe(&self) -> String {
        format!("pgn:{}", self.path.display())
    }

    fn positions(&self, split: Split) -> usize {
        self.window.positions(split)
    }

    fn fill(
        &self,
        split: Split,
        rng: &mut ChaCha8Rng,
        batch: &mut HostBatch,
        slot: usize,
        scratch: &mut SampleScratch,
        targets: &TargetOptions,
    ) -> Result<bool, SourceError> {
        self.window.fill(split, rng, batch, slot, scratch, targets)
    }
}
