//! `cfzero train` with a teacher beside self-play, against the scripted UCI engine
//! (`tests/engines/scripted_uci.py` with a `"*"` table: it values every legal move of any
//! position by a fixed rule): the self-play positions are labelled as they arrive, with the
//! engine's values, into the run's label file; training mixes them in at the teacher's
//! weight and logs labels, weight and agreement; a slow teacher never holds self-play up; a
//! teacher that does not start is a one-line error that leaves no run behind.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use cfzero_chess::HistoryFill;
use cfzero_selfplay::record::read_records;
use cfzero_selfplay::replay::replay;
use cfzero_teacher::label_file::{LabelEntry, LabelReader};
use common::*;
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Move, Position, Role};

/// `micro.toml` with a `[teacher]` table that sends every self-play position to the engine,
/// and every fourth game held out (so that three generations have held-out games).
fn config(dir: &Path) -> PathBuf {
    let mut text = std::fs::read_to_string(micro_config())
        .unwrap()
        .replace("[window]\n", "[window]\nvalidation_share = 0.25\n");
    text.push_str("\n[teacher]\nshare = 1.0\nweight = 0.5\nprocesses = 1\nnodes = 1\n");
    let path = dir.join("teacher.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `cfzero train --teacher <scripted engine>` for `generations` on `run`, the engine's table
/// answering every position by its rule, with `env` set.
fn train_with_teacher(
    dir: &Path,
    run: &Path,
    generations: u32,
    env: &[(&str, &str)],
    extra: &[&str],
) -> Output {
    let table = dir.join("table.json");
    std::fs::write(&table, r#"{"*": {}}"#).unwrap();
    let generations = generations.to_string();
    let mut cmd = run_cmd(
        "train",
        &config(dir),
        run,
        &[
            "--generations",
            &generations,
            "--teacher",
            &scripted_engine(),
        ],
    );
    cmd.args(extra);
    cmd.env("SCRIPTED_UCI_TABLE", &table);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "train failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The entries of every label file of the run.
fn labels(run: &Path) -> Vec<LabelEntry> {
    let mut out = Vec::new();
    for f in files_under(&run.join("teacher")) {
        let mut r = LabelReader::open(&f).unwrap();
        while let Some(e) = r.next_entry().unwrap() {
            out.push(e);
        }
    }
    out
}

/// The FEN of every position the run's games reached (before each move).
fn game_positions(run: &Path) -> Vec<String> {
    let mut fens = Vec::new();
    for f in files_under(&run.join("games")) {
        if f.extension().is_some_and(|e| e == "cfzg") {
            for game in read_records(&f).unwrap() {
                replay(&game, |_, state, _, _| fens.push(state.fen())).unwrap();
            }
        }
    }
    fens
}

/// Checks that the run's labels are positions its games reached, with the plies before them,
/// each with every legal move
/// and the engine's best by its rule (no position skipped); returns how many there are.
fn check_labels(run: &Path) -> usize {
    let entries = labels(run);
    let reached: BTreeSet<String> = game_positions(run).into_iter().collect();
    assert!(!entries.is_empty(), "no label written");
    for e in &entries {
        let LabelEntry::Label(label) = e else {
            panic!("a position was skipped: {e:?}")
        };
        assert!(
            reached.contains(&label.fen),
            "{} is no position of the run",
            label.fen
        );
        // Its game's last plies come with it, from a position of the run, and lead to it.
        let history = label
            .history
            .as_ref()
            .expect("a self-play label has its game");
        assert!(reached.contains(&history.root_fen), "{history:?}");
        assert!(history.moves.len() <= 7, "{history:?}");
        assert_eq!(
            history.replay(HistoryFill::No).unwrap().fen(),
            label.fen,
            "{history:?}"
        );
        let position: Chess = label
            .fen
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap();
        assert_eq!(
            label.moves.len(),
            position.legal_moves().len(),
            "{}",
            label.fen
        );
        let best = label.moves[label.best].0.to_move(&position).unwrap();
        assert_eq!(
            UciMove::from_move(best, CastlingMode::Standard).to_string(),
            rule_best(&position),
            "{}",
            label.fen
        );
    }
    entries.len()
}

/// The scripted engine's rule, written out again: the move after which the mover is most
/// material ahead (100 cp a pawn), plus the sum of its UCI text's character codes mod 13;
/// the first in UCI order among equals.
fn rule_best(position: &Chess) -> String {
    let value = |r: Role| match r {
        Role::Pawn => 1,
        Role::Knight | Role::Bishop => 3,
        Role::Rook => 5,
        Role::Queen => 9,
        Role::King => 0,
    };
    let mover = position.turn();
    let mut moves: Vec<(String, Move)> = position
        .legal_moves()
        .into_iter()
        .map(|m| (UciMove::from_move(m, CastlingMode::Standard).to_string(), m))
        .collect();
    moves.sort_by(|a, b| a.0.cmp(&b.0));
    let mut best: Option<(i64, String)> = None;
    for (text, m) in moves {
        let after = position.clone().play(m).unwrap();
        let ahead: i64 = after
            .board()
            .iter()
            .map(|(_, p)| {
                let v = value(p.role);
                if p.color == mover { v } else { -v }
            })
            .sum();
        let score = 100 * ahead + text.bytes().map(i64::from).sum::<i64>() % 13;
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, text));
        }
    }
    best.unwrap().1
}

#[test]
fn train_labels_its_positions_beside_self_play_and_learns_from_them() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let out = train_with_teacher(tmp.path(), &run, 3, &[], &[]);

    // Labels of the run's own positions, each the engine's answer.
    let before = check_labels(&run);

    // The log says how many labels, at what weight, and how often the net agrees.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("gen ")).collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    for l in &lines {
        assert!(l.contains(" | teacher "), "{l}");
    }
    assert!(
        lines[2].contains("weight 0.50") && lines[2].contains(" agree "),
        "{}",
        lines[2]
    );
    let (events, _) = read_tensorboard(&run.join("tb"));
    let at = |tag: &str, step: u64| {
        events
            .iter()
            .find(|e| e.tag == tag && e.step == step)
            .unwrap_or_else(|| panic!("no {tag} at {step}"))
            .value
    };
    assert_eq!(at("teacher/weight", 3), 0.5);
    assert!(at("teacher/labels", 3) >= 1.0);
    let agreement = at("teacher/agreement", 3);
    assert!((0.0..=1.0).contains(&agreement), "{agreement}");
    // The labels of held-out games are in files of their own, which say so.
    let held: Vec<PathBuf> = files_under(&run.join("teacher"))
        .into_iter()
        .filter(|f| {
            let split = LabelReader::open(f).unwrap().header().split;
            split == Some(cfzero_teacher::label_file::LabelSplit::HeldOut)
        })
        .collect();
    assert_eq!(held.len(), 1, "{held:?}");
    assert!(held[0].ends_with("held-out-01.cfl"), "{held:?}");
    assert!(
        LabelReader::open(&held[0])
            .unwrap()
            .next_entry()
            .unwrap()
            .is_some()
    );
    assert!(at("teacher/labels_per_second", 3) > 0.0);

    // A resumed run appends to the same label files and keeps what it had. It plays two
    // generations: the positions of the first are labelled while the second plays (the feed
    // is held while training, and a stop drops what is still waiting).
    train_with_teacher(tmp.path(), &run, 5, &[], &["--resume"]);
    let files = files_under(&run.join("teacher"));
    assert_eq!(
        files.len(),
        2,
        "the training and the held-out file: {files:?}"
    );
    let resumed = labels(&run).len();
    assert!(resumed > before);

    // Resumed without `--teacher`, the run keeps the engine it was started with.
    let out = run_cmd(
        "train",
        &config(tmp.path()),
        &run,
        &["--generations", "7", "--resume"],
    )
    .env("SCRIPTED_UCI_TABLE", tmp.path().join("table.json"))
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("the run keeps its teacher"), "{stderr}");
    assert!(
        stderr.contains("labels 100% of the self-play positions"),
        "its engines start: {stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find(|l| l.starts_with("gen    7")).unwrap();
    assert!(line.contains(" | teacher "), "{line}");
    assert!(labels(&run).len() > resumed, "{stderr}");
}

