//! `ChessState` basics: FEN and move input, castling notation, history steps, copies
//! and the cache key.

use cfzero_chess::{ChessError, ChessState, HistoryFill};
use cfzero_mcts::Game;
use shakmaty::{Board, Color, Move, Position, Square};

#[test]
fn invalid_fens_are_errors_that_name_the_fen() {
    for fen in [
        "",
        "not a fen",
        "8/8/8/8/8/8/8/8 w - - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
    ] {
        let err = ChessState::from_fen(fen, HistoryFill::No).unwrap_err();
        assert!(
            matches!(err, ChessError::InvalidFen { .. }),
            "{fen:?}: {err:?}"
        );
        assert!(err.to_string().contains(fen), "{err}");
    }
}

#[test]
fn illegal_and_malformed_moves_are_errors_and_leave_the_state_unchanged() {
    let mut state = ChessState::new();
    let err = state.play_uci("e2e5").unwrap_err();
    assert!(matches!(err, ChessError::IllegalMove { .. }), "{err:?}");
    assert!(err.to_string().contains("e2e5"));
    let err = state.play_uci("hello").unwrap_err();
    assert!(matches!(err, ChessError::InvalidUci { .. }), "{err:?}");
    assert_eq!(state.ply(), 0);
    assert_eq!(state.cache_key(), ChessState::new().cache_key());
}

#[test]
fn castling_is_accepted_as_king_two_squares_and_as_king_takes_rook() {
    let fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1";
    for (uci, king, rook) in [
        ("e1g1", Square::E1, Square::H1),
        ("e1h1", Square::E1, Square::H1),
        ("e1c1", Square::E1, Square::A1),
        ("e1a1", Square::E1, Square::A1),
    ] {
        let mut state = ChessState::from_fen(fen, HistoryFill::No).unwrap();
        assert_eq!(
            state.play_uci(uci).unwrap(),
            Move::Castle { king, rook },
            "{uci}"
        );
    }
    let mut state = ChessState::from_fen(fen, HistoryFill::No).unwrap();
    state.play_uci("e1g1").unwrap();
    assert_eq!(
        state.play_uci("e8a8").unwrap(),
        Move::Castle {
            king: Square::E8,
            rook: Square::A8
        }
    );
    assert_eq!(state.fen(), "2kr3r/8/8/8/8/8/8/R4RK1 w - - 2 2");
}

#[test]
fn legal_moves_follow_shakmatys_order() {
    let state = ChessState::new();
    let mut moves = Vec::new();
    state.legal_moves(&mut moves);
    assert_eq!(moves.as_slice(), state.position().legal_moves().as_slice());
    assert_eq!(moves.len(), 20);
}

#[test]
fn history_steps_hold_the_last_eight_boards() {
    let moves = [
        "e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5", "d2d3", "d7d6", "c1g5",
    ];
    let mut state = ChessState::new();
    let mut boards = vec![state.position().board().clone()];
    for uci in moves {
        state.play_uci(uci).unwrap();
        boards.push(state.position().board().clone());
    }
    for t in 0..8 {
        assert_eq!(
            state.history_board(t),
            Some(&boards[boards.len() - 1 - t]),
            "step {t}"
        );
        assert!(state.history_is_real(t));
    }
    assert_eq!(state.history_board(8), None);
}

#[test]
fn history_before_a_fen_follows_history_fill() {
    let fen = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP2BPPP/R1BQ1RK1 b - - 4 8";
    let no = ChessState::from_fen(fen, HistoryFill::No).unwrap();
    let fen_only = ChessState::from_fen(fen, HistoryFill::FenOnly).unwrap();
    assert_eq!(no.history_board(1), None);
    for t in 1..8 {
        assert_eq!(fen_only.history_board(t), Some(fen_only.position().board()));
        assert!(!fen_only.history_repeated(t));
        assert!(!fen_only.history_is_real(t));
    }
    // Not applied to the standard start position.
    let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
    assert_eq!(
        ChessState::from_fen(start, HistoryFill::FenOnly)
            .unwrap()
            .history_board(1),
        None
    );
}

#[test]
fn en_passant_in_a_fen_adds_the_position_before_the_double_push() {
    let fen = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3";
    let state = ChessState::from_fen(fen, HistoryFill::No).unwrap();
    let before: Board = "rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR"
        .parse::<shakmaty::fen::Fen>()
        .map(|f| f.into_setup().board)
        .unwrap_or_else(|_| panic!("board"));
    assert_eq!(state.history_board(1), Some(&before));
    assert_eq!(state.history_board(2), None);
    let filled = ChessState::from_fen(fen, HistoryFill::FenOnly).unwrap();
    assert_eq!(filled.history_board(7), Some(&before));
}

#[test]
fn clone_from_copies_everything_and_cache_keys_see_history() {
    let mut a = ChessState::new();
    a.play_uci_line("g1f3 g8f6 f3g1 f6g8").unwrap();
    let mut b = ChessState::new();
    b.play_uci_line("e2e4").unwrap();
    b.clone_from(&a);
    assert_eq!(b.cache_key(), a.cache_key());
    assert_eq!(b.repetitions(), 1);
    assert_eq!(b.turn(), Color::White);
    // Same board and side to move, different history: different keys.
    assert_eq!(a.position().board(), ChessState::new().position().board());
    assert_ne!(a.cache_key(), ChessState::new().cache_key());
    // Same moves in another order reach the same history only if the boards agree.
    let mut c = ChessState::new();
    c.play_uci_line("g1f3 g8f6 f3g1 f6g8").unwrap();
    assert_eq!(c.cache_key(), a.cache_key());
}
