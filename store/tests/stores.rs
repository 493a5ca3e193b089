//! The same suite against every [`RunStore`]: a local directory, object storage in memory, and
//! a real S3 API server (`moto_server` from the `moto[server]` PyPI package, started on a free
//! port of 127.0.0.1 by the tests, with a bucket of its own per test). Also what only S3 can
//! show: the requests one poll of new chunks costs, counted by the server.

mod s3_server;

use std::sync::Arc;
use std::time::Duration;

use cfzero_store::{
    Bundle, ChunkCursor, ChunkName, Fence, FencedStore, LocalStore, ObjectRunStore, RetryingStore,
    RunStore, StoreError,
};
use s3_server::S3Server;

/// What every store must do.
fn suite(store: &dyn RunStore) {
    // Absent, then written, then replaced.
    assert_eq!(store.get("nets/gen-0001.safetensors").unwrap(), None);
    assert_eq!(store.head("nets/gen-0001.safetensors").unwrap(), None);
    let before = std::time::SystemTime::now() - Duration::from_secs(5);
    store.put("nets/gen-0001.safetensors", b"one").unwrap();
    // When it was written (second precision on S3), for the ladder's time axis, and its
    // length, for a download that only a longer object needs.
    let info = store.head("nets/gen-0001.safetensors").unwrap().unwrap();
    assert_eq!(info.size, 3);
    let written = info.modified;
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

    // Objects to and from local files (elsewhere than a directory store's own files).
    let local = tempfile::tempdir().unwrap();
    let copy = local.path().join("cache/games/gen-0001/c.cfzg");
    assert!(!store.get_file("chunks/0009-none", &copy).unwrap());
    assert!(!copy.exists());
    assert!(store.get_file("chunks/0002-w1", &copy).unwrap());
    assert_eq!(std::fs::read(&copy).unwrap(), b"chunks/0002-w1");
    // The object replaced afterwards leaves the copy as it was.
    store.put("chunks/0002-w1", b"replaced").unwrap();
    assert_eq!(std::fs::read(&copy).unwrap(), b"chunks/0002-w1");
    let file = local.path().join("log.tsv");
    assert_eq!(store.put_file("log.tsv", &file).unwrap(), None);
    std::fs::write(&file, b"gen 1").unwrap();
    assert_eq!(store.put_file("log.tsv", &file).unwrap(), Some(5));
    assert_eq!(
        store.get("log.tsv").unwrap().as_deref(),
        Some(&b"gen 1"[..])
    );

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
    // A directory's lock is an OS lock, and the moto server this binary spawns may hold a copy
    // of its handle for the moment before it executes: the takeover waits that moment out.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let second = loop {
        match store.acquire_lease("trainer-b@host2", ttl) {
            Err(StoreError::Leased { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            other => break other.unwrap(),
        }
    };
    assert_eq!(second.holder(), "trainer-b@host2");
    store.release_lease(second).unwrap();
}

#[test]
fn a_local_directory_keeps_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::new(&dir.path().join("run"));
    suite(&store);
    lease_suite(&store, Duration::from_secs(60));
    // The keys are the run directory's own files, and the directory is its own copy: moving
    // an object to or from its own file is nothing to do, however the path is written.
    let net = dir.path().join("run/nets/gen-0002.safetensors");
    assert!(net.is_file());
    assert!(store.get_file("nets/gen-0002.safetensors", &net).unwrap());
    let roundabout = dir.path().join("run/nets/../nets/gen-0002.safetensors");
    assert_eq!(
        store
            .put_file("nets/gen-0002.safetensors", &roundabout)
            .unwrap(),
        Some(1)
    );
    assert_eq!(std::fs::read(&net).unwrap(), b"a");
    assert!(
        !store
            .get_file(
                "nets/gen-0003.safetensors",
                &dir.path().join("run/nets/gen-0003.safetensors")
            )
            .unwrap()
    );
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
fn object_storage_in_indexed_memory_keeps_a_run() {
    let store = ObjectRunStore::with_client(
        Arc::new(cfzero_store::IndexedMemory::new()),
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
        store
            .put(&chunk_key(ms, worker, written + 1), b"games")
            .unwrap();
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

/// Uploads that land while a listing is under way: each `(trigger, path, bytes)` lands
/// between two pages once the listing has read past `trigger`.
type Landing = Arc<std::sync::Mutex<std::collections::VecDeque<(String, String, Vec<u8>)>>>;

/// An in-memory object store with weather. Its writes, while `lose` is set, answer with a
/// server error: after landing (a 5xx or a dropped connection after the store committed a
/// write), or without landing while `land` is unset. With `page` > 0 its listings come in
/// pages of that many keys, each read by a request of its own after the last key of the one
/// before (as S3 continues a listing), with uploads landing between pages ([`Landing`]), in a
/// page already read or in one still to come.
#[derive(Debug, Default)]
struct Weather {
    inner: Arc<object_store::memory::InMemory>,
    lose: std::sync::atomic::AtomicBool,
    land: std::sync::atomic::AtomicBool,
    page: usize,
    landing: Landing,
}

impl Weather {
    /// Fair weather: writes land and are answered, listings come in one request.
    fn fair() -> Weather {
        Weather {
            land: true.into(),
            ..Weather::default()
        }
    }
}

impl std::fmt::Display for Weather {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Weather({})", self.inner)
    }
}

#[async_trait::async_trait]
impl object_store::ObjectStore for Weather {
    async fn put_opts(
        &self,
        location: &object_store::path::Path,
        payload: object_store::PutPayload,
        opts: object_store::PutOptions,
    ) -> object_store::Result<object_store::PutResult> {
        let error = || object_store::Error::Generic {
            store: "Weather",
            source: "500 Internal Server Error".into(),
        };
        if !self.land.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(error());
        }
        let landed = self.inner.put_opts(location, payload, opts).await?;
        if self.lose.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(error());
        }
        Ok(landed)
    }

    async fn put_multipart_opts(
        &self,
        location: &object_store::path::Path,
        opts: object_store::PutMultipartOptions,
    ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &object_store::path::Path,
        options: object_store::GetOptions,
    ) -> object_store::Result<object_store::GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: futures::stream::BoxStream<
            'static,
            object_store::Result<object_store::path::Path>,
        >,
    ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::path::Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&object_store::path::Path>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>> {
        use futures::{StreamExt, TryStreamExt};
        if self.page == 0 {
            return self.inner.list(prefix);
        }
        use object_store::ObjectStoreExt;
        let (inner, landing, page) = (self.inner.clone(), self.landing.clone(), self.page);
        let prefix = prefix.cloned();
        let start: (Option<object_store::path::Path>, bool) = (None, false);
        futures::stream::unfold(start, move |(after, done)| {
            let (inner, landing, prefix) = (inner.clone(), landing.clone(), prefix.clone());
            async move {
                if done {
                    return None;
                }
                if let Some(a) = &after {
                    let mut due = Vec::new();
                    {
                        let mut landing = landing.lock().unwrap();
                        while landing
                            .front()
                            .is_some_and(|(t, _, _)| t.as_str() <= a.as_ref())
                        {
                            due.extend(landing.pop_front());
                        }
                    }
                    for (_, key, bytes) in due {
                        let path = object_store::path::Path::from(key);
                        inner.put(&path, bytes.into()).await.unwrap();
                    }
                }
                let mut next: Vec<object_store::ObjectMeta> =
                    inner.list(prefix.as_ref()).try_collect().await.unwrap();
                next.retain(|m| after.as_ref().is_none_or(|a| m.location > *a));
                next.sort_by(|a, b| a.location.cmp(&b.location));
                next.truncate(page);
                let done = next.len() < page;
                let last = next.last().map(|m| m.location.clone()).or(after);
                Some((
                    futures::stream::iter(next.into_iter().map(Ok)),
                    (last, done),
                ))
            }
        })
        .flatten()
        .boxed()
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&object_store::path::Path>,
    ) -> object_store::Result<object_store::ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &object_store::path::Path,
        to: &object_store::path::Path,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[test]
fn a_create_whose_answer_was_lost_is_still_ours() {
    let flaky = Arc::new(Weather {
        lose: true.into(),
        ..Weather::fair()
    });
    let store = ObjectRunStore::with_client(flaky.clone(), "runs/x", "memory://runs/x");
    // The write landed and its answer was a 500: the object holds our bytes, so it is ours
    // (not "another trainer published this generation").
    assert!(
        store
            .put_if_absent("nets/gen-0001.safetensors", b"ours")
            .unwrap()
    );
    // Asked again (a retry after the lost answer): still ours.
    assert!(
        store
            .put_if_absent("nets/gen-0001.safetensors", b"ours")
            .unwrap()
    );
    // Other bytes there are another writer's, whatever the answer said.
    assert!(
        !store
            .put_if_absent("nets/gen-0001.safetensors", b"theirs")
            .unwrap()
    );
    flaky.lose.store(false, std::sync::atomic::Ordering::SeqCst);
    assert!(
        !store
            .put_if_absent("nets/gen-0001.safetensors", b"theirs")
            .unwrap()
    );
    assert_eq!(
        store.get("nets/gen-0001.safetensors").unwrap().as_deref(),
        Some(&b"ours"[..])
    );
    // A write that failed without landing stays a failure.
    flaky.land.store(false, std::sync::atomic::Ordering::SeqCst);
    match store.put_if_absent("nets/gen-0002.safetensors", b"x") {
        Err(StoreError::Backend { message, .. }) => assert!(message.contains("500"), "{message}"),
        other => panic!("a write that never landed: {other:?}"),
    }
    assert_eq!(store.get("nets/gen-0002.safetensors").unwrap(), None);
}

/// A renewal whose answer was lost landed all the same: the retry (with the version from before
/// it) finds the lease still naming this trainer and keeps it, instead of reporting it taken
/// over by itself.
#[test]
fn a_renewal_whose_answer_was_lost_keeps_the_lease() {
    let flaky = Arc::new(Weather::fair());
    let store = ObjectRunStore::with_client(flaky.clone(), "runs/x", "memory://runs/x");
    let ttl = Duration::from_secs(60);
    let mut lease = store.acquire_lease("trainer@host1", ttl).unwrap();
    let before = lease.expires();
    std::thread::sleep(Duration::from_millis(20));
    // The renewal lands; its answer is a 500.
    flaky.lose.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(matches!(
        store.renew_lease(&mut lease),
        Err(StoreError::Backend { .. })
    ));
    flaky.lose.store(false, std::sync::atomic::Ordering::SeqCst);
    // The retry: still ours, and renewed again from the version that landed.
    store.renew_lease(&mut lease).unwrap();
    assert!(lease.expires() > before);
    store.renew_lease(&mut lease).unwrap();
    // Another trainer is still refused while it lives (a lease taken over after it expired is
    // a lost lease naming the successor: `an_expired_lease_is_taken_over_and_its_holder_learns_it`).
    assert!(matches!(
        store.acquire_lease("trainer@host2", ttl),
        Err(StoreError::Leased { .. })
    ));
}

/// A retrying store waits out a store that fails for a while; past its budget the failure comes
/// back; what retrying cannot fix comes back at once.
#[test]
fn a_retrying_store_rides_out_an_outage_and_nothing_else() {
    use std::sync::atomic::Ordering::SeqCst;
    let flaky = Arc::new(Weather {
        land: false.into(),
        ..Weather::fair()
    });
    let raw: Arc<dyn RunStore> = Arc::new(ObjectRunStore::with_client(
        flaky.clone(),
        "runs/x",
        "memory://runs/x",
    ));
    let store = RetryingStore::new(raw.clone(), Duration::from_secs(30))
        .with_first_wait(Duration::from_millis(50));
    // Every write fails until the store comes back, 300 ms from now.
    let healer = {
        let flaky = flaky.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            flaky.land.store(true, SeqCst);
        })
    };
    let start = std::time::Instant::now();
    store.put("log.tsv", b"1").unwrap();
    assert!(start.elapsed() >= Duration::from_millis(250));
    healer.join().unwrap();
    assert_eq!(store.get("log.tsv").unwrap().as_deref(), Some(&b"1"[..]));
    // An outage longer than the budget: its error.
    flaky.land.store(false, SeqCst);
    let short = RetryingStore::new(raw, Duration::from_millis(300))
        .with_first_wait(Duration::from_millis(50));
    assert!(matches!(
        short.put("log.tsv", b"2"),
        Err(StoreError::Backend { .. })
    ));
    assert_eq!(store.get("log.tsv").unwrap().as_deref(), Some(&b"1"[..]));
    // A bad key is no weather: at once.
    let start = std::time::Instant::now();
    assert!(matches!(
        store.put("../x", b"1"),
        Err(StoreError::BadKey(_))
    ));
    assert!(start.elapsed() < Duration::from_millis(50));
}

