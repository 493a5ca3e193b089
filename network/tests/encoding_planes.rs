//! The 112 input planes (docs/METHODS.md §1): bit for bit Lc0's on its interop vectors, plus
//! hand-checked positions and the colour-mirror property.

use std::path::PathBuf;

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_network::encoding::{
    HALFMOVE_PLANE, HALFMOVE_SCALE, InputPlanes, PLANES, TOKEN_FLOATS, encode_planes, encode_tokens,
};
use serde_json::Value;
use shakmaty::fen::Fen;

const ALL: u64 = u64::MAX;
const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// Bitboard of rank `r` (1..=8).
const fn rank(r: u32) -> u64 {
    0xff << (8 * (r - 1))
}

/// Bitboard of the named squares.
fn squares(names: &[&str]) -> u64 {
    names
        .iter()
        .map(|n| {
            let b = n.as_bytes();
            1u64 << ((b[1] - b'1') * 8 + (b[0] - b'a'))
        })
        .fold(0, |a, b| a | b)
}

fn state(fen: &str, fill: HistoryFill, moves: &str) -> ChessState {
    let mut s = ChessState::from_fen(fen, fill).unwrap();
    s.play_uci_line(moves).unwrap();
    s
}

fn start_after(moves: &str) -> InputPlanes {
    encode_planes(&state(START, HistoryFill::No, moves))
}

/// The start position's piece planes (white's view) as our/their P, N, B, R, Q, K.
const START_PIECES: [u64; 12] = [
    rank(2),
    0x42,
    0x24,
    0x81,
    0x08,
    0x10,
    rank(7),
    0x42 << 56,
    0x24 << 56,
    0x81 << 56,
    0x08 << 56,
    0x10 << 56,
];

#[test]
fn planes_equal_lc0s_on_all_interop_vectors() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/lc0/vectors.json");
    let vectors: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = vectors["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 36);
    for (n, case) in cases.iter().enumerate() {
        let fill = match case["history_fill"].as_str().unwrap() {
            "no" => HistoryFill::No,
            "fen_only" => HistoryFill::FenOnly,
            other => panic!("unknown history fill {other}"),
        };
        let fen = case["fen"].as_str().unwrap();
        let mut s = ChessState::from_fen(fen, fill).unwrap();
        for m in case["moves"].as_array().unwrap() {
            s.play_uci(m.as_str().unwrap()).unwrap();
        }
        let what = format!("case {n}: {fen} moves {} ({fill:?})", case["moves"]);
        assert_eq!(s.fen(), case["final_fen"].as_str().unwrap(), "{what}");
        let reps = case["repetitions_per_ply"].as_array().unwrap();
        assert_eq!(
            u64::from(s.repetitions()),
            reps.last().unwrap().as_u64().unwrap(),
            "{what}"
        );
        let planes = encode_planes(&s);
        let expected = case["planes"].as_array().unwrap();
        assert_eq!(expected.len(), PLANES);
        for (p, e) in expected.iter().enumerate() {
            let hex = e["mask"].as_str().unwrap().trim_start_matches("0x");
            let mask = u64::from_str_radix(hex, 16).unwrap();
            let value = e["value"].as_f64().unwrap() as f32;
            assert_eq!(
                planes.masks[p], mask,
                "{what}: mask of plane {p}: {:#018x} vs lc0 {mask:#018x}",
                planes.masks[p]
            );
            assert_eq!(
                planes.values[p].to_bits(),
                value.to_bits(),
                "{what}: value of plane {p}: {} vs lc0 {value}",
                planes.values[p]
            );
        }
    }
}

/// The planes of the non-piece, non-history inputs: castling (us QS, us KS, them QS,
/// them KS), black to move, the halfmove clock's value.
fn aux(p: &InputPlanes) -> ([u64; 4], bool, f32) {
    (
        [p.masks[104], p.masks[105], p.masks[106], p.masks[107]],
        p.masks[108] == ALL,
        p.values[HALFMOVE_PLANE],
    )
}

