//! `cfzero bench mcts|nn|selfplay|train|learn --json` with tiny budgets: each prints one
//! JSON object whose figures are consistent with each other (no speed is asserted: machines
//! are noisy), and bad input is a one-line error with exit code 2.

mod common;

use cfzero_mcts::tree::{Edge, Node};
use common::*;
use serde_json::Value;

/// Runs `cfzero ARGS --json`, asserts success and parses the one JSON object it prints.
fn bench_json(args: &[&str]) -> Value {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = cfzero(&all).output().expect("cfzero runs");
    assert!(
        out.status.success(),
        "cfzero {all:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "cfzero {all:?} printed no JSON object ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` is not a number in {v}"))
}

/// `a == b` up to 1e-9, relative to their size.
fn assert_close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
        "{what}: {a} != {b}"
    );
}

#[test]
fn bench_mcts_reports_rates_against_the_reference_and_memory_per_node() {
    let r = bench_json(&["mcts", "--nodes", "50", "--games", "4"]);
    assert_eq!(r["nodes_per_search"], 50);
    assert_eq!(r["games"], 4);
    let reference = num(&r, "reference_nodes_per_second");
    assert_eq!(reference, 75_000.0);
    for row in ["single_gumbel", "single_puct", "driver"] {
        let rate = &r[row];
        let nps = num(rate, "nodes_per_second");
        assert!(nps > 0.0, "{row}: {rate}");
        assert!(num(rate, "nodes") > 0.0, "{row}: {rate}");
        assert_close(
            num(rate, "ratio_to_reference"),
            nps / reference,
            &format!("{row} ratio"),
        );
    }
    let m = &r["memory"];
    assert_eq!(num(m, "node_size") as usize, std::mem::size_of::<Node>());
    assert_eq!(
        num(m, "edge_size") as usize,
        std::mem::size_of::<Edge<shakmaty::Move>>()
    );
    // One tree: the start position.
    assert_eq!(m["trees"], 1);
    assert!(num(m, "nodes") > 1.0, "{m}");
    assert!(num(m, "bytes_per_node") > num(m, "node_size"), "{m}");
    assert_close(
        num(m, "bytes_per_node"),
        num(m, "arena_bytes") / num(m, "nodes"),
        "bytes per node",
    );
}

#[test]
fn bench_nn_reports_each_batch_against_the_matmul_peak() {
    let r = bench_json(&[
        "nn",
        "--config",
        "configs/micro.toml",
        "--device",
        "cpu",
        "--batches",
        "1,4",
        "--seconds",
        "0.2",
        "--matmul-size",
        "256",
        "--precision",
        "f32",
    ]);
    let precisions = r["precisions"].as_array().expect("a precisions array");
    assert_eq!(precisions.len(), 1, "{r}");
    let f32 = &precisions[0];
    assert_eq!(f32["kind"], "f32");
    assert_eq!(f32["measured"], true);
    let peak = num(f32, "matmul_peak_gflops_per_second");
    assert!(peak > 0.0, "{r}");
    assert_eq!(f32["matmul_size"], 256);
    assert!(num(&r, "parameters") > 0.0);
    // Only f32 was asked for: no accuracy comparison.
    assert_eq!(r["accuracy"].as_array().map(Vec::len), Some(0));
    let rows = f32["inference"].as_array().expect("an inference array");
    // Both backends at each batch (the default `--backends tch,native`).
    let measured: Vec<(u64, &str)> = rows
        .iter()
        .map(|x| (x["batch"].as_u64().unwrap(), x["backend"].as_str().unwrap()))
        .collect();
    assert_eq!(
        measured,
        [
            (1, "libtorch"),
            (1, "native"),
            (4, "libtorch"),
            (4, "native")
        ]
    );
    assert_eq!(f32["skipped"].as_array().map(Vec::len), Some(0));
    for row in rows {
        assert!(num(row, "evaluations_per_second") > 0.0, "{row}");
        assert_close(
            num(row, "gflops_per_second"),
            num(row, "evaluations_per_second") * num(&r, "mflops_per_evaluation") / 1e3,
            "GFLOP/s",
        );
        assert_close(
            num(row, "efficiency"),
            num(row, "gflops_per_second") / peak,
            "efficiency",
        );
    }
    assert!(
        r.get("train_samples_per_second").is_none(),
        "moved to bench train"
    );
}

#[test]
fn bench_train_reports_samples_per_second() {
    let r = bench_json(&[
        "train",
        "--config",
        "configs/micro.toml",
        "--device",
        "cpu",
        "--steps",
        "2",
        "--precision",
        "f32,bf16",
    ]);
    assert_eq!(r["batch"], 16);
    assert_eq!(r["steps"], 2);
    let rows = r["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{r}");
    for (row, precision) in rows.iter().zip(["f32", "bf16"]) {
        assert_eq!(row["precision"], precision);
        let rate = num(row, "samples_per_second");
        assert!(rate > 0.0, "{r}");
        assert_close(rate * num(row, "seconds"), 32.0, "samples");
        assert_close(
            num(row, "milliseconds_per_step"),
            1e3 * num(row, "seconds") / 2.0,
            "ms per step",
        );
        // Three steps on one batch from the same initial weights: the loss falls either way.
        assert!(num(row, "last_loss") < num(row, "first_loss"), "{r}");
    }
    // The same initial weights: the first step's loss differs only by bf16 rounding.
    let (f, b) = (num(&rows[0], "first_loss"), num(&rows[1], "first_loss"));
    assert!((f - b).abs() < 0.02 * f, "f32 {f} against bf16 {b}");
}

#[test]
fn bench_selfplay_reports_positions_per_second_against_the_net_bound() {
    let r = bench_json(&[
        "selfplay",
        "--config",
        "configs/micro.toml",
        "--device",
        "cpu",
        "--moves",
        "20",
        "--nn-seconds",
        "0.2",
    ]);
    assert_eq!(r["moves_requested"], 20);
    let positions = num(&r, "positions");
    // Searches under way when the limit is reached still end: up to one per game in flight.
    assert!(
        (20.0..=20.0 + num(&r, "games_in_flight")).contains(&positions),
        "{r}"
    );
    let achieved = num(&r, "positions_per_second");
    assert!(achieved > 0.0, "{r}");
    assert_close(achieved, positions / num(&r, "seconds"), "positions/s");

    let inf = &r["inference"];
    let batch = num(inf, "average_batch");
    // micro.toml: one actor with 4 games, max_batch 64.
    assert!((1.0..=4.0).contains(&batch), "{inf}");
    let busy = num(inf, "busy_share");
    assert!((0.0..=1.0).contains(&busy), "{inf}");
    assert_close(batch, num(inf, "positions") / num(inf, "batches"), "batch");

    let bound = &r["nn_bound"];
    assert_eq!(bound["batch"].as_f64().unwrap(), batch.round());
    // micro.toml: half the moves at 8 simulations, half at 4.
    assert_close(
        num(bound, "simulations_per_move"),
        6.0,
        "simulations per move",
    );
    assert_close(
        num(bound, "positions_per_second"),
        num(bound, "evaluations_per_second") / 6.0,
        "bound",
    );
    assert_close(
        num(&r, "ratio_to_nn_bound"),
        achieved / num(bound, "positions_per_second"),
        "ratio",
    );

    let games = &r["games"];
    assert!(num(games, "per_hour") > 0.0, "{games}");
    let length = match games["per_hour_basis"].as_str().unwrap() {
        "finished_games" => num(games, "mean_length"),
        "max_plies" => {
            assert_eq!(games["finished"], 0);
            40.0
        }
        other => panic!("unknown basis {other}"),
    };
    assert_close(
        num(games, "per_hour"),
        achieved * 3600.0 / length,
        "games/h",
    );
}

#[test]
fn bad_bench_input_is_a_one_line_error_with_exit_code_2() {
    for args in [
        &["bench", "selfplay", "--config", "nope.toml"][..],
        &[
            "bench",
            "selfplay",
            "--config",
            "configs/micro.toml",
            "--moves",
            "0",
        ],
        &[
            "bench",
            "selfplay",
            "--config",
            "configs/micro.toml",
            "--actors",
            "0",
        ],
        &["bench", "train", "--config", "nope.toml"],
        &[
            "bench",
            "train",
            "--config",
            "configs/micro.toml",
            "--steps",
            "0",
        ],
        &[
            "bench",
            "train",
            "--config",
            "configs/micro.toml",
            "--precision",
            "fp8",
        ],
        &["bench", "nn", "--config", "nope.toml"],
        &[
            "bench",
            "nn",
            "--config",
            "configs/micro.toml",
            "--batches",
            "0",
        ],
        &["bench", "mcts", "--positions", "nope.epd"],
    ] {
        let out = cfzero(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// The numbers of a JSON array.
fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// Checks one opponent's match in the report of `bench learn`.
fn check_learn_match(m: &Value, opponent: &str, games: u64) {
    assert_eq!(m["b"], opponent, "{m}");
    assert!(m["a"].as_str().unwrap().starts_with("gen-"), "{m}");
    check_match(m, games);
}

/// Checks a match's report: its games, score and intervals agree.
fn check_match(m: &Value, games: u64) {
    assert_eq!(m["games"].as_u64(), Some(games), "{m}");
    let s = &m["score"];
    let count = |k: &str| s[k].as_u64().unwrap();
    assert_eq!(
        count("wins") + count("draws") + count("losses"),
        games,
        "{m}"
    );
    let score = num(m, "score_fraction");
    assert!((0.0..=1.0).contains(&score), "{m}");
    assert_close(
        score,
        (count("wins") as f64 + 0.5 * count("draws") as f64) / games as f64,
        "score",
    );
    let (low, high) = (num(m, "score_low"), num(m, "score_high"));
    assert!(
        0.0 <= low && low <= score && score <= high && high <= 1.0,
        "{m}"
    );
    // Elo is null in JSON where it is infinite (a shut-out).
    if let (Some(lo), Some(elo), Some(hi)) = (
        m["elo_low"].as_f64(),
        m["elo"].as_f64(),
        m["elo_high"].as_f64(),
    ) {
        assert!(lo <= elo && elo <= hi, "{m}");
    }
    let ends: u64 = m["terminations"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(ends, games, "{m}");
}

#[test]
fn bench_learn_trains_for_the_budget_then_plays_both_baselines() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let r = bench_json(&[
        "learn",
        "--config",
        "configs/micro.toml",
        "--device",
        "cpu",
        "--minutes",
        "0.1",
        "--run",
        run.to_str().unwrap(),
        "--games",
        "4",
        "--max-plies",
        "60",
    ]);
    let t = &r["training"];
    assert_eq!(num(t, "minutes"), 0.1);
    assert!(num(t, "seconds") >= 6.0, "the budget is spent: {t}");
    let generation = t["generations"].as_u64().unwrap();
    let net = |g: u64| run.join(format!("nets/gen-{g:04}.safetensors"));
    assert!(net(generation).exists(), "{t}");
    assert!(!net(generation + 1).exists(), "{t}");
    let positions = num(t, "selfplay_positions");
    assert!(num(t, "positions_per_second") >= 0.0, "{t}");
    assert_close(
        num(t, "positions_per_second_overall") * num(t, "seconds"),
        positions,
        "positions over the budget",
    );
    // micro.toml: 4 steps a generation.
    assert_eq!(num(t, "train_steps"), 4.0 * generation as f64, "{t}");
    assert_eq!(r["simulations"], 8, "micro.toml's [search] simulations");
    assert_eq!(r["games_per_opponent"], 4);
    check_learn_match(&r["vs_random"], "random", 4);
    check_learn_match(&r["vs_greedy"], "greedy", 4);
    assert_eq!(
        r["vs_random"]["a"],
        format!("gen-{generation:04} (8 sims)"),
        "the final net plays"
    );
}

#[test]
fn bench_learn_replicates_pair_two_configs_run_by_run() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("runs");
    let engine = pick_engine();
    let r = bench_json(&[
        "learn",
        "--config",
        "configs/micro.toml",
        "--against",
        "configs/micro.toml",
        "--runs",
        "2",
        "--device",
        "cpu",
        "--minutes",
        "0.05",
        "--run",
        base.to_str().unwrap(),
        "--games",
        "2",
        "--max-plies",
        "60",
        "--engine",
        &engine,
        "--puzzles",
        "tests/data/puzzles/known.csv",
    ]);
    // A and B alternate, run i of both with micro.toml's seed 7 + i.
    let runs = r["runs"].as_array().unwrap();
    let order: Vec<(String, u64)> = runs
        .iter()
        .map(|x| {
            (
                x["run"].as_str().unwrap().to_string(),
                x["seed"].as_u64().unwrap(),
            )
        })
        .collect();
    let dir = |name: &str| base.join(name).display().to_string();
    assert_eq!(
        order,
        [
            (dir("a-01"), 7),
            (dir("b-01"), 7),
            (dir("a-02"), 8),
            (dir("b-02"), 8)
        ]
    );
    for x in runs {
        let g = x["training"]["generations"].as_u64().unwrap();
        assert!(
            std::path::Path::new(x["run"].as_str().unwrap())
                .join(format!("nets/gen-{g:04}.safetensors"))
                .exists()
        );
        check_learn_match(&x["vs_random"], "random", 2);
        check_learn_match(&x["vs_greedy"], "greedy", 2);
        check_learn_match(&x["vs_engine"], "pick-engine", 2);
        assert_eq!(x["puzzles"]["total"], 7, "{x}");
    }
    // Each config's four measures over its two runs, and the pairs' differences.
    let value = |run: usize, key: &str| -> f64 {
        match key {
            "puzzles" => num(&runs[run]["puzzles"], "share"),
            _ => num(&runs[run][key], "score_fraction"),
        }
    };
    let keys = ["vs_random", "vs_greedy", "vs_engine", "puzzles"];
    let summary = r["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 8, "{r}");
    for (i, s) in summary.iter().enumerate() {
        let (side, key) = (i / 4, keys[i % 4]);
        let values = floats(&s["values"]);
        assert_eq!(values, [value(side, key), value(side + 2, key)], "{s}");
        assert_close(num(s, "mean"), (values[0] + values[1]) / 2.0, "mean");
        assert!(num(s, "low") <= num(s, "mean") && num(s, "mean") <= num(s, "high"));
    }
    let differences = r["differences"].as_array().unwrap();
    assert_eq!(differences.len(), 4, "{r}");
    for (i, d) in differences.iter().enumerate() {
        let key = keys[i];
        let values = floats(&d["values"]);
        assert_eq!(
            values,
            [value(1, key) - value(0, key), value(3, key) - value(2, key)],
            "{d}"
        );
    }
    // Each pair's nets played each other, B's final net (A in the match's report) against A's.
    let matches = r["head_to_head"].as_array().unwrap();
    assert_eq!(matches.len(), 2, "{r}");
    let name = |side: &str, x: &Value| {
        let g = x["training"]["generations"].as_u64().unwrap();
        format!("{side} gen-{g:04} seed {} (8 sims)", x["seed"])
    };
    for (pair, m) in matches.iter().enumerate() {
        assert_eq!(m["a"], name("b", &runs[2 * pair + 1]), "{m}");
        assert_eq!(m["b"], name("a", &runs[2 * pair]), "{m}");
        check_match(m, 2);
    }
    let h = &r["head_to_head_summary"];
    let scores: Vec<f64> = matches.iter().map(|m| num(m, "score_fraction")).collect();
    assert_eq!(floats(&h["values"]), scores, "{h}");
    assert_eq!(h["measure"], "head to head", "{h}");
}

#[test]
fn bad_bench_learn_input_is_a_one_line_error_with_exit_code_2() {
    let tmp = tempfile::tempdir().unwrap();
    let busy = tmp.path().join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("x"), "").unwrap();
    let fresh = tmp.path().join("fresh");
    let base = [
        "bench",
        "learn",
        "--config",
        "configs/micro.toml",
        "--device",
        "cpu",
    ];
    for extra in [
        &["--minutes", "-1", "--run", fresh.to_str().unwrap()][..],
        &["--minutes", "0", "--run", fresh.to_str().unwrap()],
        &[
            "--minutes",
            "1",
            "--games",
            "0",
            "--run",
            fresh.to_str().unwrap(),
        ],
        &[
            "--minutes",
            "1",
            "--sims",
            "0",
            "--run",
            fresh.to_str().unwrap(),
        ],
        &[
            "--minutes",
            "1",
            "--openings",
            "nope.epd",
            "--run",
            fresh.to_str().unwrap(),
        ],
        &["--minutes", "1", "--run", busy.to_str().unwrap()],
        &[
            "--minutes",
            "1",
            "--runs",
            "0",
            "--run",
            fresh.to_str().unwrap(),
        ],
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let out = cfzero(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!fresh.exists(), "{args:?} created the run directory");
    }
}

#[test]
fn bench_nn_notes_a_backend_that_cannot_run_the_precision() {
    // bf16 taken as native here (CFZERO_CPU_BF16=1): libtorch measures it; the native pass
    // measures it too on a CPU with AVX-512 BF16, and elsewhere is listed as not measured
    // with the reason.
    let out = cfzero(&[
        "bench",
        "nn",
        "--config",
        "configs/micro.toml",
        "--device",
        "cpu",
        "--batches",
        "1",
        "--seconds",
        "0.1",
        "--matmul-size",
        "256",
        "--precision",
        "bf16",
        "--backends",
        "native,tch",
        "--json",
    ])
    .env("CFZERO_CPU_BF16", "1")
    .output()
    .expect("cfzero runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let bf16 = &r["precisions"][0];
    assert_eq!(bf16["kind"], "bf16", "{r}");
    let rows = bf16["inference"].as_array().unwrap();
    let skipped = bf16["skipped"].as_array().unwrap();
    if cfzero_inference::backend::native_bf16_supported() {
        assert_eq!(rows.len(), 2, "{r}");
        assert_eq!(rows[0]["backend"], "native");
        assert_eq!(rows[1]["backend"], "libtorch");
        assert!(skipped.is_empty(), "{r}");
        return;
    }
    assert_eq!(rows.len(), 1, "{r}");
    assert_eq!(rows[0]["backend"], "libtorch");
    assert_eq!(skipped.len(), 1, "{r}");
    let why = skipped[0].as_str().unwrap();
    assert!(
        why.starts_with("native:") && why.contains("AVX-512 BF16"),
        "{why}"
    );
}
