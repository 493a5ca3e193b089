//! Shared helpers of the network tests: configs from configs/*.toml and synthetic batches.
#![allow(dead_code)]

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_network::encoding::POLICY_SIZE;
use cfzero_network::{Net, NetworkConfig, TrainingBatch};
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
    let _seeded = cfzero_network::seeded(seed);
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

/// The parameters of `net` in name order. A helper that draws noise for each parameter visits
/// them in this order: the store's map iterates in an order that changes from process to
/// process, and the same seed must give the same net in every run.
pub fn variables_by_name(net: &Net) -> Vec<(String, Tensor)> {
    let mut variables: Vec<_> = net.vs.variables().into_iter().collect();
    variables.sort_by(|a, b| a.0.cmp(&b.0));
    variables
}

/// Adds noise of `scale` to every parameter of `net`: a fresh net has constant gates, norms
/// and biases (and zero Shaw tables), which would hide a transposition or a wrong table.
pub fn perturb(net: &Net, scale: f64) {
    tch::no_grad(|| {
        for (_, mut v) in variables_by_name(net) {
            let noise = Tensor::randn(v.size(), (Kind::Float, Device::Cpu)) * scale;
            let _ = v.g_add_(&noise.to_device(v.device()));
        }
    });
}

/// The preset `name` seeded with `seed`, every parameter perturbed by noise of `scale` (small
/// enough that the outputs stay unsaturated like a trained net's).
pub fn perturbed(name: &str, seed: i64, scale: f64) -> Net {
    let _seeded = cfzero_network::seeded(seed);
    let net = Net::new(&preset(name), Device::Cpu).unwrap();
    perturb(&net, scale);
    net
}

/// A file of the repository's `tests/data/lc0/`.
pub fn lc0_data(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/lc0")
        .join(name)
}

/// The position of a case of `tests/data/lc0/vectors.json`: its FEN with its history fill,
/// then its moves.
pub fn lc0_case_state(case: &serde_json::Value) -> ChessState {
    let fill = match case["history_fill"].as_str().unwrap() {
        "no" => HistoryFill::No,
        _ => HistoryFill::FenOnly,
    };
    let mut s = ChessState::from_fen(case["fen"].as_str().unwrap(), fill).unwrap();
    for m in case["moves"].as_array().unwrap() {
        s.play_uci(m.as_str().unwrap()).unwrap();
    }
    s
}

/// Exact softmax (f64) of the logits (in the 1858-move order) of the legal moves of `state`,
/// keyed by UCI.
pub fn legal_policy(state: &ChessState, logits: &[f32]) -> Vec<(String, f64)> {
    use shakmaty::Position;
    let turn = state.position().turn();
    let moves = state.position().legal_moves();
    let picked: Vec<f64> = moves
        .iter()
        .map(|m| f64::from(logits[cfzero_network::encoding::move_index(m, turn)]))
        .collect();
    let max = picked.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = picked.iter().map(|l| (l - max).exp()).sum();
    moves
        .iter()
        .zip(&picked)
        .map(|(m, l)| {
            let uci = m.to_uci(shakmaty::CastlingMode::Standard).to_string();
            (uci, (l - max).exp() / total)
        })
        .collect()
}
