//! Lc0's V6 training record (`V6TrainingData` in Lc0's `src/trainingdata/trainingdata_v6.h`):
//! a packed little-endian struct of 8,356 bytes per position, one gzip file per game.
//!
//! Facts of the format that this module depends on:
//! - the 104 history planes are bitboards whose bits are reversed within each byte (Lc0's
//!   `ReverseBitsInBytes`): bit 7 of byte 0 is a1; [`V6Record::planes`] holds them in
//!   cfzero's order (bit 0 = a1) and [`V6Record::encode`] reverses them back;
//! - boards are seen from the side to move (ranks mirrored for Black), exactly as cfzero's
//!   [`encode_planes`](cfzero_network::encoding::encode_planes) builds them;
//! - with input format 1 (`INPUT_CLASSICAL_112_PLANE`) the castling bytes are 0/1, the
//!   side-to-move byte is 1 for Black and the rule-50 byte is the raw halfmove clock; the
//!   other input formats (canonicalised, Armageddon) are refused, since cfzero's nets read
//!   only the classical planes;
//! - probabilities are -1 for illegal moves; results and values are from the side to move.

use std::io::Read;

use cfzero_network::encoding::{HALFMOVE_PLANE, InputPlanes, PLANES, POLICY_SIZE};
use thiserror::Error;

/// Bytes of one V6 record.
pub const V6_RECORD_BYTES: usize = 8356;

/// The `version` field of a V6 record.
pub const V6_VERSION: u32 = 6;

/// The `input_format` of the classical 112 planes, the only one cfzero reads.
pub const INPUT_CLASSICAL_112: u32 = 1;

/// History planes stored as bitboards (8 steps of 13 planes).
pub const HISTORY_PLANES: usize = 104;

/// Largest decompressed chunk accepted: about 32,000 positions, far beyond any game Lc0
/// writes (its games end by 450 moves), so that a hostile file cannot request gigabytes.
pub const MAX_CHUNK_BYTES: u64 = 256 << 20;

/// `invariance_info` bit: the rescorer marked the position for deletion.
const MARKED_FOR_DELETION: u8 = 1 << 6;

/// What is wrong with V6 data.
#[derive(Debug, Error)]
pub enum V6Error {
    /// The data ends inside a record.
    #[error("{len} bytes is not a whole number of {V6_RECORD_BYTES}-byte V6 records")]
    Truncated {
        /// Bytes of (decompressed) data.
        len: usize,
    },
    /// A record of another version (V7 records are 8,396 bytes, older ones smaller).
    #[error("record {index}: version {version}, only version 6 is read")]
    Version {
        /// Record within the chunk.
        index: usize,
        /// Its version field.
        version: u32,
    },
    /// An input format other than the classical planes.
    #[error(
        "record {index}: input format {format}; cfzero reads only format 1 (classical 112 planes)"
    )]
    InputFormat {
        /// Record within the chunk.
        index: usize,
        /// Its input format.
        format: u32,
    },
    /// A value that no writer produces (NaN probability, flag byte above 1, ...).
    #[error("record {index}: {what}")]
    Invalid {
        /// Record within the chunk.
        index: usize,
        /// What is wrong.
        what: String,
    },
    /// Decompressing failed or exceeded [`MAX_CHUNK_BYTES`].
    #[error("gzip: {0}")]
    Gzip(String),
}

