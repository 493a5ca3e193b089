//! Left-right mirroring of a training sample (`HostBatch::mirror`, `train.mirror`): a sample
//! mirrored in place equals the sample of the game played on the mirrored board, and a
//! position where a side can castle stays as it is.

mod support;

use std::sync::{Arc, RwLock};

use cfzero_chess::ChessState;
use cfzero_mcts::Game;
use cfzero_network::encoding::{POLICY_SIZE, TOKEN_FLOATS};
use cfzero_selfplay::GameRecord;
use cfzero_selfplay::record::quantize_probability;
use cfzero_selfplay::window::ReplayWindow;
use cfzero_trainer::sample::{SampleScratch, TargetOptions, fill_position};
use cfzero_trainer::{HostBatch, Loader, QTarget};
use shakmaty::{CastlingMode, Move};
use support::{random_game, random_game_from, window_config};

/// No side can castle, though kings and rooks stand on their squares; not symmetric.
const FEN: &str = "r3k2r/1pp2ppp/p1n1b3/4p3/4P1q1/2N1BN2/PPP2PPP/R3K2R w - - 4 11";

/// `fen` with every rank read right to left.
fn mirror_fen(fen: &str) -> String {
    let (board, rest) = fen.split_once(' ').unwrap();
    let ranks: Vec<String> = board
        .split('/')
        .map(|r| r.chars().rev().collect())
        .collect();
    format!("{} {rest}", ranks.join("/"))
}

/// `uci` with both squares' files mirrored (a <-> h); a promotion's piece stays.
fn mirror_uci(uci: &str) -> String {
    uci.char_indices()
        .map(|(i, c)| match c {
            'a'..='h' if i % 2 == 0 && i < 4 => char::from(b'a' + (b'h' - c as u8)),
            _ => c,
        })
        .collect()
}

fn uci(mv: &Move) -> String {
    mv.to_uci(CastlingMode::Standard).to_string()
}

/// `game` with a policy whose every entry differs (so that a wrong permutation shows), and
/// the same game played on the mirrored board with the same policy on the mirrored moves.
fn game_and_mirror(seed: u64) -> (GameRecord, GameRecord) {
    let mut game = random_game_from(Some(FEN), seed, 14);
    let mirror_start = mirror_fen(FEN);
    let mut mirrored = GameRecord {
        start_fen: Some(mirror_start.clone()),
        ..game.clone()
    };
    let mut state = ChessState::from_fen(FEN, Default::default()).unwrap();
    let mut other = ChessState::from_fen(&mirror_start, Default::default()).unwrap();
    let (mut legal, mut other_legal) = (Vec::new(), Vec::new());
    for (record, mirror_record) in game.positions.iter_mut().zip(&mut mirrored.positions) {
        state.legal_moves(&mut legal);
        other.legal_moves(&mut other_legal);
        let n = legal.len();
        let total = (n * (n + 1) / 2) as f32;
        record.policy = (0..n)
            .map(|i| quantize_probability((i + 1) as f32 / total))
            .collect();
        let at = |mv: &Move| {
            let want = mirror_uci(&uci(mv));
            other_legal
                .iter()
                .position(|m| uci(m) == want)
                .expect("the mirrored move is legal on the mirrored board")
        };
        mirror_record.policy = vec![0; n];
        for (mv, &p) in legal.iter().zip(&record.policy) {
            mirror_record.policy[at(mv)] = p;
        }
        let played = legal[usize::from(record.played)];
        mirror_record.played = u8::try_from(at(&played)).unwrap();
        mirror_record.best = mirror_record.played;
        state.play(played);
        other.play(other_legal[usize::from(mirror_record.played)]);
    }
    (game, mirrored)
}

fn targets(mirror: bool) -> TargetOptions {
    TargetOptions {
        q_target: QTarget::Best,
        q_ratio: 0.25,
        capped_q_ratio: 0.25,
        mirror,
        ..TargetOptions::default()
    }
}

