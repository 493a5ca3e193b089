//! Lc0 interop: importing the two reference nets of tests/data/lc0 and evaluating the 36
//! vector cases reproduces what Lc0 computes; export and import are inverse; the written
//! file declares exactly the format of the reference nets; unsupported nets are refused.

mod net_support;

use std::io::Read;

use cfzero_chess::ChessState;
use cfzero_export::lc0::proto::{Layer, Net as NetFile};
use cfzero_export::lc0::{
    LayerEncoding, Lc0Error, bindings, export_net, format, import_net, read_lc0_file,
    write_lc0_file,
};
use cfzero_network::Net;
use cfzero_network::encoding::{TOKEN_FLOATS, encode_tokens, move_index};
use net_support::lc0_data;
use prost::Message;
use serde_json::Value;
use shakmaty::Position;
use shakmaty::uci::UciMove;
use tch::{Device, Kind, Tensor};

fn vectors() -> Value {
    serde_json::from_str(&std::fs::read_to_string(lc0_data("vectors.json")).unwrap()).unwrap()
}

fn raw_file(name: &str) -> NetFile {
    let gz = std::fs::read(lc0_data(name)).unwrap();
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut bytes)
        .unwrap();
    NetFile::decode(bytes.as_slice()).unwrap()
}

/// Policy logits `[1858]`, WDL probabilities and moves left in plies of one position.
struct Outputs {
    logits: Vec<f32>,
    wdl: Vec<f32>,
    plies_left: f32,
}

fn evaluate(net: &Net, state: &ChessState) -> Outputs {
    let mut tokens = vec![0.0f32; TOKEN_FLOATS];
    encode_tokens(state, &mut tokens);
    let input = Tensor::from_slice(&tokens).view([1, 64, 112]);
    let out = tch::no_grad(|| net.forward(&input));
    let wdl = out.wdl.unwrap().softmax(-1, Kind::Float).view([-1]);
    Outputs {
        logits: Vec::try_from(out.policy.view([-1])).unwrap(),
        wdl: Vec::try_from(wdl).unwrap(),
        plies_left: out.moves_left.unwrap().double_value(&[0]) as f32 * 20.0,
    }
}

