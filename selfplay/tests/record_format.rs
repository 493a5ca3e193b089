//! Record files: round trip, and torn or corrupt files are detected.

use cfzero_chess::TerminalReason;
use cfzero_selfplay::record::{decode_records, encode_records, read_records, write_records};
use cfzero_selfplay::window::{ReplayWindow, WindowConfig};
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
        best: played,
        // A multiple of 1/65535: stored exactly.
        best_d: f32::from(13107u16) / 65535.0,
        best_q: v(q * 0.5),
        played_q: v(0.25),
        policy_q: v(q * 0.6),
        st: v(-0.75),
        // A multiple of 1/1024 nat: stored exactly.
        surprise: if trainable { 0.75 } else { 0.0 },
    }
}

/// Legal moves after playing the moves at `played` (indices into each position's legal
/// moves) from `fen` (the start without one).
fn legal_after(fen: Option<&str>, played: &[u8]) -> usize {
    use cfzero_chess::{ChessState, HistoryFill};
    use cfzero_mcts::Game;
    let mut state = fen.map_or_else(ChessState::new, |f| {
        ChessState::from_fen(f, HistoryFill::No).unwrap()
    });
    let mut legal = Vec::new();
    for &i in played {
        state.legal_moves(&mut legal);
        state.play(legal[usize::from(i)]);
    }
    state.legal_moves(&mut legal);
    legal.len()
}

