//! The inference precision reaches every command that evaluates a net: `train` (self-play and
//! evaluation, from `[inference] precision`), `ladder`, `match`, `puzzles`, `uci` (flag and
//! `Precision` option) and `bench nn`. `CFZERO_CPU_BF16` simulates the CPU check both ways:
//! `1` takes the bf16 path on any machine, `0` makes a bf16 request fall back to f32 with a
//! notice.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::uci::UciEngine;
use common::*;

const BF16_PATH: &str = "inference precision: bf16 (bf16 requested; CFZERO_CPU_BF16=1";
const FALLBACK: &str = "inference precision: f32 (bf16 requested, but CFZERO_CPU_BF16=0 denies native bf16: falling back)";

/// Runs cfzero with `args` and `CFZERO_CPU_BF16=cpu_bf16`; asserts success.
fn run(args: &[&str], cpu_bf16: &str) -> Output {
    run_with(cfzero(args), cpu_bf16)
}

/// Runs `cmd` with `CFZERO_CPU_BF16=cpu_bf16`; asserts success.
fn run_with(mut cmd: std::process::Command, cpu_bf16: &str) -> Output {
    let out = cmd.env("CFZERO_CPU_BF16", cpu_bf16).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stderr_has(out: &Output, text: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(text), "expected {text:?} in:\n{stderr}");
}

/// A one-generation micro run whose config asks for bf16; returns the run directory.
fn bf16_run(dir: &Path, cpu_bf16: &str) -> (PathBuf, Output) {
    let config = micro_with(
        &dir.join("micro.toml"),
        &[("max_batch = 64", "max_batch = 64\nprecision = \"bf16\"")],
    );
    let run_dir = dir.join("run");
    let out = run_with(
        run_cmd("train", &config, &run_dir, &["--generations", "1"]),
        cpu_bf16,
    );
    (run_dir, out)
}

#[test]
fn train_and_ladder_play_in_the_configured_precision() {
    let tmp = tempfile::tempdir().unwrap();
    let (run_dir, out) = bf16_run(tmp.path(), "1");
    stderr_has(&out, BF16_PATH);
    assert!(run_dir.join("nets/gen-0001.safetensors").is_file());
    let out = run(
        &[
            "ladder",
            "--device",
            "cpu",
            "--run",
            run_dir.to_str().unwrap(),
            "--games",
            "2",
            "--sims",
            "2",
            "--max-plies",
            "16",
            "--openings",
            "configs/openings/4mvs_+90_+99.epd",
            "--precision",
            "bf16",
        ],
        "1",
    );
    stderr_has(&out, BF16_PATH);
}

#[test]
fn train_falls_back_to_f32_with_a_notice_without_native_bf16() {
    let tmp = tempfile::tempdir().unwrap();
    let (run_dir, out) = bf16_run(tmp.path(), "0");
    stderr_has(&out, FALLBACK);
    assert!(run_dir.join("nets/gen-0001.safetensors").is_file());
}

#[test]
fn each_side_of_a_match_takes_its_own_precision() {
    let tmp = tempfile::tempdir().unwrap();
    let net = save_micro_net(tmp.path());
    let net = net.to_str().unwrap();
    let out = run(
        &[
            "match",
            "--device",
            "cpu",
            "--a-net",
            net,
            "--b-net",
            net,
            "--a-sims",
            "2",
            "--b-sims",
            "2",
            "--games",
            "2",
            "--max-plies",
            "16",
            "--a-precision",
            "bf16",
            "--b-precision",
            "f32",
        ],
        "1",
    );
    stderr_has(&out, BF16_PATH);
    stderr_has(&out, "inference precision: f32 (f32 requested)");
}