#[test]
fn start_position() {
    let p = start_after("");
    assert_eq!(p.masks[..12], START_PIECES);
    // No history, no repetition.
    assert!(p.masks[12..104].iter().all(|&m| m == 0));
    assert_eq!(aux(&p), ([ALL; 4], false, 0.0));
    assert_eq!(p.masks[HALFMOVE_PLANE], ALL);
    assert_eq!(p.masks[110], 0);
    assert_eq!(p.masks[111], ALL);
    // `fen_only` is not applied to the standard start position.
    assert_eq!(
        encode_planes(&state(START, HistoryFill::FenOnly, "")),
        p,
        "fen_only start position"
    );
}

#[test]
fn after_e4_black_to_move_sees_the_board_mirrored() {
    let p = start_after("e2e4");
    // Our (black) pieces are at the bottom; white's e-pawn on e4 shows as e5.
    assert_eq!(p.masks[0], rank(2), "our pawns");
    assert_eq!(p.masks[5], squares(&["e1"]), "our king");
    assert_eq!(
        p.masks[4],
        squares(&["d1"]),
        "our queen stays on the d-file"
    );
    assert_eq!(
        p.masks[6],
        (rank(7) & !squares(&["e7"])) | squares(&["e5"]),
        "their pawns"
    );
    assert_eq!(p.masks[11], squares(&["e8"]), "their king");
    // One step back: the start position, also from black's view.
    assert_eq!(p.masks[13..25], START_PIECES);
    assert!(p.masks[25..104].iter().all(|&m| m == 0));
    assert_eq!(aux(&p), ([ALL; 4], true, 0.0));
}

#[test]
fn castling_rights_are_lost_after_king_and_rook_moves() {
    // 2.Ke2: white loses both; black (to move) keeps both.
    let p = start_after("e2e4 e7e5 e1e2");
    assert_eq!(aux(&p).0, [ALL, ALL, 0, 0]);
    // 2...Ke7: nobody can castle.
    let p = start_after("e2e4 e7e5 e1e2 e8e7");
    assert_eq!(aux(&p).0, [0, 0, 0, 0]);
    // 1.h4 a5 2.Rh3: white loses only O-O, seen as "they" by black.
    let p = start_after("h2h4 a7a5 h1h3");
    assert_eq!(aux(&p).0, [ALL, ALL, ALL, 0]);
    // 2...Ra6: black loses only O-O-O, "they" from white's view.
    let p = start_after("h2h4 a7a5 h1h3 a8a6");
    assert_eq!(aux(&p).0, [ALL, 0, 0, ALL]);
    // Castling itself loses both rights of the castling side.
    let p = start_after("e2e4 e7e5 g1f3 b8c6 f1c4 f8c5 e1g1");
    assert_eq!(aux(&p).0, [ALL, ALL, 0, 0]);
}

#[test]
fn repetition_planes_after_a_knight_shuffle() {
    // Back at the start position after four plies: its second occurrence.
    let p = start_after("g1f3 g8f6 f3g1 f6g8");
    let rep = |t: usize| p.masks[13 * t + 12];
    assert_eq!(rep(0), ALL);
    assert!((1..8).all(|t| rep(t) == 0));
    assert_eq!(p.masks[..12], START_PIECES);
    assert_eq!(p.masks[52..64], START_PIECES, "t=4 is the first occurrence");
    assert_eq!(p.values[HALFMOVE_PLANE], 4.0);
    // One more ply: Nf3 also occurred before, and the start position stays flagged at t=1.
    let p = start_after("g1f3 g8f6 f3g1 f6g8 g1f3");
    let rep = |t: usize| p.masks[13 * t + 12];
    assert_eq!(
        [rep(0), rep(1), rep(2), rep(3), rep(4)],
        [ALL, ALL, 0, 0, 0]
    );
    // Third occurrence of the start position: still one plane (count 2 >= 1).
    let s = state(
        START,
        HistoryFill::No,
        "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8",
    );
    assert_eq!(s.repetitions(), 2);
    let p = encode_planes(&s);
    let rep = |t: usize| p.masks[13 * t + 12];
    assert_eq!(
        (0..8).map(rep).collect::<Vec<_>>(),
        [ALL, ALL, ALL, ALL, ALL, 0, 0, 0]
    );
}

