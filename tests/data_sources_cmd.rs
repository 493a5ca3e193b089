//! `cfzero export-data` and `cfzero learn --data` end to end: a micro run's games go out as
//! Lc0 V6 chunks, an independent Python reader of the V6 layout reads them, and a new run
//! trains on them mixed with PGN games and Lc0's own records.

mod common;

use std::process::Command;

use common::*;

/// Reads every exported chunk with Python's struct module, field by field at the offsets of
/// Lc0's `V6TrainingData`, and prints `games positions` after checking each record.
const V6_CHECK: &str = r#"
import gzip, struct, sys, pathlib
games = positions = 0
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.gz")):
    data = gzip.open(path).read()
    assert len(data) % 8356 == 0, path
    games += 1
    n = len(data) // 8356
    for i in range(n):
        r = data[i * 8356:(i + 1) * 8356]
        version, fmt = struct.unpack_from("<II", r, 0)
        assert (version, fmt) == (6, 1), (version, fmt)
        probs = struct.unpack_from("<1858f", r, 8)
        legal = [p for p in probs if p != -1.0]
        assert legal and abs(sum(legal) - 1.0) < 1e-4, sum(legal)
        played, best = struct.unpack_from("<HH", r, 8344)
        # Both legal; best is the move the search chose, not necessarily the policy's argmax
        # (trainer/tests/lc0_v6.rs checks which move it is).
        assert probs[played] >= 0.0 and probs[best] >= 0.0
        plies_left = struct.unpack_from("<f", r, 8304)[0]
        result_q, result_d = struct.unpack_from("<ff", r, 8308)
        assert result_q in (-1.0, 0.0, 1.0) and result_d == (1.0 if result_q == 0.0 else 0.0)
        assert plies_left >= 1.0
        # Ones plane of the board: our king is always on the board.
        planes = struct.unpack_from("<104Q", r, 7440)
        assert bin(planes[5]).count("1") == 1 and bin(planes[11]).count("1") == 1
        positions += 1
print(games, positions)
"#;

#[test]
fn games_go_out_as_v6_and_come_back_as_training_data() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    train_run(&micro_config(), &run, 1, &[]);
    let out = tmp.path().join("v6");
    let o = cfzero(&[
        "export-data",
        "--run",
        run.to_str().unwrap(),
        "--format",
        "lc0-v6",
        "--out",
        out.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let python = repo_root().join(".venv/bin/python3");
    let check = Command::new(python)
        .args(["-c", V6_CHECK, out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let counts = String::from_utf8(check.stdout).unwrap();
    let games: usize = counts.split_whitespace().next().unwrap().parse().unwrap();
    assert!(games >= 1, "{counts}");

    // A fresh run trains on the export, Lc0's own games and PGN games, 2 generations of 3
    // steps, and publishes both.
    let learned = tmp.path().join("learned");
    let o = cfzero(&[
        "learn",
        "--device",
        "cpu",
        "--config",
        micro_config().to_str().unwrap(),
        "--run",
        learned.to_str().unwrap(),
        "--data",
        &format!("lc0:{}", out.display()),
        "--data",
        "lc0:tests/data/lc0/v6",
        "--data",
        "pgn:tests/data/pgn/lichess_sample.pgn",
        "--weights",
        "1,1,2",
        "--steps",
        "6",
        "--steps-per-generation",
        "3",
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("lc0:tests/data/lc0/v6: 1815 training"),
        "{stderr}"
    );
    assert!(
        stderr.contains("pgn:tests/data/pgn/lichess_sample.pgn: 8 games kept"),
        "{stderr}"
    );
    for g in 1..=2 {
        assert!(
            learned
                .join(format!("nets/gen-{g:04}.safetensors"))
                .is_file()
        );
    }
    assert!(!learned.join("nets/gen-0003.safetensors").exists());
}

#[test]
fn bad_data_arguments_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let cases: [&[&str]; 4] = [
        &["--data", "csv:foo"],
        &["--data", "lc0:/nonexistent/chunks"],
        &["--data", "pgn:/nonexistent.pgn"],
        &[
            "--data",
            "pgn:tests/data/pgn/lichess_sample.pgn",
            "--weights",
            "1,2",
        ],
    ];
    for extra in cases {
        let mut args = vec![
            "learn",
            "--device",
            "cpu",
            "--config",
            micro_config().to_str().unwrap().to_owned().leak(),
            "--run",
            run.to_str().unwrap().to_owned().leak(),
        ];
        args.extend_from_slice(extra);
        let o = cfzero(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{extra:?}: {stderr}");
        assert!(!run.exists(), "{extra:?} left a run directory behind");
    }
    let o = cfzero(&["export-data", "--run", "/nonexistent", "--out", "/tmp/x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}
