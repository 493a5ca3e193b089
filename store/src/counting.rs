//! A store that counts the requests made through it and the keys its listings returned:
//! what a caller costs on a billed store, measured on any store (`bench store`'s figures,
//! and tests that a step's cost does not grow with the run).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::{Lease, ObjectInfo, RunStore, StoreError};

/// Requests made, by kind, and the keys the listings returned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// Reads of an object (`get`).
    pub gets: u64,
    /// Looks at an object without reading it (`head`).
    pub heads: u64,
    /// Writes (`put`, `put_if_absent`).
    pub puts: u64,
    /// Removals.
    pub deletes: u64,
    /// Listing calls (a call of a long listing is several requests on S3: one per thousand
    /// keys, see `keys_listed`).
    pub lists: u64,
    /// Keys the listings returned.
    pub keys_listed: u64,
    /// The requests the listings are on S3: a page per thousand keys, at least one each.
    pub list_pages: u64,
}

/// The requests a listing of `keys` keys is on S3: a page per thousand keys, at least one.
pub fn list_pages(keys: u64) -> u64 {
    keys.div_ceil(1000).max(1)
}

/// `inner`, with its requests counted ([`CountingStore::counts`]). The lease's requests are
/// passed through uncounted.
#[derive(Debug)]
pub struct CountingStore {
    inner: Arc<dyn RunStore>,
    gets: AtomicU64,
    heads: AtomicU64,
    puts: AtomicU64,
    deletes: AtomicU64,
    lists: AtomicU64,
    keys_listed: AtomicU64,
    list_pages: AtomicU64,
}

impl CountingStore {
    /// `inner` with every count at 0.
    pub fn new(inner: Arc<dyn RunStore>) -> CountingStore {
        CountingStore {
            inner,
            gets: AtomicU64::new(0),
            heads: AtomicU64::new(0),
            puts: AtomicU64::new(0),
            deletes: AtomicU64::new(0),
            lists: AtomicU64::new(0),
            keys_listed: AtomicU64::new(0),
            list_pages: AtomicU64::new(0),
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> RequestCounts {
        self.read(|a| a.load(Ordering::Relaxed))
    }

    /// The counts so far, and every count back to 0.
    pub fn take(&self) -> RequestCounts {
        self.read(|a| a.swap(0, Ordering::Relaxed))
    }

    /// Every count, each read by `n`.
    fn read(&self, n: impl Fn(&AtomicU64) -> u64) -> RequestCounts {
        RequestCounts {
            gets: n(&self.gets),
            heads: n(&self.heads),
            puts: n(&self.puts),
            deletes: n(&self.deletes),
            lists: n(&self.lists),
            keys_listed: n(&self.keys_listed),
            list_pages: n(&self.list_pages),
        }
    }

    fn count(a: &AtomicU64) {
        a.fetch_add(1, Ordering::Relaxed);
    }
}

impl RunStore for CountingStore {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Self::count(&self.gets);
        self.inner.get(key)
    }

    fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        Self::count(&self.heads);
        self.inner.head(key)
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<(), StoreError> {
        Self::count(&self.puts);
        self.inner.put(key, bytes)
    }

    fn put_if_absent(&self, key: &str, bytes: &[u8]) -> Result<bool, StoreError> {
        Self::count(&self.puts);
        self.inner.put_if_absent(key, bytes)
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        Self::count(&self.deletes);
        self.inner.delete(key)
    }

    fn list_after(&self, prefix: &str, after: Option<&str>) -> Result<Vec<String>, StoreError> {
        Self::count(&self.lists);
        let keys = self.inner.list_after(prefix, after)?;
        let listed = keys.len() as u64;
        self.keys_listed.fetch_add(listed, Ordering::Relaxed);
        self.list_pages
            .fetch_add(list_pages(listed), Ordering::Relaxed);
        Ok(keys)
    }

    fn acquire_lease(&self, holder: &str, ttl: Duration) -> Result<Lease, StoreError> {
        self.inner.acquire_lease(holder, ttl)
    }

    fn renew_lease(&self, lease: &mut Lease) -> Result<(), StoreError> {
        self.inner.renew_lease(lease)
    }

    fn release_lease(&self, lease: Lease) -> Result<(), StoreError> {
        self.inner.release_lease(lease)
    }

    fn get_file(&self, key: &str, path: &std::path::Path) -> Result<bool, StoreError> {
        Self::count(&self.gets);
        self.inner.get_file(key, path)
    }

    fn put_file(&self, key: &str, path: &std::path::Path) -> Result<Option<u64>, StoreError> {
        Self::count(&self.puts);
        self.inner.put_file(key, path)
    }
}
