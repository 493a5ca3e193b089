//! Hostile books end to end: a self-play opening book with
//! finished games in it trains (also on `--resume`) with a warning, a book of finished games
//! only is a one-line error with exit code 2, and `cfzero puzzles` skips and counts puzzles
//! whose game is over after the opponent's first move instead of stopping.

mod common;

use std::path::Path;

use common::*;

/// Finished games (checkmate, stalemate, bare kings, fifty-move rule), then one playable
/// position: with four games a generation, the seeded draw starts some from the finished
/// ones.
const BOOK: &str = "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3
7k/5Q2/6K1/8/8/8/8/8 b - - 0 1
8/8/4k3/8/8/4K3/8/8 w - - 0 1
4k3/8/8/8/8/8/4P3/R3K3 w - - 100 80
rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1
";

/// `micro.toml` with the opening book `book` for self-play.
fn micro_with_book(dir: &Path, book: &Path) -> std::path::PathBuf {
    micro_with(
        &dir.join("micro.toml"),
        &[
            ("every = 1", "every = 0"),
            (
                "max_plies = 40",
                &format!("max_plies = 40\nopenings = {:?}", book.to_str().unwrap()),
            ),
        ],
    )
}

#[test]
fn finished_openings_are_skipped_and_resume_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book.epd");
    std::fs::write(&book, BOOK).unwrap();
    let config = micro_with_book(tmp.path(), &book);
    let run = tmp.path().join("run");
    let out = train_run(&config, &run, 1, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning:") && stderr.contains("skipped 4 finished position"),
        "{stderr}"
    );
    train_run(&config, &run, 2, &["--resume"]);
    assert!(run.join("nets/gen-0002.safetensors").exists());
    // Every game started from the one playable position.
    for g in check_records(&run.join("games/gen-0001"), 0, 40) {
        assert_eq!(
            g.record.start_fen.as_deref(),
            Some("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"),
            "{}",
            g.path.display()
        );
    }
}

#[test]
fn a_book_of_finished_games_only_is_a_user_error() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("over.epd");
    let finished: String = BOOK.lines().take(4).map(|l| format!("{l}\n")).collect();
    std::fs::write(&book, finished).unwrap();
    let config = micro_with_book(tmp.path(), &book);
    let run = tmp.path().join("run");
    let out = run_cmd("train", &config, &run, &["--generations", "1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let last = stderr.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error:") && last.contains("over.epd") && last.contains("no playable"),
        "{stderr}"
    );
}

/// A good puzzle, then three over after the opponent's first move.
const PUZZLES: &str = "PuzzleId,FEN,Moves,Rating
good,6k1/5ppp/8/8/8/8/8/RR4K1 b - - 0 1,g8h8 a1a8,600
mated,6k1/8/8/8/8/8/r4PPP/6K1 b - - 0 1,a2a1 g1f1,900
bare,8/8/8/4k3/8/8/3r4/4K3 w - - 0 1,e1d2 e5d5,800
stale,k7/8/1K6/8/8/8/8/2Q5 w - - 0 1,c1c7 a8a7,700
";

#[test]
fn puzzles_already_over_are_skipped_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let net = save_micro_net(tmp.path());
    let file = tmp.path().join("p.csv");
    std::fs::write(&file, PUZZLES).unwrap();
    let out = cfzero(&[
        "puzzles",
        "--device",
        "cpu",
        "--net",
        net.to_str().unwrap(),
        "--file",
        file.to_str().unwrap(),
        "--sims",
        "4",
        "--json",
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("skipped 3 puzzle"), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["tally"]["all"][1], 1);
    assert_eq!(report["skipped"], 3);
}
