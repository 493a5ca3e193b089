//! Partitions for real: the S3 server, two trainers and two workers each in a network
//! namespace of their own (`ip netns`, veth pairs on a bridge in a namespace of the test's),
//! links cut and healed while they run. A worker cut off mid-run spools and uploads when its
//! link returns; a trainer cut off past its lease writes nothing once a successor elsewhere
//! has taken the run over; every game of every worker reaches the store and the successor's
//! window exactly once.
//!
//! It needs root and `ip` (iproute2); where namespaces cannot be made it says so and passes.
//! The addresses (10.99.0.0/24) exist only inside the namespaces it makes and removes.

mod common;
#[path = "../store/tests/s3_server/mod.rs"]
mod s3_server;

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::Duration;

use cfzero_store::RunStore;
use common::s3::*;
use common::*;
use s3_server::S3Server;

/// The namespaces of one test, removed when dropped.
struct Namespaces {
    prefix: String,
    made: Vec<String>,
}

/// Runs `ip ARGS`; why it failed, if it did.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Namespaces {
    /// A bridge in a hub namespace and, for each of `hosts`, a namespace linked to it with
    /// the address 10.99.0.(i + 1).
    fn make(hosts: &[&str]) -> Result<Namespaces, String> {
        let mut ns = Namespaces {
            prefix: format!("cfz{}", std::process::id()),
            made: Vec::new(),
        };
        let hub = ns.name("hub");
        ns.add(&hub)?;
        ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &hub, "link", "set", "br0", "up"])?;
        for (i, host) in hosts.iter().enumerate() {
            let name = ns.name(host);
            ns.add(&name)?;
            let port = format!("h{host}");
            ip(&[
                "link", "add", "name", "v0", "netns", &name, "type", "veth", "peer", "name", &port,
                "netns", &hub,
            ])?;
            let addr = format!("10.99.0.{}/24", i + 1);
            ip(&["-n", &name, "addr", "add", &addr, "dev", "v0"])?;
            ip(&["-n", &name, "link", "set", "v0", "up"])?;
            ip(&["-n", &name, "link", "set", "lo", "up"])?;
            ip(&["-n", &hub, "link", "set", &port, "master", "br0"])?;
            ip(&["-n", &hub, "link", "set", &port, "up"])?;
        }
        Ok(ns)
    }

    fn name(&self, host: &str) -> String {
        format!("{}{host}", self.prefix)
    }

    fn add(&mut self, name: &str) -> Result<(), String> {
        ip(&["netns", "add", name])?;
        self.made.push(name.to_owned());
        Ok(())
    }

    /// Cuts `host`'s link (`false`) or heals it (`true`): packets to and from it vanish.
    fn link(&self, host: &str, up: bool) {
        let hub = self.name("hub");
        let state = if up { "up" } else { "down" };
        ip(&["-n", &hub, "link", "set", &format!("h{host}"), state]).unwrap();
    }

    /// Moves the calling thread into `host`'s namespace (the processes it starts and the
    /// sockets it opens are there).
    fn enter(&self, host: &str) {
        let file = std::fs::File::open(format!("/run/netns/{}", self.name(host))).unwrap();
        // SAFETY: setns(2) on a namespace file this test made; it moves this thread only.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
    }

    /// `cmd` run in `host`'s namespace.
    fn exec(&self, host: &str, cmd: Command) -> Command {
        let mut wrapped = Command::new("ip");
        wrapped
            .args(["netns", "exec", &self.name(host)])
            .arg(cmd.get_program())
            .args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => wrapped.env(k, v),
                None => wrapped.env_remove(k),
            };
        }
        if let Some(dir) = cmd.get_current_dir() {
            wrapped.current_dir(dir);
        }
        wrapped
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for name in self.made.iter().rev() {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// Games on the store per worker, a chunk uploaded twice counted once, by chunk stem.
fn stored(store: &dyn RunStore) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut per: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for (name, games) in chunks(store) {
        per.entry(name.worker.clone())
            .or_default()
            .insert(name.stem(), games.len());
    }
    per
}

/// The trainer-owned objects of a run (nets, state, logs, lease): what only a trainer writes.
fn trainer_objects(store: &dyn RunStore) -> Vec<(String, Vec<u8>)> {
    objects(store)
        .into_iter()
        .filter(|(k, _)| !["chunks/", "pgn/"].iter().any(|p| k.starts_with(p)))
        .map(|(k, (bytes, _))| (k, bytes))
        .collect()
}

