//! Helpers of the tests of runs on object storage: the binary against an S3 endpoint, its
//! processes watched, and what a store (any: a directory too) holds.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cfzero_store::{ChunkName, RunStore};

use super::{Killed, cfzero, run_cmd};

/// `cfzero` against `endpoint` with the test server's credentials and nothing of the
/// machine's own (`HOME` is `home`: no `~/.aws`, no cache of another test).
pub fn cfzero_s3(endpoint: &str, home: &Path, args: &[&str]) -> Command {
    against_s3(cfzero(args), endpoint, home)
}

/// `cmd` with the environment of a machine whose S3 is `endpoint` and whose home is `home`.
pub fn against_s3(mut cmd: Command, endpoint: &str, home: &Path) -> Command {
    cmd.env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("HOME", home)
        .env_remove("CFZERO_CACHE")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("AWS_PROFILE");
    cmd
}

/// `cfzero COMMAND --device cpu --config CONFIG --run RUN --cache CACHE EXTRA...` (`train` or
/// `learn`) against `endpoint`.
pub fn trainer(
    endpoint: &str,
    home: &Path,
    command: &str,
    config: &Path,
    run: &str,
    cache: &Path,
    extra: &[&str],
) -> Command {
    let mut cmd = run_cmd(
        command,
        config,
        Path::new(run),
        &["--cache", cache.to_str().unwrap()],
    );
    cmd.args(extra);
    against_s3(cmd, endpoint, home)
}

/// `cfzero selfplay --device cpu --run RUN --cache CACHE EXTRA...` against `endpoint`.
pub fn selfplay_worker(
    endpoint: &str,
    home: &Path,
    run: &str,
    cache: &Path,
    extra: &[&str],
) -> Command {
    let mut args = vec![
        "selfplay",
        "--device",
        "cpu",
        "--run",
        run,
        "--cache",
        cache.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    cfzero_s3(endpoint, home, &args)
}

/// Runs `cmd` to its end and asserts that it succeeded; its stderr.
pub fn succeed(mut cmd: Command) -> String {
    let out = cmd.output().expect("cfzero runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout:\n{}\nstderr:\n{err}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    err
}

/// Waits until `done` holds, checking that `child` still runs.
pub fn wait_for(what: &str, child: &mut Child, seconds: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !done() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{what}: the process ended first ({status})");
        }
        assert!(Instant::now() < deadline, "{what}: not within {seconds} s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts `cmd` with its stderr in the file `log`.
pub fn spawn_logging(mut cmd: Command, log: &Path) -> Killed {
    Killed(
        cmd.stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap(),
    )
}

/// Waits until `child`'s stderr in `log` says `needle`.
pub fn wait_for_log(what: &str, child: &mut Child, log: &Path, needle: &str) {
    // Generous: a healed link waits out the upload thread's back-off, slower on a busy machine.
    wait_for(what, child, 240, || {
        std::fs::read_to_string(log).is_ok_and(|l| l.contains(needle))
    });
}

/// Waits for `child` to end; its exit status.
pub fn wait_exit(what: &str, child: &mut Child, seconds: u64) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < deadline, "{what}: not within {seconds} s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The chunks on `store`: their names and games.
pub fn chunks(store: &dyn RunStore) -> Vec<(ChunkName, Vec<cfzero_selfplay::GameRecord>)> {
    store
        .list_after("chunks", None)
        .unwrap()
        .into_iter()
        .map(|key| {
            let name = ChunkName::parse(&key).unwrap_or_else(|| panic!("chunk key {key}"));
            let bytes = store.get(&key).unwrap().unwrap();
            let path = std::env::temp_dir().join("chunk.cfzg");
            let games = cfzero_selfplay::record::decode_records(&bytes, &path)
                .unwrap_or_else(|e| panic!("{key}: {e}"));
            assert_eq!(games.len() as u32, name.games, "{key}: games in the name");
            let positions: u64 = games.iter().map(|g| g.positions.len() as u64).sum();
            assert_eq!(positions, name.positions, "{key}: positions in the name");
            (name, games)
        })
        .collect()
}

/// Checks every chunk of games on `store`: each game replays as a game of the net of the
/// generation before the chunk's ([`super::check_records`]), and the chunk's PGN holds exactly
/// its games, in order. Returns the games of each of `workers` (a chunk of any other fails).
pub fn check_chunks(
    store: &dyn RunStore,
    scratch: &Path,
    workers: &[&str],
    max_plies: u32,
) -> Vec<usize> {
    let pgn_keys = store.list_after("pgn", None).unwrap();
    let mut games_of = vec![0usize; workers.len()];
    for (name, games) in &chunks(store) {
        let i = workers
            .iter()
            .position(|w| *w == name.worker)
            .unwrap_or_else(|| panic!("chunk of {}", name.worker));
        games_of[i] += games.len();
        let dir = scratch.join(format!("{}-{}", name.worker, name.bundle));
        std::fs::create_dir_all(&dir).unwrap();
        for (j, g) in games.iter().enumerate() {
            cfzero_selfplay::record::write_records(
                &dir.join(format!("g{j:03}.cfzg")),
                std::slice::from_ref(g),
            )
            .unwrap();
        }
        let checked = super::check_records(&dir, name.generation - 1, max_plies);
        let pgn_key = pgn_keys
            .iter()
            .find(|k| {
                k.starts_with(&format!("pgn/gen-{:04}/", name.generation))
                    && k.ends_with(&format!("/{}.pgn", name.stem()))
            })
            .unwrap_or_else(|| panic!("no PGN for {}", name.key()));
        let pgn = dir.join("games.pgn");
        std::fs::write(&pgn, store.get(pgn_key).unwrap().unwrap()).unwrap();
        super::check_pgn(&pgn, &checked);
    }
    games_of
}

/// Every object of a run on `store` with its bytes and time: what a write would change.
pub fn objects(
    store: &dyn RunStore,
) -> std::collections::BTreeMap<String, (Vec<u8>, std::time::SystemTime)> {
    let mut keys: Vec<String> = ["config.toml", "log.tsv", "trainer.lease"]
        .map(str::to_owned)
        .into();
    for prefix in ["nets", "state", "chunks", "pgn", "tb"] {
        keys.extend(store.list_after(prefix, None).unwrap());
    }
    keys.into_iter()
        .filter_map(|k| {
            let bytes = store.get(&k).unwrap()?;
            let time = store.head(&k).unwrap()?.modified;
            Some((k, (bytes, time)))
        })
        .collect()
}

/// Sends `signal` to `child`.
pub fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill(2) on a child of this process that has not been waited for.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    assert_eq!(rc, 0, "kill({}, {signal})", child.id());
}

/// The newest generation published on `store`, if any.
pub fn newest_net(store: &dyn RunStore) -> Option<u32> {
    store
        .list_after("nets", None)
        .unwrap()
        .iter()
        .filter_map(|k| {
            k.strip_prefix("nets/gen-")?
                .strip_suffix(".safetensors")?
                .parse::<u32>()
                .ok()
        })
        .max()
}
