//! Hostile opening books: positions in which the game is already over
//! are skipped and reported, never a stop of the whole run; a book with nothing playable at
//! all is one error. (Puzzle files: `eval/tests/hostile_puzzles.rs`.)

use cfzero_chess::TerminalReason;
use cfzero_selfplay::openings::{BookPlace, OpeningError, read_book, read_openings};

/// Four finished games (checkmate, stalemate, bare kings, fifty-move rule) and one playable
/// position, on lines 2 to 6.
const BOOK: &str = "# finished games first
rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3
7k/5Q2/6K1/8/8/8/8/8 b - - 0 1
8/8/4k3/8/8/4K3/8/8 w - - 0 1
4k3/8/8/8/8/8/4P3/R3K3 w - - 100 80
rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1
";

#[test]
fn finished_book_positions_are_skipped_with_their_place() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("book.epd");
    std::fs::write(&path, BOOK).unwrap();
    let book = read_book(&path).unwrap();
    assert_eq!(
        book.positions,
        ["rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"]
    );
    let skipped: Vec<(BookPlace, TerminalReason)> =
        book.finished.iter().map(|f| (f.place, f.reason)).collect();
    assert_eq!(
        skipped,
        [
            (BookPlace::Line(2), TerminalReason::Checkmate),
            (BookPlace::Line(3), TerminalReason::Stalemate),
            (BookPlace::Line(4), TerminalReason::InsufficientMaterial),
            (BookPlace::Line(5), TerminalReason::FiftyMoveRule),
        ]
    );
    let warning = book.skipped_warning(&path).unwrap();
    assert!(
        warning.contains("skipped 4") && warning.contains("line 3 (stalemate)"),
        "{warning}"
    );
    // Match openings are read whole: matches cope with finished positions themselves.
    assert_eq!(read_openings(&path).unwrap().len(), 5);
}

#[test]
fn a_pgn_book_skips_games_that_ended_in_mate() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("book.pgn");
    std::fs::write(
        &path,
        "[Event \"fool\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n[Event \"open\"]\n\n1. e4 e5 *\n",
    )
    .unwrap();
    let book = read_book(&path).unwrap();
    assert_eq!(book.positions.len(), 1);
    assert_eq!(book.finished.len(), 1);
    assert_eq!(book.finished[0].place, BookPlace::Game(1));
    assert_eq!(book.finished[0].reason, TerminalReason::Checkmate);
}

#[test]
fn a_book_of_finished_games_only_is_one_error() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("over.epd");
    let finished: String = BOOK.lines().take(5).map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, finished).unwrap();
    let err = read_book(&path).unwrap_err();
    assert!(
        matches!(err, OpeningError::NoPlayable { finished: 4, .. }),
        "{err}"
    );
    let msg = err.to_string();
    assert!(msg.contains("over.epd") && !msg.contains('\n'), "{msg}");
}
