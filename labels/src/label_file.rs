//! Label files: a header naming the teacher and the source, then one framed entry per
//! source position, in the source's order.
//!
//! ```text
//! "CFZLBL01"  u32 length  header (JSON)  u32 CRC-32 of the header
//! entry*:     u32 length  payload        u32 CRC-32 of the payload
//! payload:    u8 kind (0 label, 1 skipped, 2 label with history)  u8 FEN length  FEN
//!   label:    u16 plies left (0xFFFF unknown)  3 x u16 W/D/L  u8 best  u8 moves
//!             moves x (u16 move, u16 action value)
//!   label with history: a label's fields, then  u8 root FEN length  root FEN
//!             u8 plies  plies x u16 move  (the game from the root to the position)
//!   skipped:  u16 reason length  reason (UTF-8)
//! ```
//! All integers little-endian; probabilities are `round(p * 65535)`; what a move's value means
//! is the header's `action_values` ([`ActionValues`]); a move is
//! `from | to << 6 | promotion << 12` (UCI squares, castling as the king's two squares,
//! promotion 0 none, 2 knight .. 5 queen as shakmaty's `Role`).
//!
//! Every source position gets an entry, a label or the reason it has none, so the number of
//! entries is the number of source positions done: a labelling run that was killed resumes
//! at exactly that position. A run killed in the middle of a write leaves a partial last
//! frame; [`LabelWriter::open`] cuts it off (that position is labelled again). A whole
//! frame whose checksum fails is corruption and an error, never skipped.
//!
//! A label of a position from a game carries the game's last plies before it
//! ([`LabelHistory`]), so that training shows the net the position as it sees it in play: with
//! the real boards of its history planes, not the FEN's repeated stand-ins (files of kind 0
//! hold labels without, which still read).

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use cfzero_chess::{ChessState, HISTORY_STEPS, HistoryFill};
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Move, Role, Square};

use crate::Method;

/// The first bytes of a label file.
pub const MAGIC: &[u8; 8] = b"CFZLBL01";
/// The largest header (JSON) a reader accepts.
pub const MAX_HEADER_BYTES: u32 = 64 << 10;
/// The largest entry a reader accepts: a FEN, 255 moves and a reason fit in far less.
pub const MAX_ENTRY_BYTES: u32 = 8 << 10;
const UNKNOWN_PLIES: u16 = u16::MAX;

/// Who labelled a file, and what: a resumed run must match it exactly.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelHeader {
    /// The engine's command line.
    pub engine: String,
    /// Its UCI options, `(name, value)`, in the order they were set.
    pub options: Vec<(String, String)>,
    /// The search budget per position (`1000 nodes`, `50 ms`, `depth 8`).
    pub limit: String,
    /// How the action values were obtained.
    pub method: Method,
    /// The source of the positions (`pgn:FILE`, `epd:FILE`).
    pub source: String,
    /// What the moves' values are. Files written before this key existed read as
    /// [`ActionValues::ExpectedScore`], what they hold.
    #[serde(default = "ActionValues::before_the_key")]
    pub action_values: ActionValues,
    /// Which side of the held-out split every label of the file is on, for labels of games
    /// split by game (a run's teacher); absent: the file's positions have no game to split by,
    /// and a reader holds out a share of the labels themselves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<LabelSplit>,
}

/// The side of the held-out split a whole label file is on (the header's `split`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelSplit {
    /// Labels of games trained on.
    Training,
    /// Labels of games held out of training, for validation only.
    HeldOut,
}

/// What a label's move values are (the header's `action_values`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionValues {
    /// The win probability of the move's score by Lichess's formula, ChessBench's action
    /// value (`cfzero_teacher::MoveValue::action_value`); what cfzero writes.
    Centipawns,
    /// The expected score `W + D/2` of the engine's W/D/L where it reported one (else the
    /// formula): files written by older versions. Flat over every move of a won or lost
    /// position; still read and trained on.
    ExpectedScore,
}

impl ActionValues {
    fn before_the_key() -> ActionValues {
        ActionValues::ExpectedScore
    }
}

/// A move of a label, as 16 bits (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LabelMove(pub u16);