#[test]
fn a_slow_teacher_never_holds_self_play_up() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    // Each answer takes half a second: labelling every position would take minutes.
    train_with_teacher(
        tmp.path(),
        &run,
        3,
        &[("SCRIPTED_UCI_DELAY_MS", "500")],
        &[],
    );
    let offered = game_positions(&run).len();
    let labelled = labels(&run).len();
    assert!(
        labelled * 2 < offered,
        "{labelled} of {offered} positions labelled: self-play waited for the teacher"
    );
}

#[test]
fn a_teacher_that_does_not_start_is_a_one_line_error_and_leaves_no_run() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let config = config(tmp.path());
    // `train`, and `learn` whose teacher labels its workers' games.
    for command in ["train", "learn"] {
        let out = run_cmd(
            command,
            &config,
            &run,
            &["--generations", "1", "--teacher", "/nonexistent/engine"],
        )
        .output()
        .unwrap();
        assert_user_error_output(command, &out, "the teacher (/nonexistent/engine)");
        assert!(!run.exists(), "{command}: a run directory was left behind");
    }
    // `learn --data` trains on fixed data: its labels come from `cfzero label`.
    let out = run_cmd(
        "learn",
        &config,
        &run,
        &[
            "--data",
            "pgn:tests/data/pgn/lichess_sample.pgn",
            "--teacher",
            "/usr/games/stockfish",
        ],
    )
    .output()
    .unwrap();
    assert_user_error_output("learn --data --teacher", &out, "cfzero label");
}

#[test]
fn learn_labels_its_workers_games_as_they_arrive() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let table = tmp.path().join("table.json");
    std::fs::write(&table, r#"{"*": {}}"#).unwrap();
    let err = tmp.path().join("learn.err");
    let mut learn = Killed(
        run_cmd(
            "learn",
            &config(tmp.path()),
            &run,
            &["--generations", "2", "--teacher", &scripted_engine()],
        )
        .env("SCRIPTED_UCI_TABLE", &table)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !run.join("nets/gen-0000.safetensors").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "learn created no run in 60 s"
        );
        assert!(learn.0.try_wait().unwrap().is_none(), "learn exited early");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _worker = Killed(
        cfzero(&[
            "selfplay",
            "--device",
            "cpu",
            "--run",
            run.to_str().unwrap(),
            "--worker",
            "w1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let status = loop {
        if let Some(status) = learn.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "learn did not finish 2 generations in 300 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert!(status.success(), "learn failed: {stderr}");
    // Every label is a position of the worker's games, with the engine's best move.
    check_labels(&run);
    // Each generation's line carries the teacher's figures.
    let log = std::fs::read_to_string(run.join("log.tsv")).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
    assert!(log.lines().all(|l| l.contains(" | teacher ")), "{log}");
}