/// Fails at the first entry where `got` and `want` (as [`slot_of`] gives them) differ, naming
/// the part and the index (a whole slot is too long to print). Policies may differ in the last
/// bit: each is normalised by a sum taken in its own position's move order.
#[track_caller]
fn assert_same(got: &[Vec<f32>; 4], want: &[Vec<f32>; 4], what: &str) {
    let parts = [
        ("inputs", 0.0),
        ("policy", 1e-6),
        ("legal", 0.0),
        ("wdl", 0.0),
    ];
    for ((part, tolerance), (g, w)) in parts.iter().zip(got.iter().zip(want)) {
        if let Some(i) = (0..g.len()).find(|&i| (g[i] - w[i]).abs() > *tolerance) {
            panic!("{what}: {part}[{i}] is {} instead of {}", g[i], w[i]);
        }
    }
}

/// Slot `slot` of `batch`: inputs, policy, legal mask and W/D/L.
fn slot_of(batch: &HostBatch, slot: usize) -> [Vec<f32>; 4] {
    [
        batch.inputs[slot * TOKEN_FLOATS..(slot + 1) * TOKEN_FLOATS].to_vec(),
        batch.policy[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE].to_vec(),
        batch.legal[slot * POLICY_SIZE..(slot + 1) * POLICY_SIZE].to_vec(),
        batch.wdl[slot * 3..slot * 3 + 3].to_vec(),
    ]
}

fn sample(game: &GameRecord, ply: usize) -> HostBatch {
    let mut batch = HostBatch::default();
    batch.reset(1);
    fill_position(
        game,
        ply,
        &mut batch,
        0,
        &mut SampleScratch::default(),
        &targets(false),
    )
    .unwrap();
    batch
}

#[test]
fn a_mirrored_sample_is_the_sample_of_the_game_on_the_mirrored_board() {
    for seed in 0..4 {
        let (game, mirrored) = game_and_mirror(seed);
        for ply in 0..game.positions.len() {
            let mut batch = sample(&game, ply);
            let before = slot_of(&batch, 0);
            assert!(batch.mirror(0), "seed {seed} ply {ply}: not mirrored");
            let want = slot_of(&sample(&mirrored, ply), 0);
            let what = format!("seed {seed} ply {ply}");
            assert_same(&slot_of(&batch, 0), &want, &what);
            assert!(
                before[0] != want[0],
                "{what}: an asymmetric position changes"
            );
            // Mirroring twice gives the sample back.
            assert!(batch.mirror(0));
            assert_same(&slot_of(&batch, 0), &before, &format!("{what}, twice"));
        }
    }
}

#[test]
fn a_position_where_a_side_can_castle_is_not_mirrored() {
    let game = random_game(5, 6);
    for ply in 0..game.positions.len() {
        let mut batch = sample(&game, ply);
        let before = slot_of(&batch, 0);
        assert!(!batch.mirror(0), "ply {ply}: mirrored with castling rights");
        assert_same(&slot_of(&batch, 0), &before, &format!("ply {ply}"));
    }
}

#[test]
fn the_loader_mirrors_about_half_of_the_mirrorable_samples() {
    let mut window = ReplayWindow::new(window_config());
    let (game, _) = game_and_mirror(7);
    window.add(Arc::new(game.clone()));
    // Every sample the loader can draw, as it is and mirrored.
    let (plain, mirrored): (Vec<_>, Vec<_>) = (0..game.positions.len())
        .map(|ply| {
            let mut batch = sample(&game, ply);
            let plain = slot_of(&batch, 0)[0].clone();
            batch.mirror(0);
            (plain, slot_of(&batch, 0)[0].clone())
        })
        .unzip();
    let window = Arc::new(RwLock::new(window));
    for (mirror, want_mirrored) in [(false, false), (true, true)] {
        let loader = Loader::start(window.clone(), 32, 1, 3, targets(mirror));
        let mut counts = [0usize; 2];
        for _ in 0..4 {
            let batch = loader.next();
            for slot in 0..batch.len {
                let inputs = &slot_of(&batch, slot)[0];
                if plain.contains(inputs) {
                    counts[0] += 1;
                } else if mirrored.contains(inputs) {
                    counts[1] += 1;
                } else {
                    panic!("slot {slot}: a sample that is neither a position nor its mirror");
                }
            }
        }
        assert_eq!(counts[0] + counts[1], 128);
        if want_mirrored {
            // 128 fair coins: below 40 or above 88 heads has a chance under 1e-5.
            assert!((40..=88).contains(&counts[1]), "mirrored {counts:?}");
        } else {
            assert_eq!(counts[1], 0, "mirrored with mirror off");
        }
    }
}
