//! Shared helpers of the network tests: configs from configs/*.toml and synthetic batches.
#![allow(dead_code)]

use cfzero_network::NetworkConfig;
use cfzero_network::TrainingBatch;
use cfzero_network::encoding::POLICY_SIZE;
use tch::{Device, Kind, Tensor};

/// Names of the presets in configs/.
pub const PRESETS: [&str; 5] = ["micro", "tiny", "cf6m", "cf240m", "lc0-bt-tiny"];

/// The `[network]` table of a preset in the repository's configs/ directory.
pub fn preset(name: &str) -> NetworkConfig {
    let path = format!("{}/../configs/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    NetworkConfig::from_toml_file_text(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A deterministic synthetic batch of `b` positions with `legal_per_row` legal moves each.
/// Policy targets are one-hot and values sit on bucket centres, so a perfect fit has loss 0.
pub fn synthetic_batch(b: i64, legal_per_row: i64, seed: i64) -> TrainingBatch {
    tch::manual_seed(seed);
    let opts = (Kind::Float, Device::Cpu);
    let inputs = Tensor::rand([b, 64, 112], opts)
        .ge(0.8)
        .to_kind(Kind::Float);
    let scores = Tensor::rand([b, POLICY_SIZE as i64], opts);
    let (_, top) = scores.topk(legal_per_row, -1, true, false);
    let legal = Tensor::zeros([b, POLICY_SIZE as i64], opts).scatter_value(-1, &top, 1.0);
    let chosen = top.narrow(1, 0, 1);
    let policy = Tensor::zeros([b, POLICY_SIZE as i64], opts).scatter_value(-1, &chosen, 1.0);
    let result = Tensor::randint(3, [b, 1], (Kind::Int64, Device::Cpu));
    let wdl = Tensor::zeros([b, 3], opts).scatter_value(-1, &result, 1.0);
    let centre = |t: Tensor| t.to_kind(Kind::Float) * (2.0 / 31.0) - 1.0;
    let q = centre(Tensor::randint(32, [b], (Kind::Int64, Device::Cpu)));
    let st = centre(Tensor::randint(32, [b], (Kind::Int64, Device::Cpu)));
    let moves_left = Tensor::randint(200, [b], (Kind::Int64, Device::Cpu)).to_kind(Kind::Float);
    TrainingBatch {
        inputs,
        policy,
        legal,
        wdl,
        q,
        st,
        moves_left,
    }
}
