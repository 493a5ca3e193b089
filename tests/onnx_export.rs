//! `cfzero export --format onnx | lc0-onnx` in the real tools (`bench/onnx/onnx_check.py`):
//! the `onnx` checker accepts every graph, strict shape inference gives the declared output
//! shapes, and ONNX Runtime reproduces `cfzero debug outputs` head by head at batch 1 and 33 —
//! for Shaw + RMSNorm (`micro`, `tiny`), smolgen + LayerNorm (`lc0-bt-tiny`) and no position
//! term, with noise on every weight and with trained weights, in f32 (1e-4), f16 and bf16; the
//! Lc0 file parses as Lc0's `Net` with its `OnnxModel` names in the graph, and Lc0's own test
//! nets in ONNX give the outputs Lc0 computed. Also the refusals.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use cfzero_network::{Net, NetworkConfig, load_net, save_net};
use common::*;
use tch::{Device, Tensor};

/// Largest difference of any f32 output (probabilities, logits, values; moves left in units
/// of 20 plies).
const F32_TOLERANCE: f64 = 1e-4;
/// Largest difference of an f16 graph's outputs, relative to each output's largest magnitude
/// (at least 1). Measured: at most 1.4e-3 (every net of these tests).
const F16_TOLERANCE: f64 = 1e-2;
/// The same for a bf16 graph, evaluated with its bf16 weights widened to f32 (ONNX Runtime's
/// CPU provider has no bf16 kernels). Measured: at most 1.9e-2 (the trained micro net; the
/// weights' 8-bit mantissas move every pre-activation by about 0.4%).
const BF16_TOLERANCE: f64 = 5e-2;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The venv's Python, after checking that it has onnx and onnxruntime.
fn python() -> PathBuf {
    let python = repo_root().join(".venv/bin/python");
    let out = Command::new(&python)
        .args(["-c", "import onnx, onnxruntime"])
        .output();
    match out {
        Ok(out) if out.status.success() => python,
        other => panic!(
            "the ONNX checks need onnx and onnxruntime in {}: run scripts/setup.sh ({other:?})",
            python.display()
        ),
    }
}

/// Runs `bench/onnx/onnx_check.py` with `args` and returns its JSON report; fails the test
/// with the report unless the check passed.
fn onnx_check(args: &[&str]) -> serde_json::Value {
    let out = Command::new(python())
        .arg(repo_root().join("bench/onnx/onnx_check.py"))
        .args(args)
        .arg("--json")
        .current_dir(repo_root())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "onnx_check.py {args:?} failed ({}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).expect("onnx_check prints JSON")
}

/// Sets every weight of `net` from a hash-based sequence (no global RNG, so the test is the
/// same in every run): uniform in [-0.2, 0.2], around 1 for norm gains and multiplicative
/// gates. Zero-initialised tables and norm biases then shape the outputs too.
fn fill_weights(net: &mut Net, seed: u64) {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let vars = net.vs.variables();
    let mut names: Vec<&String> = vars.keys().collect();
    names.sort();
    tch::no_grad(|| {
        for name in names {
            let mut t = vars[name].shallow_clone();
            let centre = if name.ends_with("gain") || name.ends_with("gate_mul") {
                1.0
            } else {
                0.0
            };
            let values: Vec<f32> = (0..t.numel())
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    centre + ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.4
                })
                .collect();
            t.copy_(&Tensor::from_slice(&values).view(t.size().as_slice()));
        }
    });
}

/// A net of `cfg` with every weight set by [`fill_weights`], saved under `dir`.
fn noisy_net(cfg: &NetworkConfig, dir: &Path, name: &str) -> PathBuf {
    let mut net = Net::new(cfg, Device::Cpu).unwrap();
    fill_weights(&mut net, 7);
    let path = dir.join(format!("{name}.safetensors"));
    save_net(&net, &path).unwrap();
    path
}

/// `cfzero export --format lc0-onnx` of `net` to `file`.
fn export_lc0_onnx(net: &Path, file: &Path) {
    let args = [
        "export",
        "--net",
        s(net),
        "--format",
        "lc0-onnx",
        "--out",
        s(file),
    ];
    cfzero_ok(&args);
}

