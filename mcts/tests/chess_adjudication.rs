//! Adjudication of `ChessState`: a known position for each way a game ends, and the
//! order in which the rules apply.

use cfzero_chess::{ChessState, HistoryFill, TerminalReason};
use cfzero_mcts::{Game, Terminal};

fn after(fen: &str, moves: &str) -> ChessState {
    let mut state = ChessState::from_fen(fen, HistoryFill::FenOnly).expect("valid FEN");
    state.play_uci_line(moves).expect("legal moves");
    state
}

fn start_after(moves: &str) -> ChessState {
    let mut state = ChessState::new();
    state.play_uci_line(moves).expect("legal moves");
    state
}

/// Checks both `terminal_reason` and the `Game::terminal` that the search uses.
fn assert_ends(state: &ChessState, reason: Option<TerminalReason>) {
    assert_eq!(state.terminal_reason(), reason, "position {}", state.fen());
    let mut legal = Vec::new();
    state.legal_moves(&mut legal);
    assert_eq!(state.terminal(&legal), reason.map(Terminal::from));
}

#[test]
fn fools_mate_is_checkmate_and_a_loss_for_white() {
    let state = start_after("f2f3 e7e5 g2g4 d8h4");
    assert_ends(&state, Some(TerminalReason::Checkmate));
    assert_eq!(Terminal::from(TerminalReason::Checkmate), Terminal::Loss);
}

#[test]
fn king_in_the_corner_is_stalemate() {
    // Black king h8, white queen f7 and king g6: no legal move, not in check.
    let state = after("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "");
    assert_ends(&state, Some(TerminalReason::Stalemate));
    // One move earlier (queen on f5) the game goes on.
    assert_ends(&after("7k/8/6K1/5Q2/8/8/8/8 w - - 0 1", ""), None);
    assert_ends(
        &after("7k/8/6K1/5Q2/8/8/8/8 w - - 0 1", "f5f7"),
        Some(TerminalReason::Stalemate),
    );
}

#[test]
fn bare_kings_and_a_lone_minor_piece_are_insufficient_material() {
    for fen in [
        "8/8/8/4k3/8/8/8/4K3 w - - 0 1",
        "8/8/8/4k3/8/8/8/2B1K3 b - - 0 1",
        "8/8/8/4k3/8/8/8/1N2K3 w - - 0 1",
    ] {
        assert_ends(&after(fen, ""), Some(TerminalReason::InsufficientMaterial));
    }
    // A capture that leaves bare kings ends the game.
    assert_ends(&after("8/8/8/4k3/4p3/8/8/4K3 b - - 0 1", ""), None);
    assert_ends(
        &after("8/8/8/8/3r4/4K3/8/7k w - - 0 1", "e3d4"),
        Some(TerminalReason::InsufficientMaterial),
    );
    // A rook is enough to mate.
    assert_ends(&after("8/8/8/4k3/8/8/3R4/4K3 w - - 0 1", ""), None);
}

#[test]
fn hundredth_quiet_ply_is_a_fifty_move_draw() {
    let fen = "8/8/8/4k3/8/8/3R4/4K3 w - - 98 80";
    assert_ends(&after(fen, "d2d3"), None);
    let state = after(fen, "d2d3 e5e6");
    assert_eq!(state.halfmove_clock(), 100);
    assert_ends(&state, Some(TerminalReason::FiftyMoveRule));
}

#[test]
fn checkmate_on_the_hundredth_ply_takes_precedence_over_the_fifty_move_rule() {
    let state = after("7k/8/6K1/8/8/8/8/R7 w - - 99 80", "a1a8");
    assert_eq!(state.halfmove_clock(), 100);
    assert_ends(&state, Some(TerminalReason::Checkmate));
}

#[test]
fn third_occurrence_is_threefold_repetition() {
    let shuffle = "g1f3 g8f6 f3g1 f6g8";
    let once = start_after(shuffle);
    assert_eq!(once.repetitions(), 1, "start position seen twice");
    assert_ends(&once, None);
    let twice = start_after(&format!("{shuffle} {shuffle}"));
    assert_eq!(twice.repetitions(), 2, "start position seen three times");
    assert_ends(&twice, Some(TerminalReason::ThreefoldRepetition));
}

#[test]
fn a_pawn_move_resets_repetition_counting() {
    // The first shuffle happens before e2e4 e7e5; after it the positions are new.
    let state = start_after("g1f3 g8f6 f3g1 f6g8 e2e4 e7e5 g1f3 g8f6 f3g1 f6g8");
    assert_eq!(state.repetitions(), 1);
    assert_ends(&state, None);
}

#[test]
fn reaching_max_plies_is_a_draw() {
    let mut state = ChessState::new();
    state.set_max_plies(4);
    state.play_uci_line("e2e4 e7e5 g1f3").unwrap();
    assert_ends(&state, None);
    state.play_uci("b8c6").unwrap();
    assert_eq!(state.ply(), 4);
    assert_eq!(state.terminal_reason(), Some(TerminalReason::MaxPlies));
    assert_eq!(Terminal::from(TerminalReason::MaxPlies), Terminal::Draw);
    // The search sees no end: the cap adjudicates the game, the position goes on.
    let mut legal = Vec::new();
    state.legal_moves(&mut legal);
    assert_eq!(state.terminal(&legal), None);
}

#[test]
fn start_position_is_not_terminal_and_default_max_plies_is_450() {
    let state = ChessState::new();
    assert_ends(&state, None);
    assert_eq!(state.max_plies(), 450);
}

#[test]
fn reasons_have_human_descriptions() {
    assert_eq!(
        TerminalReason::ThreefoldRepetition.to_string(),
        "threefold repetition"
    );
    assert_eq!(TerminalReason::FiftyMoveRule.describe(), "fifty-move rule");
}
