//! Chaos: `cfzero train` on `micro`, killed with SIGKILL at random moments (a fixed seed)
//! twelve times and resumed each time. Every resume starts; every published net loads; no
//! completely written game or net is lost or changed; the generation count never goes down;
//! and a resume removes the temporary files the killed process left.

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use cfzero_selfplay::record::read_records;
use common::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Kills in all.
const KILLS: usize = 12;

/// The newest published generation.
fn published(run: &Path) -> u32 {
    files_under(&run.join("nets"))
        .iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?;
            name.strip_prefix("gen-")?
                .strip_suffix(".safetensors")?
                .parse()
                .ok()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn random_kills_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let config = micro_config();
    let net_config = network_config(&config);
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    let mut before: BTreeMap<PathBuf, Vec<u8>> = BTreeMap::new();
    let mut generation = 0;
    let mut temporaries_seen = 0;
    for kill in 0..KILLS {
        let resume: &[&str] = if kill > 0 { &["--resume"] } else { &[] };
        let err_path = tmp.path().join(format!("kill{kill}.err"));
        let mut child = run_cmd("train", &config, &run, &["--generations", "1000"])
            .args(resume)
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()))
            .spawn()
            .unwrap();
        // A kill anywhere from start-up to a couple of generations in.
        let wait = Duration::from_millis(rng.random_range(200..4000));
        let start = Instant::now();
        while start.elapsed() < wait {
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "kill {kill}: train exited ({status}):\n{}",
                    std::fs::read_to_string(&err_path).unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        child.kill().unwrap();
        assert_eq!(child.wait().unwrap().signal(), Some(9));
        let stderr = std::fs::read_to_string(&err_path).unwrap();
        if kill > 0 && stderr.contains("generation ") {
            // The resume started from the newest net it had.
            assert!(stderr.contains("run "), "kill {kill}: {stderr}");
        }

        // Nothing completely written before is lost or changed.
        for (path, bytes) in &before {
            let now = std::fs::read(path)
                .unwrap_or_else(|e| panic!("kill {kill}: {} lost: {e}", path.display()));
            assert!(&now == bytes, "kill {kill}: {} changed", path.display());
        }
        // Every net loads, every record reads, and the generation count only grows.
        let now = published(&run);
        assert!(
            now >= generation,
            "kill {kill}: generation {generation} -> {now}"
        );
        generation = now;
        for path in files_under(&run.join("nets")) {
            if !is_temporary(&path) {
                check_net(&path, &net_config);
            }
        }
        for path in files_under(&run.join("games")) {
            if !is_temporary(&path) && path.extension().is_some_and(|e| e == "cfzg") {
                read_records(&path).unwrap_or_else(|e| panic!("kill {kill}: {e}"));
            }
        }
        temporaries_seen += files_under(&run).iter().filter(|p| is_temporary(p)).count();
        before = snapshot(&run.join("games"));
        before.extend(snapshot(&run.join("nets")));
    }
    // One last resume, to a generation past the newest: it removes what the last kill left
    // and ends cleanly.
    train_run(&config, &run, generation + 1, &["--resume"]);
    let left: Vec<_> = files_under(&run)
        .into_iter()
        .filter(|p| is_temporary(p))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    for (path, bytes) in &before {
        assert!(
            &std::fs::read(path).unwrap() == bytes,
            "{} changed",
            path.display()
        );
    }
    eprintln!(
        "{KILLS} kills: reached generation {}, {temporaries_seen} temporary files seen after kills, none left",
        generation + 1
    );
}
