//! `cfzero label` against a scripted UCI engine (`tests/engines/scripted_uci.py`, which
//! answers from a table this test writes): the labels are the table's values turned into
//! win probabilities by hand-written formulas, for both ways of getting action values; a
//! killed run resumes to the same bytes; engines that hang, die, print garbage or play an
//! illegal move are restarted with a warning and no label is lost or invented; and
//! `learn --data teacher:FILE` trains on the result.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use cfzero_teacher::label_file::{LabelEntry, LabelMove, LabelReader};
use common::*;
use rand::SeedableRng;
use rand::seq::IndexedRandom;
use serde_json::{Value, json};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, EnPassantMode, Move, Position};

/// The test engine's command line.
fn engine() -> String {
    scripted_engine()
}

fn uci(m: &Move) -> String {
    UciMove::from_move(*m, CastlingMode::Standard).to_string()
}

fn position(fen: &str) -> Chess {
    fen.parse::<Fen>()
        .unwrap()
        .into_position(CastlingMode::Standard)
        .unwrap()
}

/// A score of the table for move `i` of a position: mostly centipawns, a few mates, some
/// with a W/D/L.
fn score(i: usize, salt: usize) -> Value {
    match (i + salt) % 11 {
        3 => json!({"mate": 2}),
        7 => json!({"mate": -4}),
        5 => json!({"cp": 35, "wdl": [400, 500, 100]}),
        k => json!({"cp": (k as i64 * 73 + salt as i64 * 17) % 400 - 200}),
    }
}

/// Action value of a table score, written out by hand: Lichess's logistic for centipawns,
/// 1 and 0 for mates, whatever W/D/L comes with the score (ChessBench's action value).
fn expected(score: &Value) -> f64 {
    if let Some(m) = score.get("mate") {
        return if m.as_i64().unwrap() > 0 { 1.0 } else { 0.0 };
    }
    let cp = score["cp"].as_f64().unwrap();
    1.0 / (1.0 + (-0.003_682_08 * cp).exp())
}

/// The table's W/D/L of a score: its own, else `[p, 0, 1 - p]` of the action value.
fn expected_wdl(score: &Value) -> [f64; 3] {
    if let Some(wdl) = score.get("wdl") {
        let v: Vec<f64> = (0..3).map(|i| wdl[i].as_f64().unwrap() / 1000.0).collect();
        return [v[0], v[1], v[2]];
    }
    let p = expected(score);
    [p, 0.0, 1.0 - p]
}

/// Positions of a seeded random walk from the start (and the walk's positions with no legal
/// move, if it meets one, are left out).
fn walk(n: usize, seed: u64) -> Vec<String> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut pos = Chess::default();
    let mut out = Vec::new();
    while out.len() < n {
        let legal = pos.legal_moves();
        if legal.is_empty() || pos.halfmoves() > 60 {
            pos = Chess::default();
            continue;
        }
        out.push(Fen::from_position(&pos, EnPassantMode::Legal).to_string());
        let m = *legal.choose(&mut rng).unwrap();
        pos.play_unchecked(m);
    }
    out
}

/// A table for `fens` (every legal move scored), with `faults` (FEN index, fault).
fn table(fens: &[String], faults: &[(usize, &str)]) -> Value {
    let mut t = serde_json::Map::new();
    for (p, fen) in fens.iter().enumerate() {
        let pos = position(fen);
        let mut moves = serde_json::Map::new();
        let mut best: Option<(f64, String)> = None;
        for (i, m) in pos.legal_moves().iter().enumerate() {
            let s = score(i, p);
            let e = expected(&s);
            if best.as_ref().is_none_or(|(b, _)| e > *b) {
                best = Some((e, uci(m)));
            }
            moves.insert(uci(m), s);
        }
        let mut entry = json!({"moves": moves, "best": best.unwrap().1});
        if let Some((_, f)) = faults.iter().find(|(i, _)| *i == p) {
            entry["fault"] = json!(f);
        }
        t.insert(fen.clone(), entry);
    }
    Value::Object(t)
}

struct Setup {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    epd: PathBuf,
    table: PathBuf,
}

fn setup(fens: &[String], table: &Value) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let epd = path.join("positions.epd");
    std::fs::write(&epd, fens.join("\n") + "\n").unwrap();
    let table_path = path.join("table.json");
    std::fs::write(&table_path, table.to_string()).unwrap();
    std::fs::create_dir(path.join("state")).unwrap();
    Setup {
        _dir: dir,
        dir: path,
        epd,
        table: table_path,
    }
}

