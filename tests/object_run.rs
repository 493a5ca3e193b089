//! Runs on object storage, against a real S3 API server (`moto_server` on 127.0.0.1, set up
//! by `scripts/setup.sh`): a trainer and two workers that share nothing but the store; one
//! trainer per run, a successor elsewhere resuming from the store alone; a worker killed
//! mid-run and one started while the store is down lose only unfinished games; bad
//! locations are one-line errors.

mod common;
#[path = "../store/tests/s3_server/mod.rs"]
mod s3_server;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cfzero_selfplay::record::read_records;
use cfzero_store::{ChunkName, RunStore};
use common::s3::*;
use common::*;
use s3_server::S3Server;

/// `micro.toml`'s game length.
const MAX_PLIES: u32 = 40;

/// A TCP proxy in front of the S3 server that can be switched off: while down it closes
/// every connection at once, as a store that is unreachable.
struct Proxy {
    port: u16,
    up: Arc<AtomicBool>,
}

impl Proxy {
    fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let flag = up.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !flag.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let pipe = |mut from: TcpStream, mut to: TcpStream| {
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16384];
                        while let Ok(n) = from.read(&mut buf) {
                            if n == 0 || to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                };
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
        });
        Proxy { port, up }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn set_up(&self, up: bool) {
        self.up.store(up, Ordering::SeqCst);
    }
}

/// The port of an endpoint URL.
fn port_of(endpoint: &str) -> u16 {
    endpoint.rsplit(':').next().unwrap().parse().unwrap()
}