/// `cfzero debug outputs` of `net` on the reference positions, written under `dir`.
fn debug_outputs(net: &Path, dir: &Path) -> PathBuf {
    let out = dir.join("outputs.json");
    cfzero_ok(&[
        "debug",
        "outputs",
        "--net",
        s(net),
        "--positions",
        s(&repo_root().join("bench/reference/positions.epd")),
        "--out",
        s(&out),
    ]);
    out
}

/// Exports `net` in every form and checks each against `cfzero debug outputs`: f32 with every
/// head, f16 and bf16 with every head, and the Lc0 file with the play heads.
fn check_every_form(net: &Path, dir: &Path) {
    let outputs = debug_outputs(net, dir);
    let forms: [(&str, &str, &str, f64); 4] = [
        ("onnx", "f32", "all", F32_TOLERANCE),
        ("onnx", "f16", "all", F16_TOLERANCE),
        ("onnx", "bf16", "all", BF16_TOLERANCE),
        ("lc0-onnx", "f32", "play", F32_TOLERANCE),
    ];
    for (format, precision, heads, tolerance) in forms {
        let file = dir.join(format!("{format}-{precision}-{heads}.onnx"));
        let printed = cfzero_ok(&[
            "export",
            "--net",
            s(net),
            "--format",
            format,
            "--precision",
            precision,
            "--heads",
            heads,
            "--out",
            s(&file),
        ]);
        assert!(printed.contains("opset 17"), "{printed}");
        let tol = tolerance.to_string();
        let mut args = vec![
            "check",
            "--model",
            s(&file),
            "--outputs",
            s(&outputs),
            "--tolerance",
            &tol,
        ];
        if precision != "f32" {
            args.push("--relative");
        }
        let report = onnx_check(&args);
        assert_eq!(report["checker"], "ok");
        assert_eq!(report["shapes_ok"], true, "{report}");
        assert_eq!(report["positions"], 6);
        let diffs = report["max_abs_diff"].as_object().unwrap();
        let expected = if heads == "all" {
            // Every head of the net (all on in these configs) has a reference.
            10
        } else {
            3
        };
        assert_eq!(diffs.len(), expected, "{format} {precision}: {report}");
        for d in diffs.values() {
            assert!(d["batch1"].is_number() && d["batch33"].is_number(), "{d}");
        }
        if format == "lc0-onnx" {
            let lc0 = &report["lc0"];
            assert_eq!(lc0["network_format"]["network"], 5, "NETWORK_ONNX: {lc0}");
            assert_eq!(lc0["data_type"], 1, "FLOAT: {lc0}");
            assert_eq!(lc0["names"]["input_planes"], "/input/planes");
            assert_eq!(lc0["names"]["output_wdl"], "/output/wdl");
            assert!(
                lc0["names_missing_from_graph"]
                    .as_array()
                    .unwrap()
                    .is_empty()
            );
        }
        eprintln!(
            "{} {format} {precision}: worst {:.2e}",
            net.display(),
            report["worst"].as_f64().unwrap()
        );
    }
}

/// A noisy net of the preset `config` in every form.
fn check_preset(config: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = network_config(&repo_root().join("configs").join(config));
    let net = noisy_net(&cfg, tmp.path(), "noisy");
    check_every_form(&net, tmp.path());
}

#[test]
fn a_shaw_rmsnorm_micro_net_runs_in_onnx_runtime() {
    check_preset("micro.toml");
}

#[test]
fn a_shaw_rmsnorm_tiny_net_runs_in_onnx_runtime() {
    check_preset("tiny.toml");
}

#[test]
fn a_smolgen_layernorm_net_runs_in_onnx_runtime() {
    check_preset("lc0-bt-tiny.toml");
}

#[test]
fn a_net_without_position_term_runs_in_onnx_runtime() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = network_config(&micro_config());
    cfg.attention.position = cfzero_network::config::PositionEncoding::None;
    let net = noisy_net(&cfg, tmp.path(), "plain");
    check_every_form(&net, tmp.path());
}

