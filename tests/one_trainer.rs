//! One trainer per run: while `cfzero learn` trains a run, a second `learn` or `train` on it
//! is refused in one line naming the first (exit 2), and writes nothing; after the first is
//! killed with SIGKILL (its OS lock dies with it), a successor takes over and continues the
//! generation count.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

#[test]
fn a_second_trainer_is_refused_and_a_successor_takes_over_after_a_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let config = micro_config();
    let (config, run_s) = (config.to_str().unwrap(), run.to_str().unwrap());
    train_run(&micro_config(), &run, 1, &[]);

    // The first trainer waits for workers' games (once it says so, it writes nothing more).
    let log = tmp.path().join("first.err");
    let mut first = cfzero(&[
        "learn", "--device", "cpu", "--config", config, "--run", run_s, "--resume",
    ])
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(&log).unwrap())
    .spawn()
    .expect("cfzero learn starts");
    let pid = format!("pid {}", first.id());
    let lock = run.join("trainer.lock");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(std::fs::read_to_string(&lock).is_ok_and(|h| h.contains(&pid))
        && std::fs::read_to_string(&log).is_ok_and(|l| l.contains("waiting for games")))
    {
        assert!(
            first.try_wait().unwrap().is_none(),
            "the first learn exited early"
        );
        assert!(Instant::now() < deadline, "the first learn took no lease");
        std::thread::sleep(Duration::from_millis(50));
    }

    let before = files_under(&run);
    for command in ["learn", "train"] {
        let args = [
            command, "--device", "cpu", "--config", config, "--run", run_s, "--resume",
        ];
        assert_user_error_line(&args, "already has a trainer");
        assert_user_error_line(&args, &pid);
    }
    assert_eq!(
        files_under(&run),
        before,
        "a refused trainer writes nothing"
    );

    first.kill().unwrap();
    first.wait().unwrap();
    let out = train_run(&micro_config(), &run, 2, &["--resume"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("stopped at generation 2"), "{stderr}");
    assert!(run.join("nets/gen-0002.safetensors").is_file());
}
