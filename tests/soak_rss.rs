//! Soak: `cfzero train` on `micro`, its resident memory sampled as it runs. Once warm (the
//! replay window full, the allocator's pools grown) memory must stay flat: the last third of
//! the run may not peak more than 10% above the middle third. The short form (two minutes, a
//! small window that fills early) runs in the normal suite; the long form (ten minutes of
//! the unchanged `micro`, `CFZERO_SOAK_SECONDS` to change) is ignored there; run it with
//! `cargo test --release --test soak_rss -- --ignored --nocapture` (prints the curve as CSV).

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

/// Resident set size of process `pid` in MiB.
fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// Runs `cfzero train` on `config` for `seconds`, sampling its resident memory every
/// `every`; prints the curve as CSV and asserts that the last third of it peaks at most 10%
/// above the middle third.
fn soak(config: &std::path::Path, seconds: u64, every: Duration) {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let mut child = run_cmd("train", config, &run, &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut curve = Vec::new();
    while start.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(every);
        assert!(child.try_wait().unwrap().is_none(), "train exited early");
        if let Some(mib) = rss_mib(child.id()) {
            curve.push((start.elapsed().as_secs(), mib));
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let generations = std::fs::read_dir(run.join("nets")).unwrap().count();
    println!("seconds,rss_mib");
    for (s, m) in &curve {
        println!("{s},{m:.1}");
    }
    let third = curve.len() / 3;
    let peak = |part: &[(u64, f64)]| part.iter().map(|p| p.1).fold(0.0, f64::max);
    let (middle, last) = (peak(&curve[third..2 * third]), peak(&curve[2 * third..]));
    println!(
        "{generations} nets; RSS at start {:.1} MiB, peak of the middle third {middle:.1}, of the last third {last:.1}",
        curve[0].1
    );
    assert!(
        generations >= 6,
        "only {generations} nets: too short to be warm"
    );
    assert!(
        last <= middle * 1.10,
        "memory grew from {middle:.1} to {last:.1} MiB"
    );
}

/// The short form, in the normal suite: two minutes of `micro` with a replay window of 600
/// positions, so that it is full (and memory should be flat) after a few generations, and
/// without the in-run evaluation: with one every generation (micro's `[eval] every = 1`) RSS
/// rose by about 1.8 MiB per evaluation for the whole two minutes (docs/history/benchmarks-2026-11.md, "Memory"),
/// which the long form, evaluation included, is there to follow.
#[test]
fn memory_stays_flat_over_two_minutes() {
    let tmp = tempfile::tempdir().unwrap();
    let config = micro_with(
        &tmp.path().join("micro.toml"),
        &[
            ("max_positions = 10000", "max_positions = 600"),
            ("every = 1", "every = 1000000"),
        ],
    );
    soak(&config, 120, Duration::from_secs(2));
}

#[test]
#[ignore = "ten minutes; run by hand (see the module's doc)"]
fn memory_stays_flat_over_a_long_run() {
    let seconds: u64 = std::env::var("CFZERO_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    soak(&micro_config(), seconds, Duration::from_secs(5));
}