#[test]
fn a_trainer_and_two_workers_share_a_run_on_s3() {
    let tmp = tempfile::tempdir().unwrap();
    let server = S3Server::start();
    let store = server.store("split", "runs/a");
    let endpoint = server.endpoint();
    let config = micro_with(
        &tmp.path().join("micro16.toml"),
        &[
            ("games_per_generation = 4", "games_per_generation = 16"),
            ("resign_playthrough = 0.5", "resign_playthrough = 1.0"),
        ],
    );
    let run = "s3://split/runs/a";
    let trainer_cache = tmp.path().join("trainer");
    let mut learn = Killed(
        trainer(
            &endpoint,
            tmp.path(),
            "learn",
            &config,
            run,
            &trainer_cache,
            &["--generations", "2"],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    wait_for("the run's first net", &mut learn.0, 60, || {
        store.get("nets/gen-0000.safetensors").unwrap().is_some()
    });
    let _workers: Vec<Killed> = ["w1", "w2"]
        .iter()
        .map(|w| {
            let cache = tmp.path().join(w);
            Killed(
                selfplay_worker(
                    &endpoint,
                    tmp.path(),
                    run,
                    &cache,
                    &["--worker", w, "--chunk-games", "4", "--chunk-seconds", "5"],
                )
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
            )
        })
        .collect();
    let status = wait_exit("learn finishing 2 generations", &mut learn.0, 300);
    assert!(status.success(), "learn failed: {status}");
    drop(_workers);

    // Everything is on the store: nets, trainer state, log, cursor, games and their PGN.
    let net_config = network_config(&config);
    let check_dir = tmp.path().join("check");
    for g in 0..=2 {
        let key = format!("nets/gen-{g:04}.safetensors");
        let path = check_dir.join(&key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, store.get(&key).unwrap().expect(&key)).unwrap();
        check_net(&path, &net_config);
    }
    let state = trainer_state_stem(&check_dir, 2);
    for key in [
        "config.toml".to_owned(),
        format!("{state}.safetensors"),
        format!("{state}.optim"),
        "state/chunk-cursor.json".to_owned(),
    ] {
        assert!(store.get(&key).unwrap().is_some(), "{key} on the store");
    }
    // Older trainer states leave the store as they leave the cache.
    let states = store.list_after("state", None).unwrap();
    assert!(
        states
            .iter()
            .all(|k| !k.starts_with("state/trainer-gen-0001")),
        "{states:?}"
    );
    let log = String::from_utf8(store.get("log.tsv").unwrap().unwrap()).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
    let tb = store.list_after("tb", None).unwrap();
    assert!(!tb.is_empty(), "TensorBoard files on the store");

    let all = chunks(&store);
    let pgn_keys = store.list_after("pgn", None).unwrap();
    // Every chunk has its PGN (checked below); a worker killed between uploading a PGN and
    // its chunk (the PGN goes first) leaves that PGN alone, at most one per worker.
    assert!(
        pgn_keys.len() >= all.len() && pgn_keys.len() <= all.len() + 2,
        "{} chunks, PGNs {pgn_keys:?}",
        all.len()
    );
    let games_of = check_chunks(&store, &check_dir, &["w1", "w2"], MAX_PLIES);
    assert!(
        games_of.iter().all(|&n| n > 0),
        "both workers played: {games_of:?}"
    );
}

#[test]
fn a_second_trainer_is_refused_and_a_successor_elsewhere_resumes_from_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let server = S3Server::start();
    let store = server.store("lease", "runs/b");
    let endpoint = server.endpoint();
    let config = micro_config();
    let run = "s3://lease/runs/b";
    let cache = |name: &str| tmp.path().join(name);
    let command = |command: &str, cache: &str, extra: &[&str]| {
        trainer(
            &endpoint,
            tmp.path(),
            command,
            &config,
            run,
            &tmp.path().join(cache),
            extra,
        )
    };
    succeed(command(
        "train",
        "first",
        &["--generations", "1", "--resume"],
    ));

    // A trainer with a 3-second lease waits for games.
    let err_log = tmp.path().join("holder.err");
    let mut holder = spawn_logging(
        command("learn", "holder", &["--resume", "--lease-seconds", "3"]),
        &err_log,
    );
    wait_for_log("the holder", &mut holder.0, &err_log, "waiting for games");
    // Renewed while it lives: after twice its time to live it still holds the run.
    std::thread::sleep(Duration::from_secs(6));
    let pid = format!("pid {}", holder.0.id());
    for name in ["learn", "train"] {
        let out = command(name, "second", &["--resume"]).output().unwrap();
        let err = assert_user_error_output(name, &out, "already has a trainer");
        assert!(err.contains(&pid), "{name}: {err}");
    }

    // Killed, it cannot give the lease up: a successor on another machine (a new cache)
    // takes over once it expires, from the store alone.
    holder.0.kill().unwrap();
    holder.0.wait().unwrap();
    std::thread::sleep(Duration::from_millis(3500));
    let err = succeed(command(
        "train",
        "successor",
        &["--generations", "2", "--resume"],
    ));
    assert!(err.contains("stopped at generation 2"), "{err}");
    assert!(err.contains("chunk(s) of games downloaded"), "{err}");
    assert!(store.get("nets/gen-0002.safetensors").unwrap().is_some());
    let log = String::from_utf8(store.get("log.tsv").unwrap().unwrap()).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
    // The step counter went on: generation 2's net was published after more steps.
    let successor = cache("successor");
    let step = |g: u32| {
        cfzero_network::checkpoint::read_net_metadata(
            &successor.join(format!("nets/gen-{g:04}.safetensors")),
            cfzero_trainer::learner::STEP_KEY,
        )
        .unwrap()
        .and_then(|s| s.parse::<u64>().ok())
        .expect("a net records its step")
    };
    assert!(step(2) > step(1), "steps {} then {}", step(1), step(2));
}

#[test]
fn every_chunk_is_ingested_whatever_the_workers_clocks_and_host_names() {
    let tmp = tempfile::tempdir().unwrap();
    let server = S3Server::start();
    let store = server.store("clocks", "runs/e");
    let endpoint = server.endpoint();
    let config = micro_config();
    let run = "s3://clocks/runs/e";
    let trainer_cache = tmp.path().join("trainer");
    let mut learn = spawn_logging(
        trainer(
            &endpoint,
            tmp.path(),
            "learn",
            &config,
            run,
            &trainer_cache,
            &["--generations", "1000"],
        ),
        &tmp.path().join("learn.err"),
    );
    wait_for("the run's first net", &mut learn.0, 60, || {
        store.get("nets/gen-0000.safetensors").unwrap().is_some()
    });
    // Two workers on machines of one name (this one), no --worker: one with a clock 10
    // minutes fast, one on time.
    let worker = |name: &str, offset_ms: i64| {
        let cache = tmp.path().join(name);
        let mut cmd = selfplay_worker(
            &endpoint,
            tmp.path(),
            run,
            &cache,
            &["--chunk-games", "2", "--chunk-seconds", "2"],
        );
        cmd.env(
            cfzero_store::chunks::CLOCK_OFFSET_VAR,
            offset_ms.to_string(),
        );
        spawn_logging(cmd, &tmp.path().join(format!("{name}.err")))
    };
    let mut fast = worker("fast", 600_000);
    let mut on_time = worker("on_time", 0);
    let workers_of = |store: &dyn RunStore| {
        let mut per: std::collections::BTreeMap<String, usize> = Default::default();
        for k in store.list_after("chunks", None).unwrap() {
            *per.entry(ChunkName::parse(&k).unwrap().worker).or_default() += 1;
        }
        per
    };
    wait_for("three chunks of each worker", &mut fast.0, 240, || {
        let per = workers_of(&store);
        per.len() == 2 && per.values().all(|&n| n >= 3)
    });
    assert!(
        on_time.0.try_wait().unwrap().is_none(),
        "the second worker ended"
    );
    drop(fast);
    drop(on_time);
    let per = workers_of(&store);
    let host = |name: &str| name.rsplit_once('_').map(|(h, _)| h.to_owned());
    let names: Vec<&String> = per.keys().collect();
    assert_eq!(host(names[0]), host(names[1]), "one host name: {names:?}");
    assert_ne!(names[0], names[1], "two worker names");

    // Every chunk on the store, of both workers, reaches the trainer's cache.
    let keys = store.list_after("chunks", None).unwrap();
    let missing = |keys: &[String]| -> Vec<String> {
        let cached: std::collections::BTreeSet<String> = files_under(&trainer_cache)
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
            .collect();
        keys.iter()
            .filter(|k| !cached.contains(&format!("{}.cfzg", ChunkName::parse(k).unwrap().stem())))
            .cloned()
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !missing(&keys).is_empty() && Instant::now() < deadline {
        assert!(learn.0.try_wait().unwrap().is_none(), "the trainer ended");
        std::thread::sleep(Duration::from_millis(250));
    }
    let lost = missing(&keys);
    assert!(
        lost.is_empty(),
        "{} of {} chunks not ingested: {lost:?}",
        lost.len(),
        keys.len()
    );
    eprintln!("chunks lost: 0 of {} ({per:?})", keys.len());
}

#[test]
fn a_trainer_stalled_past_its_lease_writes_nothing_after_its_successor_took_over() {
    let tmp = tempfile::tempdir().unwrap();
    let server = S3Server::start();
    let store = server.store("fence", "runs/d");
    let endpoint = server.endpoint();
    let config = micro_config();
    let run = "s3://fence/runs/d";
    let command = |cache: &str, extra: &[&str]| {
        trainer(
            &endpoint,
            tmp.path(),
            "train",
            &config,
            run,
            &tmp.path().join(cache),
            extra,
        )
    };
    // The first trainer, with a 3-second lease, publishes a generation or two ...
    let log = tmp.path().join("stalled.err");
    let mut stalled = spawn_logging(command("stalled", &["--lease-seconds", "3"]), &log);
    wait_for(
        "the first trainer's generation 2",
        &mut stalled.0,
        180,
        || store.get("nets/gen-0002.safetensors").unwrap().is_some(),
    );
    // ... and stalls (a GC pause, a closed lid) past its lease.
    signal(&stalled.0, libc::SIGSTOP);
    let newest = |store: &dyn RunStore| newest_net(store).unwrap();
    let at_stall = newest(&store);
    std::thread::sleep(Duration::from_millis(3500));

    // A successor on another machine takes the run over and publishes the next generation.
    let next = at_stall + 1;
    let err = succeed(command(
        "successor",
        &["--generations", &next.to_string(), "--resume"],
    ));
    assert!(
        err.contains(&format!("run {run}: generation {at_stall},")),
        "the successor resumes from the last published net:\n{err}"
    );
    assert!(!err.contains("no trainer state"), "{err}");
    assert!(
        err.contains(&format!("stopped at generation {next}")),
        "{err}"
    );

    // The stalled trainer wakes: it writes nothing at all and ends with one line.
    let before = objects(&store);
    signal(&stalled.0, libc::SIGCONT);
    let status = wait_exit("the woken trainer", &mut stalled.0, 120);
    let after = objects(&store);
    let changed: Vec<&String> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .chain(before.keys().filter(|k| !after.contains_key(*k)))
        .collect();
    assert!(changed.is_empty(), "the woken trainer wrote {changed:?}");
    assert_eq!(status.code(), Some(1), "{status}");
    let err = std::fs::read_to_string(&log).unwrap();
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: ") && last.contains(&format!("not writing to {run}")),
        "{err}"
    );
    assert!(last.contains("trainer lease"), "{last}");
    assert_eq!(newest(&store), next);

    // The successor's run goes on from its own state, untouched by the first trainer.
    let err = succeed(command(
        "successor",
        &["--generations", &(next + 1).to_string(), "--resume"],
    ));
    assert!(
        err.contains(&format!("run {run}: generation {next},")),
        "{err}"
    );
    assert!(!err.contains("no trainer state"), "{err}");

    // The run's games export from its URL, as from a directory: every game of every chunk.
    let games_on_store: usize = chunks(&store).iter().map(|(_, g)| g.len()).sum();
    let out = tmp.path().join("v6");
    let err = succeed(cfzero_s3(
        &endpoint,
        tmp.path(),
        &[
            "export-data",
            "--run",
            run,
            "--cache",
            tmp.path().join("export").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    ));
    assert!(
        err.contains(&format!("exported {games_on_store} games")),
        "{games_on_store} games on the store:\n{err}"
    );
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), games_on_store);
}

