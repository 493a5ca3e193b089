//! Inference as a server runs it: the weights prepared for serving (fused projections, folded
//! scale, gathered tables) give the training forward pass's outputs, and bf16 stays within
//! stated tolerances of f32 on real positions, for every architecture a preset uses.

#[path = "../../network/tests/net_support/mod.rs"]
mod net_support;

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_inference::{INPUT_FLOATS, NetInput};
use cfzero_mcts::Game;
use cfzero_network::Net;
use cfzero_network::precision::compare_nets;
use net_support::{preset, variables_by_name};
use tch::{Device, Kind, Tensor};

/// Presets of every architecture: Shaw + RMSNorm (micro, tiny), smolgen + LayerNorm
/// (lc0-bt-tiny).
const ARCHITECTURES: [&str; 3] = ["micro", "tiny", "lc0-bt-tiny"];

/// Tolerances of bf16 against f32: the bound on the mean policy KL divergence, and
/// values within 0.02. Measured on these nets: mean KL 3e-6 to 2.5e-5 nats, values within
/// 5.5e-3; a trained tiny net of a 30-minute run gave 1.8e-5 and 4.4e-3 (`cfzero bench nn`).
const MAX_MEAN_KL: f64 = 1e-3;
const MAX_VALUE_DIFFERENCE: f64 = 0.02;

/// The positions of the repository's output check file, with their legal policy indices.
fn real_positions() -> (Tensor, Vec<Vec<usize>>) {
    let path = format!(
        "{}/../bench/reference/positions.epd",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let (mut inputs, mut legal, mut moves) = (Vec::new(), Vec::new(), Vec::new());
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let state =
            ChessState::from_fen(line, HistoryFill::No).unwrap_or_else(|e| panic!("{line}: {e}"));
        let mut tokens = vec![0f32; INPUT_FLOATS];
        state.encode(state.history_fill(), &mut tokens);
        state.legal_moves(&mut moves);
        inputs.extend_from_slice(&tokens);
        legal.push(moves.iter().map(|m| state.policy_index(m)).collect());
    }
    let n = legal.len() as i64;
    assert!(n >= 5, "the check file has positions");
    (Tensor::from_slice(&inputs).view([n, 64, 112]), legal)
}

/// A freshly initialised net of `name` whose zero-initialised weights (position tables,
/// biases, gates) are made random too, at the scale training gives them, so that every term
/// of the forward pass matters.
fn random_net(name: &str, seed: i64) -> Net {
    let _seeded = cfzero_network::seeded(seed);
    let net = Net::new(&preset(name), Device::Cpu).unwrap();
    tch::no_grad(|| {
        for (_, t) in variables_by_name(&net) {
            if t.abs().max().double_value(&[]) == 0.0 {
                t.shallow_clone().copy_(&(t.randn_like() * 0.1));
            }
        }
    });
    net
}

/// Every output a search reads: policy logits, then WDL probabilities and value.
fn play_outputs(net: &Net, inputs: &Tensor) -> Tensor {
    tch::no_grad(|| {
        let out = net.forward_play(inputs);
        let (wdl, value) = out.play_values().expect("every preset has a value head");
        Tensor::cat(
            &[out.policy.to_kind(Kind::Float), wdl, value.unsqueeze(1)],
            1,
        )
    })
}

#[test]
fn weights_prepared_for_serving_give_the_training_forward_pass() {
    let (inputs, _) = real_positions();
    for name in ARCHITECTURES {
        let net = random_net(name, 31);
        // Both forms of Shaw attention: batches of one position and of all of them.
        for (batch, max_batch) in [(1, 1), (inputs.size()[0], 256)] {
            let x = inputs.narrow(0, 0, batch);
            let plain = play_outputs(&net, &x);
            let mut served = net.try_clone().unwrap();
            served.prepare_serving(Kind::Float, max_batch);
            let prepared = play_outputs(&served, &x);
            let diff = (prepared - plain).abs().max().double_value(&[]);
            assert!(
                diff < 1e-4,
                "{name}, batch {batch}: prepared differs by {diff}"
            );
        }
    }
}

#[test]
fn bf16_agrees_with_f32_on_real_positions_for_every_architecture() {
    let (inputs, legal) = real_positions();
    for name in ARCHITECTURES {
        let net = random_net(name, 47);
        let mut reference = net.try_clone().unwrap();
        reference.prepare_serving(Kind::Float, 256);
        let mut bf16 = net.try_clone().unwrap();
        bf16.prepare_serving(Kind::BFloat16, 256);
        assert_eq!(bf16.kind(), Kind::BFloat16);
        let error = compare_nets(&reference, &bf16, &inputs, &legal).unwrap();
        assert!(
            error.mean_policy_kl < MAX_MEAN_KL,
            "{name}: mean policy KL {:e}",
            error.mean_policy_kl
        );
        assert!(
            error.max_value_difference < MAX_VALUE_DIFFERENCE,
            "{name}: value difference up to {}",
            error.max_value_difference
        );
        // Not a comparison of a net with itself: bf16 rounds, so the outputs do differ.
        assert!(
            error.max_policy_kl > 0.0,
            "{name}: bf16 gave f32's outputs exactly"
        );
    }
}
