//! Game records: a versioned, checksummed, zstd-compressed binary format.
//!
//! A record file holds one or more games. A position stores the played move and the
//! improved policy as indices into / values over the position's legal moves in the
//! deterministic generation order of [`cfzero_mcts::Game::legal_moves`], so neither
//! moves nor policy indices take space: the reader regenerates the legal moves.
//!
//! File layout (little endian):
//! `b"CFZG"`, version `u8`, 3 reserved bytes, game count `u32`, payload length `u32`,
//! compressed length `u32`, CRC-32 of the compressed bytes `u32`, then the compressed payload.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use cfzero_fsutil::write_file_atomically;

use crate::result::{GameResult, Termination};

/// First bytes of every record file.
pub const RECORD_MAGIC: [u8; 4] = *b"CFZG";
/// Format version written by this code. Version 2 added [`PositionRecord::policy_q`];
/// version 1 files (runs started before it) are still read, with `policy_q = best_q`.
/// Version 3 added [`PositionRecord::best_d`] and [`PositionRecord::best`]; older files are
/// read with `best_d = root_d` and `best = played`. Version 4 added
/// [`PositionRecord::surprise`]; older files are read with 0 (no position stands out).
pub const RECORD_VERSION: u8 = 4;
/// The oldest version readers accept.
pub const OLDEST_RECORD_VERSION: u8 = 1;
/// File extension of record files.
pub const RECORD_EXTENSION: &str = "cfzg";

const HEADER_LEN: usize = 4 + 1 + 3 + 4 * 4;
const ZSTD_LEVEL: i32 = 3;
/// Upper bound on a payload, against corrupt lengths that would allocate wildly.
const MAX_PAYLOAD: usize = 1 << 30;
/// The fewest payload bytes a game takes: FEN length, result, termination, generation and
/// position count.
const MIN_GAME_BYTES: usize = 2 + 1 + 1 + 4 + 4;
/// The fewest payload bytes a position of a version-1 file takes (no policy): played move,
/// policy length and six 16-bit values; version 2 adds a seventh, version 3 an eighth and
/// a byte, version 4 a ninth.
const MIN_POSITION_BYTES_V1: usize = 1 + 1 + 6 * 2;
/// Payload bytes expected per compressed byte when the buffer is first reserved: it grows
/// as the data really decompresses, so a header that lies costs nothing.
const FIRST_RESERVE_RATIO: usize = 8;

/// Why a record file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file system failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The bytes are not a valid record file (torn, corrupt or foreign).
    #[error("{path}: corrupt record file: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The file decodes, but a game in it cannot be replayed (a writer's bug or a forged
    /// file): it is quarantined.
    #[error("{path}: game {game} does not replay ({reason}); the file is quarantined")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Index of the game in the file.
        game: usize,
        /// Why it does not replay.
        reason: crate::replay::ReplayError,
    },
}

/// One position of a game, with its training targets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PositionRecord {
    /// Index of the played move among the position's legal moves.
    pub played: u8,
    /// Improved policy over the legal moves, in legal-move order, each as `p * 65535`;
    /// empty for positions searched with a small budget, which are not trained on.
    pub policy: Vec<u16>,
    /// The network's value of the position (side to move).
    pub network_q: f32,
    /// Search value at the root (side to move).
    pub root_q: f32,
    /// Draw probability at the root, from the search.
    pub root_d: f32,
    /// Index of the move the search chose among the legal moves (the played move unless
    /// it was sampled at a temperature).
    pub best: u8,
    /// Draw probability of the chosen move: with [`PositionRecord::best_q`], the W/D/L of
    /// best play, Lc0's `best_d`.
    pub best_d: f32,
    /// Search value of the move the search chose (its final-move rule or a proof; side to
    /// move): the value of best play, Lc0's `best_q`.
    pub best_q: f32,
    /// Search value of the played move (side to move).
    pub played_q: f32,
    /// The improved policy's expectation of the completed Q (side to move), the value of
    /// best play as the search sees it; [`PositionRecord::best_q`] in version 1 files.
    pub policy_q: f32,
    /// Short-term value target (see [`crate::targets::short_term_targets`]).
    pub st: f32,
    /// How far the search's policy moved from the network's: the Kullback-Leibler divergence
    /// of the improved policy from the prior, in nats ([`cfzero_mcts::SearchResult`]'s
    /// `prior_kl`); 0 for a position without a policy target. The window draws surprising
    /// positions more often when `[window] surprise_share` says so.
    pub surprise: f32,
}

impl PositionRecord {
    /// Whether the position carries a policy target.
    pub fn is_trainable(&self) -> bool {
        !self.policy.is_empty()
    }
}

