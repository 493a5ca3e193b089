//! Puzzle scoring with scripted players: rows of Lichess's puzzle CSV (`tests/data/puzzles`,
//! CC0) and hand-made ones, where the right and wrong answers are known.

use std::collections::HashSet;
use std::path::PathBuf;

use cfzero_chess::ChessState;
use cfzero_eval::arena::{ArenaError, GameLine, Player};
use cfzero_eval::puzzles::{Puzzle, PuzzleError, PuzzleTally, band, read_puzzles, solve_puzzles};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use shakmaty::Move;
use shakmaty::uci::UciMove;

fn sample() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/puzzles/sample.csv")
}

/// Plays each puzzle's solution, except a scripted move where one is given.
struct Scripted {
    puzzles: Vec<Puzzle>,
    /// (puzzle id, move index) -> the move to play instead.
    instead: Vec<(String, usize, String)>,
    /// Puzzle ids and move indices asked, in order, to check the batching.
    asked: Vec<(String, usize)>,
    batches: Vec<usize>,
}

impl Player for Scripted {
    fn name(&self) -> String {
        "scripted".into()
    }

    fn pick(
        &mut self,
        states: &[ChessState],
        lines: &[GameLine<'_>],
        _rng: &mut dyn rand::RngCore,
        out: &mut Vec<Move>,
    ) -> Result<(), ArenaError> {
        self.batches.push(states.len());
        for (state, line) in states.iter().zip(lines) {
            let p = self
                .puzzles
                .iter()
                .find(|p| Some(p.fen.as_str()) == line.start_fen)
                .expect("a known puzzle");
            let index = line.moves.len();
            self.asked.push((p.id.clone(), index));
            let text = self
                .instead
                .iter()
                .find(|(id, i, _)| *id == p.id && *i == index)
                .map_or(p.moves[index].clone(), |(_, _, m)| m.clone());
            let mv = text
                .parse::<UciMove>()
                .unwrap()
                .to_move(state.position())
                .unwrap();
            out.push(mv);
        }
        Ok(())
    }
}

fn scripted(puzzles: &[Puzzle], instead: &[(&str, usize, &str)]) -> Scripted {
    Scripted {
        puzzles: puzzles.to_vec(),
        instead: instead
            .iter()
            .map(|(a, b, c)| (a.to_string(), *b, c.to_string()))
            .collect(),
        asked: Vec::new(),
        batches: Vec::new(),
    }
}

#[test]
fn the_sample_reads_with_its_ratings_and_lines() {
    let all = read_puzzles(&sample(), None).unwrap().puzzles;
    assert_eq!(all.len(), 10);
    assert_eq!(all[0].id, "3IQ26");
    assert_eq!(all[0].moves, ["f1c1", "e3e1", "c1e1", "e8e1"]);
    assert_eq!(all[0].rating, 400);
    let bands: Vec<usize> = all.iter().map(|p| band(p.rating)).collect();
    assert_eq!(bands, [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]);
    assert_eq!(read_puzzles(&sample(), Some(3)).unwrap().puzzles.len(), 3);
}

#[test]
fn the_solution_solves_everything_and_a_wrong_move_fails_where_it_is_played() {
    let puzzles = read_puzzles(&sample(), None).unwrap().puzzles;
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut perfect = scripted(&puzzles, &[]);
    let outcomes = solve_puzzles(&puzzles, &mut perfect, 4, &mut rng, &mut |_| {}).unwrap();
    assert!(outcomes.iter().all(|o| o.solved && o.wrong.is_none()));
    assert_eq!(PuzzleTally::of(&outcomes).all, (10, 10));
    // Four at a time at most; the solver is asked its moves only (odd indices).
    assert!(perfect.batches.iter().all(|&b| (1..=4).contains(&b)));
    assert!(perfect.asked.iter().all(|(_, i)| i % 2 == 1));
    let solver_moves: usize = puzzles.iter().map(|p| p.moves.len() / 2).sum();
    assert_eq!(perfect.asked.len(), solver_moves);

    // MAvnx: f7f6 d1h5 g7g6 e5g6 h7g6 h5h8 — the second answer (index 3) wrong.
    let mut wrong = scripted(&puzzles, &[("MAvnx", 3, "e5c6"), ("JvRU7", 1, "a4a5")]);
    let mut seen = HashSet::new();
    let outcomes = solve_puzzles(&puzzles, &mut wrong, 64, &mut rng, &mut |o| {
        seen.insert(o.id.clone());
    })
    .unwrap();
    assert_eq!(seen.len(), 10);
    let failed: Vec<(&str, Option<(usize, String)>)> = outcomes
        .iter()
        .filter(|o| !o.solved)
        .map(|o| (o.id.as_str(), o.wrong.clone()))
        .collect();
    assert_eq!(
        failed,
        [
            ("MAvnx", Some((3, "e5c6".to_string()))),
            ("JvRU7", Some((1, "a4a5".to_string())))
        ]
    );
    let tally = PuzzleTally::of(&outcomes);
    assert_eq!(tally.all, (8, 10));
    assert_eq!(tally.bands, [(3, 3), (2, 3), (1, 2), (2, 2)]);
    // The failed puzzles were not asked past the wrong move.
    assert!(!wrong.asked.contains(&("MAvnx".to_string(), 5)));
}

#[test]
fn any_mating_move_solves_a_mate() {
    // Black plays Kh8; then Ra8# and Rb8# both mate.
    let row = "mate2x,6k1/5ppp/8/8/8/8/8/RR4K1 b - - 0 1,g8h8 a1a8,600";
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("p.csv");
    std::fs::write(&path, format!("{row}\n")).unwrap();
    let puzzles = read_puzzles(&path, None).unwrap().puzzles;
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut other_mate = scripted(&puzzles, &[("mate2x", 1, "b1b8")]);
    let out = solve_puzzles(&puzzles, &mut other_mate, 1, &mut rng, &mut |_| {}).unwrap();
    assert!(out[0].solved);
    let mut no_mate = scripted(&puzzles, &[("mate2x", 1, "b1b7")]);
    let out = solve_puzzles(&puzzles, &mut no_mate, 1, &mut rng, &mut |_| {}).unwrap();
    assert_eq!(out[0].wrong, Some((1, "b1b7".to_string())));
}

#[test]
fn bad_rows_name_their_line() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("p.csv");
    let good = "a,6k1/5ppp/8/8/8/8/8/RR4K1 b - - 0 1,g8h8 a1a8,600";
    for (bad, why) in [
        ("b,6k1/5ppp/8/8/8/8/8/RR4K1 b - - 0 1,g8h8 a1a9,600", "a1a9"),
        ("c,not a fen,g8h8 a1a8,600", "FEN"),
        (
            "d,6k1/5ppp/8/8/8/8/8/RR4K1 b - - 0 1,g8h8 a1a8,high",
            "rating",
        ),
        ("e,6k1/5ppp/8/8/8/8/8/RR4K1 b - - 0 1", "expected"),
    ] {
        std::fs::write(&path, format!("PuzzleId,FEN,Moves,Rating\n{good}\n{bad}\n")).unwrap();
        let err = read_puzzles(&path, None).unwrap_err();
        assert!(matches!(err, PuzzleError::BadRow { line: 3, .. }), "{err}");
        assert!(err.to_string().contains(why), "{err}");
    }
    std::fs::write(&path, "PuzzleId,FEN,Moves,Rating\n").unwrap();
    assert!(matches!(
        read_puzzles(&path, None),
        Err(PuzzleError::Empty { .. })
    ));
}
