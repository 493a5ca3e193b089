//! The tests that need a CUDA device: the tiny net on the GPU answers as on the CPU (f32
//! within 1e-4; bf16 within a stated bound), trains from the same loss and gradient (f32, and
//! bf16 autocast within a stated bound), and `auto` serves a GPU net through libtorch.
//!
//! Without a device each test prints `skipped: no CUDA device` and passes, so the normal
//! suite runs anywhere; `scripts/gpu-check.sh` runs them (`-- cuda`) with
//! `CFZERO_TEST_CUDA=1`, under which a missing device is a failure instead.

#[path = "../../network/tests/net_support/mod.rs"]
mod net_support;

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_inference::NetInput;
use cfzero_inference::backend::{Backend, BackendChoice, BackendOutputs, TchBackend};
use cfzero_inference::{InferenceHandle, InferenceOptions, InferenceServer};
use cfzero_mcts::{Evaluations, Evaluator, Game, LeafBatch};
use cfzero_network::autocast::bf16_autocast;
use cfzero_network::encoding::TOKEN_FLOATS;
use cfzero_network::{LossWeights, Net, TrainingBatch, loss};
use tch::{Device, Kind, Tensor};

/// The device, or `None` after a visible notice (a failure under `CFZERO_TEST_CUDA=1`).
fn cuda() -> Option<Device> {
    // The device name `cuda` as a user gives it, which also loads libtorch's CUDA kernels.
    let device = cfzero_network::parse_device("cuda");
    if let Ok(device) = device {
        return Some(device);
    }
    assert!(
        std::env::var("CFZERO_TEST_CUDA").as_deref() != Ok("1"),
        "CFZERO_TEST_CUDA=1 but {}",
        device.unwrap_err()
    );
    eprintln!("skipped: no CUDA device");
    None
}

/// The tiny preset with every parameter perturbed, on the CPU.
fn tiny() -> Net {
    net_support::perturbed("tiny", 5, 0.05)
}

/// A copy of `net` on `device`.
fn moved(net: &Net, device: Device) -> Net {
    let mut copy = Net::new(&net.config, device).unwrap();
    copy.vs.copy(&net.vs).unwrap();
    copy
}

/// 33 positions of the opening, encoded.
fn inputs() -> Vec<f32> {
    let mut state = ChessState::from_fen(
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        HistoryFill::FenOnly,
    )
    .unwrap();
    let mut out = vec![0f32; 33 * TOKEN_FLOATS];
    let mut moves = Vec::new();
    for i in 0..33 {
        state.legal_moves(&mut moves);
        if moves.is_empty() {
            state = ChessState::from_fen(
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                HistoryFill::FenOnly,
            )
            .unwrap();
            state.legal_moves(&mut moves);
        }
        state.play(moves[(i * 7) % moves.len()]);
        state.encode(
            HistoryFill::FenOnly,
            &mut out[i * TOKEN_FLOATS..(i + 1) * TOKEN_FLOATS],
        );
    }
    out
}

fn largest_difference(a: &BackendOutputs, b: &BackendOutputs) -> f32 {
    a.policy
        .iter()
        .zip(&b.policy)
        .chain(a.wdl.iter().zip(&b.wdl))
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max)
}

#[test]
fn cuda_forward_matches_the_cpu_in_f32_and_bf16() {
    let Some(gpu) = cuda() else { return };
    let net = tiny();
    let x = inputs();
    let run = |backend: &mut TchBackend| {
        let mut out = BackendOutputs::default();
        backend.forward(&x, 33, &mut out).unwrap();
        out
    };
    let cpu = run(&mut TchBackend::new(
        moved(&net, Device::Cpu),
        Kind::Float,
        64,
    ));
    let f32_gpu = run(&mut TchBackend::new(moved(&net, gpu), Kind::Float, 64));
    let bf16_gpu = run(&mut TchBackend::new(moved(&net, gpu), Kind::BFloat16, 64));
    let (f, b) = (
        largest_difference(&cpu, &f32_gpu),
        largest_difference(&cpu, &bf16_gpu),
    );
    eprintln!("largest difference to the CPU: f32 {f:.2e}, bf16 {b:.2e}");
    assert!(f < 1e-4, "f32 on the GPU differs by {f}");
    // bf16 keeps 8 bits of mantissa: logits of a few units move by a few hundredths.
    assert!(b < 0.25, "bf16 on the GPU differs by {b}");
}

