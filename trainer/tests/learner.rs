//! The learner on a fixed batch of real positions: a step lowers the batch's loss, the
//! saved state resumes exactly, and publishing writes the SWA average.

mod support;

use std::collections::BTreeMap;

use cfzero_network::checkpoint::read_net_metadata;
use cfzero_network::{Net, load_net};
use cfzero_trainer::Learner;
use cfzero_trainer::learner::{STATE_KEY, STEP_KEY};
use support::{fixed_batch, micro_net, train_config};
use tch::{Device, Kind, Tensor};

/// Every variable of `net` by name, copied to the CPU as f32.
fn weights(net: &Net) -> BTreeMap<String, Tensor> {
    net.vs
        .variables()
        .into_iter()
        .map(|(name, t)| (name, t.to_device(Device::Cpu).to_kind(Kind::Float).copy()))
        .collect()
}

fn max_difference(a: &BTreeMap<String, Tensor>, b: &BTreeMap<String, Tensor>) -> f64 {
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    a.iter()
        .map(|(name, t)| (t - &b[name]).abs().max().double_value(&[]))
        .fold(0.0, f64::max)
}

#[test]
fn a_step_on_a_fixed_batch_lowers_its_loss() {
    let batch = fixed_batch(16);
    // Adam's first step moves every weight by about the learning rate whatever its gradient:
    // at 1e-3 one start in 30 (seed 22) overshoots to a higher loss, at 1e-4 none does.
    let mut learner = Learner::new(micro_net(11), train_config(1e-4, 0));
    let before = learner.validate(&batch);
    let weights_before = weights(learner.net());

    let m = learner.step(&batch);
    assert_eq!((m.step, learner.steps()), (1, 1));
    assert_eq!(m.lr, 1e-4);
    assert!(m.loss.is_finite() && m.loss > 0.0, "{m:?}");
    assert!(m.terms.iter().all(|(_, v)| v.is_finite()), "{m:?}");
    assert!(m.grad_norm.is_finite() && m.grad_norm > 0.0, "{m:?}");
    assert!((0.0..=1.0).contains(&m.policy_accuracy), "{m:?}");
    assert!(m.value_mse.is_finite(), "{m:?}");
    // The step reports the loss of the weights it started from.
    assert!(
        (m.loss - before.loss).abs() <= 1e-5 * before.loss,
        "{} vs {}",
        m.loss,
        before.loss
    );

    assert!(max_difference(&weights_before, &weights(learner.net())) > 0.0);
    let after = learner.validate(&batch);
    assert!(
        after.loss < before.loss,
        "loss {} -> {}",
        before.loss,
        after.loss
    );
    assert_eq!(after.step, 1);
}

#[test]
fn a_saved_state_resumes_the_same_training() {
    let batch = fixed_batch(8);
    let dir = tempfile::tempdir().unwrap();
    let (w, o) = (
        dir.path().join("w.safetensors"),
        dir.path().join("o.safetensors"),
    );

    let mut learner = Learner::new(micro_net(21), train_config(1e-3, 0));
    learner.step(&batch);
    learner.step(&batch);
    learner.save_state(&w, &o).unwrap();

    // Another start, so that only the loaded state can make it equal.
    let mut resumed = Learner::new(micro_net(22), train_config(1e-3, 0));
    assert!(max_difference(&weights(learner.net()), &weights(resumed.net())) > 0.0);
    resumed.load_state(&w, &o).unwrap();
    assert_eq!(resumed.steps(), 2);
    assert_eq!(
        max_difference(&weights(learner.net()), &weights(resumed.net())),
        0.0
    );

    let (a, b) = (learner.step(&batch), resumed.step(&batch));
    assert_eq!((a.step, b.step), (3, 3));
    assert!((a.loss - b.loss).abs() <= 1e-6 * a.loss, "{a:?} vs {b:?}");
    let moved = max_difference(&weights(learner.net()), &weights(resumed.net()));
    assert!(moved < 1e-6, "the optimizer state did not resume: {moved}");
}

#[test]
fn publish_writes_the_swa_average_or_the_weights() {
    let batch = fixed_batch(8);
    let dir = tempfile::tempdir().unwrap();

    let mut learner = Learner::new(micro_net(31), train_config(1e-2, 1));
    learner.step(&batch);
    let first = weights(learner.net());
    learner.step(&batch);
    let second = weights(learner.net());
    let path = dir.path().join("swa.safetensors");
    learner.publish(&path, &[]).unwrap();
    let average: BTreeMap<String, Tensor> = first
        .iter()
        .map(|(name, t)| (name.clone(), (t + &second[name]) / 2.0))
        .collect();
    let published = weights(&load_net(&path, Device::Cpu).unwrap());
    assert!(max_difference(&published, &average) < 1e-6);
    assert!(max_difference(&published, &second) > 0.0);

    let mut plain = Learner::new(micro_net(31), train_config(1e-2, 0));
    plain.step(&batch);
    let path = dir.path().join("plain.safetensors");
    plain
        .publish(&path, &[(STATE_KEY, "0badc0de".into())])
        .unwrap();
    let published = weights(&load_net(&path, Device::Cpu).unwrap());
    assert_eq!(max_difference(&published, &weights(plain.net())), 0.0);
    // The step and the caller's entries are in the net's metadata.
    let meta = |key| read_net_metadata(&path, key).unwrap();
    assert_eq!(meta(STEP_KEY).as_deref(), Some("1"));
    assert_eq!(meta(STATE_KEY).as_deref(), Some("0badc0de"));
}
