//! The PyTorch reference (`bench/reference/chessformer.py`) against cfzero: a net with noise on
//! every weight, exported natively, gives the same outputs in both, head by head, to 1e-4 —
//! for a Shaw/RMSNorm net (`micro`) and a smolgen/LayerNorm one (`lc0-bt-tiny`); a few
//! training steps give the same losses and weights. Also the user errors of
//! `cfzero debug outputs`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use cfzero_network::encoding::{POLICY_SIZE, TOKEN_FLOATS};
use cfzero_network::{load_net, save_net};
use cfzero_trainer::{HostBatch, Learner, TrainConfig};
use common::*;
use tch::Device;

/// Largest allowed difference of any output.
const TOLERANCE: f64 = 1e-4;

/// The positions of the check, shared with bench/reference/compare.py (what they cover is
/// said in the file).
fn positions() -> PathBuf {
    repo_root().join("bench/reference/positions.epd")
}

/// Every output of a net with all heads.
const OUTPUTS: [&str; 10] = [
    "policy",
    "soft_policy",
    "wdl",
    "q.value",
    "q.error",
    "q.categorical",
    "st.value",
    "st.error",
    "st.categorical",
    "moves_left",
];

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The venv's Python, after checking that it can import torch.
fn python() -> PathBuf {
    let python = repo_root().join(".venv/bin/python");
    let out = Command::new(&python).args(["-c", "import torch"]).output();
    match out {
        Ok(out) if out.status.success() => python,
        Ok(out) => panic!(
            "the PyTorch reference needs torch in {}: run scripts/setup.sh (import torch: {})",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ),
        Err(e) => panic!(
            "the PyTorch reference needs {}: run scripts/setup.sh ({e})",
            python.display()
        ),
    }
}

