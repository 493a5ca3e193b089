//! The UCI client against a real engine process: `tests/engines/pick_engine.py`, a small
//! python-chess engine (in `.venv`, set up by `scripts/setup.sh`) that plays the first or the
//! last legal move in UCI order, so every answer is known in advance.

use std::path::PathBuf;

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_eval::arena::{MatchOptions, RandomPlayer, run_match};
use cfzero_eval::uci_client::{
    UciClientError, UciEngine, UciLimit, UciPlayer, parse_option, resolve_command,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Color, Move, Position};

/// The command line that starts the test engine.
fn engine_command() -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    format!(
        "{} {}",
        root.join(".venv/bin/python").display(),
        root.join("tests/engines/pick_engine.py").display()
    )
}

/// The legal moves of `state` as UCI strings, sorted: what the engine picks from.
fn sorted_legal(state: &ChessState) -> Vec<String> {
    let mut moves: Vec<String> = state
        .position()
        .legal_moves()
        .iter()
        .map(|m| UciMove::from_move(*m, CastlingMode::Standard).to_string())
        .collect();
    moves.sort();
    moves
}

fn uci(mv: Move) -> String {
    UciMove::from_move(mv, CastlingMode::Standard).to_string()
}

fn pick(value: &str) -> Vec<(String, String)> {
    vec![("Pick".to_string(), value.to_string())]
}

#[test]
fn the_engine_names_itself_and_plays_the_first_legal_move_of_the_start() {
    let mut engine = UciEngine::start(&engine_command(), &[]).unwrap();
    assert_eq!(engine.name(), "pick-engine");
    let start = ChessState::new();
    let mv = engine
        .best_move(None, &[], &start, UciLimit::Nodes(1))
        .unwrap();
    assert_eq!(uci(mv), "a2a3");
}

#[test]
fn the_handshake_records_the_options_the_engine_offers() {
    let mut engine = UciEngine::launch(&engine_command()).unwrap();
    assert!(engine.offers("Pick"));
    assert!(
        engine.offers("pick"),
        "UCI option names compare without case"
    );
    assert!(!engine.offers("Skill Level"));
    assert!(!engine.offers("Pic"));
    engine.configure(&pick("last")).unwrap();
    let start = ChessState::new();
    let mv = engine
        .best_move(None, &[], &start, UciLimit::Nodes(1))
        .unwrap();
    assert_eq!(uci(mv), *sorted_legal(&start).last().unwrap());
}

#[test]
fn options_and_the_game_so_far_reach_the_engine() {
    let mut engine = UciEngine::start(&engine_command(), &pick("last")).unwrap();
    // From a FEN with moves after it, castling included: the engine must replay them all.
    let fen = "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8";
    let mut state = ChessState::from_fen(fen, HistoryFill::No).unwrap();
    let mut moves = Vec::new();
    for text in ["e1g1", "e8c8", "a2a3"] {
        let mv = text
            .parse::<UciMove>()
            .unwrap()
            .to_move(state.position())
            .unwrap();
        state.play_move(mv);
        moves.push(mv);
    }
    assert_eq!(state.turn(), Color::Black);
    let mv = engine
        .best_move(Some(fen), &moves, &state, UciLimit::Movetime(10))
        .unwrap();
    assert_eq!(uci(mv), *sorted_legal(&state).last().unwrap());
}