#[test]
fn a_partitioned_trainer_and_worker_lose_and_double_nothing() {
    let hosts = ["s3", "t1", "t2", "w1", "w2"];
    let ns = match Namespaces::make(&hosts) {
        Ok(ns) => ns,
        Err(why) => {
            eprintln!("skipped: network namespaces cannot be made here ({why})");
            return;
        }
    };
    // This thread lives beside the S3 server, which it reaches on 127.0.0.1; the others
    // reach it at 10.99.0.1.
    ns.enter("s3");
    let server = S3Server::start_on("0.0.0.0");
    let store = server.store("parts", "runs/p");
    let endpoint = format!("http://10.99.0.1:{}", server.port());
    let run = "s3://parts/runs/p";
    let tmp = tempfile::tempdir().unwrap();
    let config = micro_config();
    let learn = |host: &str, extra: &[&str]| {
        let cache = tmp.path().join(format!("cache-{host}"));
        let mut args = vec!["--lease-seconds", "3"];
        args.extend_from_slice(extra);
        let cmd = trainer(&endpoint, tmp.path(), "learn", &config, run, &cache, &args);
        ns.exec(host, cmd)
    };
    let worker = |host: &str| {
        let cache = tmp.path().join(format!("cache-{host}"));
        let mut cmd = selfplay_worker(
            &endpoint,
            tmp.path(),
            run,
            &cache,
            &["--worker", host, "--chunk-games", "1"],
        );
        cmd.env("CFZERO_STORE_RETRY_SECONDS", "1");
        ns.exec(host, cmd)
    };

    // A trainer and two workers, each on its own machine.
    let t1_log = tmp.path().join("t1.err");
    let mut t1 = spawn_logging(learn("t1", &[]), &t1_log);
    wait_for("the first net", &mut t1.0, 120, || {
        newest_net(&store).is_some()
    });
    let w1_log = tmp.path().join("w1.err");
    let mut w1 = spawn_logging(worker("w1"), &w1_log);
    let w2_log = tmp.path().join("w2.err");
    let mut w2 = spawn_logging(worker("w2"), &w2_log);
    wait_for(
        "generation 2 and chunks of both workers",
        &mut t1.0,
        180,
        || {
            let per = stored(&store);
            newest_net(&store) >= Some(2) && per.len() == 2
        },
    );

    // Worker 1 and the trainer are cut off; the trainer stays cut past its lease.
    ns.link("w1", false);
    ns.link("t1", false);
    let at_cut = newest_net(&store).unwrap();
    std::thread::sleep(Duration::from_secs(5));

    // A successor on a third machine takes the run over and publishes the next generation.
    let next = newest_net(&store).unwrap() + 1;
    let t2_log = tmp.path().join("t2.err");
    let mut t2 = spawn_logging(
        learn("t2", &["--resume", "--generations", &next.to_string()]),
        &t2_log,
    );
    let status = wait_exit("the successor", &mut t2.0, 300);
    let err = std::fs::read_to_string(&t2_log).unwrap();
    assert!(status.success(), "the successor: {err}");
    assert!(
        err.contains(&format!("run {run}: generation {},", next - 1)),
        "the successor resumes from the last published net:\n{err}"
    );
    assert!(!err.contains("no trainer state"), "{err}");
    assert!(next > at_cut, "{next} after {at_cut}");

    // The cut-off trainer's link heals: it writes nothing and stops.
    let before = trainer_objects(&store);
    ns.link("t1", true);
    let status = wait_exit("the cut-off trainer", &mut t1.0, 180);
    let t1_err = std::fs::read_to_string(&t1_log).unwrap();
    assert!(!status.success(), "{t1_err}");
    assert_eq!(
        trainer_objects(&store),
        before,
        "the cut-off trainer wrote after the takeover:\n{t1_err}"
    );

    // Worker 1's link heals: it uploads what it spooled. Stopped, both workers upload every
    // game they finished before they exit.
    ns.link("w1", true);
    wait_for_log("worker 1 back", &mut w1.0, &w1_log, "answers again");
    let mut played = BTreeMap::new();
    for (host, child, log) in [("w1", &mut w1, &w1_log), ("w2", &mut w2, &w2_log)] {
        signal(&child.0, libc::SIGINT);
        let status = wait_exit(host, &mut child.0, 300);
        let err = std::fs::read_to_string(log).unwrap();
        assert!(status.success(), "{host}: {err}");
        let games: usize = err
            .split(&format!("worker {host}: stopped after "))
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("{host} says how many games it played:\n{err}"));
        played.insert(host.to_owned(), games);
    }
    let per = stored(&store);
    for (host, games) in &played {
        let on_store: usize = per[host].values().sum();
        assert_eq!(on_store, *games, "{host}'s games on the store: {per:?}");
    }

    // The successor, resumed, reads every chunk into its window, each once.
    let t2_log = tmp.path().join("t2-again.err");
    let mut t2 = spawn_logging(learn("t2", &["--resume"]), &t2_log);
    let cached = || -> BTreeMap<String, usize> {
        files_under(&tmp.path().join("cache-t2").join("games"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "cfzg"))
            .map(|p| {
                let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
                let games = cfzero_selfplay::record::read_records(&p).unwrap().len();
                (stem, games)
            })
            .collect()
    };
    let expected: BTreeMap<String, usize> = per
        .values()
        .flatten()
        .map(|(s, g)| (s.clone(), *g))
        .collect();
    wait_for(
        "every chunk in the successor's cache",
        &mut t2.0,
        180,
        || cached() == expected,
    );
    // Ctrl-C once it waits for games (it handles the signal from then on).
    wait_for_log("the successor", &mut t2.0, &t2_log, "waiting for games");
    signal(&t2.0, libc::SIGINT);
    let status = wait_exit("the successor", &mut t2.0, 120);
    let t2_err = std::fs::read_to_string(&t2_log).unwrap();
    assert!(status.success(), "{status}: {t2_err}");
    assert!(!t2_err.contains("going on without them"), "{t2_err}");
    let streams: BTreeSet<String> = chunks(&store).iter().map(|(n, _)| n.stream()).collect();
    eprintln!(
        "{:?} games in {} chunks of {} streams, each in the successor's window once",
        played,
        expected.len(),
        streams.len()
    );
    drop(server);
}
