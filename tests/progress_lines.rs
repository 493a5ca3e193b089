//! Long work speaks when stderr is not a terminal (a log file, a pipe): plain progress lines
//! with done/total, rate and ETA every `CFZERO_PROGRESS_SECONDS`, from every progress bar.
//! Here stderr is a pipe, as under a job scheduler.

mod common;

use common::*;

/// The plain progress lines of `stderr` that start with `prefix`.
fn lines<'a>(stderr: &'a str, prefix: &str) -> Vec<&'a str> {
    stderr.lines().filter(|l| l.starts_with(prefix)).collect()
}

/// `done/total unit (rate/s, ETA ...)` with numbers where they belong.
fn assert_progress(line: &str, unit: &str) {
    let (_, rest) = line.split_once(": ").unwrap();
    let (counts, rest) = rest
        .split_once(&format!(" {unit} ("))
        .unwrap_or_else(|| panic!("{line}"));
    let (done, total) = counts.split_once('/').unwrap_or_else(|| panic!("{line}"));
    let (done, total): (u64, u64) = (done.parse().unwrap(), total.parse().unwrap());
    assert!(done <= total, "{line}");
    let (rate, rest) = rest
        .split_once("/s, ETA ")
        .unwrap_or_else(|| panic!("{line}"));
    assert!(rate.parse::<f64>().unwrap() >= 0.0, "{line}");
    assert!(rest.contains(')'), "{line}");
}

#[test]
fn self_play_and_training_print_plain_progress_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let out = run_cmd("train", &micro_config(), &run, &["--generations", "2"])
        .env("CFZERO_PROGRESS_SECONDS", "0.05")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let selfplay = lines(&err, "selfplay: ");
    assert!(!selfplay.is_empty(), "no self-play progress line:\n{err}");
    for l in &selfplay {
        assert_progress(l, "positions");
        // micro.toml: 4 games a generation.
        assert!(l.contains("/4 games, avg batch"), "{l}");
    }
}

#[test]
fn labelling_prints_plain_progress_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let table = tmp.path().join("table.json");
    std::fs::write(&table, r#"{"*": {}}"#).unwrap();
    let epd = tmp.path().join("positions.epd");
    std::fs::write(
        &epd,
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1\n\
         rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2\n\
         rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2\n",
    )
    .unwrap();
    let out = cfzero(&[
        "label",
        "--from",
        &format!("epd:{}", epd.display()),
        "--out",
        tmp.path().join("out.cfl").to_str().unwrap(),
        "--engine",
        &scripted_engine(),
        "--processes",
        "1",
    ])
    .env("SCRIPTED_UCI_TABLE", &table)
    .env("SCRIPTED_UCI_DELAY_MS", "300")
    .env("CFZERO_PROGRESS_SECONDS", "0.1")
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let label = lines(&err, "label: ");
    assert!(
        label.len() >= 2,
        "plain lines every 0.1 s of a ~1 s run:\n{err}"
    );
    for l in &label {
        assert_progress(l, "positions");
        assert!(
            l.ends_with("/3 positions") || l.contains("/3 positions ("),
            "{l}"
        );
    }
}
