//! The 1-ply material-greedy player on hand-picked positions: the biggest capture, mate
//! first, promotion to a queen, en passant, and uniform tie-breaks with the match's RNG.

use std::collections::BTreeSet;

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_eval::arena::{GameLine, MatchOptions, Player, RandomPlayer, run_match};
use cfzero_eval::greedy::{GreedyPlayer, material_gain};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use shakmaty::{CastlingMode, Move};

fn uci(mv: Move) -> String {
    mv.to_uci(CastlingMode::Standard).to_string()
}

/// The greedy player's move in `fen` with the RNG seeded `seed`, through the `Player` trait.
fn greedy_move(fen: &str, seed: u64) -> String {
    let state = ChessState::from_fen(fen, HistoryFill::No).unwrap();
    let line = GameLine {
        start_fen: Some(fen),
        moves: &[],
    };
    let mut out = Vec::new();
    GreedyPlayer
        .pick(
            std::slice::from_ref(&state),
            &[line],
            &mut ChaCha8Rng::seed_from_u64(seed),
            &mut out,
        )
        .unwrap();
    assert_eq!(out.len(), 1);
    uci(out[0])
}

/// The moves the greedy player picks in `fen` over 200 seeds.
fn moves_over_seeds(fen: &str) -> BTreeSet<String> {
    (0..200).map(|seed| greedy_move(fen, seed)).collect()
}

#[test]
fn takes_the_queen_rather_than_the_pawn() {
    // Rd2 can take the queen on d5 or the pawn on a2.
    let fen = "4k3/8/8/3q4/8/8/p2R4/4K3 w - - 0 1";
    assert_eq!(moves_over_seeds(fen), BTreeSet::from(["d2d5".to_string()]));
}

#[test]
fn mates_rather_than_winning_the_queen() {
    // Nxa2 wins the queen; Rb8 is a back-rank mate.
    let fen = "6k1/5ppp/8/8/8/2N5/q4PPP/1R4K1 w - - 0 1";
    assert_eq!(moves_over_seeds(fen), BTreeSet::from(["b1b8".to_string()]));
}

#[test]
fn promotes_to_a_queen() {
    let fen = "8/4P1k1/8/8/8/8/8/4K3 w - - 0 1";
    assert_eq!(moves_over_seeds(fen), BTreeSet::from(["e7e8q".to_string()]));
}

#[test]
fn counts_the_pawn_taken_en_passant() {
    let fen = "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 1";
    assert_eq!(moves_over_seeds(fen), BTreeSet::from(["e5d6".to_string()]));
    let state = ChessState::from_fen(fen, HistoryFill::No).unwrap();
    let ep = shakmaty::Position::legal_moves(state.position())
        .into_iter()
        .find(|m| m.is_en_passant())
        .unwrap();
    assert_eq!(material_gain(ep), 1);
}

#[test]
fn chooses_among_equal_moves_at_random_and_only_among_them() {
    // dxc5 and dxe5 each win a pawn; every other move wins nothing.
    let fen = "4k3/8/8/2p1p3/3P4/8/8/4K3 w - - 0 1";
    let picked = moves_over_seeds(fen);
    assert_eq!(
        picked,
        BTreeSet::from(["d4c5".to_string(), "d4e5".to_string()])
    );
    // The same seed gives the same move.
    assert_eq!(greedy_move(fen, 5), greedy_move(fen, 5));
    // Uniform: each of the two tied moves about half the time.
    let c5 = (0..400).filter(|&s| greedy_move(fen, s) == "d4c5").count();
    assert!((140..=260).contains(&c5), "d4c5 {c5} times out of 400");
}

#[test]
fn picks_one_move_per_position_of_a_batch() {
    let fens = [
        "4k3/8/8/3q4/8/8/p2R4/4K3 w - - 0 1",
        "8/4P1k1/8/8/8/8/8/4K3 w - - 0 1",
    ];
    let states: Vec<ChessState> = fens
        .iter()
        .map(|f| ChessState::from_fen(f, HistoryFill::No).unwrap())
        .collect();
    let lines: Vec<GameLine<'_>> = fens
        .iter()
        .map(|f| GameLine {
            start_fen: Some(f),
            moves: &[],
        })
        .collect();
    let mut out = Vec::new();
    GreedyPlayer
        .pick(&states, &lines, &mut ChaCha8Rng::seed_from_u64(1), &mut out)
        .unwrap();
    let got: Vec<String> = out.into_iter().map(uci).collect();
    assert_eq!(got, ["d2d5", "e7e8q"]);
}

#[test]
fn beats_the_random_mover() {
    // Greedy takes what random leaves hanging; over 40 games from the start position it
    // must come out well ahead (a loose bound: the exact score depends on the seed).
    let options = MatchOptions {
        games: 40,
        concurrency: 40,
        max_plies: 200,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let games = run_match(
        &mut GreedyPlayer,
        &mut RandomPlayer::default(),
        &[],
        &options,
        &mut rng,
        &mut |_| true,
    )
    .unwrap();
    assert_eq!(games.len(), 40);
    let score: f64 = games.iter().map(|g| g.score_of_a()).sum::<f64>() / 40.0;
    assert!(score > 0.6, "greedy scored {score} against random");
}