/// One whole game.
#[derive(Debug, Clone, PartialEq)]
pub struct GameRecord {
    /// The starting FEN, or `None` for the standard start position.
    pub start_fen: Option<String>,
    /// How the game ended.
    pub result: GameResult,
    /// Why it ended.
    pub termination: Termination,
    /// Generation of the net that played it.
    pub generation: u32,
    /// Every position from the start to the last move, in order.
    pub positions: Vec<PositionRecord>,
}

/// Quantises a value in [-1, 1] to `i16`.
fn q16(v: f32) -> i16 {
    (v.clamp(-1.0, 1.0) * 32767.0).round() as i16
}

fn dq16(v: i16) -> f32 {
    f32::from(v) / 32767.0
}

fn u16p(v: f32) -> u16 {
    (v.clamp(0.0, 1.0) * 65535.0).round() as u16
}

/// Quantises a probability in [0, 1] to the `u16` stored in [`PositionRecord::policy`].
pub fn quantize_probability(p: f32) -> u16 {
    u16p(p)
}

/// Steps of a stored surprise per nat: a resolution far finer than any weighting needs, up
/// to 64 nats (a policy target that puts all its mass on a move of prior 1e-28).
const SURPRISE_SCALE: f32 = 1024.0;

/// A surprise in nats as stored: non-negative, clamped to what a `u16` holds.
fn surprise16(nats: f32) -> u16 {
    (nats.max(0.0) * SURPRISE_SCALE).round().min(65535.0) as u16
}

/// The probability a stored `u16` stands for.
pub fn dequantize_probability(q: u16) -> f32 {
    f32::from(q) / 65535.0
}

fn encode_game(game: &GameRecord, out: &mut Vec<u8>) {
    let fen = game.start_fen.as_deref().unwrap_or("").as_bytes();
    out.extend_from_slice(&(fen.len() as u16).to_le_bytes());
    out.extend_from_slice(fen);
    out.push(game.result.to_byte());
    out.push(game.termination.to_byte());
    out.extend_from_slice(&game.generation.to_le_bytes());
    out.extend_from_slice(&(game.positions.len() as u32).to_le_bytes());
    for p in &game.positions {
        out.push(p.played);
        out.push(p.policy.len() as u8);
        for &w in &p.policy {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for v in [p.network_q, p.root_q] {
            out.extend_from_slice(&q16(v).to_le_bytes());
        }
        out.extend_from_slice(&u16p(p.root_d).to_le_bytes());
        for v in [p.best_q, p.played_q, p.st, p.policy_q] {
            out.extend_from_slice(&q16(v).to_le_bytes());
        }
        out.extend_from_slice(&u16p(p.best_d).to_le_bytes());
        out.push(p.best);
        out.extend_from_slice(&surprise16(p.surprise).to_le_bytes());
    }
}

/// Serialises games into the bytes of a record file.
pub fn encode_records(games: &[GameRecord]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(games.iter().map(|g| 16 + g.positions.len() * 80).sum());
    for g in games {
        encode_game(g, &mut payload);
    }
    let compressed =
        zstd::bulk::compress(&payload, ZSTD_LEVEL).expect("zstd compresses any byte slice");
    let mut out = Vec::with_capacity(HEADER_LEN + compressed.len());
    out.extend_from_slice(&RECORD_MAGIC);
    out.push(RECORD_VERSION);
    out.extend_from_slice(&[0, 0, 0]);
    out.extend_from_slice(&(games.len() as u32).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&compressed).to_le_bytes());
    out.extend_from_slice(&compressed);
    out
}

