//! A real S3 API server for tests: `moto_server` (from the `moto[server]` PyPI package that
//! `scripts/setup.sh` installs into `.venv`) on a free port of 127.0.0.1, stopped when dropped.
//! Shared by `store/tests/` and the binary's tests (`#[path]`).

#![allow(dead_code)] // Each test binary uses part of it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cfzero_store::ObjectRunStore;
use object_store::aws::AmazonS3Builder;

/// The workspace root (this file is compiled by test crates at the root and in `store/`).
fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if here.join("store").is_dir() {
        here
    } else {
        here.join("..")
    }
}

/// A `moto_server` on a free port of 127.0.0.1, stopped when dropped.
pub struct S3Server {
    child: Child,
    port: u16,
    // The server's request recording lives here.
    _dir: tempfile::TempDir,
}

impl S3Server {
    /// Starts a server on 127.0.0.1 and waits until it listens.
    pub fn start() -> S3Server {
        S3Server::start_on("127.0.0.1")
    }

    /// Starts a server listening on `host` (`0.0.0.0`: every address of this network
    /// namespace) and waits until it answers on 127.0.0.1.
    pub fn start_on(host: &str) -> S3Server {
        let exe = workspace_root().join(".venv/bin/moto_server");
        assert!(
            exe.exists(),
            "{} is missing: run scripts/setup.sh (it installs moto[server])",
            exe.display()
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(exe)
            .args(["-H", host, "-p", &port.to_string()])
            .env("MOTO_RECORDER_FILEPATH", dir.path().join("recording"))
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts");
        let server = S3Server {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "moto_server did not listen in 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    /// One plain HTTP request; the status code and body.
    pub fn http(&self, method: &str, path: &str) -> (u16, String) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = text
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_owned();
        (status, body)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The endpoint URL (`AWS_ENDPOINT_URL` for the binary).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Creates the bucket `bucket`.
    pub fn create_bucket(&self, bucket: &str) {
        let (status, body) = self.http("PUT", &format!("/{bucket}"));
        assert_eq!(status, 200, "creating bucket {bucket}: {body}");
    }

    /// A new bucket and a store on `prefix` in it.
    pub fn store(&self, bucket: &str, prefix: &str) -> ObjectRunStore {
        self.create_bucket(bucket);
        let client = AmazonS3Builder::new()
            .with_endpoint(format!("http://127.0.0.1:{}", self.port))
            .with_allow_http(true)
            .with_bucket_name(bucket)
            .with_region("us-east-1")
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .build()
            .unwrap();
        ObjectRunStore::with_client(Arc::new(client), prefix, &format!("s3://{bucket}/{prefix}"))
    }

    /// How many S3 requests the server recorded since [`S3Server::start_counting`].
    pub fn counted(&self) -> usize {
        let (status, body) = self.http("GET", "/moto-api/recorder/download-recording");
        assert_eq!(status, 200, "{body}");
        body.lines().filter(|l| l.contains("\"method\"")).count()
    }

    /// Starts counting requests from zero.
    pub fn start_counting(&self) {
        self.http("POST", "/moto-api/recorder/reset-recording");
        let (status, body) = self.http("POST", "/moto-api/recorder/start-recording");
        assert_eq!(status, 200, "{body}");
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
