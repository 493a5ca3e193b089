//! The native backend against libtorch: on every preset (every parameter perturbed, so that
//! a transposed table or a wrong bucket cannot hide behind a constant) and on Lc0's two
//! test nets, at batches of 1, 33 and 256 real positions, policy logits and W/D/L agree
//! within 1e-4; on the Lc0 vectors it reproduces what Lc0 computed; a position's outputs do
//! not depend on the batch it shares; bad weights are refused as libtorch refuses them. With
//! bf16 products (on a CPU with AVX-512 BF16) the outputs stay within a stated bound of
//! libtorch's f32.

#[path = "../../network/tests/net_support/mod.rs"]
mod net_support;

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_export::lc0::read_lc0_file;
use cfzero_inference::backend::{
    Backend, BackendError, BackendOutputs, NamedWeights, NativeBackend, TchBackend,
};
use cfzero_mcts::Game;
use cfzero_network::Net;
use cfzero_network::encoding::{POLICY_SIZE, TOKEN_FLOATS, encode_tokens};
use net_support::{lc0_data, perturb, perturbed};
use rand::{Rng, SeedableRng};
use serde_json::Value;
use tch::{Device, Kind};

/// `n` positions of random games from the start (seeded), encoded as tokens.
fn positions(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut tokens = vec![0f32; n * TOKEN_FLOATS];
    let mut state = ChessState::from_fen(
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        HistoryFill::FenOnly,
    )
    .unwrap();
    let mut moves = Vec::new();
    for i in 0..n {
        state.legal_moves(&mut moves);
        if moves.is_empty() || state.terminal(&moves).is_some() || rng.random_range(0..40) == 0 {
            state = ChessState::from_fen(
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                HistoryFill::FenOnly,
            )
            .unwrap();
            state.legal_moves(&mut moves);
        }
        let mv = moves[rng.random_range(0..moves.len())];
        state.play(mv);
        encode_tokens(
            &state,
            &mut tokens[i * TOKEN_FLOATS..(i + 1) * TOKEN_FLOATS],
        );
    }
    tokens
}

fn run(backend: &mut dyn Backend, inputs: &[f32]) -> BackendOutputs {
    let n = inputs.len() / TOKEN_FLOATS;
    let mut out = BackendOutputs::default();
    backend.forward(inputs, n, &mut out).unwrap();
    out
}

/// The largest differences (policy logits, W/D/L, value) between two backends' outputs.
fn differences(a: &BackendOutputs, b: &BackendOutputs) -> (f32, f32, f32) {
    let max = |x: &[f32], y: &[f32]| {
        assert_eq!(x.len(), y.len());
        x.iter()
            .zip(y)
            .map(|(p, q)| (p - q).abs())
            .fold(0f32, f32::max)
    };
    (
        max(&a.policy, &b.policy),
        max(&a.wdl, &b.wdl),
        max(&a.values, &b.values),
    )
}

/// The native backend agrees with libtorch on `net` at batches 1, 33 and 256.
fn agrees_with_libtorch(name: &str, net: Net, batches: &[usize]) {
    let native = NativeBackend::from_net(&net, Kind::Float, 256).unwrap();
    agrees_on(name, native, net, batches);
}

/// `native` agrees with libtorch serving `net` at `batches`.
fn agrees_on(name: &str, mut native: NativeBackend, net: Net, batches: &[usize]) {
    let mut tch = TchBackend::new(net, Kind::Float, 256);
    for &n in batches {
        let inputs = positions(n, n as u64);
        let (a, b) = (run(&mut native, &inputs), run(&mut tch, &inputs));
        let (p, w, v) = differences(&a, &b);
        eprintln!("{name} batch {n}: policy {p:.2e}, wdl {w:.2e}, value {v:.2e}");
        assert!(
            p < 1e-4 && w < 1e-4 && v < 1e-4,
            "{name} batch {n}: {p} {w} {v}"
        );
        // The outputs are not trivial: the policy spreads and the W/D/L is no certainty.
        let spread = a.policy[..POLICY_SIZE]
            .iter()
            .fold(0f32, |m, &x| m.max(x.abs()));
        assert!(spread > 1e-2, "{name}: policy logits all near zero");
    }
}

#[test]
fn native_agrees_with_libtorch_on_the_small_presets() {
    for name in ["micro", "tiny", "lc0-bt-tiny"] {
        agrees_with_libtorch(name, perturbed(name, 7, 0.05), &[1, 33, 256]);
    }
}

/// The portable lanes (what a CPU without AVX2 runs) on every head width of the presets:
/// 8 (micro), 16 (tiny, lc0-bt-tiny) and 32 (cf6m).
#[test]
fn native_on_portable_lanes_agrees_with_libtorch() {
    for (name, seed) in [("micro", 7), ("tiny", 7), ("lc0-bt-tiny", 7), ("cf6m", 8)] {
        let net = perturbed(name, seed, if name == "cf6m" { 0.02 } else { 0.05 });
        let native = NativeBackend::from_net(&net, Kind::Float, 256)
            .unwrap()
            .portable();
        agrees_on(&format!("{name} (portable)"), native, net, &[1, 33]);
    }
}

