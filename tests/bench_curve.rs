//! `cfzero bench curve`: the nets a run had at given minutes, measured against the greedy
//! mover, a UCI engine (the scripted `tests/engines/pick_engine.py`, never Stockfish) and
//! puzzles; marks past the run's end are skipped with a warning, and bad input is one line.

mod common;

use cfzero_network::checkpoint::save_net_with;
use cfzero_network::load_net;
use common::*;

/// Records in generation `g`'s net in `run` that the run had trained `minutes` minutes when it
/// was published, as a trainer does.
fn publish_at(run: &std::path::Path, g: u32, minutes: u64) {
    let path = run.join(format!("nets/gen-{g:04}.safetensors"));
    let net = load_net(&path, tch::Device::Cpu).unwrap();
    save_net_with(&net, &path, &[("cfzero.run_minutes", minutes.to_string())]).unwrap();
}

#[test]
fn each_mark_measures_the_net_of_its_minute() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    train_run(&micro_config(), &run, 2, &[]);
    // Nets published at minutes 5 and 12 of the run's training, which their files' times
    // (seconds apart) do not say: the minutes the nets record are the run's clock.
    for (g, minutes) in [(1, 5), (2, 12)] {
        publish_at(&run, g, minutes);
    }
    let engine = pick_engine();
    let out = cfzero(&[
        "bench",
        "curve",
        "--device",
        "cpu",
        "--run",
        run.to_str().unwrap(),
        "--minutes",
        "4,10,60",
        "--engine",
        &engine,
        "--puzzles",
        "tests/data/puzzles/known.csv",
        "--games",
        "4",
        "--sims",
        "2",
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("mark 60 min skipped: the run's newest net is from minute 12.0"),
        "{stderr}"
    );
    let tsv = std::fs::read_to_string(run.join("curve.tsv")).unwrap();
    assert_eq!(
        tsv,
        String::from_utf8_lossy(&out.stdout),
        "stdout is the table"
    );
    let rows: Vec<Vec<&str>> = tsv
        .lines()
        .skip(1)
        .map(|l| l.split('\t').collect())
        .collect();
    let anchor = "pick-engine 100 nodes";
    let expected = [
        ("4", "0", "0.00", "greedy", "4"),
        ("4", "0", "0.00", anchor, "4"),
        ("4", "0", "0.00", "puzzles", "7"),
        ("10", "1", "5.00", "greedy", "4"),
        ("10", "1", "5.00", anchor, "4"),
        ("10", "1", "5.00", "puzzles", "7"),
    ];
    assert_eq!(rows.len(), expected.len(), "{tsv}");
    for (row, want) in rows.iter().zip(expected) {
        assert_eq!((row[0], row[1], row[2], row[3], row[4]), want, "{tsv}");
        let n: Vec<u32> = row[5..8].iter().map(|x| x.parse().unwrap()).collect();
        let count: u32 = row[4].parse().unwrap();
        assert_eq!(n.iter().sum::<u32>(), count, "{row:?}");
        let (score, low, high): (f64, f64, f64) = (
            row[8].parse().unwrap(),
            row[9].parse().unwrap(),
            row[10].parse().unwrap(),
        );
        let expected_score = (f64::from(n[0]) + 0.5 * f64::from(n[1])) / f64::from(count);
        assert!((score - expected_score).abs() < 1e-4, "{row:?}");
        assert!(low <= score && score <= high, "{row:?}");
    }
    let png = std::fs::read(run.join("curve.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn bad_marks_and_runs_are_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("nothing");
    std::fs::create_dir_all(&empty).unwrap();
    for (minutes, says) in [("0", "--minutes 0"), ("15", "no run there")] {
        let run = empty.to_str().unwrap();
        assert_user_error_line(
            &["bench", "curve", "--run", run, "--minutes", minutes],
            says,
        );
    }
}