#[test]
fn cuda_nets_are_served_by_libtorch_under_auto() {
    let Some(gpu) = cuda() else { return };
    let options = InferenceOptions {
        backend: BackendChoice::Auto,
        ..InferenceOptions::default()
    };
    let handle: InferenceHandle<ChessState> =
        InferenceServer::spawn(moved(&tiny(), gpu), options).unwrap();
    assert_eq!(handle.capabilities().name, "libtorch");
    assert!(handle.capabilities().device.starts_with("cuda"));
    let state = ChessState::from_fen(
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        HistoryFill::FenOnly,
    )
    .unwrap();
    let mut moves = Vec::new();
    state.legal_moves(&mut moves);
    let mut batch = LeafBatch::new();
    batch.push(&state, &moves);
    let mut out = Evaluations::default();
    handle.evaluate(&batch, &mut out).unwrap();
    assert_eq!(out.logits.len(), 20);
    // Native on a GPU net is refused with the reason.
    let refused = InferenceServer::spawn::<ChessState>(
        moved(&tiny(), gpu),
        InferenceOptions {
            backend: BackendChoice::Native,
            ..InferenceOptions::default()
        },
    );
    assert!(refused.is_err());
}

/// The training loss and gradient norm of `net` on `batch` on `device`, in f32 or under bf16
/// autocast (as the learner's `train.precision = "bf16"` runs it).
fn loss_and_grad_norm(net: &Net, batch: &TrainingBatch, bf16: bool) -> (f64, f64) {
    let device = net.device();
    let on = |t: &Tensor| t.to_device(device);
    let batch = TrainingBatch {
        inputs: on(&batch.inputs),
        policy: on(&batch.policy),
        legal: on(&batch.legal),
        wdl: on(&batch.wdl),
        q: on(&batch.q),
        st: on(&batch.st),
        moves_left: on(&batch.moves_left),
    };
    let outputs = if bf16 {
        let outputs = bf16_autocast(device, || net.forward(&batch.inputs));
        assert_eq!(outputs.policy.kind(), Kind::BFloat16, "autocast is off");
        outputs.into_f32()
    } else {
        net.forward(&batch.inputs)
    };
    let terms = loss(&outputs, &batch, &LossWeights::default());
    terms.total.backward();
    let norm = net
        .vs
        .trainable_variables()
        .iter()
        .map(|v| v.grad().square().sum(Kind::Double).double_value(&[]))
        .sum::<f64>()
        .sqrt();
    (terms.total_value, norm)
}

#[test]
fn cuda_training_loss_matches_the_cpu_in_f32_and_bf16_autocast() {
    let Some(gpu) = cuda() else { return };
    let net = tiny();
    let batch = net_support::synthetic_batch(64, 30, 3);
    let (cpu_loss, cpu_norm) = loss_and_grad_norm(&moved(&net, Device::Cpu), &batch, false);
    let (f32_loss, f32_norm) = loss_and_grad_norm(&moved(&net, gpu), &batch, false);
    let (bf16_loss, bf16_norm) = loss_and_grad_norm(&moved(&net, gpu), &batch, true);
    eprintln!(
        "loss cpu {cpu_loss:.5}, gpu f32 {f32_loss:.5}, gpu bf16 {bf16_loss:.5}; \
         gradient norm {cpu_norm:.4}, {f32_norm:.4}, {bf16_norm:.4}"
    );
    assert!((cpu_loss - f32_loss).abs() < 1e-4 * cpu_loss.max(1.0));
    assert!((cpu_norm - f32_norm).abs() < 1e-3 * cpu_norm.max(1.0));
    // bf16 products round to 8 bits of mantissa: the loss moves by well under a percent,
    // the gradient by a few.
    assert!(
        (cpu_loss - bf16_loss).abs() < 0.01 * cpu_loss,
        "bf16 loss {bf16_loss}"
    );
    assert!(
        (cpu_norm - bf16_norm).abs() < 0.05 * cpu_norm,
        "bf16 gradient {bf16_norm}"
    );
}