#[test]
fn bench_learn_trains_a_run_on_object_storage() {
    let tmp = tempfile::tempdir().unwrap();
    let server = S3Server::start();
    let store = server.store("bench", "runs/l");
    let endpoint = server.endpoint();
    let run = "s3://bench/runs/l";
    let bench = || {
        cfzero_s3(
            &endpoint,
            tmp.path(),
            &[
                "bench",
                "learn",
                "--config",
                "configs/micro.toml",
                "--device",
                "cpu",
                "--minutes",
                "0.1",
                "--run",
                run,
                "--games",
                "2",
                "--max-plies",
                "60",
                "--json",
            ],
        )
        .current_dir(repo_root())
        .output()
        .unwrap()
    };
    let out = bench();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["run"], run);
    let g = report["training"]["generations"].as_u64().unwrap();
    assert!(
        store
            .get(&format!("nets/gen-{g:04}.safetensors"))
            .unwrap()
            .is_some(),
        "the final net is on the store: {report}"
    );
    assert_eq!(report["vs_greedy"]["games"], 2, "{report}");
    // It trains from zero only.
    let out = bench();
    assert_user_error_output("a second bench learn", &out, "holds a run already");
}

#[test]
fn workers_lose_only_unfinished_games_when_killed_or_cut_off() {
    let tmp = tempfile::tempdir().unwrap();
    let server = S3Server::start();
    let store = server.store("faults", "runs/c");
    let proxy = Proxy::start(port_of(&server.endpoint()));
    let config = micro_config();
    let run = "s3://faults/runs/c";
    // A run with its first net, and no trainer.
    succeed(trainer(
        &server.endpoint(),
        tmp.path(),
        "learn",
        &config,
        run,
        &tmp.path().join("trainer"),
        &["--generations", "0"],
    ));
    let cache = tmp.path().join("worker");
    let worker = |games: Option<&str>| {
        let mut extra = vec!["--worker", "w1", "--chunk-games", "1"];
        if let Some(g) = games {
            extra.extend(["--games", g]);
        }
        let mut cmd = selfplay_worker(&proxy.endpoint(), tmp.path(), run, &cache, &extra);
        cmd.env("CFZERO_STORE_RETRY_SECONDS", "1");
        cmd
    };
    // Games on the store, a chunk uploaded twice (killed between the upload and clearing
    // its spool) counted once, as the trainer reads it.
    let stored = || {
        let mut seen = std::collections::BTreeSet::new();
        chunks(&store)
            .iter()
            .filter(|(n, _)| seen.insert((n.worker.clone(), n.bundle)))
            .map(|(_, g)| g.len())
            .sum::<usize>()
    };
    // Games in the spool and not on the store: played, bundled (a bundle whose chunk was
    // written counts once), in the outbox unless the store has that chunk (a kill between the
    // upload and the outbox file's removal leaves it in both).
    let spooled = || {
        let spool = cache.join("spool/w1");
        let outbox: Vec<String> = files_under(&spool.join("outbox"))
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
            .collect();
        let on_store: std::collections::BTreeSet<String> = chunks(&store)
            .iter()
            .filter(|(n, _)| n.worker == "w1")
            .map(|(n, _)| n.bundle.to_string())
            .collect();
        files_under(&spool)
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "cfzg"))
            .filter(|p| {
                let in_outbox = p.parent().is_some_and(|d| d.ends_with("outbox"));
                let bundle = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.split_once("-g"))
                    .map(|(b, _)| b.to_string());
                !(in_outbox && bundle.is_some_and(|b| on_store.contains(&b)))
            })
            .filter(|p| {
                // A bundling directory `<bundle>-g<gen>` whose chunk is in the outbox.
                let dir = p
                    .parent()
                    .and_then(|d| d.file_name())
                    .and_then(|n| n.to_str());
                let in_bundling = p
                    .parent()
                    .and_then(|d| d.parent())
                    .is_some_and(|d| d.ends_with("bundling"));
                !(in_bundling
                    && dir.is_some_and(|d| {
                        let bundle = d.split('-').next().unwrap_or("");
                        outbox
                            .iter()
                            .any(|o| o.starts_with(&format!("{bundle}-")) && o.ends_with(".cfzg"))
                    }))
            })
            .map(|p| read_records(p).map_or(0, |g| g.len()))
            .sum::<usize>()
    };

    // Killed once it has uploaded something: what it finished is on the store or in its spool.
    let mut first = Killed(
        worker(None)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("a first chunk", &mut first.0, 120, || stored() >= 2);
    first.0.kill().unwrap();
    first.0.wait().unwrap();
    let finished = stored() + spooled();
    // Restarted on the same machine, it uploads the rest first, and reads nothing twice.
    succeed(worker(Some("1")));
    assert_eq!(
        stored(),
        finished + 1,
        "every finished game is on the store"
    );
    assert_eq!(spooled(), 0, "the spool is empty");

    // Started while the store is down: it plays from its cache and uploads when it returns.
    proxy.set_up(false);
    let err_log = tmp.path().join("offline.err");
    let mut offline = spawn_logging(worker(Some("2")), &err_log);
    wait_for_log(
        "the offline worker",
        &mut offline.0,
        &err_log,
        "stay in the spool",
    );
    assert_eq!(stored(), finished + 1, "nothing reached the store");
    proxy.set_up(true);
    let status = wait_exit(
        "the worker uploading once the store is back",
        &mut offline.0,
        120,
    );
    let err = std::fs::read_to_string(&err_log).unwrap();
    assert!(status.success(), "{err}");
    assert!(err.contains("unreachable"), "{err}");
    assert_eq!(stored(), finished + 3, "{err}");
    assert_eq!(spooled(), 0, "the spool is empty");
}

