//! Hostile puzzle files: puzzles whose game is already over after the
//! opponent's first move are skipped and counted, never a stop of the whole run; a file with
//! nothing to solve is one error.

use cfzero_chess::TerminalReason;
use cfzero_eval::puzzles::{PuzzleError, read_puzzles};

/// A good puzzle (Ra8# after Kh8), then three whose game is over after the opponent's
/// first move: checkmate, bare kings, stalemate.
pub const PUZZLES: &str = "PuzzleId,FEN,Moves,Rating
good,6k1/5ppp/8/8/8/8/8/RR4K1 b - - 0 1,g8h8 a1a8,600
mated,6k1/8/8/8/8/8/r4PPP/6K1 b - - 0 1,a2a1 g1f1,900
bare,8/8/8/4k3/8/8/3r4/4K3 w - - 0 1,e1d2 e5d5,800
stale,k7/8/1K6/8/8/8/8/2Q5 w - - 0 1,c1c7 a8a7,700
";

#[test]
fn puzzles_over_after_the_first_move_are_skipped_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("p.csv");
    std::fs::write(&path, PUZZLES).unwrap();
    let set = read_puzzles(&path, None).unwrap();
    let ids: Vec<&str> = set.puzzles.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["good"]);
    let skipped: Vec<(usize, &str, usize, TerminalReason)> = set
        .skipped
        .iter()
        .map(|s| (s.line, s.id.as_str(), s.after_moves, s.reason))
        .collect();
    assert_eq!(
        skipped,
        [
            (3, "mated", 1, TerminalReason::Checkmate),
            (4, "bare", 1, TerminalReason::InsufficientMaterial),
            (5, "stale", 1, TerminalReason::Stalemate),
        ]
    );
    let warning = set.skipped_warning(&path).unwrap();
    assert!(warning.contains("skipped 3"), "{warning}");

    // Nothing but finished games: one error, not an empty run.
    let only_over: String = PUZZLES
        .lines()
        .filter(|l| !l.starts_with("good"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, only_over).unwrap();
    let err = read_puzzles(&path, None).unwrap_err();
    assert!(
        matches!(err, PuzzleError::NothingToSolve { skipped: 3, .. }),
        "{err}"
    );
}
