//! `cfzero train --resume` after `kill -9` in the middle of a generation: the run goes on to
//! the end, no file is corrupt and no completely written file is lost. And `--resume` with a
//! different config is refused unless `--force`.

mod common;

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use cfzero_network::load_net;
use cfzero_selfplay::record::read_records;
use cfzero_trainer::tensorboard::read_scalars;
use cfzero_trainer::{Learner, TrainConfig};
use common::*;
use tch::Device;

/// `micro.toml`: games per generation, training steps per generation, game length.
const GAMES: usize = 4;
const STEPS: u64 = 4;
const MAX_PLIES: u32 = 40;
/// How long the first process may take to reach generation 2 (a debug build on a busy machine).
const TIMEOUT: Duration = Duration::from_secs(600);

/// Reads every file of the run directory with the reader of its kind; panics on a file that
/// fails to parse or that no part of a run writes. `killed` is the process id of the killed
/// run: its TensorBoard file may end in a torn record (TensorBoard reads up to it) and its
/// atomic writes may have left temporary files (no reader picks them up).
fn check_every_file(run: &Path, killed: u32, train_config: &TrainConfig) {
    let net_config = network_config(&run.join("config.toml"));
    let mut kinds = BTreeMap::<&str, usize>::new();
    for path in files_under(run) {
        let rel = path
            .strip_prefix(run)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let kind = if is_temporary(&path) {
            assert!(
                name.contains(&format!(".tmp{killed}-")),
                "{rel}: a temporary file"
            );
            "leftover temporary file"
        } else if rel == "config.toml" {
            let text = std::fs::read_to_string(&path).unwrap();
            toml::from_str::<toml::Table>(&text).unwrap_or_else(|e| panic!("{rel}: {e}"));
            "config"
        } else if rel == "log.tsv" {
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.ends_with('\n'), "{rel}: {text:?}");
            for line in text.lines() {
                assert!(line.starts_with("gen "), "{rel}: {line:?}");
                assert_eq!(line.matches("gen ").count(), 1, "{rel}: {line:?}");
            }
            "log"
        } else if rel.starts_with("games/") && name.ends_with(".cfzg") {
            read_records(&path).unwrap_or_else(|e| panic!("{e}"));
            "game record"
        } else if rel.starts_with("chunks/") && name.ends_with(".cfzg") {
            assert!(
                cfzero_store::ChunkName::parse(&rel).is_some(),
                "{rel}: a chunk's name"
            );
            read_records(&path).unwrap_or_else(|e| panic!("{e}"));
            "chunk of games"
        } else if rel.starts_with("heads/") {
            assert!(
                cfzero_store::heads::parse_head_key(&rel).is_some(),
                "{rel}: a head's name"
            );
            serde_json::from_slice::<cfzero_store::heads::StreamHead>(
                &std::fs::read(&path).unwrap(),
            )
            .unwrap_or_else(|e| panic!("{rel}: {e}"));
            "stream head"
        } else if rel.starts_with("workers/trainer/") {
            "uploader start"
        } else if rel == "state/chunk-cursor.json" {
            serde_json::from_slice::<serde_json::Value>(&std::fs::read(&path).unwrap())
                .unwrap_or_else(|e| panic!("{rel}: {e}"));
            "chunk cursor"
        } else if rel.starts_with("nets/") && name.ends_with(".safetensors") {
            check_net(&path, &net_config);
            "net"
        } else if rel.starts_with("state/") && name.ends_with(".safetensors") {
            check_net(&path, &net_config);
            "trainer weights"
        } else if rel.starts_with("state/") && name.ends_with(".optim") {
            let weights = path.with_extension("safetensors");
            let net = load_net(&weights, Device::Cpu).unwrap();
            let mut learner = Learner::new(net, train_config.clone());
            learner
                .load_state(&weights, &path)
                .unwrap_or_else(|e| panic!("{rel}: {e}"));
            "optimizer state"
        } else if rel.starts_with("pgn/") && name.ends_with(".pgn") {
            python_pgn_games(&path);
            "pgn"
        } else if rel.starts_with("tb/") && name.starts_with("events.out.tfevents.") {
            match read_scalars(&path) {
                Ok(_) => {}
                Err(e) if name.contains(&format!(".cfzero.{killed}.")) => {
                    assert!(e.to_string().contains("truncated"), "{e}");
                }
                Err(e) => panic!("{e}"),
            }
            "tensorboard"
        } else if rel == "trainer.lock" {
            // The trainer lease: the last trainer's name (its lock died with it).
            let holder = std::fs::read_to_string(&path).unwrap();
            assert!(
                holder.starts_with("cfzero train (pid "),
                "{rel}: {holder:?}"
            );
            "trainer lease"
        } else {
            panic!("{rel}: a file that no part of a run writes");
        };
        *kinds.entry(kind).or_default() += 1;
    }
    eprintln!("files in the run directory after the resume: {kinds:?}");
}

