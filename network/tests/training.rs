//! Loss terms, gradients reaching every parameter, and a micro net overfitting one batch.

mod net_support;

use cfzero_network::loss::{
    MOVES_LEFT_HUBER_DELTA, MOVES_LEFT_SCALE, hl_gauss, soft_target, two_hot,
};
use cfzero_network::optim::{LrSchedule, NAdam, NAdamConfig, clip_grad_norm};
use cfzero_network::{LossTerm, LossWeights, Net, loss};
use net_support::{preset, synthetic_batch};
use tch::{Device, Kind, Tensor};

#[test]
fn two_hot_puts_mass_on_the_neighbouring_buckets() {
    let t = two_hot(&Tensor::from_slice(&[
        -1.0f32,
        1.0,
        0.0,
        -1.0 + 2.0 / 31.0 * 2.5,
    ]));
    assert_eq!(t.double_value(&[0, 0]), 1.0);
    assert_eq!(t.double_value(&[1, 31]), 1.0);
    // 0 lies halfway between buckets 15 and 16.
    assert!(
        (t.double_value(&[2, 15]) - 0.5).abs() < 1e-6
            && (t.double_value(&[2, 16]) - 0.5).abs() < 1e-6
    );
    assert!(
        (t.double_value(&[3, 2]) - 0.5).abs() < 1e-5
            && (t.double_value(&[3, 3]) - 0.5).abs() < 1e-5
    );
    let sums = t.sum_dim_intlist(-1, false, Kind::Float);
    assert!((sums - 1.0).abs().max().double_value(&[]) < 1e-6);
}

/// HL-Gauss against the direct formula, computed independently: the normal density
/// integrated over each bucket by Simpson's rule, renormalised over the 32 buckets' span.
#[test]
fn hl_gauss_is_the_normal_mass_of_each_bucket() {
    let width = 2.0 / 31.0;
    for (value, sigma) in [(0.3f64, 0.75f64), (-0.97, 0.75), (1.0, 2.0), (0.0, 0.3)] {
        let t = hl_gauss(&Tensor::from_slice(&[value as f32]), sigma);
        let s = sigma * width;
        let density = |x: f64| (-((x - value) / s).powi(2) / 2.0).exp();
        let mass = |a: f64, b: f64| {
            let n = 2000;
            let h = (b - a) / n as f64;
            (0..=n)
                .map(|i| {
                    let c = if i == 0 || i == n {
                        1.0
                    } else if i % 2 == 1 {
                        4.0
                    } else {
                        2.0
                    };
                    c * density(a + i as f64 * h)
                })
                .sum::<f64>()
                * h
                / 3.0
        };
        let edges: Vec<f64> = (0..=32)
            .map(|k| -1.0 - width / 2.0 + k as f64 * width)
            .collect();
        let masses: Vec<f64> = edges.windows(2).map(|e| mass(e[0], e[1])).collect();
        let total: f64 = masses.iter().sum();
        for (k, m) in masses.iter().enumerate() {
            let got = t.double_value(&[0, k as i64]);
            assert!(
                (got - m / total).abs() < 2e-5,
                "value {value}, sigma {sigma}, bucket {k}: {got} against {}",
                m / total
            );
        }
    }
}

/// A batch whose plies left are NaN for some positions: the moves-left loss is the Huber
/// loss of the others alone (all NaN: zero), and the total stays finite.
#[test]
fn unknown_plies_left_train_nothing() {
    let _seeded = cfzero_network::seeded(3);
    let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let mut batch = synthetic_batch(4, 20, 5);
    let out = net.forward(&batch.inputs);
    let known = Tensor::from_slice(&[12.0f32, f32::NAN, 40.0, f32::NAN]);
    batch.moves_left = known.shallow_clone();
    let terms = loss(&out, &batch, &LossWeights::default());
    let ml = out.moves_left.as_ref().unwrap();
    let mut expect = 0.0;
    for (i, plies) in [(0i64, 12.0f64), (2, 40.0)] {
        let d = (ml.double_value(&[i]) - plies / MOVES_LEFT_SCALE).abs();
        let h = MOVES_LEFT_HUBER_DELTA;
        expect += if d <= h {
            0.5 * d * d
        } else {
            h * (d - 0.5 * h)
        };
    }
    expect /= 2.0;
    assert!(
        (terms.get(LossTerm::MovesLeft) - expect).abs() < 1e-6,
        "{} against {expect}",
        terms.get(LossTerm::MovesLeft)
    );
    assert!(terms.total_value.is_finite());
    batch.moves_left = Tensor::from_slice(&[f32::NAN; 4]);
    let terms = loss(&out, &batch, &LossWeights::default());
    assert_eq!(terms.get(LossTerm::MovesLeft), 0.0);
    assert!(terms.total_value.is_finite());
    terms.total.backward();
}

