//! The in-run evaluation against a UCI engine (`cfzero train --eval-engine`): the scripted
//! `tests/engines/pick_engine.py` as the anchor, never Stockfish. The options the engine
//! offers reach it and the others are left out; every evaluation is a row of `eval.tsv`
//! and a point of `elo.png`; an engine that does not run stops the run before it writes
//! anything.

mod common;

use common::*;

#[test]
fn the_run_plays_the_engine_it_names_and_draws_the_curve() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    // `Pick` is the engine's own option; it offers no `Skill Level`, which is left out.
    let config = micro_with(
        &tmp.path().join("micro.toml"),
        &[(
            "every = 1",
            "every = 1\nengine_nodes = 7\n\
             engine_options = { Pick = \"last\", \"Skill Level\" = \"0\" }",
        )],
    );
    let engine = pick_engine();
    let out = train_run(&config, &run, 2, &["--eval-engine", &engine]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let anchor = "pick-engine 7 nodes, Pick=last";
    assert!(
        stderr.contains(&format!("games against {anchor} at 4 simulations")),
        "the run's first lines say what it plays:\n{stderr}"
    );

    let rows = eval_rows(&run);
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (row, g) in rows.iter().zip([1u32, 2]) {
        assert_eq!(row[0], g.to_string(), "{row:?}");
        assert_eq!(row[3], anchor, "{row:?}");
        let wdl: Vec<u32> = row[4..7].iter().map(|n| n.parse().unwrap()).collect();
        assert_eq!(wdl.iter().sum::<u32>(), 2, "{row:?}");
        let score: f64 = row[7].parse().unwrap();
        let expected = (f64::from(wdl[0]) + 0.5 * f64::from(wdl[1])) / 2.0;
        assert!((score - expected).abs() < 1e-4, "{row:?}");
    }
    let png = std::fs::read(run.join("elo.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");

    let log = std::fs::read_to_string(run.join("log.tsv")).unwrap();
    assert_eq!(log.matches(&format!("| vs {anchor} ")).count(), 2, "{log}");
    // The engine is part of the frozen config: a resume without the flag plays it again.
    let frozen = std::fs::read_to_string(run.join("config.toml")).unwrap();
    assert!(frozen.contains("pick_engine.py"), "{frozen}");
    let out = train_run(&config, &run, 3, &["--resume"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the run keeps its anchor") && stderr.contains("pick_engine.py"),
        "{stderr}"
    );
    let rows = eval_rows(&run);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!((rows[2][0].as_str(), rows[2][3].as_str()), ("3", anchor));
}

#[test]
fn an_engine_that_does_not_run_stops_the_run_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let out = run_cmd(
        "train",
        &micro_config(),
        &run,
        &["--generations", "1", "--eval-engine", "/nonexistent/engine"],
    )
    .output()
    .unwrap();
    assert_user_error_output("a missing anchor engine", &out, "/nonexistent/engine");
    assert!(
        !run.exists(),
        "nothing written for a run that cannot evaluate"
    );
}