#[test]
fn resume_after_sigkill_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    // Micro without the evaluation matches, which take most of a micro generation's time.
    let config = micro_with(
        &tmp.path().join("micro.toml"),
        &[("every = 1", "every = 0")],
    );
    let net_config = network_config(&config);

    // Start three generations and kill the process once generation 1 is published and
    // generation 2 has written some games.
    let log = |name: &str| Stdio::from(File::create(tmp.path().join(name)).unwrap());
    let mut child = run_cmd("train", &config, &run, &["--generations", "3"])
        .stdout(log("first.out"))
        .stderr(log("first.err"))
        .spawn()
        .unwrap();
    let pid = child.id();
    let gen1 = run.join("nets/gen-0001.safetensors");
    let gen2_games = run.join("games/gen-0002");
    let start = Instant::now();
    while !gen1.exists() || record_files(&gen2_games).is_empty() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "train exited ({status}) before generation 2 had games:\n{}",
                std::fs::read_to_string(tmp.path().join("first.err")).unwrap()
            );
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "no games of generation 2 in time"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "the run ended before the kill");
    assert!(
        !run.join("nets/gen-0003.safetensors").exists(),
        "the kill came after the last generation"
    );
    let games_before = snapshot(&run.join("games"));
    let nets_before = snapshot(&run.join("nets"));
    let published_before = nets_before.len() as u64 - 1;
    eprintln!(
        "killed after {:.1}s: nets up to gen-{published_before:04}, {} games of generation 2 on disk",
        start.elapsed().as_secs_f64(),
        record_files(&gen2_games).len()
    );
    assert!(games_before.len() > GAMES);

    // Resume to the end.
    let out = train_run(&config, &run, 3, &["--resume"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("generation {published_before},")),
        "{stderr}"
    );

    // Everything completely written before the kill is still there, unchanged.
    let games_after = snapshot(&run.join("games"));
    for (path, bytes) in games_before.iter().chain(&nets_before) {
        let now = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(&now == bytes, "{} changed", path.display());
    }

    // The nets of every generation; each generation has its games exactly once, each a
    // whole legal game, and its PGN holds the same games.
    for g in 0..=3 {
        check_net(
            &run.join(format!("nets/gen-{g:04}.safetensors")),
            &net_config,
        );
    }
    assert!(!run.join("nets/gen-0004.safetensors").exists());
    for g in 1..=3u32 {
        let games = check_records(&run.join(format!("games/gen-{g:04}")), g - 1, MAX_PLIES);
        assert_eq!(games.len(), GAMES, "records of generation {g}");
        check_pgn(&run.join(format!("pgn/gen-{g:04}.pgn")), &games);
    }
    assert_eq!(games_after.len(), 3 * GAMES);

    // The trainer state went on from the last published generation: 3 x 4 steps in all,
    // and the resumed process logged the steps after those of the published generations.
    let frozen: toml::Table =
        toml::from_str(&std::fs::read_to_string(run.join("config.toml")).unwrap()).unwrap();
    let train_config: TrainConfig = frozen["train"].clone().try_into().unwrap();
    let stem = trainer_state_stem(&run, 3);
    let weights = run.join(format!("{stem}.safetensors"));
    let mut learner = Learner::new(
        load_net(&weights, Device::Cpu).unwrap(),
        train_config.clone(),
    );
    learner
        .load_state(&weights, &weights.with_extension("optim"))
        .unwrap();
    assert_eq!(learner.steps(), 3 * STEPS);
    let state: Vec<String> = files_under(&run.join("state"))
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| n != "chunk-cursor.json")
        .collect();
    let name = stem.strip_prefix("state/").unwrap();
    assert_eq!(
        state,
        [
            format!("{name}.optim"),
            format!("{name}.safetensors"),
            format!("{name}.swa.safetensors")
        ]
    );
    assert!(
        learner.swa_count() > 0,
        "the SWA average is part of the state"
    );
    let resumed: Vec<PathBuf> = files_under(&run.join("tb"))
        .into_iter()
        .filter(|p| !p.to_string_lossy().contains(&format!(".cfzero.{pid}.")))
        .collect();
    assert_eq!(resumed.len(), 1, "one event file of the resumed process");
    check_training_scalars(
        &read_scalars(&resumed[0]).unwrap(),
        published_before * STEPS + 1..=3 * STEPS,
    );

    check_every_file(&run, pid, &train_config);
}

#[test]
fn resume_with_another_config_needs_force() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    // Generation 0 only: the run directory with its frozen config and first net.
    let micro = micro_config();
    train_run(&micro, &run, 0, &[]);
    let frozen = std::fs::read_to_string(run.join("config.toml")).unwrap();
    assert!(run.join("nets/gen-0000.safetensors").is_file());
    let other = micro_with(
        &tmp.path().join("other.toml"),
        &[("steps_per_generation = 4", "steps_per_generation = 5")],
    );

    let refused = |config: &Path, extra: &[&str], names: &[&str]| {
        let mut args = vec!["train", "--device", "cpu", "--run", run.to_str().unwrap()];
        args.extend_from_slice(&["--config", config.to_str().unwrap()]);
        args.extend_from_slice(extra);
        let before = std::fs::read_to_string(run.join("config.toml")).unwrap();
        let out = cfzero(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        for name in names {
            assert!(err.contains(name), "{args:?}: {err}");
        }
        assert_eq!(
            std::fs::read_to_string(run.join("config.toml")).unwrap(),
            before,
            "{args:?} changed the frozen config"
        );
    };
    // Without --resume, an existing run is never overwritten.
    refused(&micro, &[], &["--resume"]);
    // A different config is refused, and the message names it and the way out.
    refused(&other, &["--resume"], &["other.toml", "--force"]);
    // The same config resumes.
    train_run(&micro, &run, 0, &["--resume"]);
    // --force accepts the new config and freezes it; from then on it is the run's own.
    train_run(&other, &run, 0, &["--resume", "--force"]);
    let now = std::fs::read_to_string(run.join("config.toml")).unwrap();
    assert_ne!(now, frozen);
    assert!(now.contains("steps_per_generation = 5"), "{now}");
    train_run(&other, &run, 0, &["--resume"]);
    refused(&micro, &["--resume"], &["micro.toml", "--force"]);
}
