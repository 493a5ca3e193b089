//! Self-play with one actor and a fixed seed plays the same games every time, whatever the
//! timing of the threads (the actor's two half-batches may or may not share a forward pass of
//! the inference thread): two runs of the same config write byte-identical game records.
//!
//! This rests on a position's evaluation not depending on the other positions of its forward
//! pass, which holds on the CPU with one libtorch thread for inference (`[inference] threads =
//! 1`, the default). With more threads, libtorch splits the sums of a linear layer over a
//! batch of a few rows across threads, and such a batch rounds differently from a larger one.
//! The native backend holds it by construction (a position's products never mix with
//! another's sums), and with the same seed it plays the same moves as libtorch.

mod common;

use std::path::{Path, PathBuf};

use cfzero_selfplay::GameRecord;
use cfzero_selfplay::record::read_records;
use common::*;

/// `micro.toml` without the evaluation matches and with one training step, in f32: only the
/// generation's self-play matters here. Micro has one actor (`actors = 1`).
fn config(dir: &Path, name: &str, seed: u64, backend: &str) -> PathBuf {
    micro_with(
        &dir.join(name),
        &[
            ("actors = 1", "actors = 1"), // (asserts that micro has one actor)
            ("every = 1", "every = 0"),
            ("steps_per_generation = 4", "steps_per_generation = 1"),
            ("seed = 7", &format!("seed = {seed}")),
            (
                "max_batch = 64",
                // f32: libtorch and the native pass agree to 1e-4 there; in bf16 (a CPU
                // with AVX-512 BF16 under `auto`) they round differently.
                &format!("max_batch = 64\nbackend = \"{backend}\"\nprecision = \"f32\""),
            ),
        ],
    )
}

/// The record files of generation 1 of a run: (file name, bytes, game).
fn games(run: &Path) -> Vec<(String, Vec<u8>, GameRecord)> {
    let files = record_files(&run.join("games/gen-0001"));
    assert_eq!(files.len(), 4, "micro plays 4 games per generation");
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let mut games = read_records(&p).unwrap();
            assert_eq!(games.len(), 1);
            (name, std::fs::read(&p).unwrap(), games.pop().unwrap())
        })
        .collect()
}

/// Generation 1 of three runs (name, config) under `dir`, trained at once: they compete for
/// the cores, so their threads' timing differs. Their games, in the order given.
fn one_generation_at_once(
    dir: &Path,
    runs: [(&str, &PathBuf); 3],
) -> [Vec<(String, Vec<u8>, GameRecord)>; 3] {
    let runs = runs.map(|(name, config)| (dir.join(name), config.clone()));
    std::thread::scope(|s| {
        for (run, config) in &runs {
            s.spawn(move || train_run(config, run, 1, &[]));
        }
    });
    runs.map(|(run, _)| games(&run))
}

#[test]
fn one_actor_with_a_fixed_seed_plays_the_same_games() {
    let tmp = tempfile::tempdir().unwrap();
    let seed7 = config(tmp.path(), "seed7.toml", 7, "tch");
    let seed8 = config(tmp.path(), "seed8.toml", 8, "tch");
    let [a, b, c] =
        one_generation_at_once(tmp.path(), [("a", &seed7), ("b", &seed7), ("c", &seed8)]);

    for ((name_a, bytes_a, game_a), (name_b, bytes_b, game_b)) in a.iter().zip(&b) {
        assert_eq!(name_a, name_b);
        assert_eq!(
            game_a, game_b,
            "{name_a} differs between two runs with seed 7"
        );
        assert!(bytes_a == bytes_b, "{name_a}: the files differ");
    }
    // Not vacuous: the games of a run differ from each other (moves are sampled in the
    // opening), and another seed plays other games.
    let moves = |g: &GameRecord| g.positions.iter().map(|p| p.played).collect::<Vec<_>>();
    let first = moves(&a[0].2);
    assert!(
        a.iter().any(|(_, _, g)| moves(g) != first),
        "all 4 games of the run are the same"
    );
    assert!(
        a.iter().zip(&c).any(|(x, y)| x.2 != y.2),
        "seed 8 played the games of seed 7"
    );
}

/// The played moves of each game.
fn played(games: &[(String, Vec<u8>, GameRecord)]) -> Vec<Vec<u8>> {
    games
        .iter()
        .map(|(_, _, g)| g.positions.iter().map(|p| p.played).collect())
        .collect()
}

#[test]
fn the_native_backend_plays_its_own_games_again_and_the_moves_of_libtorch() {
    let tmp = tempfile::tempdir().unwrap();
    let native = config(tmp.path(), "native.toml", 7, "native");
    let tch = config(tmp.path(), "tch.toml", 7, "tch");
    let [n1, n2, t] =
        one_generation_at_once(tmp.path(), [("n1", &native), ("n2", &native), ("t", &tch)]);
    for ((name, bytes_1, game_1), (_, bytes_2, game_2)) in n1.iter().zip(&n2) {
        assert_eq!(game_1, game_2, "{name} differs between two native runs");
        assert!(bytes_1 == bytes_2, "{name}: the files differ");
    }
    // The same seed on both backends: the same moves (the search statistics may differ in
    // the last bits, the choices do not).
    assert_eq!(
        played(&n1),
        played(&t),
        "native and libtorch played different moves"
    );
}