/// One position of Lc0 training data, every field of `V6TrainingData`.
#[derive(Debug, Clone, PartialEq)]
pub struct V6Record {
    /// Struct version (6).
    pub version: u32,
    /// Input format (1 = classical 112 planes).
    pub input_format: u32,
    /// The search's policy target over the 1858 moves; -1 marks illegal moves.
    pub probabilities: Vec<f32>,
    /// The 104 history planes, bit 0 = a1 (cfzero's order, see the module docs).
    pub planes: [u64; HISTORY_PLANES],
    /// Castling rights: us queen side, us king side, them queen side, them king side.
    pub castling: [u8; 4],
    /// 1 if Black is to move (format 1).
    pub side_to_move_or_enpassant: u8,
    /// Halfmove clock.
    pub rule50_count: u8,
    /// Flags (see [`V6Record::marked_for_deletion`]).
    pub invariance_info: u8,
    /// Unused since V6 (was the result).
    pub dummy: u8,
    /// Search value at the root (side to move).
    pub root_q: f32,
    /// Value of the best move.
    pub best_q: f32,
    /// Draw probability at the root.
    pub root_d: f32,
    /// Draw probability of the best move.
    pub best_d: f32,
    /// Moves left at the root, in plies.
    pub root_m: f32,
    /// Moves left of the best move, in plies.
    pub best_m: f32,
    /// Plies to the end of the game: the moves-left target.
    pub plies_left: f32,
    /// Game result for the side to move (-1, 0, 1).
    pub result_q: f32,
    /// 1 if the game was drawn.
    pub result_d: f32,
    /// Value of the played move.
    pub played_q: f32,
    /// Draw probability of the played move.
    pub played_d: f32,
    /// Moves left of the played move.
    pub played_m: f32,
    /// The net's own value (NaN if unknown).
    pub orig_q: f32,
    /// The net's own draw probability (NaN if unknown).
    pub orig_d: f32,
    /// The net's own moves left (NaN if unknown).
    pub orig_m: f32,
    /// Visits of the search.
    pub visits: u32,
    /// Policy index of the move played.
    pub played_idx: u16,
    /// Policy index of the search's best move.
    pub best_idx: u16,
    /// KL divergence of the policy target from the net's policy.
    pub policy_kld: f32,
    /// Reserved.
    pub reserved: u32,
}

/// Little-endian reader over one record's bytes.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let out = self.bytes[self.at..self.at + N]
            .try_into()
            .expect("the caller checked the record's length");
        self.at += N;
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn f32(&mut self) -> f32 {
        f32::from_le_bytes(self.take())
    }
}

/// Lc0's bit order within the bytes of a stored plane and cfzero's differ by a reversal
/// of each byte's bits; the same function converts both ways.
fn reverse_bits_in_bytes(bb: u64) -> u64 {
    u64::from_le_bytes(bb.to_le_bytes().map(u8::reverse_bits))
}

impl V6Record {
    /// Decodes record `index` of a chunk from exactly [`V6_RECORD_BYTES`] bytes, checking the
    /// version, the input format and that every field holds a value a writer produces.
    pub fn decode(bytes: &[u8], index: usize) -> Result<V6Record, V6Error> {
        if bytes.len() != V6_RECORD_BYTES {
            return Err(V6Error::Truncated { len: bytes.len() });
        }
        let mut f = Fields { bytes, at: 0 };
        let version = f.u32();
        if version != V6_VERSION {
            return Err(V6Error::Version { index, version });
        }
        let input_format = f.u32();
        if input_format != INPUT_CLASSICAL_112 {
            return Err(V6Error::InputFormat {
                index,
                format: input_format,
            });
        }
        let probabilities: Vec<f32> = (0..POLICY_SIZE).map(|_| f.f32()).collect();
        let mut planes = [0u64; HISTORY_PLANES];
        for p in &mut planes {
            *p = reverse_bits_in_bytes(f.u64());
        }
        let castling = [f.u8(), f.u8(), f.u8(), f.u8()];
        let record = V6Record {
            version,
            input_format,
            probabilities,
            planes,
            castling,
            side_to_move_or_enpassant: f.u8(),
            rule50_count: f.u8(),
            invariance_info: f.u8(),
            dummy: f.u8(),
            root_q: f.f32(),
            best_q: f.f32(),
            root_d: f.f32(),
            best_d: f.f32(),
            root_m: f.f32(),
            best_m: f.f32(),
            plies_left: f.f32(),
            result_q: f.f32(),
            result_d: f.f32(),
            played_q: f.f32(),
            played_d: f.f32(),
            played_m: f.f32(),
            orig_q: f.f32(),
            orig_d: f.f32(),
            orig_m: f.f32(),
            visits: f.u32(),
            played_idx: f.u16(),
            best_idx: f.u16(),
            policy_kld: f.f32(),
            reserved: f.u32(),
        };
        debug_assert_eq!(f.at, V6_RECORD_BYTES);
        record.check(index)?;
        Ok(record)
    }