impl LabelMove {
    /// The compact form of a legal move.
    pub fn of(mv: &Move) -> LabelMove {
        match UciMove::from_move(*mv, CastlingMode::Standard) {
            UciMove::Normal {
                from,
                to,
                promotion,
            } => LabelMove(
                u16::from(from) | u16::from(to) << 6 | promotion.map_or(0, |r| r as u16) << 12,
            ),
            // Neither appears in a legal chess move in standard castling notation.
            UciMove::Put { .. } | UciMove::Null => LabelMove(0),
        }
    }

    /// The move in `position`, if it is legal there.
    pub fn to_move(self, position: &Chess) -> Option<Move> {
        let square = |bits: u16| Square::new(u32::from(bits & 63));
        let promotion = match self.0 >> 12 {
            0 => None,
            r => Some(Role::try_from(r as u8).ok()?),
        };
        UciMove::Normal {
            from: square(self.0),
            to: square(self.0 >> 6),
            promotion,
        }
        .to_move(position)
        .ok()
    }
}

/// A labelled position.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    /// The position.
    pub fen: String,
    /// Plies to the end of the game it came from, when it came from one.
    pub plies_left: Option<u16>,
    /// The teacher's W/D/L for the side to move (of its best move).
    pub wdl: [f32; 3],
    /// Every legal move with its action value for the side to move (see [`ActionValues`]).
    pub moves: Vec<(LabelMove, f32)>,
    /// Index into `moves` of the teacher's choice.
    pub best: usize,
    /// The game's plies before the position, when it came from a game.
    pub history: Option<LabelHistory>,
}

/// The plies of a game before a labelled position: as many as the network's history planes
/// show ([`HISTORY_STEPS`] - 1), fewer near the game's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelHistory {
    /// The position `moves.len()` plies before the labelled one: the game's first position
    /// when the game had fewer plies than the history shows.
    pub root_fen: String,
    /// The moves from the root to the labelled position, in order.
    pub moves: Vec<LabelMove>,
}

impl LabelHistory {
    /// The labelled position as the game reached it: the root, with the net's `fill` before
    /// it, then the moves; `None` when a move is not legal where it is played.
    pub fn replay(&self, fill: HistoryFill) -> Option<ChessState> {
        let mut state = ChessState::from_fen(&self.root_fen, fill).ok()?;
        for mv in &self.moves {
            let mv = mv.to_move(state.position())?;
            state.play_move(mv);
        }
        Some(state)
    }

    /// The moves from the root, as moves of the positions they are played in, when every
    /// one is legal there and they lead to `fen`: the game as an engine is given it.
    pub fn line_to(&self, fen: &str) -> Option<Vec<Move>> {
        let mut state = ChessState::from_fen(&self.root_fen, HistoryFill::No).ok()?;
        let mut moves = Vec::with_capacity(self.moves.len());
        for mv in &self.moves {
            let mv = mv.to_move(state.position())?;
            state.play_move(mv);
            moves.push(mv);
        }
        (state.fen() == fen).then_some(moves)
    }
}

/// The history of each position of a game walked ply by ply: feed it every position before its
/// move ([`GameHistory::push`]) and ask it for the history of the current one.
#[derive(Debug, Default)]
pub struct GameHistory {
    /// The last plies: the position before each move, and the move.
    plies: std::collections::VecDeque<(String, LabelMove)>,
}

impl GameHistory {
    /// The history of `state`, the position after every ply pushed so far.
    pub fn of(&self, state: &ChessState) -> LabelHistory {
        LabelHistory {
            root_fen: self
                .plies
                .front()
                .map_or_else(|| state.fen(), |(fen, _)| fen.clone()),
            moves: self.plies.iter().map(|&(_, mv)| mv).collect(),
        }
    }

    /// Records that `mv` was played in `state`.
    pub fn push(&mut self, state: &ChessState, mv: &Move) {
        if self.plies.len() == HISTORY_STEPS - 1 {
            self.plies.pop_front();
        }
        self.plies.push_back((state.fen(), LabelMove::of(mv)));
    }
}

/// One entry of a label file.
#[derive(Debug, Clone, PartialEq)]
pub enum LabelEntry {
    /// A position and its label.
    Label(Label),
    /// A position the teacher could not label (mate, stalemate, an engine that kept
    /// failing on it), and why.
    Skipped {
        /// The position.
        fen: String,
        /// Why it has no label.
        reason: String,
    },
}

