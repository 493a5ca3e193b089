//! The 1858-entry policy index (docs/METHODS.md §1): its published hash, the round trip of every
//! legal move of thousands of positions, Lc0's own indices, the attention gather map, and the
//! left-right mirror of every entry.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use cfzero_network::encoding::mirror::mirrored_index;
use cfzero_network::encoding::{
    ATTENTION_POLICY_SIZE, POLICY_SIZE, attention_gather, legal_move_for_index, move_index,
    move_strings, policy_move,
};
use serde_json::Value;
use sha2::{Digest, Sha256};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, CastlingSide, Chess, Color, Move, Position, PositionError, Role};

/// SHA-256 of the 1858 UCI strings joined by newlines with a trailing newline (docs/METHODS.md §1).
const MOVES_SHA256: &str = "eb2483cf8f53bb000dd6ca437c4ecd383b391bb5fee468b6c30f7f167fb591c5";

fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data")
        .join(path)
}

fn read(path: &str) -> String {
    let p = data(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

fn parse(fen: &str, mode: CastlingMode) -> Chess {
    let parsed: Fen = fen
        .parse()
        .unwrap_or_else(|e| panic!("bad FEN {fen:?}: {e}"));
    parsed
        .into_position(mode)
        // Two of shakmaty's tricky positions are unreachable but valid for move generation.
        .or_else(PositionError::ignore_impossible_check)
        .or_else(PositionError::ignore_too_much_material)
        .unwrap_or_else(|e| panic!("bad position {fen:?}: {e}"))
}

#[test]
fn move_strings_have_the_published_hash() {
    let strings = move_strings();
    assert_eq!(strings.len(), POLICY_SIZE);
    let mut text = strings.join("\n");
    text.push('\n');
    let hash: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(hash, MOVES_SHA256);
    // Landmarks of Lc0's kMoveStrs.
    assert_eq!(strings[0], "a1b1");
    assert_eq!(strings[97], "e1a1"); // O-O-O
    assert_eq!(strings[103], "e1h1"); // O-O
    assert_eq!(strings[1791], "h8g8");
    assert_eq!(strings[1792], "a7a8q");
    assert_eq!(strings[1857], "h7h8b");
    assert_eq!(strings.iter().collect::<HashSet<_>>().len(), POLICY_SIZE);
}

/// What kinds of moves the round trip has seen, so the test proves it covered them.
#[derive(Debug, Default)]
struct Seen {
    positions: [usize; 2],
    moves: usize,
    promotions: HashMap<(Color, Role), usize>,
    castles: HashMap<(Color, CastlingSide), usize>,
    en_passant: [usize; 2],
}

/// Every legal move of `pos` has a valid index, distinct from the others' and leading back
/// to the same move; returns the number of legal moves.
fn check_position(pos: &Chess, seen: &mut Seen, what: &str) -> usize {
    let turn = pos.turn();
    let legal = pos.legal_moves();
    let flip = if turn == Color::Black { 56 } else { 0 };
    let mut indices = HashSet::new();
    for mv in &legal {
        let i = move_index(mv, turn);
        assert!(i < POLICY_SIZE, "{what}: {mv:?} -> {i}");
        assert!(indices.insert(i), "{what}: index {i} used twice ({mv:?})");
        assert_eq!(
            legal_move_for_index(&legal, turn, i),
            Some(*mv),
            "{what}: index {i}"
        );
        // The entry describes the move in side-to-move coordinates.
        let entry = policy_move(i);
        let (from, to) = match *mv {
            Move::Castle { king, rook } => (king, rook),
            _ => (mv.from().expect("not a drop"), mv.to()),
        };
        assert_eq!(usize::from(entry.from), usize::from(from) ^ flip, "{what}");
        assert_eq!(usize::from(entry.to), usize::from(to) ^ flip, "{what}");
        let own_slot = mv.promotion().filter(|&r| r != Role::Knight);
        assert_eq!(entry.promotion, own_slot, "{what}: {mv:?}");
        match *mv {
            Move::Castle { king, rook } => {
                let side = CastlingSide::from_king_side(rook > king);
                *seen.castles.entry((turn, side)).or_default() += 1;
            }
            Move::EnPassant { .. } => seen.en_passant[turn as usize] += 1,
            _ => {}
        }
        if let Some(role) = mv.promotion() {
            *seen.promotions.entry((turn, role)).or_default() += 1;
        }
    }
    seen.positions[turn as usize] += 1;
    seen.moves += legal.len();
    legal.len()
}

fn assert_all_kinds(seen: &Seen) {
    for color in Color::ALL {
        assert!(seen.positions[color as usize] > 0, "{color:?} positions");
        assert!(seen.en_passant[color as usize] > 0, "{color:?} en passant");
        for role in [Role::Queen, Role::Rook, Role::Bishop, Role::Knight] {
            assert!(
                seen.promotions.contains_key(&(color, role)),
                "{color:?} promotions to {role:?}"
            );
        }
        for side in CastlingSide::ALL {
            assert!(
                seen.castles.contains_key(&(color, side)),
                "{color:?} castling {side:?}"
            );
        }
    }
}

#[test]
fn every_legal_move_of_the_perft_positions_round_trips() {
    let mut seen = Seen::default();
    // Shakmaty's tricky perft positions (some Chess960, as shakmaty reads them), each with
    // its children; the move counts must match the published perft 1 and perft 2.
    let text = read("perft/tricky.perft");
    let mut checked = 0;
    let mut current: Option<(String, Chess)> = None;
    for line in text.lines() {
        if let Some(fen) = line.strip_prefix("epd ") {
            current = Some((fen.to_string(), parse(fen, CastlingMode::Chess960)));
        } else if let Some(rest) = line.strip_prefix("perft ") {
            let (fen, pos) = current.as_ref().expect("perft line after an epd line");
            let mut it = rest.split_whitespace().map(|x| x.parse::<usize>().unwrap());
            let (depth, expected) = (it.next().unwrap(), it.next().unwrap());
            let count = match depth {
                1 => check_position(pos, &mut seen, fen),
                2 => pos
                    .legal_moves()
                    .into_iter()
                    .map(|mv| {
                        let child = pos.clone().play(mv).unwrap();
                        check_position(&child, &mut seen, &format!("{fen} + {mv:?}"))
                    })
                    .sum(),
                _ => continue,
            };
            assert_eq!(count, expected, "{fen}: perft {depth}");
            checked += 1;
        }
    }
    assert_eq!(checked, 26 + 26, "perft 1 and 2 of 26 positions");
    // 6838 positions of random games.
    let mut n = 0;
    for fen in read("perft/random.epd")
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        check_position(&parse(fen, CastlingMode::Standard), &mut seen, fen);
        n += 1;
    }
    assert_eq!(n, 6838);
    assert_all_kinds(&seen);
}

#[test]
fn every_legal_move_of_the_suites_round_trips() {
    let mut seen = Seen::default();
    let mut n = 0;
    for file in ["suites/sunfish_mate1.fen", "suites/sunfish_mate2.fen"] {
        for fen in read(file).lines().filter(|l| !l.trim().is_empty()) {
            check_position(&parse(fen, CastlingMode::Standard), &mut seen, fen);
            n += 1;
        }
    }
    assert_eq!(n, 8 + 212);
    // STS: the first four EPD fields are the position, the rest are operations.
    for line in read("suites/STS1-STS15_LAN_v4.epd").lines() {
        let fields: Vec<&str> = line.split_whitespace().take(4).collect();
        if fields.len() < 4 {
            continue;
        }
        let fen = fields.join(" ");
        check_position(&parse(&fen, CastlingMode::Standard), &mut seen, &fen);
        n += 1;
    }
    assert_eq!(n, 8 + 212 + 1500);
    assert!(seen.moves > 50_000, "{} moves", seen.moves);
    for color in Color::ALL {
        assert!(seen.positions[color as usize] > 0, "{color:?} positions");
    }
}

#[test]
fn indices_equal_lc0s_on_the_interop_vectors() {
    let vectors: Value = serde_json::from_str(&read("lc0/vectors.json")).unwrap();
    let cases = vectors["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 36);
    let mut moves = 0;
    for case in cases {
        let pos = parse(case["final_fen"].as_str().unwrap(), CastlingMode::Standard);
        let turn = pos.turn();
        let legal = pos.legal_moves();
        let expected = case["legal_moves"].as_array().unwrap();
        assert_eq!(legal.len(), expected.len(), "{}", case["final_fen"]);
        for m in expected {
            let uci: UciMove = m["uci"].as_str().unwrap().parse().unwrap();
            let mv = uci.to_move(&pos).unwrap();
            let index = usize::try_from(m["nn_index"].as_u64().unwrap()).unwrap();
            assert_eq!(move_index(&mv, turn), index, "{}: {uci}", case["final_fen"]);
            assert_eq!(move_strings()[index], m["nn_move"].as_str().unwrap());
            moves += 1;
        }
    }
    assert!(moves > 500, "{moves} moves");
}

#[test]
fn attention_gather_reaches_every_index_exactly_once() {
    let gather = attention_gather();
    assert_eq!(gather.len(), POLICY_SIZE);
    assert_eq!(ATTENTION_POLICY_SIZE, 4096 + 192);
    // Invert the map over the whole 4096 + 192 layout: each policy index is reached from
    // exactly one slot, and a slot is used exactly when it is a policy move.
    let mut reached = vec![0usize; POLICY_SIZE];
    let mut slot_of = vec![None; ATTENTION_POLICY_SIZE];
    for (i, &slot) in gather.iter().enumerate() {
        assert!(slot < ATTENTION_POLICY_SIZE);
        assert!(slot_of[slot].is_none(), "slot {slot} used twice");
        slot_of[slot] = Some(i);
    }
    for slot in slot_of.iter().flatten() {
        reached[*slot] += 1;
    }
    assert!(reached.iter().all(|&n| n == 1));
    let strings = move_strings();
    for (slot, index) in slot_of.iter().enumerate() {
        let expected = if slot < 4096 {
            let (from, to) = (slot / 64, slot % 64);
            let (df, dr) = ((from % 8).abs_diff(to % 8), (from / 8).abs_diff(to / 8));
            let line = from != to && (df == 0 || dr == 0 || df == dr);
            let knight = (df, dr) == (1, 2) || (df, dr) == (2, 1);
            line || knight
        } else {
            let p = slot - 4096;
            let (from_file, to_file) = (p / 24, p / 3 % 8);
            from_file.abs_diff(to_file) <= 1
        };
        assert_eq!(index.is_some(), expected, "slot {slot}");
        if let Some(i) = *index {
            let name = if slot < 4096 {
                let sq = |s: usize| format!("{}{}", (b'a' + (s % 8) as u8) as char, s / 8 + 1);
                format!("{}{}", sq(slot / 64), sq(slot % 64))
            } else {
                let p = slot - 4096;
                let file = |f: usize| (b'a' + f as u8) as char;
                format!(
                    "{}7{}8{}",
                    file(p / 24),
                    file(p / 3 % 8),
                    ["q", "r", "b"][p % 3]
                )
            };
            assert_eq!(strings[i], name, "slot {slot}");
        }
    }
    assert_eq!(slot_of.iter().flatten().count(), POLICY_SIZE);
    // Landmarks: e2e4 is the from-to pair 12*64+28; a7a8q the first promotion slot.
    let e2e4 = strings.iter().position(|s| s == "e2e4").unwrap();
    assert_eq!(gather[e2e4], 12 * 64 + 28);
    assert_eq!(gather[1792], 4096);
    assert_eq!(gather[1857], 4096 + 7 * 24 + 7 * 3 + 2);
}

#[test]
fn each_entry_mirrors_to_its_move_on_the_mirrored_board() {
    let strings = move_strings();
    // The files of the two squares trade (a <-> h); a promotion's piece stays.
    let mirror = |s: &str| -> String {
        s.char_indices()
            .map(|(i, c)| match c {
                'a'..='h' if i % 2 == 0 && i < 4 => char::from(b'a' + (b'h' - c as u8)),
                _ => c,
            })
            .collect()
    };
    for i in 0..POLICY_SIZE {
        let j = mirrored_index(i);
        assert_eq!(strings[j], mirror(&strings[i]), "entry {i}");
        assert_ne!(i, j, "no move is its own mirror image");
        assert_eq!(mirrored_index(j), i);
    }
}
