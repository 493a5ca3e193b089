//! Lc0 V6 training data written by Lc0 itself (tests/data/lc0/v6): every record decodes and
//! agrees with cfzero's own encoding of the position reached by replaying the game's moves.

use std::collections::BTreeSet;
use std::path::PathBuf;

use cfzero_chess::ChessState;
use cfzero_mcts::Game;
use cfzero_network::encoding::{encode_planes, move_index};
use cfzero_trainer::lc0_v6::{V6Record, decode_chunk, encode_chunk};
use shakmaty::{Color, Move, Role, Square};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/lc0/v6")
}

/// One line of games.txt: the chunk file, the result and the moves.
struct LoggedGame {
    file: String,
    result: String,
    moves: Vec<String>,
}

fn logged_games() -> Vec<LoggedGame> {
    let text = std::fs::read_to_string(data_dir().join("games.txt")).unwrap();
    text.lines()
        .filter(|l| l.starts_with("gameready"))
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let after = |key: &str| words[words.iter().position(|w| *w == key).unwrap() + 1];
            let moves_at = words.iter().position(|w| *w == "moves").unwrap() + 1;
            LoggedGame {
                file: after("trainingfile").to_string(),
                result: after("result").to_string(),
                moves: words[moves_at..].iter().map(|s| s.to_string()).collect(),
            }
        })
        .collect()
}

/// The legal move that Lc0's move string names (castling written king-takes-rook).
fn lc0_move(state: &ChessState, text: &str, legal: &[Move]) -> Move {
    legal
        .iter()
        .copied()
        .find(|mv| {
            let uci = match mv {
                Move::Castle { king, rook } => format!("{king}{rook}"),
                _ => mv.to_uci(shakmaty::CastlingMode::Standard).to_string(),
            };
            uci == text
        })
        .unwrap_or_else(|| panic!("{text} is not legal in {}", state.fen()))
}

#[test]
fn every_record_of_lc0s_own_games_matches_cfzeros_encoding() {
    let games = logged_games();
    assert_eq!(games.len(), 6);
    let mut records_seen = 0;
    for game in &games {
        let data = std::fs::read(data_dir().join(&game.file)).unwrap();
        let records = decode_chunk(&data).unwrap();
        assert_eq!(records.len(), game.moves.len(), "{}", game.file);
        let mut state = ChessState::new();
        let mut legal = Vec::new();
        for (ply, (record, text)) in records.iter().zip(&game.moves).enumerate() {
            let at = format!("{} ply {ply}", game.file);
            // The planes, castling, side to move and rule-50 fields: the whole input.
            assert_eq!(record.input_planes(), encode_planes(&state), "{at}");
            assert_eq!(record.black_to_move(), state.turn() == Color::Black, "{at}");
            // The legal moves are exactly the entries that are not -1.
            state.legal_moves(&mut legal);
            let turn = state.turn();
            let expected: BTreeSet<usize> = legal.iter().map(|m| move_index(m, turn)).collect();
            let marked: BTreeSet<usize> = record
                .probabilities
                .iter()
                .enumerate()
                .filter(|(_, p)| **p >= 0.0)
                .map(|(i, _)| i)
                .collect();
            assert_eq!(marked, expected, "{at}");
            let sum: f32 = record.probabilities.iter().filter(|p| **p >= 0.0).sum();
            assert!((sum - 1.0).abs() < 1e-3, "{at}: policy sums to {sum}");
            // The result, from the side to move.
            let white = match game.result.as_str() {
                "whitewon" => 1.0,
                "blackwon" => -1.0,
                "draw" => 0.0,
                other => panic!("result {other}"),
            };
            let expect = if turn == Color::White { white } else { -white };
            assert_eq!(record.result_q, expect, "{at}");
            assert_eq!(
                record.result_d,
                if white == 0.0 { 1.0 } else { 0.0 },
                "{at}"
            );
            // Plies left count down by one a ply to the end; Lc0 ends them at 1 after the
            // last move, or (games 0 and 2 here, both drawn) at the last search's best_m.
            let last = records.last().unwrap();
            let end = if last.plies_left == 1.0 {
                1.0
            } else {
                last.best_m
            };
            let expect_left = end + (records.len() - 1 - ply) as f32;
            assert!((record.plies_left - expect_left).abs() < 1e-3, "{at}");
            // The played index is the move played next.
            let mv = lc0_move(&state, text, &legal);
            assert_eq!(
                usize::from(record.played_idx),
                move_index(&mv, turn),
                "{at}"
            );
            assert!(!record.marked_for_deletion());
            state.play(mv);
            records_seen += 1;
        }
    }
    assert_eq!(records_seen, 1815);
}

#[test]
fn lc0s_records_encode_back_to_the_same_bytes() {
    let data = std::fs::read(data_dir().join("game_000003.gz")).unwrap();
    let mut raw = Vec::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(&data[..])
        .read_to_end(&mut raw)
        .unwrap();
    let records = decode_chunk(&raw).unwrap();
    let mut again = Vec::new();
    for r in &records {
        r.encode(&mut again);
    }
    assert_eq!(again, raw);
    let back = decode_chunk(&encode_chunk(&records).unwrap()).unwrap();
    assert_eq!(back.len(), records.len());
    for (a, b) in back.iter().zip(&records) {
        assert_eq!(a.probabilities, b.probabilities);
        assert_eq!(a.planes, b.planes);
    }
}

#[test]
fn the_queen_sits_on_d1_and_the_king_on_e1() {
    // Spot check of the bit order against a board read by hand: the first record of every
    // game is the start position, White to move.
    let data = std::fs::read(data_dir().join("game_000000.gz")).unwrap();
    let first: &V6Record = &decode_chunk(&data).unwrap()[0];
    let queen = first.planes[Role::Queen as usize - 1];
    let king = first.planes[Role::King as usize - 1];
    assert_eq!(queen, 1 << Square::D1 as u32);
    assert_eq!(king, 1 << Square::E1 as u32);
}
