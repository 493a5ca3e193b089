//! Output shapes of every preset, parameter counts, and the analytic size formulas.

mod net_support;

use cfzero_network::flops::{flops_per_evaluation, parameter_count, parameters_per_module};
use cfzero_network::{HeadsConfig, Net};
use net_support::{PRESETS, preset};
use tch::{Device, Kind, Tensor};

fn check_shapes(net: &Net, b: i64) {
    let x = Tensor::rand([b, 64, 112], (Kind::Float, Device::Cpu));
    let out = tch::no_grad(|| net.forward(&x));
    let h = &net.config.outputs;
    assert_eq!(out.policy.size(), [b, 1858]);
    assert_eq!(
        out.soft_policy.as_ref().map(|t| t.size()),
        h.soft_policy.then(|| vec![b, 1858])
    );
    assert_eq!(
        out.wdl.as_ref().map(|t| t.size()),
        h.winner.then(|| vec![b, 3])
    );
    for (head, on) in [(&out.q, h.q), (&out.st, h.st)] {
        assert_eq!(head.is_some(), on);
        if let Some(v) = head {
            assert_eq!(v.value.size(), [b]);
            assert_eq!(v.error.size(), [b]);
            assert_eq!(v.categorical.size(), [b, 32]);
            assert!(v.value.abs().max().double_value(&[]) <= 1.0);
        }
    }
    assert_eq!(
        out.moves_left.as_ref().map(|t| t.size()),
        h.moves_left.then(|| vec![b])
    );
    assert_eq!(out.policy.isfinite().all().int64_value(&[]), 1);
}

#[test]
fn every_buildable_preset_has_the_documented_output_shapes() {
    // cf240m is checked by formula only (about 1 GB of weights).
    for name in ["micro", "tiny", "cf6m", "lc0-bt-tiny"] {
        let cfg = preset(name);
        let net = Net::new(&cfg, Device::Cpu).unwrap();
        check_shapes(&net, 3);
        assert_eq!(
            net.parameter_count() as u64,
            parameter_count(&cfg),
            "{name}"
        );
        let per_module: usize = parameters_per_module(&net).iter().map(|(_, n)| n).sum();
        assert_eq!(per_module, net.parameter_count(), "{name}");
    }
}

#[test]
fn heads_can_be_turned_off() {
    let mut cfg = preset("micro");
    cfg.outputs = HeadsConfig {
        soft_policy: false,
        winner: true,
        q: false,
        st: false,
        moves_left: false,
    };
    let net = Net::new(&cfg, Device::Cpu).unwrap();
    check_shapes(&net, 2);
    assert_eq!(net.parameter_count() as u64, parameter_count(&cfg));
}

#[test]
fn cf6m_has_six_million_parameters_within_one_percent() {
    let cfg = preset("cf6m");
    let n = parameter_count(&cfg) as f64;
    assert!((n - 6.0e6).abs() / 6.0e6 < 0.01, "cf6m has {n} parameters");
    let net = Net::new(&cfg, Device::Cpu).unwrap();
    assert_eq!(net.parameter_count() as f64, n);
}

#[test]
fn all_presets_parse_and_cf240m_is_about_240m() {
    for name in PRESETS {
        preset(name);
    }
    let n = parameter_count(&preset("cf240m")) as f64;
    assert!((200e6..280e6).contains(&n), "cf240m has {n} parameters");
}

#[test]
fn flops_of_micro_match_a_hand_count() {
    // micro: 1 layer, d 16, 2 heads, dff 32, d_pol 16, value 8 -> 32, moves-left 8 -> 32, Shaw.
    let cfg = preset("micro");
    let embed = 64 * 112 * 16;
    let layer = 4 * 64 * 16 * 16 + 5 * 64 * 64 * 16 + 2 * 64 * 16 * 32;
    let policy = 64 * 16 * 16 + 2 * 64 * 16 * 16 + 64 * 64 * 16 + 8 * 16 * 4;
    let trunk = |c: u64, h: u64| 64 * 16 * c + 64 * c * h;
    let heads = trunk(8, 32) + 32 * 3 + 2 * (trunk(8, 32) + 32 * 34) + trunk(8, 32) + 32;
    assert_eq!(
        flops_per_evaluation(&cfg),
        2 * (embed + layer + 2 * policy + heads)
    );
}

#[test]
fn invalid_configs_are_refused_with_a_message() {
    let text = "[network]\nlayers = 2\nd_model = 30\nheads = 4\ndff = 8\nd_pol = 8\n";
    let err = cfzero_network::NetworkConfig::from_toml_file_text(text)
        .unwrap_err()
        .to_string();
    assert!(err.contains("heads") && err.contains("d_model"), "{err}");
    let other_tables =
        "[network]\nlayers = 1\nd_model = 8\nheads = 2\ndff = 8\nd_pol = 8\n[search]\nx = 1\n";
    assert!(cfzero_network::NetworkConfig::from_toml_file_text(other_tables).is_ok());
}

#[test]
fn the_play_forward_computes_exactly_the_heads_a_search_reads() {
    let _seeded = cfzero_network::seeded(3);
    let net = Net::new(&preset("micro"), Device::Cpu).unwrap();
    let x = Tensor::rand([9, 64, 112], (Kind::Float, Device::Cpu));
    let (all, play) = tch::no_grad(|| (net.forward(&x), net.forward_play(&x)));
    assert!(play.policy.equal(&all.policy));
    assert!(play.wdl.unwrap().equal(&all.wdl.unwrap()));
    assert!(play.q.is_none() && play.st.is_none());
    assert!(play.soft_policy.is_none() && play.moves_left.is_none());
    // Without a winner head the search reads the q head instead.
    let mut cfg = preset("micro");
    cfg.outputs.winner = false;
    let _seeded = cfzero_network::seeded(3);
    let net = Net::new(&cfg, Device::Cpu).unwrap();
    let (all, play) = tch::no_grad(|| (net.forward(&x), net.forward_play(&x)));
    assert!(play.q.unwrap().value.equal(&all.q.unwrap().value));
    assert!(play.wdl.is_none());
    // Its FLOPs leave out exactly the skipped heads.
    let play_cfg = HeadsConfig {
        soft_policy: false,
        st: false,
        moves_left: false,
        ..cfg.outputs
    };
    assert_eq!(cfg.outputs.for_play(), play_cfg);
    let mut reduced = cfg.clone();
    reduced.outputs = play_cfg;
    assert_eq!(
        cfzero_network::flops::flops_per_play_evaluation(&cfg),
        flops_per_evaluation(&reduced)
    );
    assert!(flops_per_evaluation(&reduced) < flops_per_evaluation(&cfg));
}
