//! Holds a run's trainer lease for as long as a trainer lives: a thread renews it before it
//! expires (a lease object on object storage; an OS lock on a directory needs nothing) and
//! notes it if another trainer took it over, and the lease is given up when the keeper is
//! dropped, so that a successor need not wait for it to expire. The keeper's [`Fence`] tells
//! the trainer's writes whether they may still go out ([`cfzero_store::FencedStore`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use cfzero_store::{Fence, RunStore, StoreError};

/// A held trainer lease and the thread that renews it.
#[derive(Debug)]
pub struct LeaseKeeper {
    fence: Arc<Fence>,
    lost: Arc<Mutex<Option<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// How often the thread looks at the lease (renewal comes due after a third of its time).
const TICK: Duration = Duration::from_millis(250);

impl LeaseKeeper {
    /// Takes the lease of the run on `store` for `holder`, valid `ttl` at a time.
    pub fn acquire(
        store: Arc<dyn RunStore>,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseKeeper, StoreError> {
        let mut lease = store.acquire_lease(holder, ttl)?;
        let fence = Arc::new(Fence::new(store.location(), &lease));
        let lost = Arc::new(Mutex::new(None));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (fence, lost, stop) = (fence.clone(), lost.clone(), stop.clone());
            std::thread::Builder::new()
                .name("trainer-lease".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(TICK);
                        if !lease.renewal_due() {
                            continue;
                        }
                        match store.renew_lease(&mut lease) {
                            Ok(()) => fence.renewed(&lease),
                            Err(e @ StoreError::LeaseLost { .. }) => {
                                fence.lose(&e.to_string());
                                *lost.lock().expect("never poisoned") = Some(e.to_string());
                                return;
                            }
                            // Transient: the next tick tries again, well before the expiry.
                            Err(e) => eprintln!("warning: renewing the trainer lease: {e}"),
                        }
                    }
                    if let Err(e) = store.release_lease(lease) {
                        eprintln!("warning: giving the trainer lease up: {e}");
                    }
                })
                .expect("a thread starts")
        };
        Ok(LeaseKeeper {
            fence,
            lost,
            stop,
            thread: Some(thread),
        })
    }

    /// The fence every write of this trainer must pass.
    pub fn fence(&self) -> Arc<Fence> {
        self.fence.clone()
    }

    /// Why the lease is no longer held, if it was taken over (this trainer stalled past its
    /// expiry): such a trainer must not publish.
    pub fn lost(&self) -> Option<String> {
        self.lost.lock().expect("never poisoned").clone()
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
