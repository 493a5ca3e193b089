//! Helpers of the `train` integration tests: run the binary, and check every kind of file a
//! run directory holds with an independent reader.

// Each test binary uses a part of these helpers.
#![allow(dead_code)]

pub mod s3;
pub mod uci;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use cfzero_network::{NetworkConfig, load_net};
use cfzero_selfplay::record::{RECORD_EXTENSION, read_records};
use cfzero_selfplay::replay::replay;
use cfzero_selfplay::targets::{SHORT_TERM_THETA, short_term_targets};
use cfzero_selfplay::{GameRecord, GameResult, Termination};
use cfzero_trainer::tensorboard::{ScalarEvent, read_scalars};
use shakmaty::CastlingMode;
use tch::Device;

/// Kills the child when dropped (a failing test leaves no process running).
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The rows of a run's `eval.tsv` (its header checked and left out), each split at tabs.
pub fn eval_rows(run: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(run.join("eval.tsv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "generation\tstep\tminutes\tanchor\twins\tdraws\tlosses\tscore\telo\telo_low\telo_high"
        )
    );
    lines
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// The command line of the test engine `tests/engines/SCRIPT` under the venv's Python, which
/// has python-chess.
fn python_engine(script: &str) -> String {
    let root = repo_root();
    format!(
        "{} {}",
        root.join(".venv/bin/python").display(),
        root.join("tests/engines").join(script).display()
    )
}

/// The scripted UCI engine of the teacher tests (`tests/engines/scripted_uci.py`).
pub fn scripted_engine() -> String {
    python_engine("scripted_uci.py")
}

/// The engine that plays the first (or, with `Pick=last`, the last) legal move in UCI order
/// (`tests/engines/pick_engine.py`).
pub fn pick_engine() -> String {
    python_engine("pick_engine.py")
}

/// The workspace root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `micro` preset.
pub fn micro_config() -> PathBuf {
    repo_root().join("configs/micro.toml")
}

/// Writes `micro.toml` with whole lines replaced (each `from` must be a line of it) to `path`.
pub fn micro_with(path: &Path, replace: &[(&str, &str)]) -> PathBuf {
    let mut text = std::fs::read_to_string(micro_config()).unwrap();
    for (from, to) in replace {
        let n = text.lines().filter(|l| l == from).count();
        assert_eq!(n, 1, "micro.toml should have the line {from:?} once");
        text = text
            .lines()
            .map(|l| if l == *from { *to } else { l })
            .collect::<Vec<_>>()
            .join("\n");
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

/// A freshly initialised micro net saved as `dir/micro.safetensors`.
pub fn save_micro_net(dir: &Path) -> PathBuf {
    let path = dir.join("micro.safetensors");
    let net = cfzero_network::Net::new(&network_config(&micro_config()), Device::Cpu).unwrap();
    cfzero_network::save_net(&net, &path).unwrap();
    path
}

/// `cfzero` with `args` fails as bad input: exit code 2, one line of stderr containing `needle`.
pub fn assert_user_error_line(args: &[&str], needle: &str) {
    let out = cfzero(args).output().expect("cfzero runs");
    assert_user_error_output(&format!("{args:?}"), &out, needle);
}

/// `out` of a command (`what`, for messages) is bad input: exit code 2, one line of stderr
/// containing `needle`. Returns that line.
pub fn assert_user_error_output(what: &str, out: &Output, needle: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err}");
    assert!(
        err.contains(needle),
        "{what}: {err:?} should say {needle:?}"
    );
    err
}

/// `cfzero` with `args`, run from the workspace root.
pub fn cfzero(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cfzero"));
    cmd.args(args).current_dir(repo_root());
    cmd
}

/// Runs cfzero with `args` and asserts that it succeeded; its stdout.
pub fn cfzero_ok(args: &[&str]) -> String {
    let out = cfzero(args).output().expect("cfzero runs");
    assert!(
        out.status.success(),
        "cfzero {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `cfzero COMMAND --device cpu --config CONFIG --run RUN EXTRA...` (`train` or `learn`),
/// not yet run (the caller adds its environment).
pub fn run_cmd(command: &str, config: &Path, run: &Path, extra: &[&str]) -> Command {
    let mut cmd = cfzero(&[
        command,
        "--device",
        "cpu",
        "--config",
        config.to_str().unwrap(),
        "--run",
        run.to_str().unwrap(),
    ]);
    cmd.args(extra);
    cmd
}

/// Runs `cfzero train` with `args` to the end and asserts that it succeeded.
pub fn train(args: &[&str]) -> Output {
    let mut all = vec!["train", "--device", "cpu"];
    all.extend_from_slice(args);
    let out = cfzero(&all).output().expect("cfzero runs");
    assert!(
        out.status.success(),
        "cfzero {all:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `train --config CONFIG --run RUN --generations N [extra]`.
pub fn train_run(config: &Path, run: &Path, generations: u32, extra: &[&str]) -> Output {
    let generations = generations.to_string();
    let mut args = vec![
        "--config",
        config.to_str().unwrap(),
        "--run",
        run.to_str().unwrap(),
        "--generations",
        &generations,
    ];
    args.extend_from_slice(extra);
    train(&args)
}

/// Bytes of every file under `dir` but the temporary files of atomic writes, by path.
pub fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    files_under(dir)
        .into_iter()
        .filter(|p| !is_temporary(p))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// Every file under `dir`, recursively, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// Whether `path` is the temporary file of an atomic write (`NAME.tmp<pid>-<random>`).
pub fn is_temporary(path: &Path) -> bool {
    cfzero_fsutil::is_temporary(path)
}

/// The record files of one generation's game directory, sorted.
pub fn record_files(games_dir: &Path) -> Vec<PathBuf> {
    files_under(games_dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == RECORD_EXTENSION))
        .collect()
}

/// A record file that decoded and replayed.
pub struct CheckedGame {
    /// The file.
    pub path: PathBuf,
    /// Its game.
    pub record: GameRecord,
    /// The moves, in UCI.
    pub uci: Vec<String>,
}

impl CheckedGame {
    /// The line the PGN check prints for this game.
    pub fn pgn_line(&self) -> String {
        format!(
            "{}\t{}\t{}",
            self.record.result.pgn(),
            self.record.termination.describe(),
            self.uci.join(" ")
        )
    }
}

/// Decodes every record file of a generation's game directory (one game a file), replays
/// each game move by move and checks that it is a whole, consistent game of the net of
/// generation `net_generation`: legal moves only, no move after the game ended, a result
/// and termination that fit the final position (the game reaching `max_plies` is a draw),
/// a policy target over exactly the legal moves, and short-term targets that follow from
/// the values of best play (`best_q`) and the result.
pub fn check_records(games_dir: &Path, net_generation: u32, max_plies: u32) -> Vec<CheckedGame> {
    let mut out = Vec::new();
    for path in record_files(games_dir) {
        let name = path.display().to_string();
        let mut games = read_records(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(games.len(), 1, "{name}: one game a file");
        let record = games.pop().unwrap();
        assert_eq!(record.generation, net_generation, "{name}: net generation");
        assert!(!record.positions.is_empty(), "{name}: an empty game");
        let mut uci = Vec::new();
        let mut final_state = replay(&record, |ply, state, legal, mv| {
            assert!(
                state.terminal_reason().is_none(),
                "{name}: a move at ply {ply} after the game ended"
            );
            let p = &record.positions[ply];
            if p.is_trainable() {
                assert_eq!(p.policy.len(), legal.len(), "{name}: ply {ply} policy");
                let total: u32 = p.policy.iter().map(|&w| u32::from(w)).sum();
                assert!(
                    total.abs_diff(65535) <= legal.len() as u32,
                    "{name}: ply {ply}: policy sums to {total}/65535"
                );
            }
            assert!((0.0..=1.0).contains(&p.root_d), "{name}: ply {ply} root_d");
            uci.push(mv.to_uci(CastlingMode::Standard).to_string());
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        final_state.set_max_plies(max_plies);
        match record.termination {
            Termination::Resignation => {
                assert!(final_state.terminal_reason().is_none(), "{name}");
                // The loser resigns after its own move: the side to move has won.
                assert_eq!(
                    record.result,
                    GameResult::win_for(final_state.turn()),
                    "{name}"
                );
            }
            t => {
                let reason = final_state
                    .terminal_reason()
                    .unwrap_or_else(|| panic!("{name}: ends with {t:?} in a live position"));
                assert_eq!(Termination::from(reason), t, "{name}");
                assert_eq!(
                    record.result,
                    GameResult::from_terminal(reason, final_state.turn()),
                    "{name}"
                );
            }
        }
        let best_q: Vec<f32> = record.positions.iter().map(|p| p.best_q).collect();
        let mut st = Vec::new();
        // A game cut off by the length cap ends in the search's value of its last position
        // (the other side's, so negated), any other in its result.
        let final_value = match (record.termination, best_q.last()) {
            (Termination::MAX_PLIES, Some(&q)) => -q,
            _ => record.result.value_for(final_state.turn()),
        };
        short_term_targets(&best_q, final_value, SHORT_TERM_THETA, &mut st);
        for (ply, (p, want)) in record.positions.iter().zip(&st).enumerate() {
            assert!(
                (p.st - want).abs() < 1e-3,
                "{name}: ply {ply}: short-term target {} but {want} from the search values",
                p.st
            );
        }
        out.push(CheckedGame { path, record, uci });
    }
    out
}

/// Reads a PGN file with python-chess (`.venv`, set up by `scripts/setup.sh`): every game must
/// parse without errors, replay legally, carry Result and Termination tags that fit its final
/// position, and a PlyCount equal to its moves. Returns one line per game, as
/// [`CheckedGame::pgn_line`] writes them.
pub fn python_pgn_games(pgn: &Path) -> Vec<String> {
    const SCRIPT: &str = r#"
import sys
import chess
import chess.pgn

def fail(msg):
    sys.exit(f"{sys.argv[1]}: {msg}")

n = 0
with open(sys.argv[1], encoding="utf-8") as f:
    while True:
        game = chess.pgn.read_game(f)
        if game is None:
            break
        n += 1
        if game.errors:
            fail(f"game {n}: {game.errors}")
        for tag in ("Result", "Termination", "PlyCount"):
            if tag not in game.headers:
                fail(f"game {n}: no {tag} tag")
        board = game.board()
        moves = []
        for mv in game.mainline_moves():
            if not board.is_legal(mv):
                fail(f"game {n}: illegal move {mv}")
            board.push(mv)
            moves.append(mv.uci())
        result, term = game.headers["Result"], game.headers["Termination"]
        if result not in ("1-0", "0-1", "1/2-1/2"):
            fail(f"game {n}: result {result}")
        if int(game.headers["PlyCount"]) != len(moves):
            fail(f"game {n}: PlyCount {game.headers['PlyCount']}, {len(moves)} moves")
        ends = {
            "checkmate": board.is_checkmate(),
            "stalemate": board.is_stalemate(),
            "insufficient material": board.is_insufficient_material(),
            "fifty-move rule": board.halfmove_clock >= 100,
            "threefold repetition": board.is_repetition(3),
            "adjudication: maximum length": True,
            "resignation": not board.is_game_over(claim_draw=False),
        }
        if not ends.get(term, False):
            fail(f"game {n}: termination {term!r} does not fit {board.fen()}")
        winner = "0-1" if board.turn == chess.WHITE else "1-0"
        if term in ("checkmate", "resignation") and result != winner:
            fail(f"game {n}: {term} but result {result}")
        if term not in ("checkmate", "resignation") and result != "1/2-1/2":
            fail(f"game {n}: {term} but result {result}")
        print("game\t" + "\t".join([result, term, " ".join(moves)]))
print(f"games\t{n}")
"#;
    let python = repo_root().join(".venv/bin/python3");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup.sh (the PGN check needs python-chess)",
        python.display()
    );
    let out = Command::new(&python)
        .arg("-c")
        .arg(SCRIPT)
        .arg(pgn)
        .current_dir(repo_root())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python-chess rejects {}: {}{stdout}",
        pgn.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let games: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("game\t"))
        .map(str::to_string)
        .collect();
    let count = stdout
        .lines()
        .find_map(|l| l.strip_prefix("games\t"))
        .expect("the script prints the number of games");
    assert_eq!(count.parse::<usize>().unwrap(), games.len());
    games
}

/// Checks that the PGN of a generation holds exactly the games of its records, in order.
pub fn check_pgn(pgn: &Path, games: &[CheckedGame]) {
    let from_pgn = python_pgn_games(pgn);
    let from_records: Vec<String> = games.iter().map(CheckedGame::pgn_line).collect();
    assert_eq!(
        from_pgn.len(),
        from_records.len(),
        "{}: games in the PGN vs record files",
        pgn.display()
    );
    assert_eq!(from_pgn, from_records, "{}", pgn.display());
}

/// Loads a net file (published net or trainer weights) and checks its shape.
/// The stem of the trainer state that published net `g` of the run in `run` (a directory or
/// a cache) names, `state/trainer-gen-NNNN-TAG`: add `.safetensors`, `.optim` or
/// `.swa.safetensors`.
pub fn trainer_state_stem(run: &Path, g: u32) -> String {
    let net = run.join(format!("nets/gen-{g:04}.safetensors"));
    let tag = cfzero_network::checkpoint::read_net_metadata(&net, "cfzero.trainer_state")
        .unwrap()
        .unwrap_or_else(|| panic!("{} names no trainer state", net.display()));
    format!("state/trainer-gen-{g:04}-{tag}")
}

pub fn check_net(path: &Path, config: &NetworkConfig) {
    let net = load_net(path, Device::Cpu).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&net.config, config, "{}", path.display());
}

/// The `[network]` table of a config file.
pub fn network_config(config: &Path) -> NetworkConfig {
    NetworkConfig::from_toml_file_text(&std::fs::read_to_string(config).unwrap()).unwrap()
}

/// Every scalar of every event file in a TensorBoard directory, and the number of files.
pub fn read_tensorboard(tb: &Path) -> (Vec<ScalarEvent>, usize) {
    let files: Vec<PathBuf> = files_under(tb)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("events.out.tfevents."))
        })
        .collect();
    let mut all = Vec::new();
    for f in &files {
        all.extend(read_scalars(f).unwrap_or_else(|e| panic!("{e}")));
    }
    (all, files.len())
}

/// The per-step training tags: the total loss, every loss term and the step metrics.
pub const TRAIN_TAGS: [&str; 15] = [
    "train/loss",
    "loss/policy",
    "loss/soft_policy",
    "loss/winner",
    "loss/q",
    "loss/q_error",
    "loss/q_categorical",
    "loss/st",
    "loss/st_error",
    "loss/st_categorical",
    "loss/moves_left",
    "train/policy_accuracy",
    "train/value_mse",
    "train/lr",
    "train/grad_norm",
];

/// Asserts that every training tag has exactly one finite value at each of `steps`.
pub fn check_training_scalars(events: &[ScalarEvent], steps: std::ops::RangeInclusive<u64>) {
    for tag in TRAIN_TAGS {
        let mut got: Vec<(u64, f32)> = events
            .iter()
            .filter(|e| e.tag == tag)
            .map(|e| (e.step, e.value))
            .collect();
        got.sort_by_key(|&(s, _)| s);
        let got_steps: Vec<u64> = got.iter().map(|&(s, _)| s).collect();
        assert_eq!(
            got_steps,
            steps.clone().collect::<Vec<_>>(),
            "steps logged under {tag}"
        );
        for (step, v) in got {
            assert!(v.is_finite(), "{tag} at step {step} is {v}");
        }
    }
}