    /// The values a trainer relies on are in range: probabilities finite and in [0, 1] or
    /// exactly -1, at least one legal move, flags 0/1, targets finite.
    fn check(&self, index: usize) -> Result<(), V6Error> {
        let invalid = |what: String| Err(V6Error::Invalid { index, what });
        let mut legal = 0;
        for (i, &p) in self.probabilities.iter().enumerate() {
            if p == -1.0 {
                continue;
            }
            if !(0.0..=1.0).contains(&p) {
                return invalid(format!("probability {p} at policy index {i}"));
            }
            legal += 1;
        }
        if legal == 0 {
            return invalid("no legal move".into());
        }
        if self.castling.iter().any(|&c| c > 1) || self.side_to_move_or_enpassant > 1 {
            return invalid("castling or side-to-move byte above 1".into());
        }
        for (name, v) in [
            ("result_q", self.result_q),
            ("result_d", self.result_d),
            ("best_q", self.best_q),
            ("best_d", self.best_d),
            ("root_q", self.root_q),
            ("plies_left", self.plies_left),
        ] {
            if !v.is_finite() {
                return invalid(format!("{name} is {v}"));
            }
        }
        if usize::from(self.played_idx) >= POLICY_SIZE || usize::from(self.best_idx) >= POLICY_SIZE
        {
            return invalid("move index beyond the 1858 policy entries".into());
        }
        Ok(())
    }

