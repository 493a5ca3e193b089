//! NAdam's weight decay: decoupled from the gradient (PyTorch's `decoupled_weight_decay=True`)
//! and applied to the dense layers' weight matrices only.

mod net_support;

use cfzero_network::optim::nadam::decays;
use cfzero_network::optim::{NAdam, NAdamConfig};
use cfzero_network::{LossWeights, Net, loss};
use net_support::{preset, synthetic_batch};
use tch::{Device, Kind, Tensor};

fn param(values: &[f64]) -> Tensor {
    Tensor::from_slice(values).set_requires_grad(true)
}

fn set_grad(p: &Tensor, g: &[f64]) {
    // d/dp of sum(p * g) is g.
    (p * Tensor::from_slice(g)).sum(Kind::Double).backward();
}

fn decay_config(weight_decay: f64) -> NAdamConfig {
    NAdamConfig {
        weight_decay,
        ..NAdamConfig::default()
    }
}

/// One NAdam step from moments at zero, written out (float64): at t = 1 the second moment's
/// bias correction makes `denom = |g| + eps`.
fn first_step_by_hand(p: f64, g: f64, lr: f64, weight_decay: f64) -> f64 {
    let c = NAdamConfig::default();
    let mu = |t: f64| c.beta1 * (1.0 - 0.5 * 0.96f64.powf(t * c.momentum_decay));
    let (mu1, mu2) = (mu(1.0), mu(2.0));
    let m = (1.0 - c.beta1) * g;
    let v = (1.0 - c.beta2) * g * g;
    let denom = (v / (1.0 - c.beta2)).sqrt() + c.eps;
    // Decoupled: the weight shrinks by lr * weight_decay, the gradient is left as it is.
    let decayed = p * (1.0 - lr * weight_decay);
    decayed - lr * (1.0 - mu1) / (1.0 - mu1) * g / denom - lr * mu2 / (1.0 - mu1 * mu2) * m / denom
}

#[test]
fn decay_is_decoupled_from_the_gradient() {
    let (lr, wd) = (0.1, 0.5);
    let (p0, g) = ([2.0, -4.0], [0.5, -1.5]);
    let p = param(&p0);
    let mut opt = NAdam::new(vec![p.shallow_clone()], decay_config(wd));
    set_grad(&p, &g);
    opt.step(lr);
    let got = Vec::<f64>::try_from(&p).unwrap();
    for i in 0..2 {
        let want = first_step_by_hand(p0[i], g[i], lr, wd);
        assert!((got[i] - want).abs() < 1e-12, "{i}: {} vs {want}", got[i]);
        // Coupled L2 (g + wd p in the moments) would give a different step.
        let coupled = first_step_by_hand(p0[i], g[i] + wd * p0[i], lr, 0.0);
        assert!(
            (got[i] - coupled).abs() > 1e-3,
            "{i}: the step is not coupled L2"
        );
    }
    // The moments never see the decay: they are those of the plain gradient.
    let m = Vec::<f64>::try_from(&opt.m[0]).unwrap();
    assert!((m[0] - 0.1 * g[0]).abs() < 1e-15 && (m[1] - 0.1 * g[1]).abs() < 1e-15);

    // A second step: the difference to an undecayed twin is the twin's update applied to
    // weights that shrank by the factor (1 - lr wd) each step.
    let twin = param(&p0);
    let mut plain = NAdam::new(vec![twin.shallow_clone()], decay_config(0.0));
    set_grad(&twin, &g);
    plain.step(lr);
    let (before, twin_before) = (
        Vec::<f64>::try_from(&p).unwrap(),
        Vec::<f64>::try_from(&twin).unwrap(),
    );
    for (t, o) in [(&p, &mut opt), (&twin, &mut plain)] {
        o.zero_grad();
        set_grad(t, &[0.25, 2.0]);
        o.step(lr);
    }
    let (after, twin_after) = (
        Vec::<f64>::try_from(&p).unwrap(),
        Vec::<f64>::try_from(&twin).unwrap(),
    );
    for i in 0..2 {
        let update = twin_after[i] - twin_before[i];
        let want = before[i] * (1.0 - lr * wd) + update;
        assert!(
            (after[i] - want).abs() < 1e-12,
            "{i}: {} vs {want}",
            after[i]
        );
    }
}

