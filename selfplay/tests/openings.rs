//! Opening files: EPD/FEN lines and PGN games.

use cfzero_selfplay::openings::{OpeningError, pgn_final_positions, read_openings};

const TWO_GAMES: &str = r#"[Event "one"]
[White "a"]

1. e4 {a comment; with a semicolon} e5 (1... c5 2. Nf3 (2. c3) d6) 2. Nf3 $1 Nc6!? ; rest of line
1-0

[Event "two"]
[FEN "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"]
[SetUp "1"]

1. e4 Kd7 2... *
"#;

#[test]
fn pgn_openings_are_the_positions_after_the_main_lines() {
    let fens = pgn_final_positions(TWO_GAMES).unwrap();
    assert_eq!(
        fens,
        [
            "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
            "8/3k4/8/8/4P3/8/8/4K3 w - - 1 2",
        ]
    );
    // Movetext without tags or result is one game from the start.
    assert_eq!(
        pgn_final_positions("1.d4 d5 2.c4").unwrap(),
        ["rnbqkbnr/ppp1pppp/8/3p4/2PP4/8/PP2PPPP/RNBQKBNR b KQkq - 0 2"]
    );
}

#[test]
fn a_bad_pgn_move_names_its_game() {
    let text = TWO_GAMES.replace("Kd7", "Kd5");
    let (game, reason) = pgn_final_positions(&text).unwrap_err();
    assert_eq!(game, 2);
    assert!(reason.contains("Kd5"), "{reason}");
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bad.pgn");
    std::fs::write(&path, text).unwrap();
    let err = read_openings(&path).unwrap_err();
    assert!(
        matches!(err, OpeningError::BadGame { game: 2, .. }),
        "{err}"
    );
}

#[test]
fn files_are_read_by_their_extension() {
    let tmp = tempfile::tempdir().unwrap();
    let pgn = tmp.path().join("book.PGN");
    std::fs::write(&pgn, TWO_GAMES).unwrap();
    assert_eq!(read_openings(&pgn).unwrap().len(), 2);
    let epd = tmp.path().join("book.epd");
    std::fs::write(
        &epd,
        "# a comment\nrnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - bm e5;\n\n",
    )
    .unwrap();
    assert_eq!(
        read_openings(&epd).unwrap(),
        ["rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"]
    );
    let empty = tmp.path().join("empty.pgn");
    std::fs::write(&empty, "[Event \"x\"]\n").unwrap();
    // A game with tags and no moves is the start position.
    assert_eq!(read_openings(&empty).unwrap().len(), 1);
    std::fs::write(&empty, "\n").unwrap();
    assert!(matches!(
        read_openings(&empty),
        Err(OpeningError::Empty { .. })
    ));
}
