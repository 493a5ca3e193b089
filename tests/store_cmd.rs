//! `cfzero bench store` against a directory and a real S3 API server (`moto_server`, started by
//! the test): every uploaded chunk is ingested, a poll is one listing; and the one-line errors
//! of store locations: an unknown URL scheme, a URL without a bucket, a bucket that does not
//! exist, missing credentials.

mod common;
#[path = "../store/tests/s3_server/mod.rs"]
mod s3_server;

use common::*;
use s3_server::S3Server;

/// `cfzero bench store` on `store` for 3 s with 8 workers, with `env`; its JSON report.
fn bench_store(store: &str, env: &[(&str, &str)]) -> serde_json::Value {
    let mut cmd = cfzero(&[
        "bench",
        "store",
        "--store",
        store,
        "--workers",
        "8",
        "--chunk-rate",
        "2",
        "--seconds",
        "3",
        "--poll-seconds",
        "0.5",
        "--json",
    ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("cfzero runs");
    assert!(
        out.status.success(),
        "bench store on {store}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("bench store --json prints JSON")
}

fn check_report(report: &serde_json::Value) {
    let up = report["uploaded_chunks"].as_u64().unwrap();
    assert!(up >= 8, "{report}");
    assert_eq!(report["ingested_chunks"].as_u64(), Some(up), "{report}");
    assert_eq!(
        report["list_requests_per_poll"].as_f64(),
        Some(1.0),
        "{report}"
    );
    assert!(
        report["capacity_chunks_per_s"].as_f64().unwrap() > 0.0,
        "{report}"
    );
}

/// Credentials and endpoint of the test server, and nothing of the machine's own.
fn s3_env(server: &S3Server, home: &std::path::Path) -> Vec<(String, String)> {
    vec![
        ("AWS_ENDPOINT_URL".into(), server.endpoint()),
        ("AWS_ACCESS_KEY_ID".into(), "test".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "test".into()),
        ("AWS_REGION".into(), "us-east-1".into()),
        ("HOME".into(), home.display().to_string()),
    ]
}

#[test]
fn bench_store_ingests_every_chunk_from_a_directory_and_from_s3() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    check_report(&bench_store(dir.to_str().unwrap(), &[]));

    let server = S3Server::start();
    server.create_bucket("bench");
    let env = s3_env(&server, tmp.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    check_report(&bench_store("s3://bench/runs/x", &env));
}

#[test]
fn bad_store_locations_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let server = S3Server::start();
    let base = ["bench", "store", "--seconds", "1", "--store"];
    let run = |store: &str, env: &[(String, String)], needle: &str| {
        let mut args = base.to_vec();
        args.push(store);
        let mut cmd = cfzero(&args);
        cmd.env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_PROFILE");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("cfzero runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{store}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{store}: {err}");
        assert!(
            err.contains(needle),
            "{store}: {err:?} should say {needle:?}"
        );
    };
    let good = s3_env(&server, tmp.path());
    run("ftp://host/x", &good, "unknown URL scheme ftp://");
    run("s3:///runs/x", &good, "no bucket");
    run("s3://no-such-bucket/x", &good, "no-such-bucket");
    // No key in the environment, none in ~/.aws/credentials, and no machine role to ask.
    let no_credentials: Vec<(String, String)> = good
        .iter()
        .filter(|(k, _)| !k.starts_with("AWS_ACCESS") && !k.starts_with("AWS_SECRET"))
        .cloned()
        .chain([("AWS_EC2_METADATA_DISABLED".to_owned(), "true".to_owned())])
        .collect();
    server.create_bucket("creds");
    run("s3://creds/x", &no_credentials, "no AWS credentials");
}
