//! A run directory of an older version, whose workers wrote their games straight into
//! `games/gen-N/` and which holds no chunks, heads, uploader starts or chunk cursor, resumes:
//! its workers' games stay where they are, unchanged, and are still the run's games.

mod common;

use common::*;

#[test]
fn a_run_directory_of_an_older_version_resumes_with_its_workers_games() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    train_run(&micro_config(), &run, 1, &[]);
    // As an older version left it: generation 1's games as a worker's, no chunks.
    for d in ["chunks", "heads", "workers", "pgn/gen-0001"] {
        let _ = std::fs::remove_dir_all(run.join(d));
    }
    let _ = std::fs::remove_file(run.join("state/chunk-cursor.json"));
    let gen1 = run.join("games/gen-0001");
    for f in record_files(&gen1) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        std::fs::rename(&f, gen1.join(format!("w9-{name}"))).unwrap();
    }
    let before = snapshot(&run.join("games"));
    assert!(!before.is_empty());

    let out = train_run(&micro_config(), &run, 2, &["--resume"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("generation 1,"), "{stderr}");
    assert!(run.join("nets/gen-0002.safetensors").exists());
    for (path, bytes) in &before {
        let now = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(&now == bytes, "{} changed", path.display());
    }
    // Every game of the run, the worker's and the new generation's, once each.
    let exported = tmp.path().join("v6");
    cfzero_ok(&[
        "export-data",
        "--run",
        run.to_str().unwrap(),
        "--out",
        exported.to_str().unwrap(),
    ]);
    let games = std::fs::read_dir(&exported).unwrap().count();
    let gen2 = record_files(&run.join("games/gen-0002")).len();
    assert!(gen2 > 0);
    assert_eq!(games, before.len() + gen2);
}