#[test]
fn an_illegal_answer_is_an_error_naming_the_move_and_the_position() {
    let mut engine = UciEngine::start(&engine_command(), &pick("illegal")).unwrap();
    let start = ChessState::new();
    let err = engine
        .best_move(None, &[], &start, UciLimit::Depth(1))
        .unwrap_err();
    assert!(matches!(err, UciClientError::IllegalMove { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("a1a1") && text.contains(&start.fen()),
        "{text}"
    );
}

#[test]
fn a_missing_engine_cannot_start() {
    let err = UciEngine::start("/nonexistent/engine --flag", &[]).unwrap_err();
    assert!(matches!(err, UciClientError::Spawn { .. }), "{err}");
    assert!(matches!(
        UciEngine::start("   ", &[]).unwrap_err(),
        UciClientError::EmptyCommand
    ));
}

#[test]
fn options_parse_at_the_first_equals_sign() {
    assert_eq!(
        parse_option("Skill Level = 3").unwrap(),
        ("Skill Level".to_string(), "3".to_string())
    );
    assert_eq!(
        parse_option("SyzygyPath=/a=b").unwrap(),
        ("SyzygyPath".to_string(), "/a=b".to_string())
    );
    assert!(parse_option("Threads").is_err());
    assert!(parse_option("=4").is_err());
}

#[test]
fn a_match_against_the_engine_follows_the_schedule_and_the_engine_plays_its_moves() {
    let openings = vec![
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1".to_string(),
        "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2".to_string(),
    ];
    let mut engine = UciPlayer::start(&engine_command(), &[], UciLimit::Nodes(1), 2).unwrap();
    let mut random = RandomPlayer::default();
    let options = MatchOptions {
        games: 4,
        concurrency: 2,
        max_plies: 60,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut seen = 0;
    let games = run_match(
        &mut engine,
        &mut random,
        &openings,
        &options,
        &mut rng,
        &mut |_| {
            seen += 1;
            true
        },
    )
    .unwrap();
    assert_eq!(seen, 4);
    let schedule: Vec<(usize, bool)> = games.iter().map(|g| (g.pair, g.a_is_white)).collect();
    assert_eq!(schedule, [(0, true), (0, false), (1, true), (1, false)]);
    for g in &games {
        assert_eq!(g.start_fen.as_deref(), Some(openings[g.pair].as_str()));
        // Replay: every move of the engine (player A) is the first legal one.
        let mut state =
            ChessState::from_fen(g.start_fen.as_deref().unwrap(), HistoryFill::No).unwrap();
        let mut engine_moves = 0;
        for &mv in &g.moves {
            if (state.turn() == Color::White) == g.a_is_white {
                assert_eq!(uci(mv), sorted_legal(&state)[0]);
                engine_moves += 1;
            }
            state.play_move(mv);
        }
        assert!(engine_moves > 0);
        let reason = state.terminal_reason();
        assert!(reason.is_some() || g.moves.len() == 60, "game ended early");
    }
}

#[test]
fn an_engine_that_prints_info_forever_times_out_on_the_whole_answer() {
    let mut engine = UciEngine::start(&engine_command(), &pick("chatty")).unwrap();
    let start = std::time::Instant::now();
    // Movetime 1 ms: the answer's deadline is 4 ms + 10 s, however many lines arrive.
    let err = engine
        .best_move(None, &[], &ChessState::new(), UciLimit::Movetime(1))
        .unwrap_err();
    assert!(matches!(err, UciClientError::Timeout { .. }), "{err}");
    let waited = start.elapsed().as_secs_f64();
    assert!((9.5..30.0).contains(&waited), "waited {waited} s");
}

#[test]
fn bytes_that_are_not_utf8_and_overlong_lines_do_not_end_the_reader() {
    for misbehaviour in ["binary", "longline"] {
        let mut engine = UciEngine::start(&engine_command(), &pick(misbehaviour)).unwrap();
        let start = ChessState::new();
        for _ in 0..2 {
            let mv = engine
                .best_move(None, &[], &start, UciLimit::Nodes(1))
                .unwrap_or_else(|e| panic!("{misbehaviour}: {e}"));
            assert_eq!(uci(mv), "a2a3", "{misbehaviour}");
        }
    }
}

#[test]
fn a_bare_program_name_is_found_on_the_path_and_anything_else_is_left_alone() {
    let sh = resolve_command("sh");
    assert!(sh.starts_with('/') && sh.ends_with("/sh"), "{sh}");
    assert!(std::path::Path::new(&sh).is_file());
    let with_args = resolve_command("sh -c true");
    assert_eq!(with_args, format!("{sh} -c true"));
    assert_eq!(resolve_command("/bin/sh -c true"), "/bin/sh -c true");
    assert_eq!(
        resolve_command("cfzero-no-such-engine --x"),
        "cfzero-no-such-engine --x"
    );
}
