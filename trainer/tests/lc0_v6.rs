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

/// The first five fields of a FEN (the move number left out: V6 does not keep it), with the
/// en passant square only where a capture is legal.
fn position_fields(fen: &str) -> String {
    let position: shakmaty::Chess = fen
        .parse::<shakmaty::fen::Fen>()
        .unwrap()
        .into_position(shakmaty::CastlingMode::Standard)
        .unwrap();
    let fen = shakmaty::fen::Fen::from_position(&position, shakmaty::EnPassantMode::Legal);
    fen.to_string()
        .split(' ')
        .take(5)
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_record_of_lc0s_own_games_gives_back_its_position() {
    let mut positions = 0;
    for game in logged_games() {
        let records = decode_chunk(&std::fs::read(data_dir().join(&game.file)).unwrap()).unwrap();
        let mut state = ChessState::new();
        let mut legal = Vec::new();
        for (ply, (record, text)) in records.iter().zip(&game.moves).enumerate() {
            let at = format!("{} ply {ply}", game.file);
            let got = record
                .position()
                .unwrap_or_else(|| panic!("{at}: no position"));
            let got = shakmaty::fen::Fen::from_position(&got, shakmaty::EnPassantMode::Legal);
            assert_eq!(
                position_fields(&got.to_string()),
                position_fields(&state.fen()),
                "{at}"
            );
            state.legal_moves(&mut legal);
            let mv = lc0_move(&state, text, &legal);
            state.play(mv);
            positions += 1;
        }
    }
    assert_eq!(positions, 1815);
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

mod support;

/// cfzero games -> V6 chunks -> decoded records -> samples equal the samples cfzero makes of
/// the games directly (the policy within the V6 file's f32 of the dequantised u16; the
/// short-term target, which V6 has no field for, aside).
#[test]
fn cfzero_games_survive_a_round_trip_through_v6() {
    use cfzero_trainer::QTarget;
    use cfzero_trainer::lc0_v6_writer::game_to_v6;
    use cfzero_trainer::sample::{HostBatch, SampleScratch, TargetOptions, fill_position};
    use cfzero_trainer::source::lc0::fill_record;
    let targets = TargetOptions {
        q_target: QTarget::Best,
        q_ratio: 0.25,
        capped_q_ratio: 0.25,
        ..TargetOptions::default()
    };
    let mut scratch = SampleScratch::default();
    let (mut a, mut b) = (HostBatch::default(), HostBatch::default());
    let mut checked = 0;
    for seed in 0..6 {
        let game = support::random_game(seed, 120);
        let chunk =
            encode_chunk(&game_to_v6(&game, cfzero_chess::HistoryFill::FenOnly).unwrap()).unwrap();
        let records = decode_chunk(&chunk).unwrap();
        assert_eq!(records.len(), game.positions.len());
        for (ply, record) in records.iter().enumerate() {
            a.reset(1);
            b.reset(1);
            fill_position(&game, ply, &mut a, 0, &mut scratch, &targets).unwrap();
            fill_record(record, &mut b, 0, &targets);
            assert_eq!(a.inputs, b.inputs, "seed {seed} ply {ply}");
            assert_eq!(a.legal, b.legal);
            for (x, y) in a.policy.iter().zip(&b.policy) {
                assert!((x - y).abs() < 1e-6, "seed {seed} ply {ply}: {x} vs {y}");
            }
            assert_eq!((a.q[0], a.moves_left[0]), (b.q[0], b.moves_left[0]));
            for (x, y) in a.wdl.iter().zip(&b.wdl) {
                assert!((x - y).abs() < 1e-6);
            }
            checked += 1;
        }
    }
    assert!(checked > 300);
}

/// V6's `best_idx` is the move the search chose and `played_idx` the move played, which
/// differ where a move was sampled at a temperature; `best_d` is the chosen move's draw share.
#[test]
fn v6_export_names_the_chosen_move_and_its_draw_share() {
    use cfzero_trainer::lc0_v6_writer::game_to_v6;
    let mut game = support::random_game(7, 40);
    // Each position's legal moves and played move, in the game's order.
    let mut plies = Vec::new();
    cfzero_selfplay::replay::replay(&game, |_, state, legal, played| {
        plies.push((state.turn(), legal.to_vec(), played));
    })
    .unwrap();
    let mut expected = Vec::new();
    for (ply, (turn, legal, played)) in plies.iter().enumerate() {
        let p = &mut game.positions[ply];
        p.best = ((usize::from(p.played) + 1) % legal.len()) as u8;
        p.best_d = 0.0625 * (ply % 8) as f32;
        if p.is_trainable() {
            expected.push((
                move_index(&legal[usize::from(p.best)], *turn) as u16,
                move_index(played, *turn) as u16,
                p.best_d,
            ));
        }
    }
    let records = game_to_v6(&game, cfzero_chess::HistoryFill::FenOnly).unwrap();
    assert_eq!(records.len(), expected.len());
    let mut differ = 0;
    for (r, (best, played, best_d)) in records.iter().zip(expected) {
        assert_eq!((r.best_idx, r.played_idx, r.best_d), (best, played, best_d));
        differ += usize::from(best != played);
    }
    assert!(differ > 20, "{differ}");
}

/// Truncated, garbled and foreign chunks in a directory or a tar are skipped with their
/// reason; the good ones are read.
#[test]
fn bad_chunks_are_skipped_and_good_ones_read() {
    use cfzero_trainer::source::lc0::{Lc0Limits, Lc0Source};
    use cfzero_trainer::{SampleSource, Split};
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(data_dir().join("game_000003.gz")).unwrap();
    std::fs::write(dir.path().join("a_good.gz"), &good).unwrap();
    std::fs::write(dir.path().join("b_truncated.gz"), &good[..good.len() / 2]).unwrap();
    let mut raw = Vec::new();
    for r in decode_chunk(&good).unwrap() {
        r.encode(&mut raw);
    }
    std::fs::write(dir.path().join("c_short.gz"), &raw[..raw.len() - 10]).unwrap();
    let mut v7 = raw.clone();
    v7[0] = 7;
    std::fs::write(dir.path().join("d_v7.gz"), &v7).unwrap();
    std::fs::write(dir.path().join("e_text.gz"), b"hello").unwrap();
    // A tar holding one good and one truncated chunk.
    let tar_path = dir.path().join("f_chunks.tar");
    {
        let mut builder = tar::Builder::new(std::fs::File::create(&tar_path).unwrap());
        for (name, data) in [("x/good.gz", &good[..]), ("x/bad.gz", &good[..100])] {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, data).unwrap();
        }
        builder.finish().unwrap();
    }
    let limits = Lc0Limits {
        max_positions: 1_000_000,
        validation_share: 0.0,
    };
    let (source, skipped) = Lc0Source::open(dir.path(), limits).unwrap();
    assert_eq!(source.positions(Split::Training), 2 * 76);
    let names: Vec<String> = skipped
        .iter()
        .map(|s| s.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "b_truncated.gz",
            "c_short.gz",
            "d_v7.gz",
            "e_text.gz",
            "bad.gz"
        ]
    );
    assert!(
        skipped[2].reason.contains("version 7"),
        "{}",
        skipped[2].reason
    );
    // A missing path is an error, not an empty source.
    assert!(Lc0Source::open(&dir.path().join("missing"), limits).is_err());
}