/// A bounds-checked little-endian reader over a payload.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("payload ends early at byte {}", self.at))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }
    fn i16(&mut self) -> Result<i16, String> {
        Ok(i16::from_le_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
}

fn decode_game(c: &mut Cursor<'_>, version: u8) -> Result<GameRecord, String> {
    let fen_len = usize::from(c.u16()?);
    let fen =
        std::str::from_utf8(c.take(fen_len)?).map_err(|_| "start FEN is not UTF-8".to_string())?;
    let start_fen = (!fen.is_empty()).then(|| fen.to_string());
    let result = GameResult::from_byte(c.u8()?).ok_or("unknown game result")?;
    let termination = Termination::from_byte(c.u8()?).ok_or("unknown termination")?;
    let generation = c.u32()?;
    let n = c.u32()? as usize;
    // Bounded by what the remaining bytes can hold, not by their count: a position takes
    // at least 14 bytes but is about 60 in memory, so the looser bound lets a small file
    // request gigabytes.
    let min_position = MIN_POSITION_BYTES_V1
        + if version >= 2 { 2 } else { 0 }
        + if version >= 3 { 3 } else { 0 }
        + if version >= 4 { 2 } else { 0 };
    let room = c.remaining() / min_position;
    if n > room {
        return Err(format!(
            "position count {n} exceeds the {room} the remaining {} bytes can hold",
            c.remaining()
        ));
    }
    let mut positions = Vec::with_capacity(n);
    for _ in 0..n {
        let played = c.u8()?;
        let k = usize::from(c.u8()?);
        let mut policy = Vec::with_capacity(k);
        for _ in 0..k {
            policy.push(c.u16()?);
        }
        let network_q = dq16(c.i16()?);
        let root_q = dq16(c.i16()?);
        let root_d = f32::from(c.u16()?) / 65535.0;
        let best_q = dq16(c.i16()?);
        let played_q = dq16(c.i16()?);
        let st = dq16(c.i16()?);
        let policy_q = if version >= 2 { dq16(c.i16()?) } else { best_q };
        let (best_d, best) = if version >= 3 {
            (f32::from(c.u16()?) / 65535.0, c.u8()?)
        } else {
            (root_d, played)
        };
        let surprise = if version >= 4 {
            f32::from(c.u16()?) / SURPRISE_SCALE
        } else {
            0.0
        };
        positions.push(PositionRecord {
            played,
            policy,
            network_q,
            root_q,
            root_d,
            best,
            best_d,
            best_q,
            played_q,
            policy_q,
            st,
            surprise,
        });
    }
    Ok(GameRecord {
        start_fen,
        result,
        termination,
        generation,
        positions,
    })
}

/// Parses the bytes of a record file; `path` only names the file in errors.
pub fn decode_records(bytes: &[u8], path: &Path) -> Result<Vec<GameRecord>, RecordError> {
    let corrupt = |reason: String| RecordError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    if bytes.len() < HEADER_LEN {
        return Err(corrupt(format!(
            "{} bytes, shorter than the header",
            bytes.len()
        )));
    }
    if bytes[..4] != RECORD_MAGIC {
        return Err(corrupt("bad magic".into()));
    }
    let version = bytes[4];
    if !(OLDEST_RECORD_VERSION..=RECORD_VERSION).contains(&version) {
        return Err(corrupt(format!(
            "version {version} (this build reads {OLDEST_RECORD_VERSION} to {RECORD_VERSION})"
        )));
    }
    let word = |i: usize| {
        u32::from_le_bytes(bytes[8 + 4 * i..12 + 4 * i].try_into().expect("4 bytes")) as usize
    };
    let (games, payload_len, comp_len, crc) = (word(0), word(1), word(2), word(3) as u32);
    let body = &bytes[HEADER_LEN..];
    if body.len() != comp_len {
        return Err(corrupt(format!(
            "{} compressed bytes, header says {comp_len} (torn write?)",
            body.len()
        )));
    }
    if crc32fast::hash(body) != crc {
        return Err(corrupt("checksum mismatch".into()));
    }
    if payload_len > MAX_PAYLOAD {
        return Err(corrupt(format!(
            "payload length {payload_len} is implausible"
        )));
    }
    // Streamed, so that memory follows the bytes that really decompress, up to the
    // header's length (and one more, to notice a longer payload): a header that claims a
    // gigabyte for a few compressed bytes must not reserve it.
    let mut payload =
        Vec::with_capacity(payload_len.min(comp_len.saturating_mul(FIRST_RESERVE_RATIO)));
    zstd::stream::read::Decoder::with_buffer(body)
        .and_then(|d| d.take(payload_len as u64 + 1).read_to_end(&mut payload))
        .map_err(|e| corrupt(format!("zstd: {e}")))?;
    if payload.len() != payload_len {
        return Err(corrupt(format!(
            "payload is {} bytes, header says {payload_len}",
            payload.len()
        )));
    }
    let mut c = Cursor {
        bytes: &payload,
        at: 0,
    };
    if games > payload_len / MIN_GAME_BYTES {
        return Err(corrupt(format!(
            "game count {games} exceeds what {payload_len} payload bytes can hold"
        )));
    }
    let mut out = Vec::with_capacity(games);
    for i in 0..games {
        out.push(decode_game(&mut c, version).map_err(|e| corrupt(format!("game {i}: {e}")))?);
    }
    if c.at != payload.len() {
        return Err(corrupt(format!("{} trailing bytes", payload.len() - c.at)));
    }
    Ok(out)
}

/// Writes games to a record file at `path`, atomically.
pub fn write_records(path: &Path, games: &[GameRecord]) -> Result<(), RecordError> {
    write_file_atomically(path, &encode_records(games)).map_err(|source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads all games of a record file.
pub fn read_records(path: &Path) -> Result<Vec<GameRecord>, RecordError> {
    let bytes = fs::read(path).map_err(|source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    decode_records(&bytes, path)
}