/// What is wrong with a label file.
#[derive(Debug, thiserror::Error)]
pub enum LabelFileError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Not a label file, or one damaged where a kill cannot damage it.
    #[error("{path}: {reason} at byte {offset}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Where.
        offset: u64,
        /// What.
        reason: String,
    },
    /// Resuming with another teacher or source than the file was begun with.
    #[error(
        "{path} was labelled with {found}; this run would label with {wanted}: use another output or the same settings"
    )]
    OtherSettings {
        /// The file.
        path: PathBuf,
        /// The file's header, as JSON.
        found: String,
        /// This run's header, as JSON.
        wanted: String,
    },
}

fn quantize(p: f32) -> u16 {
    (p.clamp(0.0, 1.0) * 65535.0).round() as u16
}

fn dequantize(q: u16) -> f32 {
    f32::from(q) / 65535.0
}

/// The payload of `entry`.
fn encode(entry: &LabelEntry, out: &mut Vec<u8>) {
    out.clear();
    let fen_bytes = |fen: &str, out: &mut Vec<u8>| {
        let fen = &fen.as_bytes()[..fen.len().min(255)];
        out.push(fen.len() as u8);
        out.extend_from_slice(fen);
    };
    match entry {
        LabelEntry::Label(l) => {
            out.push(if l.history.is_some() { 2 } else { 0 });
            fen_bytes(&l.fen, out);
            out.extend_from_slice(
                &l.plies_left
                    .map_or(UNKNOWN_PLIES, |p| p.min(UNKNOWN_PLIES - 1))
                    .to_le_bytes(),
            );
            for p in l.wdl {
                out.extend_from_slice(&quantize(p).to_le_bytes());
            }
            out.push(l.best as u8);
            out.push(l.moves.len() as u8);
            for (mv, p) in &l.moves {
                out.extend_from_slice(&mv.0.to_le_bytes());
                out.extend_from_slice(&quantize(*p).to_le_bytes());
            }
            if let Some(h) = &l.history {
                fen_bytes(&h.root_fen, out);
                let moves = &h.moves[..h.moves.len().min(255)];
                out.push(moves.len() as u8);
                for mv in moves {
                    out.extend_from_slice(&mv.0.to_le_bytes());
                }
            }
        }
        LabelEntry::Skipped { fen, reason } => {
            out.push(1);
            fen_bytes(fen, out);
            let reason = &reason.as_bytes()[..reason.len().min(1024)];
            out.extend_from_slice(&(reason.len() as u16).to_le_bytes());
            out.extend_from_slice(reason);
        }
    }
}

/// The entry of `payload`, or what is wrong with it.
fn decode(payload: &[u8]) -> Result<LabelEntry, String> {
    let mut at = 0;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let bytes = payload
            .get(at..at + n)
            .ok_or_else(|| "entry shorter than its fields".to_string())?;
        at += n;
        Ok(bytes)
    };
    let kind = take(1)?[0];
    let fen_len = usize::from(take(1)?[0]);
    let fen = String::from_utf8(take(fen_len)?.to_vec()).map_err(|_| "FEN not UTF-8")?;
    let u16_at = |b: &[u8]| u16::from_le_bytes([b[0], b[1]]);
    let entry = match kind {
        0 | 2 => {
            let plies = u16_at(take(2)?);
            let mut wdl = [0.0; 3];
            for p in &mut wdl {
                *p = dequantize(u16_at(take(2)?));
            }
            let best = usize::from(take(1)?[0]);
            let n = usize::from(take(1)?[0]);
            let mut moves = Vec::with_capacity(n);
            for _ in 0..n {
                let b = take(4)?;
                moves.push((LabelMove(u16_at(b)), dequantize(u16_at(&b[2..]))));
            }
            if best >= n {
                return Err(format!("best move {best} of {n}"));
            }
            let history = if kind == 2 {
                let root_len = usize::from(take(1)?[0]);
                let root_fen = String::from_utf8(take(root_len)?.to_vec())
                    .map_err(|_| "root FEN not UTF-8")?;
                let plies = usize::from(take(1)?[0]);
                let moves = (0..plies)
                    .map(|_| take(2).map(|b| LabelMove(u16_at(b))))
                    .collect::<Result<_, _>>()?;
                Some(LabelHistory { root_fen, moves })
            } else {
                None
            };
            LabelEntry::Label(Label {
                fen,
                plies_left: (plies != UNKNOWN_PLIES).then_some(plies),
                wdl,
                moves,
                best,
                history,
            })
        }
        1 => {
            let n = usize::from(u16_at(take(2)?));
            let reason = String::from_utf8_lossy(take(n)?).into_owned();
            LabelEntry::Skipped { fen, reason }
        }
        k => return Err(format!("unknown entry kind {k}")),
    };
    if at != payload.len() {
        return Err("entry longer than its fields".into());
    }
    Ok(entry)
}

