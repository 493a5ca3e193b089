//! Fencing: a trainer writes to its run only while it holds the run's lease, with time to
//! spare.
//!
//! A trainer that stalls past its lease (a GC pause, SIGSTOP, a network partition, a closed
//! laptop lid) and wakes after a successor took the run over must not write: its state, log,
//! cursor or net would mix with the successor's. Every write a trainer makes goes through a
//! [`FencedStore`], which first asks the [`Fence`]: is the lease still ours (no renewal found
//! it taken over) and does it, by this machine's clock, stay valid for at least the margin
//! (a third of the lease)? The trainer's store abandons any write that takes longer than a
//! quarter of the lease ([`crate::ObjectRunStore::set_request_budget`]), so a write that
//! passed the fence has landed or been given up before the lease could expire, and a lease
//! renewal's own requests are bounded the same way. What remains is a stall between the check
//! and the request leaving the machine longer than the slack, the margin less the write
//! budget (a twelfth of the lease); the net is written last and only if absent, so even then
//! two trainers never both publish a generation.
//!
//! No wall clock decides: the fence counts the lease's time on this machine's monotonic
//! clock from when its last renewal was sent, and a successor takes an expired lease over only
//! once the lease object has stayed unchanged for a whole time to live on its own monotonic
//! clock ([`crate::ObjectRunStore`]'s `acquire_lease`), so clock skew between the machines
//! and wall-clock steps on either cannot let both write.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::lease::{Lease, LeaseInner};
use crate::{ObjectInfo, RunStore, StoreError};

/// Whether this trainer may write now: the lease's expiry as of its last renewal, and why it
/// was lost if a renewal found it taken over. Shared between the thread that renews the lease
/// and the trainer's writes.
#[derive(Debug)]
pub struct Fence {
    run: String,
    margin: Duration,
    state: Mutex<FenceState>,
}

#[derive(Debug)]
struct FenceState {
    /// When the lease expires unless renewed, on the monotonic clock (`None`: an OS lock,
    /// which never expires).
    expires: Option<Instant>,
    /// Why it is no longer ours, once a renewal found out.
    lost: Option<String>,
}

impl Fence {
    /// The fence of `lease` on the run `run`: writes stop a third of the lease before it
    /// expires unless renewed.
    pub fn new(run: &str, lease: &Lease) -> Fence {
        Fence {
            run: run.to_owned(),
            margin: lease.ttl / 3,
            state: Mutex::new(FenceState {
                expires: expiry_of(lease),
                lost: None,
            }),
        }
    }

    /// How long before the lease's expiry writes stop.
    pub fn margin(&self) -> Duration {
        self.margin
    }

    /// Notes that `lease` was renewed.
    pub fn renewed(&self, lease: &Lease) {
        self.state.lock().expect("never poisoned").expires = expiry_of(lease);
    }

    /// Notes that the lease is lost, and why: no write passes from now on.
    pub fn lose(&self, why: &str) {
        self.state.lock().expect("never poisoned").lost = Some(why.to_owned());
    }

    /// Why a write now would not be fenced, or [`StoreError::Fenced`] saying why it is.
    pub fn check(&self) -> Result<(), StoreError> {
        let state = self.state.lock().expect("never poisoned");
        let fenced = |why: String| StoreError::Fenced {
            run: self.run.clone(),
            why,
        };
        if let Some(why) = &state.lost {
            return Err(fenced(why.clone()));
        }
        let Some(expires) = state.expires else {
            return Ok(());
        };
        let now = Instant::now();
        match expires.checked_duration_since(now) {
            Some(left) if left >= self.margin => Ok(()),
            Some(left) => Err(fenced(format!(
                "the trainer lease expires in {:.1} s, less than the {:.1} s a write must leave (renewals are failing)",
                left.as_secs_f64(),
                self.margin.as_secs_f64()
            ))),
            None => Err(fenced(format!(
                "the trainer lease expired {:.1} s ago (this trainer stalled past it, so another may have taken the run over)",
                now.duration_since(expires).as_secs_f64()
            ))),
        }
    }
}

/// The expiry of `lease` as the fence reads it.
fn expiry_of(lease: &Lease) -> Option<Instant> {
    match lease.inner {
        LeaseInner::File(_) => None,
        LeaseInner::Object { .. } => lease.valid_until,
    }
}

/// A store whose writes ([`RunStore::put`], [`RunStore::put_if_absent`],
/// [`RunStore::delete`], [`RunStore::put_file`]) each pass the [`Fence`] first; reads and the lease's own
/// conditional requests go straight through.
#[derive(Debug)]
pub struct FencedStore {
    inner: Arc<dyn RunStore>,
    fence: Arc<Fence>,
}

impl FencedStore {
    /// `inner`, written to only through `fence`.
    pub fn new(inner: Arc<dyn RunStore>, fence: Arc<Fence>) -> FencedStore {
        FencedStore { inner, fence }
    }
}

impl RunStore for FencedStore {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.get(key)
    }

    fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        self.inner.head(key)
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<(), StoreError> {
        self.fence.check()?;
        self.inner.put(key, bytes)
    }

    fn put_if_absent(&self, key: &str, bytes: &[u8]) -> Result<bool, StoreError> {
        self.fence.check()?;
        self.inner.put_if_absent(key, bytes)
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.fence.check()?;
        self.inner.delete(key)
    }

    fn get_file(&self, key: &str, path: &std::path::Path) -> Result<bool, StoreError> {
        self.inner.get_file(key, path)
    }

    fn put_file(&self, key: &str, path: &std::path::Path) -> Result<Option<u64>, StoreError> {
        self.fence.check()?;
        self.inner.put_file(key, path)
    }

    fn list_after(&self, prefix: &str, after: Option<&str>) -> Result<Vec<String>, StoreError> {
        self.inner.list_after(prefix, after)
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