#[test]
fn bad_run_locations_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let server = S3Server::start();
    server.create_bucket("empty");
    let config = micro_config();
    let config = config.to_str().unwrap();
    let check = |args: &[&str], credentials: bool, needle: &str| {
        let mut cmd = cfzero_s3(&server.endpoint(), tmp.path(), args);
        if !credentials {
            cmd.env_remove("AWS_ACCESS_KEY_ID")
                .env_remove("AWS_SECRET_ACCESS_KEY")
                .env("AWS_EC2_METADATA_DISABLED", "true");
        }
        assert_user_error_output(&format!("{args:?}"), &cmd.output().unwrap(), needle);
    };
    let ok = true;
    check(
        &["learn", "--config", config, "--run", "ftp://host/x"],
        ok,
        "unknown URL scheme",
    );
    check(
        &[
            "learn",
            "--config",
            config,
            "--run",
            "s3://no-such-bucket/x",
        ],
        ok,
        "no-such-bucket",
    );
    check(
        &["selfplay", "--run", "s3://empty/none"],
        ok,
        "holds no run",
    );
    check(
        &["selfplay", "--run", "s3://empty/none", "--worker", "a-b"],
        ok,
        "worker name",
    );
    check(&["ladder", "--run", "s3://empty/none"], ok, "holds no run");
    check(
        &[
            "match",
            "--a-net",
            "s3://empty/none/nets/gen-0001.safetensors",
            "--b-random",
        ],
        ok,
        "no such object",
    );
    check(
        &["learn", "--config", config, "--run", "s3://empty/x"],
        false,
        "no AWS credentials",
    );
}