/// Reads framed data: `None` at a clean end, `Some(Err(torn))` when the file ends inside a
/// frame.
fn read_frame(
    r: &mut impl Read,
    max: u32,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<Result<(), ()>>> {
    let mut len = [0u8; 4];
    match read_full(r, &mut len)? {
        0 => return Ok(None),
        4 => {}
        _ => return Ok(Some(Err(()))),
    }
    let len = u32::from_le_bytes(len);
    if len > max {
        // Not a length a writer produces: only damage gives one.
        return Err(std::io::Error::other(format!(
            "frame of {len} bytes, more than the {max} allowed"
        )));
    }
    buf.resize(len as usize + 4, 0);
    if read_full(r, buf)? < buf.len() {
        return Ok(Some(Err(())));
    }
    Ok(Some(Ok(())))
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Checks a frame read by [`read_frame`] into `buf` (payload then CRC) and returns the payload.
fn checked(buf: &[u8]) -> Option<&[u8]> {
    let (payload, crc) = buf.split_at(buf.len() - 4);
    (crc32fast::hash(payload).to_le_bytes() == crc).then_some(payload)
}

/// A label file read from its start.
#[derive(Debug)]
pub struct LabelReader {
    path: PathBuf,
    reader: BufReader<File>,
    header: LabelHeader,
    offset: u64,
    buf: Vec<u8>,
    torn: bool,
}

impl LabelReader {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path) -> Result<LabelReader, LabelFileError> {
        let io = |source| LabelFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let corrupt = |offset, reason: &str| LabelFileError::Corrupt {
            path: path.to_path_buf(),
            offset,
            reason: reason.to_string(),
        };
        let mut reader = BufReader::new(File::open(path).map_err(io)?);
        let mut magic = [0u8; 8];
        if read_full(&mut reader, &mut magic).map_err(io)? < 8 || &magic != MAGIC {
            return Err(corrupt(0, "not a cfzero label file (no CFZLBL01 magic)"));
        }
        let mut buf = Vec::new();
        match read_frame(&mut reader, MAX_HEADER_BYTES, &mut buf)
            .map_err(|e| corrupt(8, &e.to_string()))?
        {
            Some(Ok(())) => {}
            _ => return Err(corrupt(8, "the file ends inside its header")),
        }
        let payload = checked(&buf).ok_or_else(|| corrupt(8, "header checksum mismatch"))?;
        let header: LabelHeader = serde_json::from_slice(payload)
            .map_err(|e| corrupt(12, &format!("header is not a label header: {e}")))?;
        let offset = 8 + buf.len() as u64 + 4;
        Ok(LabelReader {
            path: path.to_path_buf(),
            reader,
            header,
            offset,
            buf,
            torn: false,
        })
    }

    /// Opens `path` and reads on from byte `offset`, the [`LabelReader::offset`] an earlier
    /// reader of the same file reached: how a file a writer is still appending to is read
    /// a piece at a time.
    pub fn open_at(path: &Path, offset: u64) -> Result<LabelReader, LabelFileError> {
        let mut r = LabelReader::open(path)?;
        if offset < r.offset {
            return Err(LabelFileError::Corrupt {
                path: path.to_path_buf(),
                offset,
                reason: format!("resuming inside the header (it ends at byte {})", r.offset),
            });
        }
        r.reader
            .seek(SeekFrom::Start(offset))
            .map_err(|source| LabelFileError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        r.offset = offset;
        Ok(r)
    }

    /// Who labelled the file, and what.
    pub fn header(&self) -> &LabelHeader {
        &self.header
    }

    /// The next entry; `None` at the end of the file or of its last whole frame (see
    /// [`LabelReader::torn`]).
    pub fn next_entry(&mut self) -> Result<Option<LabelEntry>, LabelFileError> {
        if self.torn {
            return Ok(None);
        }
        let start = self.offset;
        let corrupt = |reason: String| LabelFileError::Corrupt {
            path: self.path.clone(),
            offset: start,
            reason,
        };
        let frame = read_frame(&mut self.reader, MAX_ENTRY_BYTES, &mut self.buf)
            .map_err(|e| corrupt(e.to_string()))?;
        match frame {
            None => Ok(None),
            Some(Err(())) => {
                self.torn = true;
                Ok(None)
            }
            Some(Ok(())) => {
                let payload =
                    checked(&self.buf).ok_or_else(|| corrupt("entry checksum mismatch".into()))?;
                let entry = decode(payload).map_err(corrupt)?;
                self.offset += 4 + self.buf.len() as u64;
                Ok(Some(entry))
            }
        }
    }

    /// Whether the file ended inside a frame (a killed writer's last entry).
    pub fn torn(&self) -> bool {
        self.torn
    }

    /// Bytes of whole frames read so far (the header's included).
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

/// Appends entries to a label file, creating it or resuming it.
#[derive(Debug)]
pub struct LabelWriter {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
}

/// A writer and what it found in the file it resumes.
#[derive(Debug)]
pub struct Resumed {
    /// The writer, positioned after the last whole entry.
    pub writer: LabelWriter,
    /// Entries already in the file: the source positions done.
    pub entries: usize,
    /// Whether a partial last entry was cut off.
    pub cut: bool,
}

impl LabelWriter {
    /// Opens `path` for `header`: a new file when none exists, else the file is checked
    /// entry by entry, a partial last entry cut off, and writing goes on after it. A file
    /// begun with another header is an error.
    pub fn open(path: &Path, header: &LabelHeader) -> Result<Resumed, LabelFileError> {
        let io = |source| LabelFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        if !path.exists() {
            let mut file = File::create(path).map_err(io)?;
            let json = serde_json::to_vec(header).expect("a header serialises");
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&(json.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&json);
            bytes.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
            file.write_all(&bytes).map_err(io)?;
            file.sync_all().map_err(io)?;
            return Ok(Resumed {
                writer: LabelWriter {
                    path: path.to_path_buf(),
                    file,
                    buf: Vec::new(),
                },
                entries: 0,
                cut: false,
            });
        }
        let mut reader = LabelReader::open(path)?;
        if reader.header() != header {
            let json = |h: &LabelHeader| serde_json::to_string(h).expect("a header serialises");
            return Err(LabelFileError::OtherSettings {
                path: path.to_path_buf(),
                found: json(reader.header()),
                wanted: json(header),
            });
        }
        let mut entries = 0;
        while reader.next_entry()?.is_some() {
            entries += 1;
        }
        let (end, cut) = (reader.offset(), reader.torn());
        let mut file = OpenOptions::new().write(true).open(path).map_err(io)?;
        file.set_len(end).map_err(io)?;
        file.seek(SeekFrom::Start(end)).map_err(io)?;
        Ok(Resumed {
            writer: LabelWriter {
                path: path.to_path_buf(),
                file,
                buf: Vec::new(),
            },
            entries,
            cut,
        })
    }

    /// Appends `entry` in one write: a kill leaves it whole or partial, never altered.
    pub fn append(&mut self, entry: &LabelEntry) -> Result<(), LabelFileError> {
        let mut payload = std::mem::take(&mut self.buf);
        encode(entry, &mut payload);
        let mut frame = Vec::with_capacity(payload.len() + 8);
        frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        frame.extend_from_slice(&payload);
        frame.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        self.buf = payload;
        self.file
            .write_all(&frame)
            .map_err(|source| LabelFileError::Io {
                path: self.path.clone(),
                source,
            })
    }

    /// Flushes the file to disk (a labelling run calls it at the end and now and then).
    pub fn sync(&mut self) -> Result<(), LabelFileError> {
        self.file.sync_data().map_err(|source| LabelFileError::Io {
            path: self.path.clone(),
            source,
        })
    }
}
