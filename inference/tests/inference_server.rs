//! The inference thread under concurrent load: many actor threads submit batches at once,
//! the thread merges them into larger forward passes, and every answer must reach the
//! thread that asked, for the positions it asked about.

#[path = "../../network/tests/net_support/mod.rs"]
mod net_support;

use cfzero_chess::ChessState;
use cfzero_inference::{InferenceHandle, InferenceOptions, InferenceServer};
use cfzero_mcts::{Evaluations, Evaluator, Game, LeafBatch};
use cfzero_network::Net;
use net_support::preset;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tch::Device;

/// Positions reached by random legal moves from the start, all different.
fn positions(count: usize, seed: u64) -> Vec<ChessState> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    let mut moves = Vec::new();
    while out.len() < count {
        let mut state = ChessState::new();
        let plies = rng.random_range(1..40);
        for _ in 0..plies {
            state.legal_moves(&mut moves);
            if state.terminal(&moves).is_some() {
                break;
            }
            state.play(*moves.choose(&mut rng).unwrap());
        }
        state.legal_moves(&mut moves);
        if state.terminal(&moves).is_none() {
            out.push(state);
        }
    }
    out
}

/// Answers for one position asked alone: (logits, value, wdl).
type Answer = (Vec<f32>, f32, [f32; 3]);

fn ask(handle: &InferenceHandle<ChessState>, states: &[ChessState]) -> Vec<Answer> {
    let mut batch = LeafBatch::new();
    let mut moves = Vec::new();
    for s in states {
        s.legal_moves(&mut moves);
        batch.push(s, &moves);
    }
    let pending = handle.submit(&batch).unwrap();
    let mut out = Evaluations::default();
    handle.complete(pending, &mut out).unwrap();
    (0..states.len())
        .map(|i| {
            (
                out.logits[batch.move_range(i)].to_vec(),
                out.values[i],
                out.wdl[i],
            )
        })
        .collect()
}

fn close(a: &Answer, b: &Answer) -> bool {
    let near = |x: f32, y: f32| (x - y).abs() <= 1e-4 * (1.0 + x.abs());
    a.0.len() == b.0.len()
        && a.0.iter().zip(&b.0).all(|(x, y)| near(*x, *y))
        && near(a.1, b.1)
        && a.2.iter().zip(&b.2).all(|(x, y)| near(*x, *y))
}

#[test]
fn concurrent_requests_each_get_their_own_answers() {
    let _seeded = cfzero_network::seeded(3);
    let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let handle: InferenceHandle<ChessState> = InferenceServer::spawn(
        net,
        InferenceOptions {
            max_batch: 24,
            queue_capacity: 4,
            ..InferenceOptions::default()
        },
    )
    .unwrap();
    let threads = 6;
    let per_thread = positions(threads * 30, 11);
    // The reference: every position evaluated alone, before any concurrency.
    let expected: Vec<Answer> = per_thread
        .iter()
        .map(|s| ask(&handle, std::slice::from_ref(s)).remove(0))
        .collect();
    let before = handle.stats();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let handle = handle.clone();
            let (states, expected) = (&per_thread[t * 30..], &expected[t * 30..]);
            scope.spawn(move || {
                let mut rng = ChaCha8Rng::seed_from_u64(t as u64);
                for _round in 0..2 {
                    let mut at = 0;
                    while at < 30 {
                        let n = rng.random_range(1..=7).min(30 - at);
                        let answers = ask(&handle, &states[at..at + n]);
                        for (i, a) in answers.iter().enumerate() {
                            assert!(
                                close(a, &expected[at + i]),
                                "thread {t}: answer for position {} differs",
                                at + i
                            );
                        }
                        at += n;
                    }
                }
            });
        }
    });
    let after = handle.stats();
    // Every position was evaluated exactly once (how requests merge depends on timing).
    assert_eq!(
        after.positions - before.positions,
        (threads * 30 * 2) as u64
    );
}

#[test]
fn an_oversized_request_runs_alone_with_the_same_answers() {
    let _seeded = cfzero_network::seeded(4);
    let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let handle: InferenceHandle<ChessState> = InferenceServer::spawn(
        net,
        InferenceOptions {
            max_batch: 4,
            queue_capacity: 2,
            ..InferenceOptions::default()
        },
    )
    .unwrap();
    let states = positions(10, 5);
    let together = ask(&handle, &states);
    let alone: Vec<Answer> = states
        .iter()
        .map(|s| ask(&handle, std::slice::from_ref(s)).remove(0))
        .collect();
    for (a, b) in together.iter().zip(&alone) {
        assert!(close(a, b));
    }
}