/// Two games that replay: their moves are legal and each trainable policy has one entry per
/// legal move.
fn sample_games() -> Vec<GameRecord> {
    let queen = "8/8/8/4k3/8/8/4K3/4Q3 w - - 0 1";
    vec![
        GameRecord {
            start_fen: None,
            result: GameResult::WhiteWin,
            // Three plies from the start are no mate: Black resigned.
            termination: Termination::Resignation,
            generation: 7,
            positions: vec![
                position(3, legal_after(None, &[]), true, 0.1),
                position(0, legal_after(None, &[3]), false, -0.3),
                position(19, legal_after(None, &[3, 0]), true, 1.0),
            ],
        },
        GameRecord {
            start_fen: Some(queen.into()),
            result: GameResult::Draw,
            termination: Termination::MAX_PLIES,
            generation: 0,
            positions: vec![position(1, legal_after(Some(queen), &[]), true, -1.0)],
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

/// The reader that scans a run's game directories (the replay window's) skips a torn file,
/// a file with a flipped byte, an empty file and a leftover temporary file of an atomic
/// write, reports each bad record file once, and trains on every intact game only.
#[test]
fn directory_scan_skips_torn_and_corrupt_files() {
    let dir = tempfile::tempdir().unwrap();
    let games = sample_games();
    let trainable: usize = games
        .iter()
        .flat_map(|g| &g.positions)
        .filter(|p| p.is_trainable())
        .count();
    assert_eq!(trainable, 3);
    let gen1 = dir.path().join("gen-0001");
    let gen2 = dir.path().join("gen-0002");
    std::fs::create_dir_all(&gen1).unwrap();
    std::fs::create_dir_all(&gen2).unwrap();
    let bytes = encode_records(&games);
    // Intact: one file in each generation.
    write_records(&gen1.join("g00000.cfzg"), &games).unwrap();
    write_records(&gen2.join("g00000.cfzg"), &games).unwrap();
    // Torn: the end of the file never reached the disk.
    let torn = gen1.join("g00001.cfzg");
    std::fs::write(&torn, &bytes[..bytes.len() - 7]).unwrap();
    // Corrupt: one bit flipped in the compressed payload.
    let flipped = gen2.join("g00001.cfzg");
    let mut b = bytes.clone();
    let last = b.len() - 1;
    b[last] ^= 0x01;
    std::fs::write(&flipped, &b).unwrap();
    // Created but never written.
    let empty = gen2.join("g00002.cfzg");
    std::fs::write(&empty, b"").unwrap();
    // What a kill during an atomic write leaves: not a record file, never read.
    std::fs::write(gen2.join("g00003.cfzg.tmp4242"), &bytes[..10]).unwrap();

    let mut window = ReplayWindow::new(WindowConfig {
        min_positions: 1000,
        max_positions: 1000,
        validation_share: 0.0,
        validation_positions: 0,
        ..WindowConfig::default()
    });
    let (added, skipped) = window.load_new_files(dir.path()).unwrap();
    assert_eq!(added, 2 * games.len(), "the intact files' games");
    assert_eq!(window.games(), 2 * games.len());
    assert_eq!(window.positions(), 2 * trainable);
    let mut bad: Vec<_> = skipped.iter().map(|s| s.path.clone()).collect();
    bad.sort();
    assert_eq!(bad, vec![torn, flipped, empty]);
    for s in &skipped {
        assert!(
            matches!(s.error, RecordError::Corrupt { .. }),
            "{}: {}",
            s.path.display(),
            s.error
        );
        // The warning names the file.
        assert!(
            s.error.to_string().contains(&*s.path.to_string_lossy()),
            "{}",
            s.error
        );
    }
    // A second scan neither re-reads the good files nor re-reports the bad ones.
    let (added, skipped) = window.load_new_files(dir.path()).unwrap();
    assert_eq!((added, skipped.len()), (0, 0));
    assert_eq!(window.positions(), 2 * trainable);
}

/// The payload of `games` in the version-1 layout (before `policy_q`), as runs started
/// before version 2 wrote it.
fn version1_file(games: &[GameRecord]) -> Vec<u8> {
    let q16 = |v: f32| ((v.clamp(-1.0, 1.0) * 32767.0).round() as i16).to_le_bytes();
    let mut payload = Vec::new();
    for g in games {
        let fen = g.start_fen.as_deref().unwrap_or("").as_bytes();
        payload.extend_from_slice(&(fen.len() as u16).to_le_bytes());
        payload.extend_from_slice(fen);
        // Result and termination bytes of a white win by resignation (the caller's games).
        payload.push(0);
        payload.push(6);
        payload.extend_from_slice(&g.generation.to_le_bytes());
        payload.extend_from_slice(&(g.positions.len() as u32).to_le_bytes());
        for p in &g.positions {
            payload.push(p.played);
            payload.push(p.policy.len() as u8);
            for &w in &p.policy {
                payload.extend_from_slice(&w.to_le_bytes());
            }
            payload.extend_from_slice(&q16(p.network_q));
            payload.extend_from_slice(&q16(p.root_q));
            payload.extend_from_slice(
                &((p.root_d.clamp(0.0, 1.0) * 65535.0).round() as u16).to_le_bytes(),
            );
            for v in [p.best_q, p.played_q, p.st] {
                payload.extend_from_slice(&q16(v));
            }
        }
    }
    let compressed = zstd::bulk::compress(&payload, 3).unwrap();
    let mut out = b"CFZG".to_vec();
    out.push(1);
    out.extend_from_slice(&[0, 0, 0]);
    out.extend_from_slice(&(games.len() as u32).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&compressed).to_le_bytes());
    out.extend_from_slice(&compressed);
    out
}

#[test]
fn version_1_records_of_older_runs_still_read() {
    let games: Vec<GameRecord> = sample_games()
        .into_iter()
        .filter(|g| g.result == GameResult::WhiteWin && g.termination == Termination::Resignation)
        .collect();
    assert!(!games.is_empty());
    let read = decode_records(&version1_file(&games), Path::new("old.cfzg")).unwrap();
    assert_eq!(read.len(), games.len());
    for (old, new) in games.iter().zip(&read) {
        assert_eq!((new.result, new.termination), (old.result, old.termination));
        assert_eq!(new.generation, old.generation);
        for (a, b) in old.positions.iter().zip(&new.positions) {
            // Everything version 1 stored comes back; policy_q falls back to best_q, best_d
            // to root_d, the chosen move to the played one and the surprise to none.
            let expected = PositionRecord {
                policy_q: a.best_q,
                best_d: a.root_d,
                best: a.played,
                surprise: 0.0,
                ..a.clone()
            };
            assert_eq!(b, &expected);
        }
    }
    // A version this build does not know is refused with the reason.
    let mut future = version1_file(&games);
    future[4] = 9;
    let err = decode_records(&future, Path::new("new.cfzg")).unwrap_err();
    assert!(err.to_string().contains("version 9"), "{err}");
}

#[test]
fn a_record_that_does_not_replay_is_quarantined_as_it_enters_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let games = sample_games();
    let good = dir.path().join("g00000.cfzg");
    write_records(&good, &games).unwrap();
    // A checksum-valid file whose second game plays a move index past the legal moves.
    let mut bad_games = games.clone();
    bad_games[1].positions[0].played = 250;
    let bad = dir.path().join("g00001.cfzg");
    write_records(&bad, &bad_games).unwrap();
    // And one whose policy has the wrong number of entries.
    let mut short_policy = games.clone();
    let p = short_policy[0]
        .positions
        .iter_mut()
        .find(|p| p.is_trainable())
        .unwrap();
    p.policy.pop();
    let short = dir.path().join("g00002.cfzg");
    write_records(&short, &short_policy).unwrap();

    let mut window = ReplayWindow::new(WindowConfig {
        min_positions: 100_000,
        max_positions: 100_000,
        validation_share: 0.0,
        validation_positions: 0,
        ..WindowConfig::default()
    });
    let (added, skipped) = window.load_new_files(dir.path()).unwrap();
    assert_eq!(added, games.len(), "only the good file's games");
    assert_eq!(skipped.len(), 2);
    let text = skipped[0].error.to_string();
    assert!(
        text.contains("g00001.cfzg") && text.contains("game 1 does not replay"),
        "{text}"
    );
    assert!(
        skipped[1].error.to_string().contains("policy"),
        "{}",
        skipped[1].error
    );
    // Renamed out of the way: kept, but never read again (nor after a resume).
    assert!(!bad.exists() && !short.exists());
    assert!(dir.path().join("g00001.cfzg.quarantined").exists());
    let mut fresh = ReplayWindow::new(WindowConfig {
        min_positions: 100_000,
        max_positions: 100_000,
        validation_share: 0.0,
        validation_positions: 0,
        ..WindowConfig::default()
    });
    let (added, skipped) = fresh.load_new_files(dir.path()).unwrap();
    assert_eq!((added, skipped.len()), (games.len(), 0));
}

/// A game recorded as ended by a rule must end so on the board, with that rule's result:
/// fool's mate is Black's win by checkmate, and neither a draw nor a stalemate; a game
/// recorded as mated before the mate is refused too. Adjudications are not checked.
#[test]
fn a_rule_ending_must_be_the_final_positions() {
    use cfzero_chess::ChessState;
    use cfzero_mcts::Game;
    use cfzero_selfplay::replay::{ReplayError, validate};
    let mut state = ChessState::new();
    let mut legal = Vec::new();
    let mut positions = Vec::new();
    for uci in ["f2f3", "e7e5", "g2g4", "d8h4"] {
        state.legal_moves(&mut legal);
        let mv = state.clone().play_uci(uci).unwrap();
        let index = legal.iter().position(|m| *m == mv).unwrap();
        positions.push(position(index as u8, legal.len(), false, 0.0));
        state.play(mv);
    }
    let game = |result, termination, plies: usize| GameRecord {
        start_fen: None,
        result,
        termination,
        generation: 1,
        positions: positions[..plies].to_vec(),
    };
    validate(&game(
        GameResult::BlackWin,
        Termination::Rule(TerminalReason::Checkmate),
        4,
    ))
    .unwrap();
    for bad in [
        game(
            GameResult::Draw,
            Termination::Rule(TerminalReason::Checkmate),
            4,
        ),
        game(
            GameResult::WhiteWin,
            Termination::Rule(TerminalReason::Checkmate),
            4,
        ),
        game(
            GameResult::Draw,
            Termination::Rule(TerminalReason::Stalemate),
            4,
        ),
        game(
            GameResult::BlackWin,
            Termination::Rule(TerminalReason::Checkmate),
            3,
        ),
    ] {
        let e = validate(&bad).unwrap_err();
        assert!(matches!(e, ReplayError::WrongEnd { .. }), "{e}");
    }
    let e = validate(&game(
        GameResult::Draw,
        Termination::Rule(TerminalReason::FiftyMoveRule),
        3,
    ))
    .unwrap_err();
    assert!(e.to_string().contains("not over"), "{e}");
    for adjudicated in [Termination::MAX_PLIES, Termination::Resignation] {
        validate(&game(GameResult::WhiteWin, adjudicated, 3)).unwrap();
    }
}

/// A game recorded as scored by the tables must reach their endings, with their result at its
/// first position in them, whether it ends there or plays on: Qxa7 leaves king and queen
/// against king, White's win.
#[test]
fn a_tablebase_ending_must_be_the_tables_result() {
    use cfzero_chess::{ChessState, HistoryFill};
    use cfzero_mcts::Game;
    use cfzero_selfplay::replay::{ReplayError, validate};
    let fen = "6k1/p7/8/8/8/8/8/Q6K w - - 0 1";
    let mut state = ChessState::from_fen(fen, HistoryFill::FenOnly).unwrap();
    let mut legal = Vec::new();
    let mut positions = Vec::new();
    for uci in ["a1a7", "g8f8"] {
        state.legal_moves(&mut legal);
        let mv = state.clone().play_uci(uci).unwrap();
        let index = legal.iter().position(|m| *m == mv).unwrap();
        positions.push(position(index as u8, legal.len(), false, 0.0));
        state.play(mv);
    }
    let game = |result, plies: usize| GameRecord {
        start_fen: Some(fen.into()),
        result,
        termination: Termination::Tablebase,
        generation: 1,
        positions: positions[..plies].to_vec(),
    };
    validate(&game(GameResult::WhiteWin, 1)).unwrap();
    validate(&game(GameResult::WhiteWin, 2)).unwrap();
    for bad in [
        game(GameResult::Draw, 1),
        game(GameResult::Draw, 2),
        game(GameResult::WhiteWin, 0),
    ] {
        let e = validate(&bad).unwrap_err();
        assert!(matches!(e, ReplayError::WrongEnd { .. }), "{e}");
    }
}

/// A game scored by material at the length cap must end with its winner a piece ahead and no
/// rule's end on the board.
#[test]
fn a_material_ending_must_show_the_lead() {
    use cfzero_selfplay::replay::{ReplayError, validate};
    let game = |fen: &str, result| GameRecord {
        start_fen: Some(fen.into()),
        result,
        termination: Termination::Material,
        generation: 1,
        positions: Vec::new(),
    };
    let knight_up = "6k1/8/8/8/8/8/PP6/N6K w - - 0 1";
    validate(&game(knight_up, GameResult::WhiteWin)).unwrap();
    validate(&game(
        "6k1/5nn1/8/8/8/8/P7/7K w - - 0 1",
        GameResult::BlackWin,
    ))
    .unwrap();
    for bad in [
        game(knight_up, GameResult::BlackWin),
        game(knight_up, GameResult::Draw),
        // Two pawns are no piece.
        game("6k1/8/8/8/8/8/PP6/7K w - - 0 1", GameResult::WhiteWin),
        // Mate is the rules' end, not material's.
        game("R5k1/5ppp/8/8/8/8/8/Q5K1 b - - 0 1", GameResult::WhiteWin),
    ] {
        let e = validate(&bad).unwrap_err();
        assert!(matches!(e, ReplayError::WrongEnd { .. }), "{e}");
    }
}
