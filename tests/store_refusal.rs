//! A worker whose store refuses it (wrong credentials: an S3 endpoint that answers every
//! request `403 InvalidAccessKeyId`, as S3 does for an unknown key) ends at once with one
//! line and exit code 2, and spools nothing, whether or not it has a cached copy of the run:
//! retrying cannot fix credentials, and a worker that played on would only fill its spool.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// An endpoint that answers every request with S3's refusal of an unknown access key.
fn refusing_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(client.try_clone().unwrap());
                let mut line = String::new();
                // The request line and headers; a body, if any, is left unread.
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                    if line == "\r\n" {
                        break;
                    }
                    line.clear();
                }
                let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>";
                let _ = write!(
                    client,
                    "HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

fn worker(endpoint: &str, home: &Path, cache: &Path) -> Command {
    let mut cmd = cfzero(&[
        "selfplay",
        "--device",
        "cpu",
        "--run",
        "s3://bucket/run",
        "--cache",
        cache.to_str().unwrap(),
        "--games",
        "4",
    ]);
    cmd.env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "wrong")
        .env("AWS_SECRET_ACCESS_KEY", "wrong")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ALLOW_HTTP", "true")
        .env("HOME", home)
        .env_remove("CFZERO_CACHE")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("AWS_PROFILE");
    cmd
}

#[test]
fn wrong_credentials_end_a_worker_with_one_line() {
    let endpoint = refusing_endpoint();
    let tmp = tempfile::tempdir().unwrap();
    for cached in [false, true] {
        let cache = tmp.path().join(format!("cache-{cached}"));
        std::fs::create_dir_all(&cache).unwrap();
        if cached {
            // A worker that has played this run before: it has the config (and would play
            // on from its cache through an outage).
            std::fs::copy(micro_config(), cache.join("config.toml")).unwrap();
        }
        let start = Instant::now();
        let out = worker(&endpoint, tmp.path(), &cache).output().unwrap();
        let secs = start.elapsed();
        let err = assert_user_error_output("refused worker", &out, "refuses");
        assert!(err.contains("403"), "{err}");
        assert!(secs < Duration::from_secs(30), "took {secs:?}");
        // Nothing played, nothing spooled.
        let spooled: Vec<_> = files_under(&cache.join("spool"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "cfzg" || e == "zst"))
            .collect();
        assert!(spooled.is_empty(), "{spooled:?}");
    }
}
