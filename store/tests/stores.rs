//! The same suite against every [`RunStore`]: a local directory, object storage in memory, and
//! a real S3 API server (`moto_server` from the `moto[server]` PyPI package, started on a free
//! port of 127.0.0.1 by the tests, with a bucket of its own per test). Also what only S3 can
//! show: the requests one poll of new chunks costs, counted by the server.

mod s3_server;

use std::sync::Arc;
use std::time::Duration;

use cfzero_store::{ChunkCursor, ChunkName, LocalStore, ObjectRunStore, RunStore, StoreError};
use s3_server::S3Server;

/// What every store must do.
fn suite(store: &dyn RunStore) {
    // Absent, then written, then replaced.
    assert_eq!(store.get("nets/gen-0001.safetensors").unwrap(), None);
    assert_eq!(store.modified("nets/gen-0001.safetensors").unwrap(), None);
    let before = std::time::SystemTime::now() - Duration::from_secs(5);
    store.put("nets/gen-0001.safetensors", b"one").unwrap();
    // When it was written (second precision on S3), for the ladder's time axis.
    let written = store
        .modified("nets/gen-0001.safetensors")
        .unwrap()
        .unwrap();
    assert!(
        written >= before && written <= std::time::SystemTime::now() + Duration::from_secs(5),
        "{written:?}"
    );
    assert_eq!(
        store.get("nets/gen-0001.safetensors").unwrap().as_deref(),
        Some(&b"one"[..])
    );
    store.put("nets/gen-0001.safetensors", b"uno").unwrap();
    assert_eq!(
        store.get("nets/gen-0001.safetensors").unwrap().as_deref(),
        Some(&b"uno"[..])
    );

    // Create-if-absent: the first writer wins, the second leaves the object alone.
    assert!(
        store
            .put_if_absent("nets/gen-0002.safetensors", b"a")
            .unwrap()
    );
    assert!(
        !store
            .put_if_absent("nets/gen-0002.safetensors", b"b")
            .unwrap()
    );
    assert_eq!(
        store.get("nets/gen-0002.safetensors").unwrap().as_deref(),
        Some(&b"a"[..])
    );

    // Listing: every depth under the prefix, ascending, after the cursor.
    for k in [
        "chunks/0003-w1",
        "chunks/0001-w2",
        "chunks/0002-w1",
        "chunks/sub/0004",
    ] {
        store.put(k, k.as_bytes()).unwrap();
    }
    store.put("chunksx/not-under", b"x").unwrap();
    let all = store.list_after("chunks", None).unwrap();
    assert_eq!(
        all,
        [
            "chunks/0001-w2",
            "chunks/0002-w1",
            "chunks/0003-w1",
            "chunks/sub/0004"
        ]
    );
    let after = store.list_after("chunks", Some("chunks/0002-w1")).unwrap();
    assert_eq!(after, ["chunks/0003-w1", "chunks/sub/0004"]);
    assert!(store.list_after("empty", None).unwrap().is_empty());

    // Delete, twice.
    store.delete("chunks/0001-w2").unwrap();
    store.delete("chunks/0001-w2").unwrap();
    assert_eq!(store.get("chunks/0001-w2").unwrap(), None);

    // Bad keys are refused before any request.
    for bad in ["", "/abs", "a//b", "../up", "a/./b", "a\\b"] {
        let e = store.put(bad, b"x").unwrap_err();
        assert!(matches!(e, StoreError::BadKey(_)), "{bad:?}: {e}");
    }
}

/// One trainer per run: a second is refused naming the first; after release it may take over.
fn lease_suite(store: &dyn RunStore, ttl: Duration) {
    let mut first = store.acquire_lease("trainer-a@host1", ttl).unwrap();
    assert_eq!(first.holder(), "trainer-a@host1");
    match store.acquire_lease("trainer-b@host2", ttl) {
        Err(e @ StoreError::Leased { .. }) => {
            assert!(e.to_string().contains("trainer-a@host1"), "{e}");
            assert!(e.is_user_error());
        }
        other => panic!("a second trainer got {other:?}"),
    }
    store.renew_lease(&mut first).unwrap();
    store.release_lease(first).unwrap();
    let second = store.acquire_lease("trainer-b@host2", ttl).unwrap();
    assert_eq!(second.holder(), "trainer-b@host2");
    store.release_lease(second).unwrap();
}