    /// The record's bytes, exactly as Lc0 writes them.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.input_format.to_le_bytes());
        for p in &self.probabilities {
            out.extend_from_slice(&p.to_le_bytes());
        }
        for &p in &self.planes {
            out.extend_from_slice(&reverse_bits_in_bytes(p).to_le_bytes());
        }
        out.extend_from_slice(&self.castling);
        out.extend_from_slice(&[
            self.side_to_move_or_enpassant,
            self.rule50_count,
            self.invariance_info,
            self.dummy,
        ]);
        for v in [
            self.root_q,
            self.best_q,
            self.root_d,
            self.best_d,
            self.root_m,
            self.best_m,
            self.plies_left,
            self.result_q,
            self.result_d,
            self.played_q,
            self.played_d,
            self.played_m,
            self.orig_q,
            self.orig_d,
            self.orig_m,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.visits.to_le_bytes());
        out.extend_from_slice(&self.played_idx.to_le_bytes());
        out.extend_from_slice(&self.best_idx.to_le_bytes());
        out.extend_from_slice(&self.policy_kld.to_le_bytes());
        out.extend_from_slice(&self.reserved.to_le_bytes());
        debug_assert_eq!(out.len() - start, V6_RECORD_BYTES);
    }

    /// Whether Lc0's rescorer marked the position for deletion (never to be trained on).
    pub fn marked_for_deletion(&self) -> bool {
        self.invariance_info & MARKED_FOR_DELETION != 0
    }

    /// Whether Black is to move.
    pub fn black_to_move(&self) -> bool {
        self.side_to_move_or_enpassant == 1
    }

    /// The 112 input planes of the position, as cfzero's encoder builds them.
    pub fn input_planes(&self) -> InputPlanes {
        input_planes_of(
            &self.planes,
            self.castling,
            self.side_to_move_or_enpassant,
            self.rule50_count,
        )
    }

    /// The history planes, castling, side-to-move and rule-50 fields of `planes` (as
    /// [`encode_planes`](cfzero_network::encoding::encode_planes) builds them): the inverse
    /// of [`V6Record::input_planes`].
    pub fn set_input_planes(&mut self, planes: &InputPlanes) {
        self.planes.copy_from_slice(&planes.masks[..HISTORY_PLANES]);
        for i in 0..4 {
            self.castling[i] = u8::from(planes.masks[HISTORY_PLANES + i] != 0);
        }
        self.side_to_move_or_enpassant = u8::from(planes.masks[HISTORY_PLANES + 4] != 0);
        self.rule50_count = planes.values[HALFMOVE_PLANE].clamp(0.0, 255.0) as u8;
    }

    /// The position the record holds, or `None` when its planes and fields do not make a
    /// legal chess position (or the record is not of the classical 112-plane format). Piece
    /// placement, side to move, castling rights (kept only where king and rook stand on their
    /// squares) and the rule-50 count come from the record; the en passant square from the
    /// last two boards (a pawn of the side that just moved, from its second rank to its
    /// fourth); the move number, which V6 does not keep, is 1.
    pub fn position(&self) -> Option<shakmaty::Chess> {
        use shakmaty::{Bitboard, CastlingMode, Color, FromSetup, Piece, Role, Setup, Square};
        if self.input_format != INPUT_CLASSICAL_112 {
            return None;
        }
        let us = if self.black_to_move() {
            Color::Black
        } else {
            Color::White
        };
        // Boards are seen from the side to move: Black's are mirrored (a byte swap).
        let orient = |bb: u64| {
            if us == Color::Black {
                bb.swap_bytes()
            } else {
                bb
            }
        };
        let mut setup = Setup::empty();
        for (i, role) in Role::ALL.into_iter().enumerate() {
            for (color, plane) in [(us, i), (!us, 6 + i)] {
                for sq in Bitboard(orient(self.planes[plane])) {
                    setup.board.set_piece_at(sq, Piece { color, role });
                }
            }
        }
        setup.turn = us;
        // [ours queenside, ours kingside, theirs queenside, theirs kingside].
        let mut rights = Bitboard::EMPTY;
        for (k, &flag) in self.castling.iter().enumerate() {
            let color = if k < 2 { us } else { !us };
            let rank = if color == Color::White { 0 } else { 7 };
            let (king, rook) = (
                Square::from_coords(shakmaty::File::E, shakmaty::Rank::new(rank)),
                Square::from_coords(
                    if k % 2 == 0 {
                        shakmaty::File::A
                    } else {
                        shakmaty::File::H
                    },
                    shakmaty::Rank::new(rank),
                ),
            );
            let there =
                |sq: Square, role: Role| setup.board.piece_at(sq) == Some(Piece { color, role });
            if flag != 0 && there(king, Role::King) && there(rook, Role::Rook) {
                rights |= Bitboard::from(rook);
            }
        }
        setup.castling_rights = rights;
        // En passant: in the oriented boards the opponent's pawns move down the board, so a
        // double step is a pawn gone from rank 7 and one come to rank 5 on the same file
        // between the last board and the one before (13 planes a history step).
        let (now, before) = (self.planes[6], self.planes[13 + 6]);
        let (gone, come) = (before & !now, now & !before);
        if gone.count_ones() == 1 && come.count_ones() == 1 {
            let (from, to) = (gone.trailing_zeros(), come.trailing_zeros());
            if from / 8 == 6 && to / 8 == 4 && from % 8 == to % 8 {
                let target = Bitboard(orient(1u64 << (to + 8)));
                setup.ep_square = target.into_iter().next();
            }
        }
        setup.halfmoves = u32::from(self.rule50_count);
        shakmaty::Chess::from_setup(setup, CastlingMode::Standard)
            .or_else(shakmaty::PositionError::ignore_invalid_ep_square)
            .ok()
    }

    /// A record with every field zero except the version and input format, and every
    /// probability -1 (no move legal yet); for writers that fill it in.
    pub fn empty() -> V6Record {
        V6Record {
            version: V6_VERSION,
            input_format: INPUT_CLASSICAL_112,
            probabilities: vec![-1.0; POLICY_SIZE],
            planes: [0; HISTORY_PLANES],
            castling: [0; 4],
            side_to_move_or_enpassant: 0,
            rule50_count: 0,
            invariance_info: 0,
            dummy: 0,
            root_q: 0.0,
            best_q: 0.0,
            root_d: 0.0,
            best_d: 0.0,
            root_m: 0.0,
            best_m: 0.0,
            plies_left: 0.0,
            result_q: 0.0,
            result_d: 0.0,
            played_q: 0.0,
            played_d: 0.0,
            played_m: 0.0,
            orig_q: f32::NAN,
            orig_d: f32::NAN,
            orig_m: f32::NAN,
            visits: 0,
            played_idx: 0,
            best_idx: 0,
            policy_kld: 0.0,
            reserved: 0,
        }
    }
}

