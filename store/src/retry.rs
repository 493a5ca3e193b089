//! A store that rides out weather: every read, write and listing that fails with an error the
//! store may not repeat ([`StoreError::Backend`]: a server error, a timeout, a dropped
//! connection, after the client's own retries) is tried again with a growing wait, for up to
//! a stated time, before the error goes to the caller. What retrying cannot fix (a refusal, a
//! bad key, a fenced write, a lost lease) goes to the caller at once.
//!
//! Wrapped around a [`crate::FencedStore`], each try passes the fence anew, so a retry never
//! writes after the lease that allowed the first try is gone. The lease's own requests pass
//! through untried: the lease keeper renews on its own schedule, well before the expiry.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{Lease, ObjectInfo, RunStore, StoreError};

/// How long a trainer's store requests are retried before the error stops the trainer: long
/// enough for a store's brief outage or a network partition that heals.
pub const RETRY_BUDGET: Duration = Duration::from_secs(600);
/// The first wait after a failure; each further wait doubles, up to [`MAX_WAIT`].
const FIRST_WAIT: Duration = Duration::from_secs(1);
/// The longest wait between two tries.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// A [`RunStore`] that retries transient failures (see the module docs).
#[derive(Debug)]
pub struct RetryingStore {
    inner: Arc<dyn RunStore>,
    budget: Duration,
    first_wait: Duration,
}

impl RetryingStore {
    /// Retries `inner`'s transient failures for up to `budget` a request.
    pub fn new(inner: Arc<dyn RunStore>, budget: Duration) -> RetryingStore {
        RetryingStore {
            inner,
            budget,
            first_wait: FIRST_WAIT,
        }
    }

    /// The same with `first_wait` before the first retry (tests use a short one).
    pub fn with_first_wait(mut self, first_wait: Duration) -> RetryingStore {
        self.first_wait = first_wait;
        self
    }

    /// Runs `request` until it succeeds, fails for good, or `budget` has passed; says on
    /// stderr what it waits for.
    fn retried<T>(
        &self,
        what: &str,
        mut request: impl FnMut() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let start = Instant::now();
        let mut wait = self.first_wait;
        loop {
            match request() {
                Err(e @ StoreError::Backend { .. }) if start.elapsed() + wait < self.budget => {
                    let left = self.budget.saturating_sub(start.elapsed());
                    eprintln!(
                        "warning: {what}: {e}; trying again in {:.0} s (for {:.0} s more)",
                        wait.as_secs_f64().max(1.0),
                        left.as_secs_f64()
                    );
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(MAX_WAIT);
                }
                other => return other,
            }
        }
    }
}

impl RunStore for RetryingStore {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.retried(&format!("reading {key}"), || self.inner.get(key))
    }

    fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        self.retried(&format!("looking up {key}"), || self.inner.head(key))
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<(), StoreError> {
        self.retried(&format!("writing {key}"), || self.inner.put(key, bytes))
    }

    fn put_if_absent(&self, key: &str, bytes: &[u8]) -> Result<bool, StoreError> {
        // A retry of a create whose answer was lost finds its own bytes there: the store
        // reports it as written (`ObjectRunStore::put_if_absent`).
        self.retried(&format!("writing {key}"), || {
            self.inner.put_if_absent(key, bytes)
        })
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.retried(&format!("deleting {key}"), || self.inner.delete(key))
    }

    fn get_file(&self, key: &str, path: &std::path::Path) -> Result<bool, StoreError> {
        self.retried(&format!("reading {key}"), || self.inner.get_file(key, path))
    }

    fn put_file(&self, key: &str, path: &std::path::Path) -> Result<Option<u64>, StoreError> {
        self.retried(&format!("writing {key}"), || self.inner.put_file(key, path))
    }

    fn list_after(&self, prefix: &str, after: Option<&str>) -> Result<Vec<String>, StoreError> {
        self.retried(&format!("listing {prefix}"), || {
            self.inner.list_after(prefix, after)
        })
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
}