#[test]
fn a_local_directory_keeps_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::new(&dir.path().join("run"));
    suite(&store);
    lease_suite(&store, Duration::from_secs(60));
    // The keys are the run directory's own files.
    assert!(dir.path().join("run/nets/gen-0002.safetensors").is_file());
}

#[test]
fn object_storage_in_memory_keeps_a_run() {
    let store = ObjectRunStore::with_client(
        Arc::new(object_store::memory::InMemory::new()),
        "runs/x",
        "memory://runs/x",
    );
    suite(&store);
    lease_suite(&store, Duration::from_secs(60));
}

#[test]
fn an_s3_server_keeps_a_run() {
    let server = S3Server::start();
    let store = server.store("suite", "runs/x");
    suite(&store);
    lease_suite(&store, Duration::from_secs(60));
    // Keys live under the prefix, nothing outside it.
    let other = server.store("suite-other", "");
    assert!(other.list_after("runs", None).unwrap().is_empty());
}

#[test]
fn an_expired_lease_is_taken_over_and_its_holder_learns_it() {
    let server = S3Server::start();
    let store = server.store("lease", "runs/y");
    let ttl = Duration::from_millis(1500);
    let mut crashed = store.acquire_lease("crashed@host1", ttl).unwrap();
    assert!(matches!(
        store.acquire_lease("next@host2", ttl),
        Err(StoreError::Leased { .. })
    ));
    // The holder stops renewing (as if killed); after the expiry a successor takes over.
    std::thread::sleep(ttl + Duration::from_millis(300));
    let next = store
        .acquire_lease("next@host2", Duration::from_secs(60))
        .unwrap();
    assert_eq!(next.holder(), "next@host2");
    // The stalled holder's renewal fails, naming its successor.
    match store.renew_lease(&mut crashed) {
        Err(e @ StoreError::LeaseLost { .. }) => {
            assert!(e.to_string().contains("next@host2"), "{e}")
        }
        other => panic!("a stale holder renewed: {other:?}"),
    }
}

#[test]
fn a_poll_costs_the_same_however_many_chunks_were_consumed() {
    let server = S3Server::start();
    let store = server.store("listing", "runs/z");
    let mut polls = Vec::new();
    // The trainer's cursor, with a 10-second grace window for late uploads.
    let mut cursor = ChunkCursor::new(Duration::from_secs(10));
    let mut written = 0u64;
    // Chunks one second apart (upload times of the past), as workers name them.
    let mut put = |worker: &str| {
        let ms = 1_700_000_000_000 + written * 1000;
        let name = ChunkName {
            uploaded_ms: ms,
            generation: 1,
            worker: worker.to_owned(),
            bundle: ms,
            games: 1,
            positions: 10,
        };
        store.put(&name.key(), b"games").unwrap();
        written += 1;
    };
    for batch in [10, 1000] {
        for _ in 0..batch {
            put("w1");
        }
        // The trainer catches up, then polls once more with little new.
        let new = cursor.poll(&store).unwrap();
        assert_eq!(new.len(), batch);
        for k in &new {
            cursor.consume(k);
        }
        put("w2");
        put("w3");
        server.start_counting();
        let new = cursor.poll(&store).unwrap();
        polls.push(server.counted());
        assert_eq!(new.len(), 2, "{new:?}");
        for k in &new {
            cursor.consume(k);
        }
        // Nothing is read twice.
        assert!(cursor.poll(&store).unwrap().is_empty());
    }
    // One ListObjectsV2 request with start-after, after 12 chunks as after 1,014.
    assert_eq!(polls, [1, 1], "requests per poll");
}
