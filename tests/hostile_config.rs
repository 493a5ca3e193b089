//! Hostile configs: every table is validated when the file is read. A
//! value out of range, or inconsistent with another, is one line on stderr naming the file,
//! the line, the table and the key, and exit code 2: never a panic, a hang, or a run that
//! silently does nothing useful.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// `micro.toml` with `key` of `[table]` set to `value` (the line replaced, or added right
/// after the table's header); the file and the 1-based line of the key.
fn micro_edit(dir: &Path, table: &str, key: &str, value: &str) -> (PathBuf, usize) {
    let text = std::fs::read_to_string(micro_config()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let header = format!("[{table}]");
    let start = lines
        .iter()
        .position(|l| *l == header)
        .unwrap_or_else(|| panic!("micro.toml has no {header}"));
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.starts_with('['))
        .map_or(lines.len(), |i| start + 1 + i);
    let prefix = format!("{key} =");
    let at = match (start + 1..end).find(|&i| lines[i].starts_with(&prefix)) {
        Some(i) => i,
        None => {
            lines.insert(start + 1, String::new());
            start + 1
        }
    };
    lines[at] = format!("{key} = {value}");
    let path = dir.join(format!("{table}-{key}.toml"));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    (path, at + 1)
}

/// Runs `cfzero info --config PATH` and asserts that it fails as bad user input should: exit
/// code 2 and one line on stderr that names the file and contains every one of `wants`.
fn rejected(path: &Path, wants: &[&str]) -> String {
    let out = cfzero(&["info", "--config", path.to_str().unwrap()])
        .output()
        .expect("cfzero runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{}: {stderr}", path.display());
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(&path.display().to_string()), "{stderr}");
    for want in wants {
        assert!(stderr.contains(want), "{want:?} not in {stderr}");
    }
    stderr
}

/// One bad value of a table: the message has its line, table and key.
fn bad_value(table: &str, key: &str, value: &str, reason: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let (path, line) = micro_edit(tmp.path(), table, key, value);
    rejected(
        &path,
        &[
            &format!("line {line}:"),
            &format!("[{table}]"),
            &format!("`{key}`"),
            reason,
        ],
    );
}

#[test]
fn a_zero_batch_size_is_rejected() {
    bad_value("train", "batch_size", "0", "at least 1");
}

#[test]
fn no_full_searches_is_rejected() {
    // The learner would wait forever for a trainable position.
    bad_value("selfplay", "full_search_fraction", "0.0", "(0, 1]");
    bad_value("selfplay", "full_search_fraction", "1.5", "(0, 1]");
}

#[test]
fn zero_simulations_are_rejected_in_every_table() {
    bad_value("search", "simulations", "0", "at least 1");
    bad_value("selfplay", "simulations", "0", "at least 1");
    bad_value("selfplay", "cheap_simulations", "0", "at least 1");
    bad_value("eval", "simulations", "0", "at least 1");
}

#[test]
fn cheap_searches_may_not_exceed_full_ones() {
    bad_value(
        "selfplay",
        "cheap_simulations",
        "9",
        "must not exceed `simulations` (8)",
    );
}

#[test]
fn window_growth_needs_a_positive_alpha() {
    bad_value("window", "alpha", "0.0", "above 0");
    bad_value("window", "validation_share", "1.0", "[0, 1)");
    bad_value(
        "window",
        "max_positions",
        "10",
        "at least `min_positions` (100)",
    );
}

#[test]
fn search_and_training_constants_must_be_finite() {
    bad_value("search", "cpuct", "nan", "0 or more");
    bad_value("search", "dirichlet_epsilon", "2.0", "[0, 1]");
    bad_value("search", "gumbel_m", "0", "at least 1");
    bad_value("train", "grad_clip", "0.0", "above 0");
    bad_value("train", "q_ratio", "-0.5", "[0, 1]");
    bad_value("train", "capped_q_ratio", "1.5", "[0, 1]");
    bad_value("train", "loader_threads", "0", "at least 1");
    bad_value("selfplay", "resign_threshold", "-2.0", "[-1, 1]");
    bad_value("run", "games_per_generation", "0", "at least 1");
}

/// A count the machine may size takes a whole number or "auto", and nothing else.
#[test]
fn a_count_is_a_whole_number_or_auto() {
    let tmp = tempfile::tempdir().unwrap();
    for value in ["\"many\"", "-2"] {
        let (path, line) = micro_edit(tmp.path(), "selfplay", "actors", value);
        rejected(
            &path,
            &[&format!("line {line}:"), "a whole number or \"auto\""],
        );
    }
}

#[test]
fn nested_tables_name_the_dotted_key() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, line) = micro_edit(tmp.path(), "train.lr", "peak", "-0.001");
    rejected(
        &path,
        &[&format!("line {line}:"), "[train]", "`lr.peak`", "above 0"],
    );
    let (path, line) = micro_edit(tmp.path(), "train.lr", "decay_steps", "[10, 5]");
    rejected(
        &path,
        &[&format!("line {line}:"), "`lr.decay_steps`", "ascending"],
    );
}

#[test]
fn the_network_table_is_checked_when_the_config_is_read() {
    bad_value("network", "heads", "3", "must divide `d_model` (16)");
    bad_value("network", "layers", "0", "at least 1");
}

#[test]
fn a_bad_default_is_named_without_a_line() {
    // `cheap_simulations` is not written: its default (16) exceeds the 8 simulations given.
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(micro_config()).unwrap();
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("cheap_simulations"))
        .map(|l| format!("{l}\n"))
        .collect();
    let path = tmp.path().join("default.toml");
    std::fs::write(&path, text).unwrap();
    let stderr = rejected(&path, &["[selfplay] `cheap_simulations` (16)"]);
    assert!(!stderr.contains("line "), "{stderr}");
}

#[test]
fn every_shipped_preset_is_valid() {
    for entry in std::fs::read_dir(repo_root().join("configs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            cfzero_ok(&["info", "--config", path.to_str().unwrap()]);
        }
    }
}