/// Rows whose policy target is all zero (positions trained for their value alone) add
/// nothing to the policy terms, which average over the other rows; the value terms are
/// those of the whole batch.
#[test]
fn rows_without_a_policy_target_train_the_value_heads_alone() {
    let _seeded = cfzero_network::seeded(4);
    let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let mut batch = synthetic_batch(4, 20, 6);
    let out = net.forward(&batch.inputs);
    let full = loss(&out, &batch, &LossWeights::default());
    let keep = Tensor::from_slice(&[1.0f32, 0.0, 1.0, 0.0]).unsqueeze(-1);
    batch.policy = &batch.policy * &keep;
    let part = loss(&out, &batch, &LossWeights::default());
    let masked = out.policy.masked_fill(
        &batch.legal.to_kind(Kind::Bool).logical_not(),
        f64::NEG_INFINITY,
    );
    let logp = masked.log_softmax(-1, Kind::Float);
    let per_row = -(logp.masked_fill(&batch.policy.eq(0.0), 0.0) * &batch.policy).sum_dim_intlist(
        -1,
        false,
        Kind::Float,
    );
    let expect = (per_row.double_value(&[0]) + per_row.double_value(&[2])) / 2.0;
    let got = part.get(LossTerm::Policy);
    assert!((got - expect).abs() < 1e-5, "{got} against {expect}");
    assert!(
        (got - full.get(LossTerm::Policy)).abs() > 1e-4,
        "the zero rows changed nothing"
    );
    if out.soft_policy.is_some() {
        assert!(part.get(LossTerm::SoftPolicy) > 0.0);
    }
    for term in [
        LossTerm::Winner,
        LossTerm::Q,
        LossTerm::St,
        LossTerm::MovesLeft,
    ] {
        assert_eq!(part.get(term), full.get(term), "{}", term.name());
    }
    // With no policy target at all the policy terms are 0, not NaN.
    batch.policy = batch.policy.zeros_like();
    let none = loss(&out, &batch, &LossWeights::default());
    assert_eq!(none.get(LossTerm::Policy), 0.0);
    assert_eq!(none.get(LossTerm::SoftPolicy), 0.0);
    assert!(none.total_value.is_finite());
}

#[test]
fn soft_target_is_the_fourth_root_renormalised() {
    let p = Tensor::from_slice(&[0.0f32, 0.0625, 0.9375, 0.0]).view([1, 4]);
    let s = soft_target(&p);
    let (a, b) = (0.0625f64.powf(0.25), 0.9375f64.powf(0.25));
    assert!((s.double_value(&[0, 1]) - a / (a + b)).abs() < 1e-6);
    assert!((s.double_value(&[0, 2]) - b / (a + b)).abs() < 1e-6);
    assert_eq!(s.double_value(&[0, 0]), 0.0);
}