#[test]
fn a_trained_net_runs_in_onnx_runtime() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let out = train_run(&micro_config(), &run, 1, &[]);
    assert!(out.status.success(), "{out:?}");
    let trained = run.join("nets/gen-0001.safetensors");
    let fresh = load_net(&run.join("nets/gen-0000.safetensors"), Device::Cpu).unwrap();
    let net = load_net(&trained, Device::Cpu).unwrap();
    let moved = fresh
        .vs
        .variables()
        .iter()
        .any(|(name, t)| !t.equal(&net.vs.variables()[name]));
    assert!(moved, "generation 1 is trained");
    check_every_form(&trained, tmp.path());
}

#[test]
fn a_net_without_winner_head_gives_lc0_its_value() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = network_config(&micro_config());
    cfg.outputs.winner = false;
    let net = noisy_net(&cfg, tmp.path(), "q-only");
    let outputs = debug_outputs(&net, tmp.path());
    let file = tmp.path().join("q-only.pb.gz");
    export_lc0_onnx(&net, &file);
    let report = onnx_check(&["check", "--model", s(&file), "--outputs", s(&outputs)]);
    let diffs = report["max_abs_diff"].as_object().unwrap();
    assert!(diffs.contains_key("/output/value"), "{report}");
    assert!(!diffs.contains_key("/output/wdl"), "{report}");
    let lc0 = &report["lc0"];
    assert_eq!(lc0["names"]["output_value"], "/output/value", "{lc0}");
    assert_eq!(lc0["network_format"]["value"], 1, "VALUE_CLASSICAL: {lc0}");
}

#[test]
fn lc0s_test_nets_in_onnx_give_the_outputs_lc0_computed() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["bt-smolgen", "bt-plain"] {
        let net = tmp.path().join(format!("{name}.safetensors"));
        let lc0 = repo_root().join(format!("tests/data/lc0/{name}.pb.gz"));
        cfzero_ok(&["import", "--lc0", s(&lc0), "--out", s(&net)]);
        let file = tmp.path().join(format!("{name}-onnx.pb.gz"));
        export_lc0_onnx(&net, &file);
        let vectors = repo_root().join("tests/data/lc0/vectors.json");
        let report = onnx_check(&[
            "vectors",
            "--model",
            s(&file),
            "--vectors",
            s(&vectors),
            "--net",
            name,
        ]);
        assert_eq!(report["cases"], 18, "{report}");
        eprintln!("{name}: {}", report["max_abs_diff"]);
    }
}

#[test]
fn exports_that_cannot_work_are_refused_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut cfg = network_config(&micro_config());
    let good = noisy_net(&cfg, dir, "good");
    cfg.outputs.winner = false;
    cfg.outputs.q = false;
    let valueless = noisy_net(&cfg, dir, "valueless");
    let out = dir.join("out.onnx");
    let garbage = dir.join("garbage.safetensors");
    std::fs::write(&garbage, b"not a net").unwrap();
    let cases: [(&[&str], &str); 6] = [
        (
            &["--net", s(&valueless), "--format", "onnx"],
            "neither a winner",
        ),
        (
            &["--net", s(&valueless), "--format", "lc0-onnx"],
            "neither a winner",
        ),
        (
            &[
                "--net",
                s(&good),
                "--format",
                "onnx",
                "--encoding",
                "float32",
            ],
            "--encoding applies to --format lc0 only",
        ),
        (
            &["--net", s(&good), "--format", "lc0", "--precision", "f16"],
            "--precision and --heads apply",
        ),
        (&["--net", s(&garbage), "--format", "onnx"], "garbage"),
        (&["--net", s(&good), "--format", "lc0"], "--format lc0-onnx"),
    ];
    for (args, needle) in cases {
        let mut all = vec!["export"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--out", s(&out)]);
        assert_user_error_line(&all, needle);
        assert!(!out.exists(), "{args:?}: nothing is written");
    }
    // Import reads weights, not graphs: an ONNX net file is refused with the reason.
    let wrapped = dir.join("wrapped.pb.gz");
    export_lc0_onnx(&good, &wrapped);
    let back = dir.join("back.safetensors");
    assert_user_error_line(
        &["import", "--lc0", s(&wrapped), "--out", s(&back)],
        "an ONNX net",
    );
    let unwritable = dir.join("missing-dir/out.onnx");
    assert_user_error_line(
        &[
            "export",
            "--net",
            s(&good),
            "--format",
            "onnx",
            "--out",
            s(&unwritable),
        ],
        "missing-dir",
    );
}