/// Runs `bench/reference/chessformer.py` with `args`; its stdout, and whether it succeeded.
fn reference(python: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(python)
        .arg(repo_root().join("bench/reference/chessformer.py"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("python runs");
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "chessformer.py {args:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), String::from_utf8(out.stdout).unwrap())
}

/// Generation 0 of `config` under `dir` with noise on every weight (a fresh net has all-zero
/// Shaw tables and trivial norms, which would hide mistakes there).
fn noisy_net(python: &Path, config: &Path, dir: &Path) -> PathBuf {
    let run = dir.join("run");
    train_run(config, &run, 0, &[]);
    let net = dir.join("noisy.safetensors");
    let (done, _) = reference(
        python,
        &[
            "perturb",
            "--net",
            s(&run.join("nets/gen-0000.safetensors")),
            "--out",
            s(&net),
            "--seed",
            "3",
        ],
    );
    assert!(done);
    net
}

/// A noisy generation 0 of `config`, exported natively; checks that the reference reproduces
/// every output of `cfzero debug outputs`.
fn check_config(config: &Path) {
    let python = python();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let net = noisy_net(&python, config, dir);
    let export = dir.join("export");
    cfzero_ok(&[
        "export",
        "--net",
        s(&net),
        "--format",
        "native",
        "--out",
        s(&export),
    ]);
    let positions = positions();
    let moves = dir.join("moves.txt");
    std::fs::write(&moves, cfzero_ok(&["debug", "moves"])).unwrap();
    let outputs = dir.join("outputs.json");
    let printed = cfzero_ok(&[
        "debug",
        "outputs",
        "--net",
        s(&net),
        "--positions",
        s(&positions),
        "--out",
        s(&outputs),
    ]);
    assert!(printed.contains("6 positions"), "{printed}");

    let (passed, stdout) = reference(
        &python,
        &[
            "check",
            "--export",
            s(&export),
            "--outputs",
            s(&outputs),
            "--moves",
            s(&moves),
            "--json",
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("the check prints JSON");
    let diffs = report["max_abs_diff"]
        .as_object()
        .expect("max_abs_diff is an object");
    let mut names: Vec<&str> = diffs.keys().map(String::as_str).collect();
    names.sort_unstable();
    let mut want = OUTPUTS.to_vec();
    want.sort_unstable();
    assert_eq!(names, want, "{stdout}");
    for (head, d) in diffs {
        for form in ["batch", "single"] {
            let diff = d[form].as_f64().expect("a number");
            assert!(
                diff < TOLERANCE,
                "{}: {head} ({form}) differs by {diff:e}",
                config.display()
            );
        }
    }
    assert!(passed && report["ok"] == true, "{stdout}");
    assert_eq!(report["positions"], 6);
}

#[test]
fn the_reference_reproduces_a_shaw_rmsnorm_net() {
    check_config(&micro_config());
}

#[test]
fn the_reference_reproduces_a_smolgen_layernorm_net() {
    check_config(&repo_root().join("configs/lc0-bt-tiny.toml"));
}

/// The batch of `chessformer.py step` (`synthetic_batch(size, varied=True)` there): `cfzero
/// bench train`'s synthetic batch with a policy target split 3:1 over two legal moves and q,
/// st and moves left that differ between positions.
fn step_batch(len: usize) -> HostBatch {
    let mut b = HostBatch::default();
    b.reset(len);
    for i in 0..len {
        for j in 0..TOKEN_FLOATS {
            if (i * 7 + j * 13) % 11 == 0 {
                b.inputs[i * TOKEN_FLOATS + j] = 1.0;
            }
        }
        for m in 0..30 {
            b.legal[i * POLICY_SIZE + (i * 31 + m * 61) % POLICY_SIZE] = 1.0;
        }
        b.policy[i * POLICY_SIZE + (i * 31) % POLICY_SIZE] = 0.75;
        b.policy[i * POLICY_SIZE + (i * 31 + 61) % POLICY_SIZE] = 0.25;
        b.wdl[i * 3 + i % 3] = 1.0;
        b.q[i] = ((i % 5) as f32 - 2.0) / 2.5;
        b.st[i] = ((i % 7) as f32 - 3.0) / 3.5;
        b.moves_left[i] = (i % 9) as f32 * 11.0;
    }
    b
}

#[test]
fn the_reference_training_step_matches_cfzero() {
    const STEPS: usize = 3;
    let python = python();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let net = noisy_net(&python, &micro_config(), dir);

    // cfzero's learner: NAdam with decoupled weight decay, clipping on (the noisy net's
    // gradients are larger than 1), no warm-up, no SWA; f32 as the reference runs (`auto`
    // would train in bf16 on a CPU with avx512_bf16).
    let config: TrainConfig = toml::from_str(
        "batch_size = 16\ngrad_clip = 1.0\nweight_decay = 0.0001\nswa_every = 0\nprecision = \"f32\"\n[lr]\npeak = 0.001\nwarmup_steps = 0\n",
    )
    .unwrap();
    let mut learner = Learner::new(load_net(&net, Device::Cpu).unwrap(), config);
    let batch = step_batch(16);
    let metrics: Vec<_> = (0..STEPS).map(|_| learner.step(&batch)).collect();
    assert!(metrics[0].grad_norm > 1.0, "clipping is exercised");
    let after = dir.join("after.safetensors");
    save_net(learner.net(), &after).unwrap();

    let steps = STEPS.to_string();
    let (done, stdout) = reference(
        &python,
        &[
            "step",
            "--net",
            s(&net),
            "--batch",
            "16",
            "--steps",
            &steps,
            "--lr",
            "0.001",
            "--grad-clip",
            "1.0",
            "--weight-decay",
            "0.0001",
            "--expect",
            s(&after),
        ],
    );
    assert!(done);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("step prints JSON");
    let theirs = report["steps"].as_array().expect("steps");
    assert_eq!(theirs.len(), STEPS);
    let mut worst_term = 0.0f64;
    for (step, (ours, theirs)) in metrics.iter().zip(theirs).enumerate() {
        let mut terms = ours.terms.clone();
        terms.push(("loss", ours.loss));
        terms.push(("grad_norm", ours.grad_norm));
        for (name, value) in terms {
            let other = theirs[name].as_f64().unwrap_or(f64::NAN);
            worst_term = worst_term.max((value - other).abs());
            assert!(
                (value - other).abs() <= TOLERANCE * value.abs().max(1.0),
                "step {step}: {name} is {value} in cfzero, {other} in PyTorch"
            );
        }
    }
    let diff = report["max_weight_diff"].as_f64().unwrap();
    eprintln!("{STEPS} steps: loss terms differ by at most {worst_term:e}, weights by {diff:e}");
    assert!(
        diff < TOLERANCE,
        "weights after {STEPS} steps differ by {diff:e} ({})",
        report["worst_tensor"]
    );
}

#[test]
fn debug_outputs_rejects_bad_input_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let run = dir.join("run");
    train_run(&micro_config(), &run, 0, &[]);
    let net = run.join("nets/gen-0000.safetensors");
    let good = positions();
    let bad = dir.join("bad.epd");
    std::fs::write(
        &bad,
        "# two positions\n8/8/8/8/8/8/8/K6k w - -\nnot a position\n",
    )
    .unwrap();
    let out = dir.join("out.json");
    let missing = dir.join("missing.safetensors");
    let none = dir.join("none.epd");
    let cases: [(&[&str], &str); 3] = [
        (
            &["--net", s(&net), "--positions", s(&bad), "--out", s(&out)],
            "bad.epd:3",
        ),
        (
            &["--net", s(&net), "--positions", s(&none), "--out", s(&out)],
            "none.epd",
        ),
        (
            &[
                "--net",
                s(&missing),
                "--positions",
                s(&good),
                "--out",
                s(&out),
            ],
            "missing.safetensors",
        ),
    ];
    for (args, name) in cases {
        let mut all = vec!["debug", "outputs"];
        all.extend_from_slice(args);
        assert_user_error_line(&all, name);
    }
    assert!(!out.exists(), "nothing is written on bad input");
}