#[test]
fn match_and_puzzles_take_the_precision_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let net = save_micro_net(tmp.path());
    let net = net.to_str().unwrap();
    for (cpu_bf16, expect) in [("1", BF16_PATH), ("0", FALLBACK)] {
        let out = run(
            &[
                "match",
                "--device",
                "cpu",
                "--a-net",
                net,
                "--a-sims",
                "2",
                "--b-random",
                "--games",
                "2",
                "--max-plies",
                "16",
                "--precision",
                "bf16",
            ],
            cpu_bf16,
        );
        stderr_has(&out, expect);
        let out = run(
            &[
                "puzzles",
                "--device",
                "cpu",
                "--net",
                net,
                "--file",
                "tests/data/puzzles/sample.csv",
                "--sims",
                "2",
                "--limit",
                "2",
                "--precision",
                "bf16",
            ],
            cpu_bf16,
        );
        stderr_has(&out, expect);
    }
}

#[test]
fn the_uci_engine_reloads_the_net_in_the_precision_option() {
    let tmp = tempfile::tempdir().unwrap();
    let net = save_micro_net(tmp.path());
    let args = [
        "uci",
        "--device",
        "cpu",
        "--net",
        net.to_str().unwrap(),
        "--precision",
        "bf16",
    ];
    let mut engine = UciEngine::start(&args, &[("CFZERO_CPU_BF16", "1")]);
    engine.send("uci");
    let options = engine.until("uciok");
    assert!(
        options.iter().any(|l| l
            == "option name Precision type combo default bf16 var auto var f32 var bf16"),
        "{options:?}"
    );
    engine.send("isready");
    let seen = engine.until("readyok");
    assert!(
        seen.iter()
            .any(|l| l.starts_with(&format!("info string {BF16_PATH}"))),
        "{seen:?}"
    );
    engine.send("go nodes 8");
    engine.until("bestmove");
    engine.send("setoption name Precision value f32");
    engine.send("isready");
    let seen = engine.until("readyok");
    assert!(
        seen.iter()
            .any(|l| l == "info string inference precision: f32 (f32 requested)"),
        "{seen:?}"
    );
    engine.send("setoption name Precision value f64");
    engine.send("isready");
    let seen = engine.until("readyok");
    assert!(
        seen.iter()
            .any(|l| l.starts_with("info string ignored: Precision: unknown precision")),
        "{seen:?}"
    );
    engine.send("go nodes 8");
    engine.until("bestmove");
    engine.quit();
}

#[test]
fn the_uci_engine_serves_the_net_on_the_backend_option() {
    let tmp = tempfile::tempdir().unwrap();
    let net = save_micro_net(tmp.path());
    let args = ["uci", "--device", "cpu", "--net", net.to_str().unwrap()];
    let mut engine = UciEngine::start(&args, &[("CFZERO_CPU_BF16", "0")]);
    engine.send("uci");
    let options = engine.until("uciok");
    assert!(
        options.iter().any(|l| l
            == "option name Backend type combo default auto var auto var tch var native var material"),
        "{options:?}"
    );
    // auto, f32 on the CPU: the native pass; then each choice reloads the net on its backend.
    // One simulation reports the root's evaluation (`wdl` in permille): what that backend
    // computed for the start position.
    let mut root_wdl = Vec::new();
    for (value, name) in [
        (None, "native"),
        (Some("tch"), "libtorch"),
        (Some("material"), "material"),
    ] {
        if let Some(v) = value {
            engine.send(format!("setoption name Backend value {v}"));
        }
        engine.send("isready");
        let seen = engine.until("readyok");
        assert!(
            seen.iter()
                .any(|l| *l == format!("info string backend {name}")),
            "{value:?}: {seen:?}"
        );
        engine.send("go nodes 1");
        let seen = engine.until("bestmove");
        let info = seen
            .iter()
            .rfind(|l| l.starts_with("info depth"))
            .unwrap_or_else(|| panic!("{name}: no info line in {seen:?}"));
        let words: Vec<&str> = info.split_whitespace().collect();
        let at = words.iter().position(|&w| w == "wdl").unwrap();
        let wdl: Vec<i64> = words[at + 1..at + 4]
            .iter()
            .map(|w| w.parse().unwrap())
            .collect();
        root_wdl.push(wdl);
    }
    // Known answers: the two f32 passes of the same net agree (to the permille's rounding),
    // and material counting values the balanced start position at 0: W = L = 1/2, no draws.
    let (native, tch, material) = (&root_wdl[0], &root_wdl[1], &root_wdl[2]);
    assert!(
        native.iter().zip(tch).all(|(a, b)| (a - b).abs() <= 1),
        "native {native:?} against libtorch {tch:?}"
    );
    assert_eq!(material, &vec![500, 0, 500]);
    assert_ne!(native, material, "the net's W/D/L is not material's");
    engine.send("setoption name Backend value onnx");
    engine.send("isready");
    let seen = engine.until("readyok");
    assert!(
        seen.iter()
            .any(|l| l.starts_with("info string ignored: Backend: unknown backend `onnx`")),
        "{seen:?}"
    );
    engine.quit();
}

