//! NAdam against hand-computed steps, gradient clipping, the LR schedule, and SWA.

mod net_support;

use cfzero_network::Net;
use cfzero_network::optim::{LrSchedule, NAdam, NAdamConfig, Swa, clip_grad_norm};
use net_support::preset;
use tch::{Device, Kind, Tensor};

fn param(values: &[f64]) -> Tensor {
    Tensor::from_slice(values).set_requires_grad(true)
}

fn set_grad(p: &Tensor, g: &[f64]) {
    // d/dp of sum(p * g) is g.
    let loss = (p * Tensor::from_slice(g)).sum(Kind::Double);
    loss.backward();
}

#[test]
fn nadam_matches_hand_computed_steps() {
    // Expected values worked out with PyTorch's NAdam formulas (see optim/nadam.rs) in float64:
    // lr 0.1, beta1 0.9, beta2 0.98, eps 1e-7, psi 0.004; t=1: mu_1 = 0.9 (1 - 0.5 * 0.96^0.004)
    // = 0.450073..., mu_2 = 0.450146...; both coordinates move by about lr * (1 + 0.1 mu_2 / (1 - mu_1 mu_2)).
    let p = param(&[1.0, -2.0]);
    let mut opt = NAdam::new(vec![p.shallow_clone()], NAdamConfig::default());
    set_grad(&p, &[0.5, -1.5]);
    opt.step(0.1);
    let got = Vec::<f64>::try_from(&p).unwrap();
    assert!((got[0] - 0.8943548432934925).abs() < 1e-12, "{got:?}");
    assert!((got[1] - -1.8943548292074726).abs() < 1e-12, "{got:?}");
    opt.zero_grad();
    set_grad(&p, &[0.25, 2.0]);
    opt.step(0.1);
    let got = Vec::<f64>::try_from(&p).unwrap();
    assert!((got[0] - 0.8418109239397361).abs() < 1e-12, "{got:?}");
    assert!((got[1] - -1.9740781945038581).abs() < 1e-12, "{got:?}");
    assert_eq!(opt.step, 2);
}

/// A run that goes on from a published net without its optimizer state keeps its step (the
/// learning-rate schedule) but starts its moments from zero: the first update must be the
/// hand-computed first step above, not one bias-corrected as if the zero moments had run
/// 5,000 steps (several times too large).
#[test]
fn fresh_moments_at_a_late_step_take_a_first_step() {
    let p = param(&[1.0, -2.0]);
    let mut opt = NAdam::new(vec![p.shallow_clone()], NAdamConfig::default());
    opt.step = 5_000;
    set_grad(&p, &[0.5, -1.5]);
    opt.step(0.1);
    let got = Vec::<f64>::try_from(&p).unwrap();
    assert!((got[0] - 0.8943548432934925).abs() < 1e-12, "{got:?}");
    assert!((got[1] - -1.8943548292074726).abs() < 1e-12, "{got:?}");
    assert_eq!((opt.step, opt.moment_steps), (5_001, 1));
}

#[test]
fn clipping_scales_the_global_norm_to_the_limit() {
    let a = param(&[3.0, 0.0]);
    let b = param(&[4.0]);
    set_grad(&a, &[3.0, 0.0]);
    set_grad(&b, &[4.0]);
    let norm = clip_grad_norm(&[a.shallow_clone(), b.shallow_clone()], 1.0);
    assert!((norm - 5.0).abs() < 1e-12);
    assert!((a.grad().double_value(&[0]) - 0.6).abs() < 1e-6);
    assert!((b.grad().double_value(&[0]) - 0.8).abs() < 1e-6);
    // Under the limit nothing changes.
    let norm = clip_grad_norm(&[a.shallow_clone(), b.shallow_clone()], 10.0);
    assert!((norm - 1.0).abs() < 1e-5);
    assert!((b.grad().double_value(&[0]) - 0.8).abs() < 1e-6);
}

#[test]
fn schedule_warms_up_linearly_then_decays_in_steps() {
    let s = LrSchedule {
        peak: 0.2,
        warmup_steps: 4,
        decay_steps: vec![10, 20],
        decay_factor: 0.5,
    };
    let lrs: Vec<f64> = [0, 1, 2, 3, 4, 9, 10, 19, 20, 1000]
        .iter()
        .map(|&t| s.lr(t))
        .collect();
    let expect = [0.05, 0.1, 0.15, 0.2, 0.2, 0.2, 0.1, 0.1, 0.05, 0.05];
    for (got, want) in lrs.iter().zip(expect) {
        assert!((got - want).abs() < 1e-15, "{lrs:?}");
    }
    let none = LrSchedule {
        peak: 1.0,
        warmup_steps: 0,
        decay_steps: vec![],
        decay_factor: 0.1,
    };
    assert_eq!(none.lr(0), 1.0);
}

#[test]
fn swa_averages_snapshots_with_a_capped_count() {
    let cfg = preset("micro");
    let mut net = Net::new(&cfg, Device::Cpu).unwrap();
    let gain = net.model.layers[0].norm1.gain.shallow_clone();
    let set = |v: f64| tch::no_grad(|| gain.shallow_clone().fill_(v));
    let mut swa = Swa::new(2);
    for v in [1.0, 2.0, 4.0] {
        let _ = set(v);
        swa.update(&net.vs);
    }
    // n = 1: avg 1; n = 2: avg 1.5; then capped at 2: avg = 1.5 * 2/3 + 4/3 = 2.333...
    swa.copy_into(&mut net.vs);
    assert!((gain.double_value(&[0]) - 7.0 / 3.0).abs() < 1e-6);
    assert_eq!(swa.count(), 2);
}

#[test]
fn a_restored_swa_average_goes_on_as_the_original() {
    let cfg = preset("micro");
    let mut net = Net::new(&cfg, Device::Cpu).unwrap();
    let gain = net.model.layers[0].norm1.gain.shallow_clone();
    let set = |v: f64| tch::no_grad(|| gain.shallow_clone().fill_(v));
    let mut original = Swa::new(8);
    for v in [1.0, 2.0, 4.0] {
        let _ = set(v);
        original.update(&net.vs);
    }
    // What a trainer state keeps: the average as a net, and the count.
    let mut saved = Net::new(&cfg, Device::Cpu).unwrap();
    original.copy_into(&mut saved.vs);
    let mut restored = Swa::new(8);
    restored.restore(&saved.vs, original.count());
    assert_eq!(restored.count(), 3);
    for swa in [&mut original, &mut restored] {
        let _ = set(8.0);
        swa.update(&net.vs);
    }
    // (1 + 2 + 4 + 8) / 4 either way.
    for swa in [&original, &restored] {
        swa.copy_into(&mut net.vs);
        assert!((gain.double_value(&[0]) - 15.0 / 4.0).abs() < 1e-6);
    }
}