#[test]
fn halfmove_clock_is_the_raw_count_and_tokens_divide_by_99() {
    let fen = "2r3k1/5pp1/p3p2p/1p6/3R4/P3P2P/1P3PP1/6K1 w - - 35 40";
    let s = state(fen, HistoryFill::No, "d4d7 g8f8");
    let p = encode_planes(&s);
    assert_eq!(p.masks[HALFMOVE_PLANE], ALL);
    assert_eq!(p.values[HALFMOVE_PLANE], 37.0);
    let mut tokens = vec![0.0; TOKEN_FLOATS];
    encode_tokens(&s, &mut tokens);
    for sq in [0, 27, 63] {
        assert_eq!(tokens[sq * PLANES + HALFMOVE_PLANE], 37.0 / HALFMOVE_SCALE);
        assert_eq!(tokens[sq * PLANES + 111], 1.0);
        assert_eq!(tokens[sq * PLANES + 110], 0.0);
    }
    // A capture resets it.
    let p = encode_planes(&state(fen, HistoryFill::No, "d4d7 g8f8 d7f7"));
    assert_eq!(p.values[HALFMOVE_PLANE], 0.0);
    // A pawn move too.
    let p = encode_planes(&state(fen, HistoryFill::No, "d4d7 g8f8 a3a4"));
    assert_eq!(p.values[HALFMOVE_PLANE], 0.0);
}

/// The colour-flipped twin of a FEN: board mirrored, colours, turn and rights swapped.
fn mirror_fen(fen: &str) -> String {
    let parsed: Fen = fen.parse().unwrap();
    Fen::try_from_setup(parsed.into_setup().into_mirrored())
        .unwrap()
        .to_string()
}

/// A UCI move of the colour-flipped game (ranks r -> 9 - r).
fn mirror_uci(uci: &str) -> String {
    uci.chars()
        .map(|c| match c {
            '1'..='8' => (b'1' + b'8' - c as u8) as char,
            c => c,
        })
        .collect()
}

#[test]
fn a_position_and_its_colour_flipped_twin_encode_identically() {
    let cases = [
        // Asymmetric castling rights, black to move.
        (
            "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R b KQq - 6 8",
            "e8c8 e1g1 h7h6 c4b5 a7a6",
        ),
        // En passant square in the FEN, then a capture and promotions.
        (
            "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
            "e5f6 g8h6 f6g7 b8c6 g7h8q",
        ),
        // Quiet moves with a running clock.
        (
            "2r3k1/5pp1/p3p2p/1p6/3R4/P3P2P/1P3PP1/6K1 w - - 35 40",
            "d4d7 c8c2 g1f1 g8f8",
        ),
    ];
    for (fen, moves) in cases {
        let twin_fen = mirror_fen(fen);
        let twin_moves: Vec<String> = moves.split_whitespace().map(mirror_uci).collect();
        for fill in [HistoryFill::No, HistoryFill::FenOnly] {
            let mut a = ChessState::from_fen(fen, fill).unwrap();
            let mut b = ChessState::from_fen(&twin_fen, fill).unwrap();
            // Compare after every ply, so history of every length is covered.
            for ply in 0..=twin_moves.len() {
                let (pa, pb) = (encode_planes(&a), encode_planes(&b));
                let what = format!("{fen} ({fill:?}) after {ply} plies");
                for plane in 0..PLANES {
                    if plane == 108 {
                        // Only "black to move" tells the twins apart.
                        assert_eq!(pa.masks[plane] ^ pb.masks[plane], ALL, "{what}");
                    } else {
                        assert_eq!(pa.masks[plane], pb.masks[plane], "{what}: plane {plane}");
                        assert_eq!(pa.values[plane], pb.values[plane], "{what}: plane {plane}");
                    }
                }
                if ply < twin_moves.len() {
                    a.play_uci(moves.split_whitespace().nth(ply).unwrap())
                        .unwrap();
                    b.play_uci(&twin_moves[ply]).unwrap();
                }
            }
        }
    }
}
