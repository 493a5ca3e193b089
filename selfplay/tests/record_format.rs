//! Record files: round trip, and torn or corrupt files are detected.

use cfzero_selfplay::record::{decode_records, encode_records, read_records, write_records};
use cfzero_selfplay::targets::{SHORT_TERM_THETA, short_term_targets};
use cfzero_selfplay::{GameRecord, GameResult, PositionRecord, RecordError, Termination};
use std::path::Path;

fn position(played: u8, legal: usize, trainable: bool, q: f32) -> PositionRecord {
    let policy = if trainable {
        (0..legal).map(|i| (i * 1000) as u16).collect()
    } else {
        Vec::new()
    };
    // Values are multiples of 1/32767 so that quantisation round-trips exactly.
    let v = |x: f32| (x * 32767.0).round() / 32767.0;
    PositionRecord {
        played,
        policy,
        network_q: v(q),
        root_q: v(-q),
        root_d: 0.0,
        best_q: v(q * 0.5),
        played_q: v(0.25),
        st: v(-0.75),
    }
}

fn sample_games() -> Vec<GameRecord> {
    vec![
        GameRecord {
            start_fen: None,
            result: GameResult::WhiteWin,
            termination: Termination::Checkmate,
            generation: 7,
            positions: vec![
                position(3, 20, true, 0.1),
                position(0, 20, false, -0.3),
                position(19, 30, true, 1.0),
            ],
        },
        GameRecord {
            start_fen: Some("8/8/8/4k3/8/8/4K3/4Q3 w - - 0 1".into()),
            result: GameResult::Draw,
            termination: Termination::MaxPlies,
            generation: 0,
            positions: vec![position(1, 5, true, -1.0)],
        },
    ]
}

#[test]
fn records_round_trip_through_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("games.cfzg");
    let games = sample_games();
    write_records(&path, &games).unwrap();
    assert_eq!(read_records(&path).unwrap(), games);
    // No temporary file is left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn every_truncation_is_detected() {
    let bytes = encode_records(&sample_games());
    for len in 0..bytes.len() {
        let err = decode_records(&bytes[..len], Path::new("x.cfzg")).unwrap_err();
        assert!(
            matches!(err, RecordError::Corrupt { .. }),
            "truncated to {len}: {err}"
        );
    }
}

#[test]
fn every_flipped_byte_is_detected() {
    let bytes = encode_records(&sample_games());
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x40;
        // A flip in the reserved bytes is harmless; everything else must be caught.
        if (5..8).contains(&i) {
            continue;
        }
        assert!(
            decode_records(&b, Path::new("x.cfzg")).is_err(),
            "flip at byte {i} went unnoticed"
        );
    }
}

#[test]
fn error_names_the_file() {
    let err = decode_records(b"CFZG", Path::new("runs/a/games/b.cfzg")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("runs/a/games/b.cfzg: corrupt record file"),
        "{err}"
    );
}

#[test]
fn short_term_targets_match_hand_computation() {
    let mut out = Vec::new();
    // theta = 1/2: st[1] = 0.5 * -0.2 - 0.5 * -1 = 0.4; st[0] = 0.5 * 0.5 - 0.5 * 0.4 = 0.05.
    short_term_targets(&[0.5, -0.2], -1.0, 0.5, &mut out);
    assert!(
        (out[1] - 0.4).abs() < 1e-6 && (out[0] - 0.05).abs() < 1e-6,
        "{out:?}"
    );
    // theta = 5/6: st[1] = -0.2/6 + 5/6 = 0.8; st[0] = 0.5/6 - (5/6) * 0.8 = -0.583333.
    short_term_targets(&[0.5, -0.2], -1.0, SHORT_TERM_THETA, &mut out);
    assert!(
        (out[1] - 0.8).abs() < 1e-6 && (out[0] + 0.583_333).abs() < 1e-5,
        "{out:?}"
    );
    short_term_targets(&[], 1.0, SHORT_TERM_THETA, &mut out);
    assert!(out.is_empty());
}
