//! The backend seam: the libtorch Chessformer, the native pass and the material counter
//! behind the same inference server. Each answers batched requests exactly as lone ones and
//! reports what it is; reloading weights works where there are weights and is refused where
//! not.

#[path = "../../network/tests/net_support/mod.rs"]
mod net_support;

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_inference::backend::{
    Backend, BackendChoice, BackendError, MaterialBackend, NativeBackend, TchBackend,
};
use cfzero_inference::{InferenceHandle, InferenceOptions, InferenceServer};
use cfzero_mcts::{Evaluations, Evaluator, Game, LeafBatch};
use cfzero_network::Net;
use net_support::preset;
use tch::{Device, Kind};

/// The start, a few openings, and the same positions a queen up for one side.
const FENS: [&str; 6] = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "rnbqkb1r/pppppppp/5n2/8/3P4/8/PPP1PPPP/RNBQKBNR w KQkq - 1 2",
    // White is a queen up (Black's queen gone), either side to move.
    "rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq - 0 1",
    // White has given a rook for a knight: Black is the exchange up.
    "r1bqkbnr/pppppppp/8/8/8/8/PPPPPPPP/1NBQKBNR w Kkq - 0 1",
];

fn states() -> Vec<ChessState> {
    FENS.iter()
        .map(|f| ChessState::from_fen(f, HistoryFill::No).unwrap())
        .collect()
}

/// One answer: logits over the legal moves, value, WDL.
type Answer = (Vec<f32>, f32, [f32; 3]);

fn ask(handle: &InferenceHandle<ChessState>, states: &[ChessState]) -> Vec<Answer> {
    let mut batch = LeafBatch::new();
    let mut moves = Vec::new();
    for s in states {
        s.legal_moves(&mut moves);
        batch.push(s, &moves);
    }
    let mut out = Evaluations::default();
    handle.evaluate(&batch, &mut out).unwrap();
    (0..states.len())
        .map(|i| {
            let logits = out.logits[batch.move_range(i)].to_vec();
            (logits, out.values[i], out.wdl[i])
        })
        .collect()
}

fn micro_net(seed: i64) -> Net {
    let _seeded = cfzero_network::seeded(seed);
    Net::new(&preset("micro"), Device::Cpu).unwrap()
}

/// Both backends, behind a server.
fn servers() -> Vec<(&'static str, InferenceHandle<ChessState>)> {
    let options = InferenceOptions {
        max_batch: 4,
        ..InferenceOptions::default()
    };
    vec![
        (
            "libtorch",
            InferenceServer::spawn_backend(TchBackend::new(micro_net(1), Kind::Float, 4), options),
        ),
        (
            "native",
            InferenceServer::spawn_backend(
                NativeBackend::from_net(&micro_net(1), Kind::Float, 4).unwrap(),
                options,
            ),
        ),
        (
            "material",
            InferenceServer::spawn_backend(MaterialBackend, options),
        ),
    ]
}

#[test]
fn every_backend_answers_batches_as_it_answers_single_positions() {
    let states = states();
    for (name, handle) in servers() {
        assert_eq!(handle.capabilities().name, name);
        assert_eq!(handle.capabilities().precision, "f32");
        let together = ask(&handle, &states);
        for (i, state) in states.iter().enumerate() {
            let alone = ask(&handle, std::slice::from_ref(state)).remove(0);
            let (a, b) = (&together[i], &alone);
            assert_eq!(a.0.len(), b.0.len(), "{name} position {i}");
            let close = |x: f32, y: f32| (x - y).abs() <= 1e-5 * (1.0 + x.abs());
            assert!(
                a.0.iter().zip(&b.0).all(|(x, y)| close(*x, *y)),
                "{name} {i}"
            );
            assert!(close(a.1, b.1), "{name} {i}");
            let sum: f32 = a.2.iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "{name} {i}: WDL sums to {sum}");
            assert!((-1.0..=1.0).contains(&a.1), "{name} {i}");
        }
    }
}

#[test]
fn the_material_backend_counts_for_the_side_to_move() {
    let handle: InferenceHandle<ChessState> =
        InferenceServer::spawn_backend(MaterialBackend, InferenceOptions::default());
    let answers = ask(&handle, &states());
    let queen = (9.0f32 / 5.0).tanh();
    let exchange = (2.0f32 / 5.0).tanh();
    let expected = [0.0, 0.0, 0.0, queen, -queen, -exchange];
    for (i, (answer, want)) in answers.iter().zip(expected).enumerate() {
        assert!(
            (answer.1 - want).abs() < 1e-6,
            "{}: {} vs {want}",
            FENS[i],
            answer.1
        );
        assert!(answer.0.iter().all(|&l| l == 0.0), "uniform policy");
        assert!((answer.2[0] - (1.0 + want) / 2.0).abs() < 1e-6);
    }
}

#[test]
fn the_net_backends_reload_weights_and_refuse_ones_that_do_not_fit() {
    for backend in [BackendChoice::Tch, BackendChoice::Native] {
        reloads_and_refuses(backend);
    }
}

fn reloads_and_refuses(backend: BackendChoice) {
    let states = states();
    let options = InferenceOptions {
        backend,
        ..InferenceOptions::default()
    };
    let handle: InferenceHandle<ChessState> =
        InferenceServer::spawn(micro_net(1), options).unwrap();
    assert_eq!(
        handle.capabilities().name,
        if backend == BackendChoice::Tch {
            "libtorch"
        } else {
            "native"
        }
    );
    let other = micro_net(2);
    let reference: InferenceHandle<ChessState> =
        InferenceServer::spawn(other.try_clone().unwrap(), options).unwrap();
    let before = ask(&handle, &states);
    let wanted = ask(&reference, &states);
    assert_ne!(before[0].1, wanted[0].1, "two random nets differ");
    handle.publish(&other).unwrap();
    let after = ask(&handle, &states);
    for (a, b) in after.iter().zip(&wanted) {
        assert!((a.1 - b.1).abs() < 1e-5);
        assert!(a.0.iter().zip(&b.0).all(|(x, y)| (x - y).abs() < 1e-4));
    }
    // A tensor of another shape is refused and the served weights stay.
    let mut weights = TchBackend::weights_of(&other).unwrap();
    weights.tensors[0].1.push(1);
    let err = handle.publish_weights(weights).unwrap_err().to_string();
    assert!(err.contains("shape"), "{err}");
    let mut weights = TchBackend::weights_of(&other).unwrap();
    weights.tensors.pop();
    assert!(handle.publish_weights(weights).is_err());
    let still = ask(&handle, &states);
    assert!((still[0].1 - wanted[0].1).abs() < 1e-5);
}

#[test]
fn the_material_backend_has_no_weights_to_reload() {
    let weights = TchBackend::weights_of(&micro_net(1)).unwrap();
    assert_eq!(
        MaterialBackend.reload(&weights),
        Err(BackendError::NoWeights("the material backend"))
    );
}
