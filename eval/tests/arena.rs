//! Match scheduling: pairs of games per opening with colours reversed, legal games with the
//! right results, early stop, and the statistics units.

use cfzero_chess::{ChessState, HistoryFill, TerminalReason};
use cfzero_chess::{GameResult, Termination};
use cfzero_eval::arena::{
    ArenaGame, MatchOptions, MatchScore, RandomPlayer, run_match, score_sample,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn openings() -> Vec<String> {
    vec![
        "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq - 0 1".to_string(),
        "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1".to_string(),
    ]
}

fn random_match(options: &MatchOptions, stop_after: usize) -> Vec<ArenaGame> {
    let (mut a, mut b) = (RandomPlayer::default(), RandomPlayer::default());
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut seen = 0;
    run_match(&mut a, &mut b, &openings(), options, &mut rng, &mut |_| {
        seen += 1;
        seen < stop_after
    })
    .unwrap()
}

#[test]
fn each_opening_is_played_with_both_colours_and_the_games_replay_to_their_results() {
    let options = MatchOptions {
        games: 6,
        concurrency: 3,
        max_plies: 80,
    };
    let games = random_match(&options, usize::MAX);
    let schedule: Vec<(usize, bool, &str)> = games
        .iter()
        .map(|g| (g.pair, g.a_is_white, g.start_fen.as_deref().unwrap()))
        .collect();
    let o = openings();
    assert_eq!(
        schedule,
        [
            (0, true, o[0].as_str()),
            (0, false, o[0].as_str()),
            (1, true, o[1].as_str()),
            (1, false, o[1].as_str()),
            (2, true, o[0].as_str()),
            (2, false, o[0].as_str()),
        ]
    );
    for g in &games {
        let mut state =
            ChessState::from_fen(g.start_fen.as_deref().unwrap(), HistoryFill::No).unwrap();
        state.set_max_plies(80);
        for &mv in &g.moves {
            assert!(state.terminal_reason().is_none(), "a move after the end");
            state.play_move(mv);
        }
        let reason = state.terminal_reason().expect("the game is over");
        assert_eq!(g.termination, Termination::from(reason));
        assert_eq!(g.result, GameResult::from_terminal(reason, state.turn()));
    }
    let score = MatchScore::of(&games);
    assert_eq!(score.games(), 6);
}

#[test]
fn a_false_from_on_game_starts_no_new_game() {
    let options = MatchOptions {
        games: 10,
        concurrency: 1,
        max_plies: 40,
    };
    let games = random_match(&options, 3);
    assert_eq!(
        games.len(),
        3,
        "one game at a time: the third stops the match"
    );
    let options = MatchOptions {
        concurrency: 4,
        ..options
    };
    // Four at a time: the three started with the stopping one are played out.
    let games = random_match(&options, 1);
    assert_eq!(games.len(), 4);
}

fn game(pair: usize, a_is_white: bool, result: GameResult) -> ArenaGame {
    ArenaGame {
        pair,
        start_fen: None,
        a_is_white,
        moves: Vec::new(),
        result,
        termination: Termination::Rule(TerminalReason::Checkmate),
    }
}

#[test]
fn statistics_use_complete_pairs_and_fall_back_to_games() {
    use GameResult::*;
    // Pair 0: A wins with white, draws with black (¾); pair 1: A loses with black only (½
    // of a pair missing, left out); pair 2: A loses with white, wins with black (½).
    let games = [
        game(0, true, WhiteWin),
        game(0, false, Draw),
        game(1, false, WhiteWin),
        game(2, true, BlackWin),
        game(2, false, BlackWin),
    ];
    let sample = score_sample(&games);
    assert_eq!(sample.len(), 2);
    assert_eq!(sample.mean(), 0.625);
    let score = MatchScore::of(&games);
    assert_eq!((score.wins, score.draws, score.losses), (2, 1, 2));
    // No complete pair: each game is a unit.
    let single = score_sample(&games[2..3]);
    assert_eq!((single.len(), single.mean()), (1, 0.0));
}
