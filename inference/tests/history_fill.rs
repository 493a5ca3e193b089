//! One history convention per net: the fill before a FEN's position is part of the net's
//! config, the inference server encodes every position with it whatever the state was set up
//! with, and nets stored before the setting existed keep the convention they were trained with.

#[path = "../../network/tests/net_support/mod.rs"]
mod net_support;

use cfzero_chess::{ChessState, HistoryFill};
use cfzero_inference::backend::TchBackend;
use cfzero_inference::{InferenceOptions, InferenceServer};
use cfzero_mcts::{Evaluations, Evaluator, Game, LeafBatch};
use cfzero_network::Net;
use cfzero_network::checkpoint::{load_net, save_net};
use cfzero_network::encoding::{PLANES, TOKEN_FLOATS, encode_planes_filled, encode_tokens_filled};
use net_support::preset;
use tch::{Device, Kind, Tensor};

/// A middlegame (no en passant) and a position with an en-passant square.
const FENS: [&str; 2] = [
    "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
];

fn net_with(fill: HistoryFill) -> Net {
    let _seeded = cfzero_network::seeded(5);
    let mut cfg = preset("micro");
    cfg.history_fill = fill;
    Net::new(&cfg, Device::Cpu).unwrap()
}

/// The value the server answers for `state`.
fn served_value(net: Net, state: &ChessState) -> f32 {
    let handle = InferenceServer::spawn_backend::<ChessState, _>(
        TchBackend::new(net, Kind::Float, 4),
        InferenceOptions::default(),
    );
    let mut batch = LeafBatch::new();
    let mut moves = Vec::new();
    state.legal_moves(&mut moves);
    batch.push(state, &moves);
    let mut out = Evaluations::default();
    handle.evaluate(&batch, &mut out).unwrap();
    out.values[0]
}

/// The value the net gives `state` encoded with `fill`, straight through `forward`.
fn direct_value(net: &Net, state: &ChessState, fill: HistoryFill) -> f32 {
    let mut tokens = vec![0.0f32; TOKEN_FLOATS];
    encode_tokens_filled(state, fill, &mut tokens);
    let x = Tensor::from_slice(&tokens).view([1, 64, PLANES as i64]);
    let (_, value) = net.forward_play(&x).play_values().unwrap();
    value.double_value(&[0]) as f32
}

#[test]
fn the_server_encodes_with_the_nets_convention_whatever_the_state_says() {
    for fen in FENS {
        for net_fill in [HistoryFill::No, HistoryFill::FenOnly] {
            // One net, copied for each server: the weights never depend on the global RNG.
            let net = net_with(net_fill);
            let reference = ChessState::from_fen(fen, net_fill).unwrap();
            let expected = direct_value(&net, &reference, net_fill);
            for state_fill in [HistoryFill::No, HistoryFill::FenOnly] {
                let state = ChessState::from_fen(fen, state_fill).unwrap();
                let got = served_value(net.try_clone().unwrap(), &state);
                assert!(
                    (got - expected).abs() < 1e-4,
                    "{fen}: net {net_fill:?}, state {state_fill:?}: {got} vs {expected}"
                );
            }
        }
        // The two conventions are different inputs.
        let s = ChessState::from_fen(fen, HistoryFill::No).unwrap();
        assert_ne!(
            encode_planes_filled(&s, HistoryFill::No),
            encode_planes_filled(&s, HistoryFill::FenOnly)
        );
    }
}

#[test]
fn new_nets_default_to_lc0s_fill_and_old_net_files_read_as_no_fill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.safetensors");
    let net = net_with(HistoryFill::default());
    assert_eq!(net.config.history_fill, HistoryFill::FenOnly);
    save_net(&net, &path).unwrap();
    assert_eq!(
        load_net(&path, Device::Cpu).unwrap().config.history_fill,
        HistoryFill::FenOnly
    );
    // The same file with the key taken out of its stored config, as nets were written before.
    let bytes = std::fs::read(&path).unwrap();
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + header_len]).unwrap();
    let config = header["__metadata__"]["cfzero.network_config"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut parsed: serde_json::Value = serde_json::from_str(&config).unwrap();
    parsed.as_object_mut().unwrap().remove("history_fill");
    header["__metadata__"]["cfzero.network_config"] = serde_json::Value::String(parsed.to_string());
    let mut new_header = serde_json::to_vec(&header).unwrap();
    while !new_header.len().is_multiple_of(8) {
        new_header.push(b' ');
    }
    let mut old = (new_header.len() as u64).to_le_bytes().to_vec();
    old.extend_from_slice(&new_header);
    old.extend_from_slice(&bytes[8 + header_len..]);
    let old_path = dir.path().join("old.safetensors");
    std::fs::write(&old_path, old).unwrap();
    assert_eq!(
        load_net(&old_path, Device::Cpu)
            .unwrap()
            .config
            .history_fill,
        HistoryFill::No
    );
}