#[test]
fn bench_nn_reports_both_precisions_and_the_accuracy_of_bf16() {
    let args = [
        "bench",
        "nn",
        "--device",
        "cpu",
        "--config",
        "configs/micro.toml",
        "--batches",
        "1,4",
        "--seconds",
        "0.05",
        "--matmul-size",
        "64",
        "--backends",
        "tch",
        "--json",
    ];
    for (cpu_bf16, measured) in [("1", true), ("0", false)] {
        let out = run(&args, cpu_bf16);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let precisions = report["precisions"].as_array().unwrap();
        assert_eq!(precisions.len(), 2, "{report}");
        assert_eq!(precisions[0]["kind"], "f32");
        assert_eq!(precisions[0]["inference"].as_array().unwrap().len(), 2);
        assert_eq!(precisions[1]["requested"], "bf16");
        assert_eq!(precisions[1]["measured"], measured, "{report}");
        let bf16_rows = precisions[1]["inference"].as_array().unwrap().len();
        assert_eq!(bf16_rows, if measured { 2 } else { 0 });
        let accuracy = &report["accuracy"][0];
        assert_eq!(accuracy["kind"], "bf16");
        let kl = accuracy["mean_policy_kl"].as_f64().unwrap();
        assert!(kl > 0.0 && kl < 1e-3, "{accuracy}");
    }
}

/// The native pass computes bf16 its own way, so `bench nn` measures its accuracy on its own,
/// beside libtorch's: both against libtorch's f32 on the same positions.
#[test]
fn bench_nn_measures_the_native_bf16_accuracy_apart() {
    let args = [
        "bench",
        "nn",
        "--device",
        "cpu",
        "--config",
        "configs/micro.toml",
        "--batches",
        "2",
        "--seconds",
        "0.05",
        "--matmul-size",
        "64",
        "--backends",
        "native,tch",
        "--json",
    ];
    let out = run(&args, "1");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bf16 = &report["precisions"][1];
    assert_eq!(bf16["requested"], "bf16", "{report}");
    let native_measured = bf16["inference"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["backend"] == "native");
    let accuracy = report["accuracy"].as_array().unwrap();
    let by = |backend: &str| accuracy.iter().find(|a| a["backend"] == backend);
    let tch = by("tch").expect("libtorch's bf16 accuracy");
    assert_eq!(tch["kind"], "bf16");
    // The native pass runs bf16 only on a CPU with AVX-512 BF16 (the variable simulates the
    // check for libtorch alone); where it runs, its accuracy is reported.
    assert_eq!(by("native").is_some(), native_measured, "{report}");
    if let Some(native) = by("native") {
        assert_eq!(native["kind"], "bf16");
        let kl = native["mean_policy_kl"].as_f64().unwrap();
        assert!(kl > 0.0 && kl < 1e-3, "{native}");
        // Not libtorch's figure again: the two passes round differently.
        assert_ne!(native["mean_policy_kl"], tch["mean_policy_kl"], "{report}");
        assert!(
            native["max_value_difference"].as_f64().unwrap() < 0.05,
            "{native}"
        );
        assert_eq!(native["positions"], tch["positions"], "the same positions");
    }
}
