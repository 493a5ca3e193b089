//! PGN games as training data: the first game of tests/data/pgn/lichess_sample.pgn checked
//! by hand, filters, and bad input skipped without a panic.

mod support;

use std::path::PathBuf;

use cfzero_chess::TerminalReason;
use cfzero_network::encoding::{POLICY_SIZE, move_index};
use cfzero_selfplay::{GameResult, Termination};
use cfzero_trainer::sample::{HostBatch, SampleScratch, TargetOptions, fill_position};
use cfzero_trainer::source::pgn::{PgnFilters, PgnLimits, PgnSource, parse_games};
use cfzero_trainer::{QTarget, SampleSource, Split};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use shakmaty::{Color, Move, Role, Square};

fn sample_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/pgn/lichess_sample.pgn")
}

fn targets() -> TargetOptions {
    TargetOptions {
        q_target: QTarget::Best,
        q_ratio: 0.0,
        capped_q_ratio: 0.0,
        ..TargetOptions::default()
    }
}

#[test]
fn the_first_game_gives_the_played_moves_the_result_and_the_plies_left() {
    let text = std::fs::read(sample_path()).unwrap();
    let (games, stats) = parse_games(&text[..], PgnFilters::default(), usize::MAX).unwrap();
    assert_eq!(
        (stats.games, stats.invalid, stats.unknown_result),
        (8, 0, 0)
    );
    // Game 1: 1. e4 e5 2. Nf3 Nc6 ... 21... Qg2#, 0-1: 42 plies, Black mates.
    let game = &games[0];
    assert_eq!(game.positions.len(), 42);
    assert_eq!(game.result, GameResult::BlackWin);
    assert_eq!(
        game.termination,
        Termination::Rule(TerminalReason::Checkmate)
    );
    let mut batch = HostBatch::default();
    batch.reset(2);
    let mut scratch = SampleScratch::default();
    fill_position(game, 0, &mut batch, 0, &mut scratch, &targets()).unwrap();
    fill_position(game, 41, &mut batch, 1, &mut scratch, &targets()).unwrap();
    // Ply 0: the policy target is 1. e4, all of it; 20 legal moves; White loses.
    let e4 = Move::Normal {
        role: Role::Pawn,
        from: Square::E2,
        capture: None,
        to: Square::E4,
        promotion: None,
    };
    let e4 = move_index(&e4, Color::White);
    assert_eq!(batch.policy[e4], 1.0);
    assert_eq!(batch.policy[..POLICY_SIZE].iter().sum::<f32>(), 1.0);
    assert_eq!(batch.legal[..POLICY_SIZE].iter().sum::<f32>(), 20.0);
    assert_eq!(&batch.wdl[..3], &[0.0, 0.0, 1.0]);
    assert_eq!((batch.q[0], batch.moves_left[0]), (-1.0, 42.0));
    // Ply 41: Black to move plays the mate and wins; one ply left.
    let qg2 = Move::Normal {
        role: Role::Queen,
        from: Square::G8,
        capture: None,
        to: Square::G2,
        promotion: None,
    };
    assert_eq!(
        batch.policy[POLICY_SIZE + move_index(&qg2, Color::Black)],
        1.0
    );
    assert_eq!(&batch.wdl[3..6], &[1.0, 0.0, 0.0]);
    assert_eq!((batch.q[1], batch.moves_left[1]), (1.0, 1.0));
}

#[test]
fn rating_and_time_filters_keep_the_games_that_pass() {
    let text = std::fs::read(sample_path()).unwrap();
    let filters = PgnFilters {
        min_rating: 1300,
        min_base_seconds: 0,
    };
    // Both players rated 1300 or more in games 3, 4, 5 and 8 only.
    let (games, stats) = parse_games(&text[..], filters, usize::MAX).unwrap();
    assert_eq!((games.len(), stats.filtered), (4, 4));
    let slow = PgnFilters {
        min_rating: 0,
        min_base_seconds: 600,
    };
    // Every game is 300+3.
    let (games, stats) = parse_games(&text[..], slow, usize::MAX).unwrap();
    assert_eq!((games.len(), stats.filtered), (0, 8));
}

#[test]
fn a_pgn_source_samples_both_splits_and_reads_compressed_files() {
    let limits = PgnLimits {
        max_positions: 1_000_000,
        validation_share: 0.25,
    };
    let plain = PgnSource::open(&sample_path(), PgnFilters::default(), limits).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let zst = dir.path().join("sample.pgn.zst");
    let text = std::fs::read(sample_path()).unwrap();
    std::fs::write(&zst, zstd::encode_all(&text[..], 3).unwrap()).unwrap();
    let packed = PgnSource::open(&zst, PgnFilters::default(), limits).unwrap();
    assert_eq!(plain.stats(), packed.stats());
    // Two of the eight games are held out.
    let total = plain.stats().positions;
    let (train, val) = (
        plain.positions(Split::Training),
        plain.positions(Split::Validation),
    );
    assert_eq!(train + val, total);
    assert!(val > 0 && train > val);
    let mut batch = HostBatch::default();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut scratch = SampleScratch::default();
    for split in [Split::Training, Split::Validation] {
        batch.reset(1);
        assert!(
            plain
                .fill(split, &mut rng, &mut batch, 0, &mut scratch, &targets())
                .unwrap()
        );
        assert_eq!(batch.policy.iter().sum::<f32>(), 1.0);
    }
}

#[test]
fn bad_pgn_is_counted_and_skipped_never_a_panic() {
    let text = std::fs::read_to_string(sample_path()).unwrap();
    let mut bad = String::new();
    // An illegal move, a variant, an unknown result, garbage, then the real games.
    bad.push_str("[Event \"x\"]\n[Result \"1-0\"]\n\n1. e5 e4 1-0\n\n");
    bad.push_str("[Event \"x\"]\n[Variant \"Atomic\"]\n[Result \"1-0\"]\n\n1. e4 e5 1-0\n\n");
    bad.push_str("[Event \"x\"]\n[Result \"*\"]\n\n1. e4 e5 *\n\n");
    bad.push_str("[Event \"x\"]\n[FEN \"not a fen\"]\n[Result \"1-0\"]\n\n1. e4 1-0\n\n");
    bad.push_str(&text);
    let (games, stats) = parse_games(bad.as_bytes(), PgnFilters::default(), usize::MAX).unwrap();
    assert_eq!(games.len(), 8);
    assert_eq!((stats.invalid, stats.unknown_result), (3, 1));
    // Random bytes: whatever is read, nothing panics.
    for seed in 0..50u64 {
        let mut bytes = text.clone().into_bytes();
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for _ in 0..40 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x % bytes.len() as u64) as usize;
            bytes[i] = (x >> 32) as u8;
        }
        let _ = parse_games(&bytes[..], PgnFilters::default(), usize::MAX);
    }
}
