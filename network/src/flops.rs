//! Size and cost of a net: parameters per module and floating-point operations per evaluation.

use std::collections::BTreeMap;

use crate::config::{NetworkConfig, PositionEncoding};
use crate::model::{Net, VALUE_BUCKETS};

/// Parameters per module, in name order: `embed`, `encoder.<i>`, `smolgen_w`, `policy`, heads.
pub fn parameters_per_module(net: &Net) -> Vec<(String, usize)> {
    let mut groups: BTreeMap<(usize, String), usize> = BTreeMap::new();
    for (name, t) in net.vs.variables() {
        let mut parts = name.split('.');
        let first = parts.next().unwrap_or_default().to_owned();
        let key = if first == "encoder" {
            let i: usize = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            (1 + i, format!("encoder.{i}"))
        } else {
            let order = match first.as_str() {
                "embed" => 0,
                "smolgen_w" => 1000,
                "policy" => 1001,
                "soft_policy" => 1002,
                "value_winner" => 1003,
                "value_q" => 1004,
                "value_st" => 1005,
                _ => 1006,
            };
            (order, first)
        };
        *groups.entry(key).or_default() += t.numel();
    }
    groups.into_iter().map(|((_, name), n)| (name, n)).collect()
}

/// Number of parameters of a net of shape `cfg`, computed from the config alone (equal to
/// [`Net::parameter_count`] of a built net; lets `info` describe huge configs cheaply).
pub fn parameter_count(cfg: &NetworkConfig) -> u64 {
    let (d, dff, dp, h) = (
        cfg.d_model as u64,
        cfg.dff as u64,
        cfg.d_pol as u64,
        cfg.heads as u64,
    );
    let dense = |i: u64, o: u64, bias: bool| i * o + if bias { o } else { 0 };
    let norm = if cfg.norm == crate::config::Norm::Layer {
        2 * d
    } else {
        d
    };
    let mut layer = 3 * dense(d, d, cfg.qkv_bias)
        + dense(d, d, true)
        + dense(d, dff, true)
        + dense(dff, d, true)
        + 2 * norm;
    let mut global = 0;
    match cfg.attention.position {
        // Three [H, 225, d_head] tables and the [H, 225] logit bias.
        PositionEncoding::Shaw => layer += crate::model::shaw::BUCKETS as u64 * (3 * d + h),
        PositionEncoding::Smolgen => {
            let a = &cfg.attention;
            let (c, hid, g) = (
                a.smolgen_compress as u64,
                a.smolgen_hidden as u64,
                a.smolgen_gen as u64,
            );
            layer += dense(d, c, false)
                + dense(64 * c, hid, true)
                + 2 * hid
                + dense(hid, h * g, true)
                + 2 * h * g;
            global += 4096 * g;
        }
        PositionEncoding::None => {}
    }
    let embed = dense(112, d, true) + 2 * 64 * d;
    let policy = dense(d, dp, true) + 2 * dense(dp, dp, true) + 4 * dp;
    let trunk = |c: u64, hid: u64| dense(d, c, true) + dense(64 * c, hid, true);
    let (vc, vh) = (cfg.value_channels as u64, cfg.value_hidden as u64);
    let heads = &cfg.outputs;
    let mut total = embed + cfg.layers as u64 * layer + global + policy;
    if heads.soft_policy {
        total += policy;
    }
    if heads.winner {
        total += trunk(vc, vh) + dense(vh, 3, true);
    }
    let scalar = trunk(vc, vh) + 2 * dense(vh, 1, true) + dense(vh, VALUE_BUCKETS as u64, true);
    total += scalar * (heads.q as u64 + heads.st as u64);
    if heads.moves_left {
        let (mc, mh) = (cfg.moves_left_channels as u64, cfg.moves_left_hidden as u64);
        total += trunk(mc, mh) + dense(mh, 1, true);
    }
    total
}

/// Floating-point operations of one evaluation as a search runs it
/// (`Net::forward_play`: the policy and the value head it reads, see
/// [`crate::config::HeadsConfig::for_play`]).
pub fn flops_per_play_evaluation(cfg: &NetworkConfig) -> u64 {
    let mut play = cfg.clone();
    play.outputs = cfg.outputs.for_play();
    flops_per_evaluation(&play)
}

/// Floating-point operations (2 per multiply-add, matrix products only) of one evaluation
/// (batch 1, forward) with every head the config has.
pub fn flops_per_evaluation(cfg: &NetworkConfig) -> u64 {
    let (d, dff, dp) = (cfg.d_model as u64, cfg.dff as u64, cfg.d_pol as u64);
    let sq = 64u64;
    let mut macs = sq * 112 * d;
    let attention_pairs = sq * sq * d; // one d-wide product per (query, key) pair
    let mut layer = 4 * sq * d * d + 2 * attention_pairs + 2 * sq * d * dff;
    match cfg.attention.position {
        PositionEncoding::Shaw => layer += 3 * attention_pairs,
        PositionEncoding::Smolgen => {
            let a = &cfg.attention;
            let (c, hid, g, h) = (
                a.smolgen_compress as u64,
                a.smolgen_hidden as u64,
                a.smolgen_gen as u64,
                cfg.heads as u64,
            );
            layer += sq * d * c + sq * c * hid + hid * h * g + h * g * sq * sq;
        }
        PositionEncoding::None => {}
    }
    macs += cfg.layers as u64 * layer;
    let policy = sq * d * dp + 2 * sq * dp * dp + sq * sq * dp + 8 * dp * 4;
    macs += policy * if cfg.outputs.soft_policy { 2 } else { 1 };
    let trunk = |c: u64, hid: u64| sq * d * c + sq * c * hid;
    let (vc, vh) = (cfg.value_channels as u64, cfg.value_hidden as u64);
    if cfg.outputs.winner {
        macs += trunk(vc, vh) + vh * 3;
    }
    let scalar_head = trunk(vc, vh) + vh * (2 + VALUE_BUCKETS as u64);
    macs += scalar_head * (cfg.outputs.q as u64 + cfg.outputs.st as u64);
    if cfg.outputs.moves_left {
        macs += trunk(cfg.moves_left_channels as u64, cfg.moves_left_hidden as u64)
            + cfg.moves_left_hidden as u64;
    }
    2 * macs
}
