//! `cfzero train --minutes` is a wall-clock limit: a run whose generation would take far
//! longer stops within seconds of it, keeps only complete work (complete games; no net for
//! a generation whose training did not finish) and resumes from there. A bad limit is a
//! one-line error with exit code 2.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cfzero_selfplay::Termination;
use cfzero_selfplay::record::read_records;
use cfzero_selfplay::replay::replay;
use common::*;

/// `micro.toml`'s game length.
const MAX_PLIES: u32 = 40;
/// How long after the limit a run may take to end: starting the process and opening the
/// run (not counted in the limit) and finishing the move or step under way, in a debug
/// build on a busy machine. A run that ignored the limit would take many minutes.
const SLACK: Duration = Duration::from_secs(45);

/// Runs `train --minutes MINUTES` on `config` into `run`; asserts that it ended in time and
/// cleanly, and that no generation was published. Returns its stderr.
fn train_until_the_limit(config: &Path, run: &Path, minutes: f64) -> String {
    let started = Instant::now();
    let out = train(&[
        "--config",
        config.to_str().unwrap(),
        "--run",
        run.to_str().unwrap(),
        "--minutes",
        &minutes.to_string(),
    ]);
    let elapsed = started.elapsed();
    let limit = Duration::from_secs_f64(minutes * 60.0);
    assert!(
        elapsed < limit + SLACK,
        "a {minutes}-minute run took {elapsed:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(stderr.contains("time limit"), "{stderr}");
    assert!(run.join("nets/gen-0000.safetensors").exists());
    assert!(
        !run.join("nets/gen-0001.safetensors").exists(),
        "an unfinished generation was published"
    );
    let log = std::fs::read_to_string(run.join("log.tsv")).unwrap_or_default();
    assert!(log.is_empty(), "{log}");
    let stray: Vec<_> = files_under(run)
        .into_iter()
        .filter(|p| is_temporary(p))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
    // Every game kept was completely written and replays to its end.
    for path in record_files(&run.join("games/gen-0001")) {
        let games = read_records(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(games.len(), 1, "{}", path.display());
        let mut end = replay(&games[0], |_, _, _, _| {})
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        end.set_max_plies(MAX_PLIES);
        assert!(
            end.terminal_reason().is_some() || games[0].termination == Termination::Resignation,
            "{}: an unfinished game",
            path.display()
        );
    }
    stderr
}

/// Resumes `run` with the plain micro preset for one generation: it must publish it.
fn resume_one_generation(dir: &Path, run: &Path) {
    let micro = micro_with(&dir.join("micro.toml"), &[]);
    train_run(&micro, run, 1, &["--resume", "--force"]);
    assert!(run.join("nets/gen-0001.safetensors").exists());
    let log = std::fs::read_to_string(run.join("log.tsv")).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(log.starts_with("gen    1 |"), "{log}");
}

#[test]
fn the_limit_stops_a_long_self_play_phase() {
    let tmp = tempfile::tempdir().unwrap();
    // A thousand games a generation: the self-play phase alone takes many minutes.
    let config = micro_with(
        &tmp.path().join("long.toml"),
        &[("games_per_generation = 4", "games_per_generation = 1000")],
    );
    let run = tmp.path().join("run");
    train_until_the_limit(&config, &run, 0.05);
    resume_one_generation(tmp.path(), &run);
}

#[test]
fn the_limit_stops_a_long_training_phase_without_publishing() {
    let tmp = tempfile::tempdir().unwrap();
    // A million steps a generation: once its 4 games are played, training runs into the limit.
    let config = micro_with(
        &tmp.path().join("long.toml"),
        &[("steps_per_generation = 4", "steps_per_generation = 1000000")],
    );
    let run = tmp.path().join("run");
    train_until_the_limit(&config, &run, 0.25);
    // The chunk cursor is the run's, published with generation 0; a trainer state of the
    // unfinished generation would be `trainer-gen-0001-*`.
    let states: Vec<PathBuf> = files_under(&run.join("state"))
        .into_iter()
        .filter(|p| !p.ends_with("chunk-cursor.json"))
        .collect();
    assert!(
        states.is_empty(),
        "no trainer state of an unfinished generation: {states:?}"
    );
    resume_one_generation(tmp.path(), &run);
}

#[test]
fn a_bad_limit_is_a_one_line_error_with_exit_code_2() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    for minutes in ["-1", "0", "nan"] {
        let out = run_cmd("train", &micro_config(), &run, &["--minutes", minutes])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--minutes {minutes}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("--minutes"), "{stderr}");
        assert!(!run.exists(), "a bad limit created the run directory");
    }
}