#[test]
fn loss_terms_match_hand_computation_for_known_outputs() {
    let _seeded = cfzero_network::seeded(1);
    let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let batch = synthetic_batch(4, 20, 2);
    let out = net.forward(&batch.inputs);
    let terms = loss(&out, &batch, &LossWeights::default());
    // Policy: -log softmax over the legal moves at the target move.
    let masked = out.policy.masked_fill(
        &batch.legal.to_kind(Kind::Bool).logical_not(),
        f64::NEG_INFINITY,
    );
    let logp = masked.log_softmax(-1, Kind::Float);
    let expect = -(logp.masked_fill(&batch.policy.eq(0.0), 0.0))
        .sum(Kind::Float)
        .double_value(&[])
        / 4.0;
    assert!(
        (terms.get(LossTerm::Policy) - expect).abs() < 1e-5,
        "{} vs {expect}",
        terms.get(LossTerm::Policy)
    );
    let q = out.q.as_ref().unwrap();
    let se = (&q.value - &batch.q)
        .square()
        .mean(Kind::Float)
        .double_value(&[]);
    assert!((terms.get(LossTerm::Q) - se).abs() < 1e-6);
    let w = LossWeights::default();
    // Written out field by field: checks `LossWeights::weight` pairs each term with its field.
    let weighted: f64 = terms.get(LossTerm::Policy) * w.policy
        + terms.get(LossTerm::SoftPolicy) * w.soft_policy
        + terms.get(LossTerm::Winner) * w.winner
        + terms.get(LossTerm::Q) * w.q
        + terms.get(LossTerm::QError) * w.q_error
        + terms.get(LossTerm::QCategorical) * w.q_categorical
        + terms.get(LossTerm::St) * w.st
        + terms.get(LossTerm::StError) * w.st_error
        + terms.get(LossTerm::StCategorical) * w.st_categorical
        + terms.get(LossTerm::MovesLeft) * w.moves_left;
    assert!((terms.total_value - weighted).abs() < 1e-4 * weighted.abs().max(1.0));
}

#[test]
fn gradients_reach_every_parameter() {
    for name in ["micro", "lc0-bt-tiny"] {
        let _seeded = cfzero_network::seeded(9);
        let mut cfg = preset(name);
        cfg.qkv_bias = true; // as imported Lc0 nets have
        let net = Net::new(&cfg, Device::Cpu).unwrap();
        let mut batch = synthetic_batch(4, 1858, 4); // every move legal, so promotions get gradients
        // The moves-left loss is Huber: residuals beyond its delta each give the output bias a
        // gradient of exactly ±delta, so two long and two short games cancel to exactly zero.
        // Every game longer than the fresh head's output keeps all residuals on one side.
        batch.moves_left = Tensor::full([4], 150.0, (Kind::Float, Device::Cpu));
        let terms = loss(&net.forward(&batch.inputs), &batch, &LossWeights::default());
        terms.total.backward();
        for (var, t) in net.vs.variables() {
            let g = t.grad();
            assert!(g.defined(), "{name}: no gradient for {var}");
            assert!(
                g.abs().sum(Kind::Double).double_value(&[]) > 0.0,
                "{name}: zero gradient for {var}"
            );
        }
    }
}

/// The moves-left output passes a ReLU: a fresh head whose output is at or below zero for a
/// position gives that position no gradient, so every fresh net must start on the live side.
#[test]
fn a_fresh_moves_left_head_is_alive_for_every_position() {
    for seed in 0..20 {
        let _seeded = cfzero_network::seeded(seed);
        let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
        let batch = synthetic_batch(16, 30, seed + 100);
        let ml = net.forward(&batch.inputs).moves_left.unwrap();
        let min = ml.min().double_value(&[]);
        assert!(min > 0.5, "seed {seed}: fresh moves-left output {min}");
    }
}

#[test]
fn micro_net_overfits_one_small_batch() {
    let _seeded = cfzero_network::seeded(42);
    let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let batch = synthetic_batch(8, 24, 43);
    let mut opt = NAdam::new(net.vs.trainable_variables(), NAdamConfig::default());
    let schedule = LrSchedule {
        peak: 1e-2,
        warmup_steps: 10,
        decay_steps: vec![],
        decay_factor: 0.1,
    };
    let weights = LossWeights::default();
    let first = loss(&net.forward(&batch.inputs), &batch, &weights).total_value;
    let mut last = first;
    for step in 0..300 {
        opt.zero_grad();
        let terms = loss(&net.forward(&batch.inputs), &batch, &weights);
        terms.total.backward();
        clip_grad_norm(opt.params(), 10.0);
        opt.step(schedule.lr(step));
        last = terms.total_value;
        if last < first / 10.0 {
            break;
        }
    }
    assert!(last < first / 10.0, "loss went from {first} to {last}");
}