#[test]
fn imported_reference_nets_reproduce_lc0_on_every_vector_case() {
    let vectors = vectors();
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    for net_name in ["bt-smolgen", "bt-plain"] {
        let net = read_lc0_file(&lc0_data(&format!("{net_name}.pb.gz")), Device::Cpu).unwrap();
        let cases: Vec<&Value> = vectors["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["net"].as_str() == Some(net_name))
            .collect();
        assert_eq!(cases.len(), 18, "{net_name}");
        for case in cases {
            let state = net_support::lc0_case_state(case);
            let what = format!("{net_name} {} {}", case["fen"], case["moves"]);
            let out = evaluate(&net, &state);
            let turn = state.position().turn();
            let legal = case["legal_moves"].as_array().unwrap();
            assert_eq!(legal.len(), state.position().legal_moves().len(), "{what}");
            for m in legal {
                let uci = m["uci"].as_str().unwrap();
                let mv = UciMove::from_ascii(uci.as_bytes())
                    .unwrap()
                    .to_move(state.position())
                    .unwrap();
                assert_eq!(
                    move_index(&mv, turn) as u64,
                    m["nn_index"].as_u64().unwrap(),
                    "{what}: index of {uci}"
                );
            }
            for (uci, p) in net_support::legal_policy(&state, &out.logits) {
                let expected = case["policy"][&uci].as_f64().unwrap();
                worst.0 = worst.0.max((p - expected).abs());
                assert!(
                    (p - expected).abs() < 1e-5,
                    "{what}: P({uci}) {p} vs lc0 {expected}"
                );
            }
            for (i, &w) in out.wdl.iter().enumerate() {
                let expected = case["wdl"][i].as_f64().unwrap();
                worst.1 = worst.1.max((f64::from(w) - expected).abs());
                assert!(
                    (f64::from(w) - expected).abs() < 1e-5,
                    "{what}: wdl[{i}] {w} vs {expected}"
                );
            }
            let expected = case["moves_left"].as_f64().unwrap();
            let diff = (f64::from(out.plies_left) - expected).abs();
            worst.2 = worst.2.max(diff);
            assert!(
                diff < 1e-4,
                "{what}: moves left {} vs {expected}",
                out.plies_left
            );
        }
    }
    eprintln!(
        "largest differences: policy {:.2e}, wdl {:.2e}, moves left {:.2e} plies",
        worst.0, worst.1, worst.2
    );
}

/// The lc0-bt-tiny preset with every parameter perturbed.
fn random_bt_tiny(seed: i64) -> Net {
    net_support::perturbed("lc0-bt-tiny", seed, 0.05)
}

/// Positions of the vector cases (18 distinct ones).
fn vector_states() -> Vec<ChessState> {
    let vectors = vectors();
    vectors["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["net"].as_str() == Some("bt-plain"))
        .map(net_support::lc0_case_state)
        .collect()
}

fn max_output_difference(a: &Net, b: &Net) -> f32 {
    let mut worst = 0.0f32;
    for state in vector_states() {
        let (x, y) = (evaluate(a, &state), evaluate(b, &state));
        for (p, q) in net_support::legal_policy(&state, &x.logits)
            .iter()
            .zip(net_support::legal_policy(&state, &y.logits))
        {
            worst = worst.max((p.1 - q.1).abs() as f32);
        }
        for (p, q) in x.wdl.iter().zip(&y.wdl) {
            worst = worst.max((p - q).abs());
        }

        worst = worst.max((x.plies_left - y.plies_left).abs() / 100.0);
    }
    worst
}

#[test]
fn float32_export_then_import_evaluates_like_the_original() {
    let net = random_bt_tiny(7);
    let file = export_net(&net, LayerEncoding::Float32).unwrap();
    let back = import_net(&file, "memory", Device::Cpu).unwrap();
    // Every weight comes back bit for bit except the halfmove-clock column of the embedding
    // (divided by 99 on the way out) and the moves-left output (times 20): one rounding each.
    let (ours, theirs) = (net.vs.variables(), back.vs.variables());
    for (name, t) in &ours {
        if name.contains("soft_policy") || name.contains("value_q") || name.contains("value_st") {
            assert!(!theirs.contains_key(name), "{name} is not an Lc0 head");
            continue;
        }
        let u = &theirs[name];
        let diff = (t - u).abs().max().double_value(&[]);
        let scale = t.abs().max().double_value(&[]);
        if name == "embed.w" || name.starts_with("moves_left.out") {
            assert!(diff <= scale * 2e-7, "{name}: {diff}");
        } else {
            assert_eq!(diff, 0.0, "{name}");
        }
    }
    let worst = max_output_difference(&net, &back);
    assert!(worst < 1e-6, "outputs differ by {worst}");
}

#[test]
fn linear16_export_rounds_each_weight_by_at_most_half_a_step() {
    let net = random_bt_tiny(8);
    let file = export_net(&net, LayerEncoding::Linear16).unwrap();
    let back = import_net(&file, "memory", Device::Cpu).unwrap();
    let originals = net.vs.variables();
    for (name, t) in back.vs.variables() {
        let Some(original) = originals.get(&name) else {
            // The preset has no Q/K/V biases; Lc0 needs them and gets zeros, exactly.
            assert!(name.ends_with(".b") && name.contains(".attn."), "{name}");
            assert_eq!(t.abs().max().double_value(&[]), 0.0, "{name}");
            continue;
        };
        let range = original.max().double_value(&[]) - original.min().double_value(&[]);
        let diff = (&t - original).abs().max().double_value(&[]);
        // A range across zero that holds zeros may be widened up to 4 times (see
        // `linear16_range`); the halfmove column is stored divided by 99.
        let allowed = if name == "embed.w" {
            4.0 * 99.0 * range
        } else {
            4.0 * range
        };
        assert!(
            diff <= allowed / 131070.0 + 1e-6,
            "{name}: {diff} for range {range}"
        );
    }
    let worst = max_output_difference(&net, &back);
    assert!(worst < 1e-2, "outputs differ by {worst}");
}

#[test]
fn an_exported_file_declares_the_reference_nets_format_and_reimports() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bt.pb.gz");
    let net = random_bt_tiny(9);
    write_lc0_file(&net, &path, LayerEncoding::Linear16).unwrap();
    let written = {
        let gz = std::fs::read(&path).unwrap();
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(gz.as_slice())
            .read_to_end(&mut bytes)
            .unwrap();
        NetFile::decode(bytes.as_slice()).unwrap()
    };
    let reference = raw_file("bt-smolgen.pb.gz");
    assert_eq!(written.magic, Some(0x1c0));
    assert_eq!(written.format, reference.format);
    assert_eq!(written.min_version, reference.min_version);
    let w = written.weights.as_ref().unwrap();
    let r = reference.weights.as_ref().unwrap();
    assert_eq!(w.headcount, r.headcount);
    assert_eq!(w.encoder.len(), r.encoder.len());
    // The embedding has Lc0's 176 columns with zero positional weights.
    let emb = cfzero_export::lc0::layer::decode(w.ip_emb_w.as_ref().unwrap()).unwrap();
    assert_eq!(emb.len(), 64 * 176);
    assert!(
        emb.chunks(176)
            .all(|row| row[112..].iter().all(|&v| v == 0.0))
    );
    // Every slot the reference net fills, ours fills with as many values.
    let mut ours = w.clone();
    let mut theirs = r.clone();
    for b in bindings::bindings(&net.config) {
        let count = |l: &Option<Layer>| cfzero_export::lc0::layer::value_count(l.as_ref().unwrap());
        assert_eq!(
            count(b.access.slot(&mut ours)),
            count(b.access.slot(&mut theirs)),
            "{}",
            b.lc0
        );
    }
    let back = read_lc0_file(&path, Device::Cpu).unwrap();
    assert!(max_output_difference(&net, &back) < 1e-2);
}

#[test]
fn reference_nets_export_back_to_the_same_values() {
    for name in ["bt-smolgen.pb.gz", "bt-plain.pb.gz"] {
        let net = read_lc0_file(&lc0_data(name), Device::Cpu).unwrap();
        let again = import_net(
            &export_net(&net, LayerEncoding::Float32).unwrap(),
            "memory",
            Device::Cpu,
        )
        .unwrap();
        assert_eq!(again.config, net.config, "{name}");
        assert!(max_output_difference(&net, &again) < 1e-6, "{name}");
    }
}

#[test]
fn nets_lc0_cannot_run_are_refused_with_the_reason() {
    let shaw = Net::new(&net_support::preset("tiny"), Device::Cpu).unwrap();
    let err = export_net(&shaw, LayerEncoding::Linear16)
        .unwrap_err()
        .to_string();
    assert!(err.contains("RMSNorm") || err.contains("RPE"), "{err}");
    assert!(err.contains("lc0-bt-tiny"), "{err}");
    let mut cfg = net_support::preset("lc0-bt-tiny");
    cfg.attention.position = cfzero_network::config::PositionEncoding::Shaw;
    let err = export_net(
        &Net::new(&cfg, Device::Cpu).unwrap(),
        LayerEncoding::Linear16,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("RPE weights file not supported"), "{err}");
}

#[test]
fn unsupported_or_broken_lc0_files_are_refused() {
    let import = |f: &NetFile| {
        import_net(f, "x.pb.gz", Device::Cpu)
            .map(|_| ())
            .unwrap_err()
    };
    let reference = raw_file("bt-plain.pb.gz");

    let mut rpe = reference.clone();
    let mha = rpe.weights.as_mut().unwrap().encoder[1]
        .mha
        .as_mut()
        .unwrap();
    mha.rpe_q = mha.q_w.clone();
    assert!(
        matches!(import(&rpe), Lc0Error::Unsupported { ref reason, .. } if reason.contains("RPE"))
    );

    let mut positional = reference.clone();
    let w = positional.weights.as_mut().unwrap();
    let mut emb = cfzero_export::lc0::layer::decode(w.ip_emb_w.as_ref().unwrap()).unwrap();
    emb[150] = 0.5;
    w.ip_emb_w = Some(cfzero_export::lc0::layer::encode(
        &emb,
        LayerEncoding::Float32,
    ));
    assert!(
        matches!(import(&positional), Lc0Error::Unsupported { ref reason, .. } if reason.contains("PE_MAP"))
    );

    let mut dense = reference.clone();
    let nf = dense
        .format
        .as_mut()
        .unwrap()
        .network_format
        .as_mut()
        .unwrap();
    nf.input_embedding = Some(2);
    assert!(
        matches!(import(&dense), Lc0Error::Unsupported { ref reason, .. } if reason.contains("input_embedding"))
    );

    let mut magic = reference.clone();
    magic.magic = Some(7);
    assert!(matches!(import(&magic), Lc0Error::Corrupt { .. }));

    let mut short = reference.clone();
    let ffn = short.weights.as_mut().unwrap().encoder[0]
        .ffn
        .as_mut()
        .unwrap();
    let mut v = cfzero_export::lc0::layer::decode(ffn.dense2_w.as_ref().unwrap()).unwrap();
    v.pop();
    ffn.dense2_w = Some(cfzero_export::lc0::layer::encode(
        &v,
        LayerEncoding::Linear16,
    ));
    let err = import(&short).to_string();
    assert!(err.contains("encoder[0].ffn.dense2_w"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.pb.gz");
    std::fs::write(&garbage, b"not gzip").unwrap();
    let err = read_lc0_file(&garbage, Device::Cpu).unwrap_err();
    assert!(matches!(err, Lc0Error::Corrupt { .. }), "{err}");
    assert_eq!(format::MAGIC, 0x1c0);
}