#[test]
fn parameters_flagged_off_are_not_decayed() {
    let (lr, wd) = (0.1, 0.5);
    let weight = param(&[2.0, -4.0]);
    let gain = param(&[1.0, 1.5]);
    let mut opt = NAdam::with_decay(
        vec![
            (weight.shallow_clone(), true),
            (gain.shallow_clone(), false),
        ],
        decay_config(wd),
    );
    assert_eq!(opt.decayed(), [true, false]);
    set_grad(&weight, &[0.5, -1.5]);
    set_grad(&gain, &[0.5, -1.5]);
    opt.step(lr);
    let (w, g) = (
        Vec::<f64>::try_from(&weight).unwrap(),
        Vec::<f64>::try_from(&gain).unwrap(),
    );
    assert!((w[0] - first_step_by_hand(2.0, 0.5, lr, wd)).abs() < 1e-12);
    assert!((g[0] - first_step_by_hand(1.0, 0.5, lr, 0.0)).abs() < 1e-12);
    assert!((g[1] - first_step_by_hand(1.5, -1.5, lr, 0.0)).abs() < 1e-12);
}

#[test]
fn only_weight_matrices_are_picked_for_decay() {
    for name in [
        "embed.w",
        "encoder.3.attn.q.w",
        "encoder.0.ffn2.w",
        "smolgen_w",
    ] {
        assert!(decays(name, 2), "{name}");
    }
    for (name, dims) in [
        ("embed.b", 1),
        ("embed.gate_mul", 2),
        ("embed.gate_add", 2),
        ("encoder.0.norm1.gain", 1),
        ("encoder.0.norm1.bias", 1),
        ("encoder.0.attn.rpe_q", 3),
        ("encoder.0.attn.rpe_bias", 2),
        ("encoder.0.attn.smolgen.ln1.gain", 1),
        ("encoder.0.attn.out.b", 1),
        ("value_q.fc1.b", 1),
    ] {
        assert!(!decays(name, dims), "{name}");
    }
}

/// A step with every gradient zero leaves the moments and the gradient's update at zero, so
/// what remains is the decay alone: decayed weights shrink by exactly `1 - lr wd`, the rest
/// stay bit for bit.
fn check_decay_alone(preset_name: &str) {
    let (lr, wd) = (0.01, 0.1);
    let _seeded = cfzero_network::seeded(8);
    let net = Net::new(&preset(preset_name), Device::Cpu).unwrap();
    let mut opt = NAdam::for_var_store(&net.vs, decay_config(wd));
    assert_eq!(opt.params().len(), net.vs.trainable_variables().len());
    let batch = synthetic_batch(2, 5, 1);
    loss(&net.forward(&batch.inputs), &batch, &LossWeights::default())
        .total
        .backward();
    opt.zero_grad();
    let before: Vec<(String, Tensor)> = net
        .vs
        .variables()
        .into_iter()
        .map(|(n, t)| (n, t.detach().copy()))
        .collect();
    opt.step(lr);
    let vars = net.vs.variables();
    let mut decayed = 0;
    for (name, old) in before {
        let now = &vars[&name];
        if decays(&name, old.dim()) {
            decayed += 1;
            assert!(now.equal(&(&old * (1.0 - lr * wd))), "{name} is decayed");
        } else {
            assert!(now.equal(&old), "{name} is not decayed");
        }
    }
    assert_eq!(opt.decayed().iter().filter(|&&d| d).count(), decayed);
    assert!(decayed > 10, "{preset_name}: {decayed} weight matrices");
}

#[test]
fn a_nets_norms_biases_gates_and_tables_are_not_decayed() {
    check_decay_alone("micro");
    check_decay_alone("lc0-bt-tiny");
}