/// What a fenced store lets through while its lease of `ttl` lives, stalls and is lost.
fn fence_suite(raw: Arc<dyn RunStore>, ttl: Duration) {
    let mut lease = raw.acquire_lease("fenced@host1", ttl).unwrap();
    let fence = Arc::new(Fence::new(raw.location(), &lease));
    assert_eq!(fence.margin(), ttl / 3);
    let fenced = FencedStore::new(raw.clone(), fence.clone());
    fenced.put("log.tsv", b"1").unwrap();
    assert!(
        fenced
            .put_if_absent("nets/gen-0001.safetensors", b"1")
            .unwrap()
    );
    // No renewal for longer than the lease less the margin (a stalled trainer): every write
    // is refused and nothing reaches the store; reads still work.
    std::thread::sleep(ttl - fence.margin() + Duration::from_millis(100));
    let refused = |e: Result<(), StoreError>| match e {
        Err(e @ StoreError::Fenced { .. }) => {
            assert!(e.to_string().contains("trainer lease"), "{e}");
        }
        other => panic!("a fenced write went through: {other:?}"),
    };
    refused(fenced.put("log.tsv", b"2"));
    refused(
        fenced
            .put_if_absent("nets/gen-0002.safetensors", b"2")
            .map(|_| ()),
    );
    refused(fenced.delete("log.tsv"));
    assert_eq!(fenced.get("log.tsv").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(raw.get("nets/gen-0002.safetensors").unwrap(), None);
    // Past the expiry the message says so.
    std::thread::sleep(fence.margin() + Duration::from_millis(100));
    match fenced.put("log.tsv", b"3") {
        Err(e) => assert!(e.to_string().contains("expired"), "{e}"),
        Ok(()) => panic!("a write after the expiry went through"),
    }
    // Renewed (nobody took it over meanwhile): writes go out again.
    raw.renew_lease(&mut lease).unwrap();
    fence.renewed(&lease);
    fenced.put("log.tsv", b"4").unwrap();
    // Lost: nothing goes out, however much time the lease seems to have.
    fence.lose("taken over by next@host2");
    match fenced.put("log.tsv", b"5") {
        Err(e) => assert!(e.to_string().contains("next@host2"), "{e}"),
        Ok(()) => panic!("a write after the loss went through"),
    }
    assert_eq!(raw.get("log.tsv").unwrap().as_deref(), Some(&b"4"[..]));
}

#[test]
fn a_fenced_store_writes_only_while_its_lease_lives() {
    let server = S3Server::start();
    fence_suite(
        Arc::new(server.store("fence", "runs/f")),
        Duration::from_millis(1500),
    );
    fence_suite(
        Arc::new(ObjectRunStore::with_client(
            Arc::new(object_store::memory::InMemory::new()),
            "runs/f",
            "memory://runs/f",
        )),
        Duration::from_millis(1500),
    );
}

#[test]
fn a_directory_lease_never_fences() {
    let dir = tempfile::tempdir().unwrap();
    let raw: Arc<dyn RunStore> = Arc::new(LocalStore::new(&dir.path().join("run")));
    let lease = raw
        .acquire_lease("local@host1", Duration::from_millis(10))
        .unwrap();
    let fenced = FencedStore::new(raw.clone(), Arc::new(Fence::new(raw.location(), &lease)));
    // An OS lock is held until the process ends: no expiry to fence on.
    std::thread::sleep(Duration::from_millis(50));
    fenced.put("log.tsv", b"1").unwrap();
    assert_eq!(raw.get("log.tsv").unwrap().as_deref(), Some(&b"1"[..]));
}

/// The key of chunk `seq` of `worker`'s first incarnation, its upload begun at `ms`.
fn chunk_key(ms: u64, worker: &str, seq: u64) -> String {
    ChunkName {
        uploaded_ms: ms,
        generation: 1,
        worker: worker.to_owned(),
        bundle: Bundle::Numbered {
            incarnation: 1,
            seq,
        },
        games: 1,
        positions: 10,
    }
    .key()
}

#[test]
fn a_full_listing_finds_what_the_quick_polls_cannot_see() {
    let store = ObjectRunStore::with_client(
        Arc::new(object_store::memory::InMemory::new()),
        "runs/x",
        "memory://runs/x",
    );
    let now = cfzero_store::chunks::now_ms();
    let mut cursor = ChunkCursor::new(Duration::from_secs(300));
    let on_time = chunk_key(now, "on_time", 1);
    store.put(&on_time, b"games").unwrap();
    for k in cursor.poll(&store).unwrap() {
        cursor.consume(&k);
    }
    // A worker whose clock runs 10 minutes slow: its key lies before the quick polls' window.
    let slow = chunk_key(now - 600_000, "slow", 1);
    store.put(&slow, b"games").unwrap();
    assert!(cursor.poll(&store).unwrap().is_empty());
    let full = cursor.poll_all(&store).unwrap();
    assert_eq!(full.new, vec![slow.clone()]);
    assert_eq!(full.behind, 1);
    assert_eq!(full.listed, 2);
    cursor.consume(&slow);
    // Consumed once: neither listing offers it again, nor the same chunk uploaded again.
    let again = chunk_key(now + 1, "slow", 1);
    store.put(&again, b"games").unwrap();
    assert!(cursor.poll(&store).unwrap().is_empty());
    assert!(cursor.poll_all(&store).unwrap().new.is_empty());
}

/// Workers upload numbered chunks in order while the trainer's listings page: a chunk that
/// lands in a page already read while its successor lands in a later one, and a chunk uploaded
/// twice under two keys. Every chunk is consumed exactly once, and none is given up.
#[test]
fn chunks_landing_while_a_listing_pages_are_each_consumed_once() {
    let pages = Arc::new(Weather {
        page: 1,
        ..Weather::fair()
    });
    let store = ObjectRunStore::with_client(pages.clone(), "runs/p", "memory://runs/p");
    let base = cfzero_store::chunks::now_ms() - 3_600_000;
    let full = |k: &str| format!("runs/p/{k}");
    let mut next_seq: std::collections::BTreeMap<&str, u64> = Default::default();
    let mut uploaded: Vec<(String, u64)> = Vec::new();
    let mut upload = |ms: u64, worker: &'static str| {
        let seq = next_seq.entry(worker).or_insert(0);
        *seq += 1;
        uploaded.push((worker.to_owned(), *seq));
        (chunk_key(ms, worker, *seq), *seq)
    };
    let mut consumed: std::collections::BTreeMap<(String, u64), u32> = Default::default();
    let mut take = |cursor: &mut ChunkCursor, keys: Vec<String>| {
        for k in keys {
            if !cursor.consumed(&k) {
                let n = ChunkName::parse(&k).unwrap();
                let Bundle::Numbered { seq, .. } = n.bundle else {
                    panic!("{k}")
                };
                *consumed.entry((n.worker.clone(), seq)).or_default() += 1;
            }
            cursor.consume(&k);
        }
    };
    let mut cursor = ChunkCursor::new(Duration::from_secs(300));
    let mut waited = 0;
    let wait = Duration::from_secs(600);
    for round in 0..20u64 {
        let t = base + round * 10_000;
        // Chunks that are there before the listing starts.
        let mut before = Vec::new();
        for (i, w) in ["a", "b", "c"].into_iter().enumerate() {
            let (k, seq) = upload(t + i as u64, w);
            store.put(&k, b"games").unwrap();
            before.push((k, seq));
        }
        // While the listing pages: once it has read b's chunk, worker a's next chunk (its
        // upload began at t + 1, so its key lies behind b's) lands; once it has read c's, a's
        // chunk after that (begun at t + 5000) lands ahead; then a's first chunk of the round
        // is uploaded again, a retry under a new key.
        let (behind, _) = upload(t + 1, "a");
        let (ahead, _) = upload(t + 5_000, "a");
        let retry = chunk_key(t + 6_000, "a", before[0].1);
        {
            let mut landing = pages.landing.lock().unwrap();
            landing.push_back((full(&before[1].0), full(&behind), b"games".to_vec()));
            landing.push_back((full(&before[2].0), full(&ahead), b"games".to_vec()));
            landing.push_back((full(&ahead), full(&retry), b"games".to_vec()));
        }
        let new = if round % 2 == 0 {
            cursor.poll_all(&store).unwrap().new
        } else {
            cursor.poll(&store).unwrap()
        };
        take(&mut cursor, new);
        let left: Vec<_> = pages.landing.lock().unwrap().drain(..).collect();
        assert!(left.is_empty(), "uploads that never landed: {left:?}");
        for event in cursor.check_holes(t, wait) {
            match event {
                cfzero_store::HoleEvent::Waiting(_) => waited += 1,
                skipped => panic!("{skipped:?}"),
            }
        }
    }
    for _ in 0..2 {
        let new = cursor.poll_all(&store).unwrap().new;
        take(&mut cursor, new);
    }
    assert!(waited > 0, "no listing saw a chunk land behind its page");
    let once: std::collections::BTreeMap<(String, u64), u32> =
        uploaded.into_iter().map(|u| (u, 1)).collect();
    assert_eq!(consumed, once);
    assert!(cursor.check_holes(base + 10_000_000, wait).is_empty());
}
