//! A worker whose store refuses it (wrong credentials: an S3 endpoint that answers every
//! request `403 InvalidAccessKeyId`, as S3 does for an unknown key; an expired token; a bucket
//! in another region; credentials that may not list the bucket) ends at once with one line and
//! exit code 2, and spools nothing, whether or not it has a cached copy of the run: retrying
//! cannot fix any of these, and a worker that played on would only fill its spool.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// An S3 error answer: the status line and the error code of its XML body.
type Answer = (&'static str, &'static str);

/// S3's refusal of an unknown access key.
const UNKNOWN_KEY: Answer = ("403 Forbidden", "InvalidAccessKeyId");

/// An endpoint that answers each request with `answer(request line)`: an S3 error, or `None`
/// for the run's `config` to a read of `config.toml` (if given) and an empty 404 (no such
/// object) to anything else.
fn refusing_endpoint(answer: fn(&str) -> Option<Answer>, config: Option<String>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            let config = config.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(client.try_clone().unwrap());
                let mut request = String::new();
                let _ = reader.read_line(&mut request);
                let mut line = String::new();
                // The headers; a body, if any, is left unread.
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                    if line == "\r\n" {
                        break;
                    }
                    line.clear();
                }
                let (status, body) = match answer(&request) {
                    Some((status, code)) => (
                        status,
                        format!(
                            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{code}</Message></Error>"
                        ),
                    ),
                    None => match config {
                        Some(c)
                            if request.starts_with("GET") && request.contains("/config.toml") =>
                        {
                            ("200 OK", c)
                        }
                        _ => ("404 Not Found", String::new()),
                    },
                };
                let _ = write!(
                    client,
                    "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
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

/// Runs a worker against `endpoint` with and without a cached copy of the run (or only with
/// one), and checks it ends at once with one line naming `status`, having spooled nothing.
fn ends_refused(endpoint: &str, status: &str, cached_only: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let cases: &[bool] = if cached_only { &[true] } else { &[false, true] };
    for &cached in cases {
        let cache = tmp.path().join(format!("cache-{cached}"));
        std::fs::create_dir_all(&cache).unwrap();
        if cached {
            // A worker that has played this run before: it has the config (and would play
            // on from its cache through an outage).
            std::fs::copy(micro_config(), cache.join("config.toml")).unwrap();
        }
        let start = Instant::now();
        let out = worker(endpoint, tmp.path(), &cache).output().unwrap();
        let secs = start.elapsed();
        // Exit code 2 and one error line (after the worker's own start lines, if it got as
        // far as starting).
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        let err = errors[0];
        assert!(
            err.contains("refuses") && err.contains(status),
            "{status}: {stderr}"
        );
        if !cached_only {
            // Refused before it starts: nothing but that line.
            assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        }
        assert!(secs < Duration::from_secs(30), "took {secs:?}");
        // Nothing played, nothing spooled.
        let spooled: Vec<_> = files_under(&cache.join("spool"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "cfzg" || e == "zst"))
            .collect();
        assert!(spooled.is_empty(), "{spooled:?}");
    }
}

#[test]
fn wrong_credentials_end_a_worker_with_one_line() {
    ends_refused(
        &refusing_endpoint(|_| Some(UNKNOWN_KEY), None),
        "403",
        false,
    );
}

/// An expired session token and a bucket in another region (S3's 301 without a location)
/// cannot be mended by retrying either.
#[test]
fn an_expired_token_and_a_wrong_region_end_a_worker_with_one_line() {
    ends_refused(
        &refusing_endpoint(|_| Some(("400 Bad Request", "ExpiredToken")), None),
        "ExpiredToken",
        false,
    );
    ends_refused(
        &refusing_endpoint(
            |_| Some(("301 Moved Permanently", "PermanentRedirect")),
            None,
        ),
        "redirect",
        false,
    );
}

/// Credentials that may read objects but not list the bucket (no `s3:ListBucket`): the
/// worker cannot learn of new nets, so it ends rather than play its cached one for good.
#[test]
fn a_listing_refused_while_reads_work_ends_a_worker() {
    let config = std::fs::read_to_string(micro_config()).unwrap();
    let endpoint = refusing_endpoint(
        |request| {
            request
                .contains("list-type")
                .then_some(("403 Forbidden", "AccessDenied"))
        },
        Some(config),
    );
    ends_refused(&endpoint, "403", true);
}
