//! `cfzero train` end to end on the `micro` preset, two generations: every file of the run
//! directory exists and parses with an independent reader.

mod common;

use common::*;

/// `micro.toml`: games per generation, training steps per generation, game length.
const GAMES: usize = 4;
const STEPS: u64 = 4;
const MAX_PLIES: u32 = 40;

#[test]
fn two_generations_on_micro() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let config = micro_config();
    let out = train_run(&config, &run, 2, &[]);
    let net_config = network_config(&config);

    // The frozen config, and the nets of generations 0 (random), 1 and 2.
    assert!(run.join("config.toml").is_file());
    for g in 0..=2 {
        check_net(
            &run.join(format!("nets/gen-{g:04}.safetensors")),
            &net_config,
        );
    }
    assert!(!run.join("nets/gen-0003.safetensors").exists());
    // The trainer state of the last generation (older ones are pruned).
    let state = trainer_state_stem(&run, 2);
    check_net(&run.join(format!("{state}.safetensors")), &net_config);
    assert!(run.join(format!("{state}.optim")).is_file());

    // Game records: each decodes, replays legally, and is the same game as in the PGN.
    let mut trainable = 0;
    for g in 1..=2u32 {
        let games = check_records(&run.join(format!("games/gen-{g:04}")), g - 1, MAX_PLIES);
        assert_eq!(games.len(), GAMES, "records of generation {g}");
        trainable += games
            .iter()
            .flat_map(|c| &c.record.positions)
            .filter(|p| p.is_trainable())
            .count();
        check_pgn(&run.join(format!("pgn/gen-{g:04}.pgn")), &games);
    }
    assert!(trainable > 0, "no position carries a training target");

    // TensorBoard: one event file with every loss term, finite, at each of the 2 x 4 steps,
    // and the self-play and evaluation scalars of each generation.
    let (events, files) = read_tensorboard(&run.join("tb"));
    assert_eq!(files, 1);
    check_training_scalars(&events, 1..=2 * STEPS);
    for tag in [
        "selfplay/games",
        "selfplay/game_length",
        "selfplay/positions_per_second",
        "selfplay/avg_batch",
    ] {
        let steps: Vec<u64> = events
            .iter()
            .filter(|e| e.tag == tag)
            .map(|e| e.step)
            .collect();
        assert_eq!(steps, [1, 2], "{tag}");
    }
    let games_logged: Vec<f32> = events
        .iter()
        .filter(|e| e.tag == "selfplay/games")
        .map(|e| e.value)
        .collect();
    assert_eq!(games_logged, [GAMES as f32; 2]);
    let scores: Vec<f32> = events
        .iter()
        .filter(|e| e.tag == "eval/score_vs_anchor")
        .map(|e| e.value)
        .collect();
    assert_eq!(scores.len(), 2, "eval_every = 1");
    assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)));
    for tag in [
        "eval/elo_vs_anchor_low",
        "eval/elo_vs_anchor",
        "eval/elo_vs_anchor_high",
    ] {
        let elo: Vec<f32> = events
            .iter()
            .filter(|e| e.tag == tag)
            .map(|e| e.value)
            .collect();
        assert_eq!(elo.len(), 2, "{tag}");
        assert!(elo.iter().all(|e| e.abs() <= 800.0), "{tag}: {elo:?}");
    }

    // The evaluation against the default anchor, the greedy mover: a row a generation in
    // eval.tsv (micro has no eval openings: one pair of games from the start) and its plot.
    let rows = eval_rows(&run);
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (row, g) in rows.iter().zip(["1", "2"]) {
        assert_eq!(row[0], g, "{row:?}");
        assert_eq!(row[3], "greedy", "{row:?}");
        let games: u32 = row[4..7].iter().map(|n| n.parse::<u32>().unwrap()).sum();
        assert_eq!(games, 2, "{row:?}");
    }
    let png = std::fs::read(run.join("elo.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");

    // log.tsv: one line per generation, the same lines as printed.
    let log = std::fs::read_to_string(run.join("log.tsv")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(lines[0].starts_with("gen    1 |"), "{log}");
    assert!(lines[1].starts_with("gen    2 |"), "{log}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for l in &lines {
        assert!(stdout.contains(l), "{l:?} is not in the output:\n{stdout}");
    }

    // No temporary file of an atomic write is left behind.
    let stray: Vec<_> = files_under(&run)
        .into_iter()
        .filter(|p| is_temporary(p))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}