/// The 112 input planes of a format-1 record's fields: the history planes (cfzero's bit
/// order), the four castling bytes, the side-to-move byte and the rule-50 count.
pub fn input_planes_of(
    history: &[u64; HISTORY_PLANES],
    castling: [u8; 4],
    black_to_move: u8,
    rule50: u8,
) -> InputPlanes {
    let mut planes = InputPlanes::default();
    planes.masks[..HISTORY_PLANES].copy_from_slice(history);
    let flag = |b: u8| if b != 0 { u64::MAX } else { 0 };
    for (i, &c) in castling.iter().enumerate() {
        planes.masks[HISTORY_PLANES + i] = flag(c);
    }
    planes.masks[HISTORY_PLANES + 4] = flag(black_to_move);
    planes.masks[HALFMOVE_PLANE] = u64::MAX;
    planes.values[HALFMOVE_PLANE] = f32::from(rule50);
    planes.masks[PLANES - 1] = u64::MAX;
    planes
}

/// The records of one chunk: `data` is gzip (Lc0's files) or already raw; a chunk must hold
/// whole records and decompress to at most [`MAX_CHUNK_BYTES`].
pub fn decode_chunk(data: &[u8]) -> Result<Vec<V6Record>, V6Error> {
    let raw;
    let bytes = if data.starts_with(&[0x1f, 0x8b]) {
        raw = gunzip(data)?;
        &raw[..]
    } else {
        data
    };
    if bytes.len() % V6_RECORD_BYTES != 0 {
        return Err(V6Error::Truncated { len: bytes.len() });
    }
    bytes
        .chunks_exact(V6_RECORD_BYTES)
        .enumerate()
        .map(|(i, r)| V6Record::decode(r, i))
        .collect()
}

/// Decompresses gzip (multi-member, as concatenated writers produce) up to [`MAX_CHUNK_BYTES`].
fn gunzip(data: &[u8]) -> Result<Vec<u8>, V6Error> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(data)
        .take(MAX_CHUNK_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| V6Error::Gzip(e.to_string()))?;
    if out.len() as u64 > MAX_CHUNK_BYTES {
        return Err(V6Error::Gzip(format!(
            "decompresses to more than {} MiB",
            MAX_CHUNK_BYTES >> 20
        )));
    }
    Ok(out)
}

/// `records` as one gzip chunk, as Lc0 writes a game.
pub fn encode_chunk(records: &[V6Record]) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    let mut raw = Vec::with_capacity(records.len() * V6_RECORD_BYTES);
    for r in records {
        r.encode(&mut raw);
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&raw)?;
    gz.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_reversal_maps_lc0s_d1_to_cfzeros_d1() {
        // Lc0 stores the white queen on d1 as bit 4 of byte 0 (0x10); a1 = bit 0 puts d1 at 3.
        assert_eq!(reverse_bits_in_bytes(0x10), 0x08);
        assert_eq!(
            reverse_bits_in_bytes(reverse_bits_in_bytes(0x1234_5678_9abc_def0)),
            0x1234_5678_9abc_def0
        );
    }

    #[test]
    fn an_encoded_record_decodes_to_itself() {
        let mut r = V6Record::empty();
        r.probabilities[7] = 0.25;
        r.probabilities[100] = 0.75;
        r.planes[3] = 0x0000_0000_0000_0081;
        r.result_q = -1.0;
        r.plies_left = 40.0;
        r.played_idx = 100;
        let mut bytes = Vec::new();
        r.encode(&mut bytes);
        assert_eq!(bytes.len(), V6_RECORD_BYTES);
        let back = V6Record::decode(&bytes, 0).unwrap();
        assert_eq!(back.probabilities, r.probabilities);
        assert_eq!(back.planes, r.planes);
        assert_eq!(
            (back.result_q, back.plies_left, back.played_idx),
            (-1.0, 40.0, 100)
        );
        assert!(back.orig_q.is_nan());
    }

    #[test]
    fn bad_chunks_are_errors() {
        let mut bytes = Vec::new();
        V6Record::empty().encode(&mut bytes);
        // No legal move.
        assert!(matches!(decode_chunk(&bytes), Err(V6Error::Invalid { .. })));
        assert!(matches!(
            decode_chunk(&bytes[..100]),
            Err(V6Error::Truncated { len: 100 })
        ));
        bytes[0] = 7;
        assert!(matches!(
            decode_chunk(&bytes),
            Err(V6Error::Version { version: 7, .. })
        ));
        assert!(matches!(
            decode_chunk(&[0x1f, 0x8b, 1, 2, 3]),
            Err(V6Error::Gzip(_))
        ));
    }
}