/// Every whole label entry of label-file bytes (a torn last one, uploaded while the teacher
/// was writing it, is left out as a trainer opening the file cuts it).
fn label_entries(bytes: &[u8], dir: &Path) -> Vec<cfzero_teacher::label_file::LabelEntry> {
    let file = dir.join("labels-read.cfl");
    std::fs::write(&file, bytes).unwrap();
    let mut reader = cfzero_teacher::label_file::LabelReader::open(&file).unwrap();
    let mut entries = Vec::new();
    while let Some(e) = reader.next_entry().unwrap() {
        entries.push(e);
    }
    entries
}

#[test]
fn a_successor_elsewhere_keeps_the_teachers_labels() {
    let tmp = tempfile::tempdir().unwrap();
    let server = S3Server::start();
    let store = server.store("teach", "runs/t");
    let endpoint = server.endpoint();
    let mut text = std::fs::read_to_string(micro_config()).unwrap();
    text.push_str("\n[teacher]\nshare = 1.0\nweight = 0.5\nprocesses = 1\nnodes = 1\n");
    let config = tmp.path().join("teacher.toml");
    std::fs::write(&config, text).unwrap();
    let table = tmp.path().join("table.json");
    std::fs::write(&table, r#"{"*": {}}"#).unwrap();
    let engine = scripted_engine();
    let train = |cache: &str, delay_ms: &str, extra: &[&str]| {
        let mut cmd = trainer(
            &endpoint,
            tmp.path(),
            "train",
            &config,
            "s3://teach/runs/t",
            &tmp.path().join(cache),
            extra,
        );
        cmd.args(["--teacher", &engine])
            .env("SCRIPTED_UCI_TABLE", &table)
            .env("SCRIPTED_UCI_DELAY_MS", delay_ms);
        succeed(cmd)
    };
    // A slow engine still labels generation 2's games after that generation's publication
    // (during the evaluation): the trainer puts those labels on the store when it stops.
    train("first", "20", &["--generations", "2"]);
    let key = "teacher/labels-01.cfl";
    let first = store
        .get(key)
        .unwrap()
        .expect("the labels are on the store");
    let local = std::fs::read(tmp.path().join("first").join(key)).unwrap();
    assert_eq!(
        label_entries(&first, tmp.path()).len(),
        label_entries(&local, tmp.path()).len(),
        "every label the first trainer wrote is on the store"
    );
    assert_eq!(first, local);
    let first = label_entries(&first, tmp.path());
    assert!(!first.is_empty());
    // A trainer on another machine (an empty cache) goes on from the store's labels: the
    // file it publishes starts with every label the first trainer published. (Two more
    // generations: the labels of generation 3's games are written while it trains, so
    // generation 4's publication carries them whatever the engine's pace.)
    train("second", "0", &["--generations", "4", "--resume"]);
    let second = store.get(key).unwrap().unwrap();
    let second = label_entries(&second, tmp.path());
    assert!(
        second.len() > first.len(),
        "{} then {}",
        first.len(),
        second.len()
    );
    assert_eq!(&second[..first.len()], &first[..]);
    assert!(
        store.get("teacher/labels-02.cfl").unwrap().is_none(),
        "the successor appended to the same file"
    );
}
