//! A run whose store is the process's memory (`--run memory://...`) goes through the same
//! session code as a directory or S3 (`run/stored_run.rs`): the trainer takes the lease,
//! publishes each generation on the store (the commit point) and keeps its local copy in the
//! cache, and resuming from an empty store starts over instead of trusting a stale cache. A
//! directory run is its own cache: naming another is refused.

mod common;

use common::*;

#[test]
fn a_run_on_an_in_memory_store_trains_through_the_session_code() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let train = |extra: &[&str]| {
        let out = run_cmd(
            "train",
            &micro_config(),
            std::path::Path::new("memory://runs/m"),
            &["--cache", cache.to_str().unwrap()],
        )
        .args(extra)
        .env("HOME", tmp.path())
        .output()
        .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), err)
    };
    let (stdout, stderr) = train(&["--generations", "2"]);
    assert!(
        stderr.contains("run memory://runs/m: generation 0"),
        "{stderr}"
    );
    // Two generations published (each a net and its trainer state in the cache) and logged.
    for g in 0..=2 {
        check_net(
            &cache.join(format!("nets/gen-{g:04}.safetensors")),
            &network_config(&micro_config()),
        );
    }
    let state = trainer_state_stem(&cache, 2);
    assert!(cache.join(format!("{state}.safetensors")).is_file());
    let log = std::fs::read_to_string(cache.join("log.tsv")).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
    assert_eq!(stdout.lines().filter(|l| l.starts_with("gen ")).count(), 2);
    // A new process has a new, empty store: the cache of a run the store no longer holds
    // starts over at generation 0 (the store is the truth), with no error.
    let (_, stderr) = train(&["--generations", "1", "--resume"]);
    assert!(
        stderr.contains("run memory://runs/m: generation 0"),
        "{stderr}"
    );
    let log = std::fs::read_to_string(cache.join("log.tsv")).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(!cache.join("nets/gen-0002.safetensors").exists());
}

/// A cache named for a run in a directory is refused, by the trainer and by a worker, before
/// anything is written: the directory is its own cache.
#[test]
fn a_cache_for_a_directory_run_is_a_one_line_error() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let cache = tmp.path().join("cache");
    let out = run_cmd(
        "train",
        &micro_config(),
        &run,
        &["--generations", "1", "--cache", cache.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert_user_error_output("--cache with a directory", &out, "its own cache");
    assert!(!run.exists() && !cache.exists());
    // A self-play worker opens its run through the same store seam, and refuses the same.
    let out = cfzero(&[
        "selfplay",
        "--run",
        run.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
        "--games",
        "1",
    ])
    .output()
    .unwrap();
    assert_user_error_output("a worker's --cache with a directory", &out, "its own cache");
    assert!(!run.exists() && !cache.exists());
}
