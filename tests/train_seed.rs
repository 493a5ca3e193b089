//! `cfzero train --seed`: a run's seed instead of its config's, recorded in the frozen config,
//! so that a resume without the flag goes on with it (and says so), and `bench learn
//! --runs` trains replicates that differ by it alone.

mod common;

use common::*;

/// The `[run] seed` of a run's frozen config.
fn frozen_seed(run: &std::path::Path) -> i64 {
    let text = std::fs::read_to_string(run.join("config.toml")).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    table["run"]["seed"].as_integer().unwrap()
}

#[test]
fn a_run_keeps_the_seed_it_was_started_with() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    train_run(&micro_config(), &run, 1, &["--seed", "12"]);
    assert_eq!(frozen_seed(&run), 12, "micro.toml says 7");
    let out = train_run(&micro_config(), &run, 2, &["--resume"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("resume: the run keeps its seed 12"),
        "{stderr}"
    );
    assert_eq!(frozen_seed(&run), 12);
    assert!(run.join("nets/gen-0002.safetensors").exists());
}