fn label_cmd(s: &Setup, out: &Path, extra: &[&str], env: &[(&str, &str)]) -> std::process::Command {
    let from = format!("epd:{}", s.epd.display());
    let engine = engine();
    let mut args = vec![
        "label",
        "--from",
        &from,
        "--out",
        out.to_str().unwrap(),
        "--engine",
        &engine,
        "--nodes",
        "100",
    ];
    args.extend_from_slice(extra);
    let mut cmd = cfzero(&args);
    cmd.env("SCRIPTED_UCI_TABLE", &s.table)
        .env("SCRIPTED_UCI_STATE", s.dir.join("state"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn run_ok(cmd: &mut std::process::Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "cfzero label failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn entries(path: &Path) -> Vec<LabelEntry> {
    let mut r = LabelReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(e) = r.next_entry().unwrap() {
        out.push(e);
    }
    assert!(!r.torn());
    out
}

/// Asserts that `entries` are the table's labels of `fens`, in order; with `engine_best`
/// the best move is the table's `best` (MultiPV: the engine's `bestmove`), else the first of
/// the highest win probability (searchmoves).
fn assert_labels(entries: &[LabelEntry], fens: &[String], table: &Value, engine_best: bool) {
    assert_eq!(entries.len(), fens.len());
    let q = 1.0 / 65535.0;
    for (entry, fen) in entries.iter().zip(fens) {
        let LabelEntry::Label(label) = entry else {
            panic!("{fen}: no label: {entry:?}");
        };
        assert_eq!(label.fen, *fen);
        assert_eq!(label.plies_left, None);
        let pos = position(fen);
        let legal = pos.legal_moves();
        assert_eq!(label.moves.len(), legal.len(), "{fen}");
        let by_move: BTreeMap<String, f32> = label
            .moves
            .iter()
            .map(|(m, p)| (uci(&m.to_move(&pos).expect("a legal move")), *p))
            .collect();
        assert_eq!(by_move.len(), legal.len(), "{fen}: a move twice");
        let t = &table[fen.as_str()];
        for m in &legal {
            let want = expected(&t["moves"][uci(m)]);
            let got = f64::from(by_move[&uci(m)]);
            assert!(
                (got - want).abs() <= q,
                "{fen} {}: {got} against {want}",
                uci(m)
            );
        }
        let best = uci(&label.moves[label.best].0.to_move(&pos).unwrap());
        if engine_best {
            assert_eq!(best, t["best"].as_str().unwrap(), "{fen}");
        } else {
            let top = legal
                .iter()
                .map(|m| expected(&t["moves"][uci(m)]))
                .fold(f64::MIN, f64::max);
            let first = legal
                .iter()
                .find(|m| (expected(&t["moves"][uci(m)]) - top).abs() < 1e-12)
                .unwrap();
            assert_eq!(best, uci(first), "{fen}");
        }
        let wdl = expected_wdl(&t["moves"][best.as_str()]);
        for (g, w) in label.wdl.iter().zip(wdl) {
            assert!(
                (f64::from(*g) - w).abs() <= q,
                "{fen}: {:?} against {wdl:?}",
                label.wdl
            );
        }
    }
}

#[test]
fn labels_are_the_engines_values_with_multipv_and_with_searchmoves() {
    let mut fens = walk(6, 1);
    // One legal move only; and a mate, which gets no label but an entry saying why.
    fens.push("k7/8/8/8/8/8/8/KQ6 b - - 0 1".into());
    let t = table(&fens, &[]);
    let s = setup(&fens, &t);
    let mate = "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1";
    let mut with_mate = fens.clone();
    with_mate.push(mate.into());
    std::fs::write(&s.epd, with_mate.join("\n") + "\n").unwrap();
    for (method, engine_best) in [("multipv", true), ("searchmoves", false)] {
        let out = s.dir.join(format!("{method}.cfl"));
        run_ok(&mut label_cmd(&s, &out, &["--method", method], &[]));
        let all = entries(&out);
        assert_labels(&all[..fens.len()], &fens, &t, engine_best);
        match &all[fens.len()] {
            LabelEntry::Skipped { fen, reason } => {
                assert_eq!(fen, mate);
                assert!(reason.contains("no legal move"), "{reason}");
            }
            e => panic!("the mate got {e:?}"),
        }
        assert_eq!(all.len(), fens.len() + 1);
    }
}

/// With a budget too small for every MultiPV line (the engine leaves some moves out), the
/// missing moves are searched one by one: the labels are still the table's, complete.
#[test]
fn moves_multipv_did_not_reach_are_searched_on_their_own() {
    let fens = walk(4, 7);
    let mut t = table(&fens, &[]);
    for fen in &fens {
        let moves: Vec<String> = t[fen.as_str()]["moves"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let best = t[fen.as_str()]["best"].as_str().unwrap().to_string();
        let unreached: Vec<&String> = moves.iter().filter(|m| **m != best).step_by(2).collect();
        assert!(!unreached.is_empty());
        t[fen.as_str()]["unreached"] = json!(unreached);
    }
    let s = setup(&fens, &t);
    let out = s.dir.join("unreached.cfl");
    let o = run_ok(&mut label_cmd(&s, &out, &["--processes", "1"], &[]));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains(", 0 engine warnings;"), "{stderr}");
    assert_labels(&entries(&out), &fens, &t, true);
}

#[test]
fn a_killed_label_resumes_to_the_same_file() {
    let fens = walk(40, 2);
    let t = table(&fens, &[]);
    let s = setup(&fens, &t);
    let whole = s.dir.join("whole.cfl");
    run_ok(&mut label_cmd(&s, &whole, &["--processes", "2"], &[]));

    let resumed = s.dir.join("resumed.cfl");
    let mut child = label_cmd(
        &s,
        &resumed,
        &["--processes", "2"],
        &[("SCRIPTED_UCI_DELAY_MS", "40")],
    )
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    // Killed (SIGKILL: no chance to tidy up) once some labels are out.
    let start = Instant::now();
    loop {
        let n = LabelReader::open(&resumed)
            .ok()
            .map(|mut r| {
                let mut n = 0;
                while let Ok(Some(_)) = r.next_entry() {
                    n += 1;
                }
                n
            })
            .unwrap_or(0);
        if n >= 8 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no labels appear"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let partial = entries(&resumed).len();
    assert!(partial >= 8 && partial < fens.len(), "{partial}");
    // A partial last frame, as a kill in the middle of a write leaves.
    let mut bytes = std::fs::read(&resumed).unwrap();
    bytes.extend_from_slice(&[200, 0, 0, 0, 1, 2, 3]);
    std::fs::write(&resumed, &bytes).unwrap();

    let out = run_ok(&mut label_cmd(&s, &resumed, &["--processes", "2"], &[]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cut off a partial last entry"), "{stderr}");
    assert!(
        stderr.contains(&format!("resuming after {partial} of 40")),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&resumed).unwrap(),
        std::fs::read(&whole).unwrap()
    );
    assert_labels(&entries(&whole), &fens, &t, true);
}

#[test]
fn engines_that_hang_die_print_garbage_or_play_illegal_moves_are_restarted() {
    let fens = walk(8, 3);
    let faults = [(1, "hang"), (3, "die"), (4, "garbage"), (6, "illegal")];
    let t = table(&fens, &faults);
    let s = setup(&fens, &t);
    let out = s.dir.join("faults.cfl");
    let o = run_ok(&mut label_cmd(
        &s,
        &out,
        &["--processes", "1", "--timeout", "2"],
        &[],
    ));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.matches("restarting it").count(), 4, "{stderr}");
    assert!(stderr.contains("did not answer within 2 s"), "{stderr}");
    assert!(stderr.contains("exited or closed its pipes"), "{stderr}");
    assert!(stderr.contains("a1a1"), "{stderr}");
    assert!(stderr.contains("zz99"), "{stderr}");
    // Every position labelled, each with the table's values: nothing lost, nothing invented.
    assert_labels(&entries(&out), &fens, &t, true);

    // A position the engine always fails on is written as skipped after the attempts,
    // with the reason; the others are labelled.
    let fens = walk(3, 4);
    let t = table(&fens, &[(1, "die")]);
    let s = setup(&fens, &t);
    let out = s.dir.join("always.cfl");
    let o = run_ok(&mut label_cmd(
        &s,
        &out,
        &["--processes", "1", "--attempts", "2"],
        &[("SCRIPTED_UCI_ALWAYS", "1")],
    ));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.matches("restarting it").count(), 2, "{stderr}");
    let all = entries(&out);
    assert_eq!(all.len(), 3);
    match &all[1] {
        LabelEntry::Skipped { fen, reason } => {
            assert_eq!(fen, &fens[1]);
            assert!(reason.contains("exited or closed its pipes"), "{reason}");
        }
        e => panic!("{e:?}"),
    }
    assert_labels(&[all[0].clone()], &fens[..1], &t, true);
    assert_labels(&[all[2].clone()], &fens[2..], &t, true);
}

#[test]
fn bad_label_arguments_are_one_line_errors() {
    let fens = walk(2, 5);
    let t = table(&fens, &[]);
    let s = setup(&fens, &t);
    let out = s.dir.join("x.cfl");
    let o = label_cmd(&s, &out, &["--from", "book:x"], &[])
        .output()
        .unwrap();
    // clap refuses the second --from before anything runs.
    assert!(!o.status.success());
    let o = cfzero(&[
        "label",
        "--from",
        "book:x",
        "--out",
        out.to_str().unwrap(),
        "--engine",
        "x",
    ])
    .output()
    .unwrap();
    assert_user_error_output("unknown source", &o, "is not a position source");
    let o = cfzero(&[
        "label",
        "--from",
        &format!("epd:{}", s.epd.display()),
        "--out",
        out.to_str().unwrap(),
        "--engine",
        "/nonexistent/engine",
    ])
    .output()
    .unwrap();
    assert_user_error_output("no engine", &o, "cannot start UCI engine");
    // A file begun with other settings is not resumed with these.
    run_ok(&mut label_cmd(&s, &out, &[], &[]));
    let o = label_cmd(&s, &out, &["--method", "searchmoves"], &[])
        .output()
        .unwrap();
    assert_user_error_output(
        "other settings",
        &o,
        "use another output or the same settings",
    );
    // A damaged file is refused, not skipped.
    let mut bytes = std::fs::read(&out).unwrap();
    let last = bytes.len() - 6;
    bytes[last] ^= 0xff;
    std::fs::write(&out, &bytes).unwrap();
    let o = label_cmd(&s, &out, &[], &[]).output().unwrap();
    assert_user_error_output("damaged", &o, "checksum mismatch");
}

#[test]
fn learn_trains_on_teacher_labels() {
    let fens = walk(40, 6);
    let t = table(&fens, &[]);
    let s = setup(&fens, &t);
    let labels = s.dir.join("labels.cfl");
    run_ok(&mut label_cmd(&s, &labels, &[], &[]));
    // `learn` on the labels alone from `config` into `run`, `steps` steps in one generation;
    // its stderr.
    let learn = |config: &Path, run: &Path, steps: &str| {
        let data = format!("teacher:{}", labels.display());
        let o = run_cmd(
            "learn",
            config,
            run,
            &[
                "--data",
                &data,
                "--steps",
                steps,
                "--steps-per-generation",
                steps,
            ],
        )
        .output()
        .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{stderr}");
        stderr
    };
    let run = s.dir.join("run");
    let stderr = learn(&micro_config(), &run, "2");
    assert!(stderr.contains("40 labels from 1 files"), "{stderr}");
    assert!(
        stderr.contains("policy targets at temperature 0.02"),
        "{stderr}"
    );
    assert!(run.join("nets/gen-0001.safetensors").is_file());

    // The config's `[teacher] temperature` makes the targets of `--data teacher:` too, as it
    // does those of a teacher beside self-play.
    let config = s.dir.join("micro-warm.toml");
    let mut text = std::fs::read_to_string(micro_config()).unwrap();
    text.push_str("\n[teacher]\ntemperature = 0.2\n");
    std::fs::write(&config, text).unwrap();
    let stderr = learn(&config, &s.dir.join("run-warm"), "1");
    assert!(
        stderr.contains("policy targets at temperature 0.2"),
        "{stderr}"
    );
}

/// A label move survives its 16-bit form for every legal move of a few positions, castling
/// and promotions included.
#[test]
fn label_moves_round_trip() {
    for fen in [
        "r3k2r/pPpppppp/8/8/8/8/PpPPPPPP/R3K2R w KQkq - 0 1",
        "r3k2r/pPpppppp/8/8/8/8/PpPPPPPP/R3K2R b KQkq - 0 1",
    ] {
        let pos = position(fen);
        for m in pos.legal_moves() {
            assert_eq!(
                LabelMove::of(&m).to_move(&pos),
                Some(m),
                "{fen} {}",
                uci(&m)
            );
        }
    }
}

/// The entries of `cfzero label --from SOURCE` with the scripted engine answering every
/// position by its rule.
fn labelled_by_rule(source: &str) -> Vec<LabelEntry> {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("table.json");
    std::fs::write(&table, r#"{"*": {}}"#).unwrap();
    let out = dir.path().join("labels.cfl");
    let o = cfzero(&[
        "label",
        "--from",
        source,
        "--out",
        out.to_str().unwrap(),
        "--engine",
        &engine(),
    ])
    .env("SCRIPTED_UCI_TABLE", &table)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    entries(&out)
}

/// Lc0's own training data as a position source: every record of a chunk written by Lc0 is
/// labelled, as the position it holds, with the plies left of its game.
#[test]
fn lc0_training_data_is_a_position_source() {
    let chunk = repo_root().join("tests/data/lc0/v6/game_000001.gz");
    let records = cfzero_trainer::lc0_v6::decode_chunk(&std::fs::read(&chunk).unwrap()).unwrap();
    let got = labelled_by_rule(&format!("lc0:{}", chunk.display()));
    assert_eq!(got.len(), records.len());
    for (entry, record) in got.iter().zip(&records) {
        let LabelEntry::Label(label) = entry else {
            panic!("skipped: {entry:?}")
        };
        let position = record.position().unwrap();
        assert_eq!(
            label.fen,
            Fen::from_position(&position, EnPassantMode::Legal).to_string()
        );
        assert_eq!(label.plies_left, Some(record.plies_left.round() as u16));
        assert_eq!(label.moves.len(), position.legal_moves().len());
    }
}

/// A game's positions from PGN carry the game's last plies before them (up to seven, as many
/// as the network's history shows), which replay to the labelled position.
#[test]
fn pgn_positions_carry_the_games_last_plies() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = dir.path().join("game.pgn");
    std::fs::write(
        &pgn,
        "[Event \"t\"]\n[Result \"1/2-1/2\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 Nf6 4. d3 Bc5 5. c3 d6 1/2-1/2\n",
    )
    .unwrap();
    let ucis = [
        "e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "d2d3", "f8c5", "c2c3", "d7d6",
    ];
    // The position before each move, by hand.
    let mut pos = Chess::default();
    let (mut fens, mut moves) = (Vec::new(), Vec::new());
    for u in ucis {
        fens.push(Fen::from_position(&pos, EnPassantMode::Legal).to_string());
        let m = u.parse::<UciMove>().unwrap().to_move(&pos).unwrap();
        moves.push(LabelMove::of(&m));
        pos.play_unchecked(m);
    }
    let got = labelled_by_rule(&format!("pgn:{}", pgn.display()));
    assert_eq!(got.len(), ucis.len());
    for (ply, entry) in got.iter().enumerate() {
        let LabelEntry::Label(label) = entry else {
            panic!("skipped: {entry:?}")
        };
        assert_eq!(label.fen, fens[ply]);
        assert_eq!(label.plies_left, Some((ucis.len() - ply) as u16));
        let history = label.history.as_ref().expect("a PGN position has its game");
        let root = ply.saturating_sub(7);
        assert_eq!(history.root_fen, fens[root], "ply {ply}");
        assert_eq!(history.moves, moves[root..ply], "ply {ply}");
    }
}

/// The engine is given the position as the game reached it (`position fen ROOT moves ...`),
/// so it knows the repetitions the net's history planes show: a move that repeats a position
/// for the third time is a draw for it, though the side to move is a queen up. Without the
/// game the engine would call it a win (the second time round it still does).
#[test]
fn the_engine_sees_the_game_and_labels_a_threefold_repetition_a_draw() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = dir.path().join("game.pgn");
    // Black is a queen up; both knights go back and forth.
    let start = "3qk1n1/8/8/8/8/8/8/4K1N1 w - - 0 1";
    std::fs::write(
        &pgn,
        format!(
            "[Event \"t\"]\n[SetUp \"1\"]\n[FEN \"{start}\"]\n[Result \"0-1\"]\n\n\
             1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Nh5 0-1\n"
        ),
    )
    .unwrap();
    let got = labelled_by_rule(&format!("pgn:{}", pgn.display()));
    assert_eq!(got.len(), 8);
    let value_of = |ply: usize, mv: &str| {
        let LabelEntry::Label(label) = &got[ply] else {
            panic!("skipped: {:?}", got[ply])
        };
        let state = position(&label.fen);
        let m = mv.parse::<UciMove>().unwrap().to_move(&state).unwrap();
        label
            .moves
            .iter()
            .find(|(lm, _)| *lm == LabelMove::of(&m))
            .map(|(_, v)| *v)
            .unwrap()
    };
    // After 4. Ng1, Ng8 would stand on the start position for the third time.
    // Action values are stored to 1/65535.
    let draw = value_of(7, "f6g8");
    assert!(
        (draw - 0.5).abs() < 1e-4,
        "a threefold repetition is a draw: {draw}"
    );
    assert!(value_of(7, "f6h5") > 0.9, "the other moves keep the queen");
    // After 2. Ng1 the same move brings the start position back for the second time only.
    assert!(value_of(3, "f6g8") > 0.9, "a second occurrence is no draw");
}