#[test]
fn native_agrees_with_libtorch_on_cf6m() {
    agrees_with_libtorch("cf6m", perturbed("cf6m", 8, 0.02), &[1, 33, 256]);
}

/// cf240m (15 layers of 1024) at one position only: the larger batches take minutes on
/// two cores without checking anything the smaller nets do not.
#[test]
fn native_agrees_with_libtorch_on_cf240m() {
    agrees_with_libtorch("cf240m", perturbed("cf240m", 9, 0.005), &[1]);
}

/// A net whose heads are the `q` head only (no winner head) serves W/D/L from `q`.
#[test]
fn native_serves_a_net_without_a_winner_head_from_its_q_head() {
    let mut config = net_support::preset("micro");
    config.outputs.winner = false;
    let _seeded = cfzero_network::seeded(3);
    let net = Net::new(&config, Device::Cpu).unwrap();
    perturb(&net, 0.1);
    agrees_with_libtorch("micro without winner", net, &[1, 33]);
}

#[test]
fn native_reproduces_lc0_on_its_test_nets_and_vectors() {
    let vectors: Value =
        serde_json::from_str(&std::fs::read_to_string(lc0_data("vectors.json")).unwrap()).unwrap();
    for net_name in ["bt-smolgen", "bt-plain"] {
        let net = read_lc0_file(&lc0_data(&format!("{net_name}.pb.gz")), Device::Cpu).unwrap();
        let mut native = NativeBackend::from_net(&net, Kind::Float, 256).unwrap();
        let cases: Vec<&Value> = vectors["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["net"].as_str() == Some(net_name))
            .collect();
        assert_eq!(cases.len(), 18);
        let mut worst = (0f64, 0f64);
        for case in cases {
            let state = net_support::lc0_case_state(case);
            let mut tokens = vec![0f32; TOKEN_FLOATS];
            encode_tokens(&state, &mut tokens);
            let out = run(&mut native, &tokens);
            for (uci, p) in net_support::legal_policy(&state, &out.policy) {
                let expected = case["policy"][&uci].as_f64().unwrap();
                worst.0 = worst.0.max((p - expected).abs());
            }
            for i in 0..3 {
                let expected = case["wdl"][i].as_f64().unwrap();
                worst.1 = worst.1.max((f64::from(out.wdl[i]) - expected).abs());
            }
        }
        eprintln!(
            "{net_name}: largest differences to Lc0: policy {:.2e}, wdl {:.2e}",
            worst.0, worst.1
        );
        assert!(worst.0 < 1e-5 && worst.1 < 1e-5, "{net_name}: {worst:?}");
    }
}

#[test]
fn a_position_evaluates_the_same_alone_and_in_any_batch() {
    for name in ["tiny", "lc0-bt-tiny"] {
        let net = perturbed(name, 11, 0.05);
        let mut native = NativeBackend::from_net(&net, Kind::Float, 256).unwrap();
        let inputs = positions(40, 5);
        let all = run(&mut native, &inputs);
        for (i, n) in [(0, 1), (3, 2), (17, 23), (39, 1)] {
            let part = run(
                &mut native,
                &inputs[i * TOKEN_FLOATS..(i + n) * TOKEN_FLOATS],
            );
            assert_eq!(
                part.policy,
                all.policy[i * POLICY_SIZE..(i + n) * POLICY_SIZE],
                "{name}: positions {i}..{}",
                i + n
            );
            assert_eq!(part.wdl, all.wdl[i * 3..(i + n) * 3], "{name}");
            assert_eq!(part.values, all.values[i..i + n], "{name}");
        }
    }
}

#[test]
fn reload_takes_a_new_generation_and_refuses_bad_weights_as_libtorch_does() {
    let first = perturbed("micro", 1, 0.1);
    let second = perturbed("micro", 2, 0.1);
    let mut native = NativeBackend::from_net(&first, Kind::Float, 16).unwrap();
    let mut tch = TchBackend::new(first, Kind::Float, 16);
    let inputs = positions(5, 1);
    let before = run(&mut native, &inputs);
    let weights = TchBackend::weights_of(&second).unwrap();
    native.reload(&weights).unwrap();
    tch.reload(&weights).unwrap();
    let after = run(&mut native, &inputs);
    assert_ne!(before.policy, after.policy);
    let (p, w, _) = differences(&after, &run(&mut tch, &inputs));
    assert!(p < 1e-4 && w < 1e-4);

    type Breaks = Box<dyn Fn(&mut NamedWeights)>;
    let broken: [(&str, Breaks); 5] = [
        (
            "a tensor of a head the search does not read, of another shape",
            Box::new(|w| {
                let t = w
                    .tensors
                    .iter_mut()
                    .find(|t| t.0 == "moves_left.out.w")
                    .unwrap();
                t.1 = vec![t.1[1], t.1[0]];
            }),
        ),
        (
            "a tensor missing",
            Box::new(|w| {
                w.tensors.retain(|t| t.0 != "encoder.0.ffn1.w");
            }),
        ),
        (
            "a tensor of another shape",
            Box::new(|w| {
                let t = w.tensors.iter_mut().find(|t| t.0 == "policy.q.w").unwrap();
                t.1 = vec![t.1[0] * t.1[1]];
            }),
        ),
        (
            "a tensor too short for its shape",
            Box::new(|w| {
                w.tensors
                    .iter_mut()
                    .find(|t| t.0 == "embed.b")
                    .unwrap()
                    .2
                    .pop();
            }),
        ),
        (
            "a tensor the net does not have",
            Box::new(|w| {
                w.tensors
                    .push(("encoder.7.ffn1.w".into(), vec![1], vec![0.0]));
            }),
        ),
    ];
    for (what, breaks) in broken {
        let mut bad = weights.clone();
        breaks(&mut bad);
        for (name, result) in [
            ("native", native.reload(&bad)),
            ("libtorch", tch.reload(&bad)),
        ] {
            assert!(
                matches!(result, Err(BackendError::Weights(_))),
                "{name} with {what}: {result:?}"
            );
        }
        // A refused reload leaves the served weights as they were.
        assert_eq!(run(&mut native, &inputs).policy, after.policy, "{what}");
    }
    assert_eq!(native.capabilities().name, "native");
    assert_eq!(native.capabilities().precision, "f32");
}

/// The native pass with bf16 products on a CPU with AVX-512 BF16, or `None` after a visible
/// notice elsewhere (where `bf16` must be refused with the reason).
fn native_bf16(net: &Net, max_batch: usize) -> Option<NativeBackend> {
    let backend = NativeBackend::from_net(net, Kind::BFloat16, max_batch);
    if cfzero_inference::backend::native_bf16_supported() {
        return Some(backend.unwrap());
    }
    let err = backend.unwrap_err().to_string();
    assert!(err.contains("AVX-512 BF16"), "{err}");
    eprintln!("skipped: this CPU lacks AVX-512 BF16");
    None
}

/// bf16 products round every product's inputs and weights to 8 bits of mantissa: on the
/// presets (perturbed) at batches 1 and 33 the policy logits stay within 0.06 of libtorch's
/// f32 and the W/D/L within 0.01, and the outputs still depend on nothing but the position.
#[test]
fn native_bf16_stays_within_its_bound_of_libtorch_f32() {
    for (name, seed, scale) in [
        ("tiny", 7, 0.05),
        ("lc0-bt-tiny", 7, 0.05),
        ("cf6m", 8, 0.02),
    ] {
        let net = perturbed(name, seed, scale);
        let Some(mut native) = native_bf16(&net, 64) else {
            return;
        };
        assert_eq!(native.capabilities().precision, "bf16");
        let mut tch = TchBackend::new(net, Kind::Float, 64);
        for n in [1, 33] {
            let inputs = positions(n, n as u64);
            let (a, b) = (run(&mut native, &inputs), run(&mut tch, &inputs));
            let (p, w, v) = differences(&a, &b);
            eprintln!("{name} bf16 batch {n}: policy {p:.2e}, wdl {w:.2e}, value {v:.2e}");
            assert!(
                p < 0.06 && w < 0.01 && v < 0.02,
                "{name} batch {n}: {p} {w} {v}"
            );
            // bf16 moves the outputs, so the products did run in bf16.
            assert!(p > 1e-5, "{name}: bf16 gave f32's outputs");
            let alone = run(&mut native, &inputs[..TOKEN_FLOATS]);
            assert_eq!(alone.policy, a.policy[..POLICY_SIZE], "{name}: batch {n}");
            assert_eq!(alone.wdl, a.wdl[..3], "{name}: batch {n}");
        }
    }
}

/// A reload keeps the backend in bf16: its outputs are those of a bf16 backend built on the
/// new weights.
#[test]
fn native_bf16_reload_stays_bf16() {
    let (first, second) = (perturbed("tiny", 3, 0.05), perturbed("tiny", 4, 0.05));
    let Some(mut reloaded) = native_bf16(&first, 16) else {
        return;
    };
    reloaded
        .reload(&TchBackend::weights_of(&second).unwrap())
        .unwrap();
    let mut fresh = native_bf16(&second, 16).unwrap();
    let inputs = positions(5, 2);
    let (a, b) = (run(&mut reloaded, &inputs), run(&mut fresh, &inputs));
    assert_eq!(a.policy, b.policy);
    assert_eq!(a.wdl, b.wdl);
    assert_eq!(reloaded.capabilities().precision, "bf16");
}
