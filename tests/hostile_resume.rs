//! Files and resume: a lost trainer state does not restart the learning-rate schedule, nor
//! does the time a run stood stopped count as minutes of training, and
//! no state but the one a net was published with is loaded for it, the SWA average is part of the trainer state, `--force` refuses
//! another net shape before it touches the frozen config, and temporary files that a killed
//! run left are removed while young ones (another writer's) stay.

mod common;

use std::time::{Duration, SystemTime};

use cfzero_network::checkpoint::read_net_metadata;
use common::*;

#[test]
fn a_resume_keeps_the_schedule_the_swa_average_and_the_frozen_config() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let micro = micro_config();
    train_run(&micro, &run, 1, &[]);

    // The published net records its step; the trainer state holds the SWA average.
    let net1 = run.join("nets/gen-0001.safetensors");
    let step = read_net_metadata(&net1, "cfzero.trainer_step").unwrap();
    assert_eq!(
        step.as_deref(),
        Some("4"),
        "micro trains 4 steps a generation"
    );
    let swa = run.join(format!("{}.swa.safetensors", trainer_state_stem(&run, 1)));
    assert!(swa.exists(), "SWA every 2 steps: an average after 4");

    // --force with another net shape is refused, and the frozen config stays as it was.
    let frozen = std::fs::read(run.join("config.toml")).unwrap();
    let wider = micro_with(
        &tmp.path().join("wider.toml"),
        &[("d_model = 16", "d_model = 32")],
    );
    let out = run_cmd(
        "train",
        &wider,
        &run,
        &["--resume", "--force", "--generations", "2"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("shape of [network]"), "{err}");
    assert_eq!(std::fs::read(run.join("config.toml")).unwrap(), frozen);

    // Temporary files: one a killed writer left an hour ago, one being written right now.
    let old = run.join("nets/gen-0002.safetensors.tmp4242-00000000deadbeef");
    let young = run.join("games/gen-0001/g00099.cfzg.tmp4343-0000000000c0ffee");
    std::fs::write(&old, b"half a net").unwrap();
    std::fs::write(&young, b"half a game").unwrap();
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();

    // The run stood stopped for three hours: its nets' file times say so, but the minutes
    // of training they record do not count the pause.
    let minutes = |g: u32| -> f64 {
        let net = run.join(format!("nets/gen-{g:04}.safetensors"));
        read_net_metadata(&net, "cfzero.run_minutes")
            .unwrap()
            .map_or(0.0, |m| m.parse().unwrap())
    };
    let minutes1 = minutes(1);
    assert!(minutes1 > 0.0 && minutes1 < 10.0, "{minutes1}");
    let hours_ago = SystemTime::now() - Duration::from_secs(3 * 3600);
    for g in [0, 1] {
        std::fs::File::options()
            .write(true)
            .open(run.join(format!("nets/gen-{g:04}.safetensors")))
            .unwrap()
            .set_modified(hours_ago)
            .unwrap();
    }

    // The trainer state the net was published with is lost, and another trainer's state of
    // the same generation is there (saved by a trainer whose net never became the published
    // one; here unreadable, so loading it would fail the resume): it is not loaded, and the
    // resume goes on from the net at step 4 instead of warming up again.
    let stem = trainer_state_stem(&run, 1);
    let tag = stem.rsplit('-').next().unwrap().to_owned();
    std::fs::remove_dir_all(run.join("state")).unwrap();
    std::fs::create_dir(run.join("state")).unwrap();
    for ext in ["safetensors", "optim"] {
        let foreign = run.join(format!("state/trainer-gen-0001-0ther000.{ext}"));
        std::fs::write(foreign, b"another trainer's state").unwrap();
    }
    let out = train_run(&micro, &run, 2, &["--resume"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "published with the trainer state {tag}, which the run does not hold"
        )),
        "{err}"
    );
    assert!(
        err.contains("fresh optimizer at step 4 (the learning-rate schedule goes on)"),
        "{err}"
    );
    assert!(err.contains("removed 1 temporary file"), "{err}");
    assert!(!old.exists());
    assert!(
        young.exists(),
        "a young temporary file may be another writer's"
    );
    let net2 = run.join("nets/gen-0002.safetensors");
    let step = read_net_metadata(&net2, "cfzero.trainer_step").unwrap();
    assert_eq!(step.as_deref(), Some("8"));
    let minutes2 = minutes(2);
    assert!(
        minutes2 > minutes1 && minutes2 < minutes1 + 10.0,
        "generation 1 at minute {minutes1}, generation 2 at {minutes2}"
    );
}
