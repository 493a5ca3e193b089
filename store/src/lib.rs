//! Where a cfzero run lives: the [`RunStore`] seam and its two implementations, a local or NFS
//! directory ([`LocalStore`], today's layout) and object storage through the `object_store`
//! crate ([`ObjectRunStore`]: `s3://`, `gs://`, `az://` and S3-compatible servers such as MinIO).
//!
//! A run is named by a location ([`RunLocation::parse`]): a path, or a URL. Everything a run
//! keeps is an object under a `/`-separated key (`nets/gen-0003.safetensors`,
//! `chunks/...`); what the two stores guarantee, and what the trainer builds on, is:
//!
//! - [`RunStore::put`] replaces an object atomically: a reader sees the old or the new bytes.
//! - [`RunStore::put_if_absent`] creates an object only if the key is free, atomically across
//!   machines, so two trainers can never both publish generation N.
//! - [`RunStore::list_after`] lists the keys under a prefix that sort after a cursor, so a
//!   trainer polls only what is new (S3 and GCS push the cursor down to the server).
//! - One trainer lease per run ([`RunStore::acquire_lease`]): an OS file lock on a directory,
//!   a lease object with an expiry (created if absent, renewed and taken over by conditional
//!   writes on its ETag) on object storage.

pub mod chunks;
pub mod counting;
pub mod cursor;
pub mod fence;
pub mod heads;
mod lease;
pub mod local;
pub mod location;
pub mod memory;
pub mod object;
pub mod retry;

use std::time::Duration;

pub use chunks::{Bundle, ChunkName, claim_incarnation};
pub use counting::{CountingStore, RequestCounts};
pub use cursor::{ChunkCursor, FullListing, HeadSweep, Hole, HoleEvent};
pub use fence::{Fence, FencedStore};
pub use lease::Lease;
pub use local::LocalStore;
pub use location::RunLocation;
pub use memory::IndexedMemory;
pub use object::ObjectRunStore;
pub use retry::{RETRY_BUDGET, RetryingStore};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The location names no store cfzero can open (scheme, bucket, credentials).
    #[error("{0}")]
    BadLocation(String),
    /// A key that is not a relative `/`-separated path of plain names.
    #[error("bad key {0:?}")]
    BadKey(String),
    /// Another trainer holds the run's lease.
    #[error("the run {run} already has a trainer: {holder}{until}")]
    Leased {
        /// The run.
        run: String,
        /// Who holds the lease.
        holder: String,
        /// When it expires, if it does (object storage), as ` (lease expires in N s)`.
        until: String,
    },
    /// The lease was taken over after it expired (this trainer stalled past its expiry).
    #[error("the trainer lease of {run} was taken over by {holder}")]
    LeaseLost {
        /// The run.
        run: String,
        /// The new holder.
        holder: String,
    },
    /// A trainer's write refused by its fence ([`fence::Fence`]): its lease was taken over,
    /// or is about to expire or has expired by this machine's clock.
    #[error("not writing to {run}: {why}")]
    Fenced {
        /// The run.
        run: String,
        /// Why.
        why: String,
    },
    /// A local file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The store refused a request for good: wrong or missing credentials, no permission,
    /// or no such bucket. Retrying cannot help; a worker ends instead of spooling.
    #[error("{location}: the store refuses this: {message}")]
    Refused {
        /// The object or the store.
        location: String,
        /// What the store said.
        message: String,
    },
    /// An object store request failed (after its retries): the store may answer again.
    #[error("{location}: {message}")]
    Backend {
        /// The object or the store.
        location: String,
        /// What the store said.
        message: String,
    },
}

impl StoreError {
    /// Whether the error comes from the user's input (a location, credentials, a run that
    /// already has a trainer): exit code 2 at the command line.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            StoreError::BadLocation(_)
                | StoreError::Leased { .. }
                | StoreError::BadKey(_)
                | StoreError::Refused { .. }
        )
    }
}

/// What [`RunStore::head`] tells of an object without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectInfo {
    /// When it was last written (to the second on S3).
    pub modified: std::time::SystemTime,
    /// Its length in bytes.
    pub size: u64,
}

/// What a training run stores, wherever it lives. Keys are relative, `/`-separated paths
/// of plain names (see [`check_key`]); listing returns them in ascending byte order.
pub trait RunStore: Send + Sync + std::fmt::Debug {
    /// The location as the user gave it (for messages).
    fn location(&self) -> &str;

    /// The object at `key`, or `None` if there is none.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// When the object at `key` was last written and its length, without reading it, or
    /// `None` if there is none.
    fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError>;

    /// Writes the object at `key`, replacing any; readers see the old or the new bytes.
    fn put(&self, key: &str, bytes: &[u8]) -> Result<(), StoreError>;

    /// Writes the object at `key` only if there is none: `Ok(false)` if there was one (it is
    /// left as it was). Atomic across processes and machines.
    fn put_if_absent(&self, key: &str, bytes: &[u8]) -> Result<bool, StoreError>;

    /// Removes the object at `key` (nothing if there is none).
    fn delete(&self, key: &str) -> Result<(), StoreError>;

    /// The keys under the directory `prefix` (every depth) that sort after `after` (all of
    /// them without a cursor), ascending.
    fn list_after(&self, prefix: &str, after: Option<&str>) -> Result<Vec<String>, StoreError>;

    /// Takes the run's trainer lease for `holder`, valid for `ttl` unless renewed; refused
    /// with [`StoreError::Leased`] while another holder's lease is valid.
    fn acquire_lease(&self, holder: &str, ttl: Duration) -> Result<Lease, StoreError>;

    /// Extends `lease` by its time to live; [`StoreError::LeaseLost`] if it was taken over.
    fn renew_lease(&self, lease: &mut Lease) -> Result<(), StoreError>;

    /// Gives the lease up, so that the next trainer need not wait for it to expire.
    fn release_lease(&self, lease: Lease) -> Result<(), StoreError>;

    /// Copies the object at `key` into the local file `path` (written whole, or not at all);
    /// `Ok(false)` if there is none. A store whose objects are files finds its own file there
    /// already (a run in a directory is its own cache) and links a file elsewhere instead of
    /// copying it (an object is replaced, never rewritten in place, so a link is a copy).
    fn get_file(&self, key: &str, path: &std::path::Path) -> Result<bool, StoreError> {
        let Some(bytes) = self.get(key)? else {
            return Ok(false);
        };
        write_local(path, &bytes)?;
        Ok(true)
    }

    /// Writes the object at `key` from the local file `path`; its length, or `None` if there
    /// is no such file. A store whose objects are files has nothing to write when `path` is
    /// its own file for `key`.
    fn put_file(&self, key: &str, path: &std::path::Path) -> Result<Option<u64>, StoreError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(StoreError::Io {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        self.put(key, &bytes)?;
        Ok(Some(bytes.len() as u64))
    }
}

/// Writes `bytes` to the local file `path` atomically, creating its directory.
pub fn write_local(path: &std::path::Path, bytes: &[u8]) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        path: path.display().to_string(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    cfzero_fsutil::write_file_atomically(path, bytes).map_err(io)
}

/// Checks that `key` is a relative `/`-separated path of plain names: no empty, `.` or `..`
/// component, no backslash or control character.
pub fn check_key(key: &str) -> Result<(), StoreError> {
    let plain = |c: &str| {
        !c.is_empty() && c != "." && c != ".." && !c.chars().any(|ch| ch == '\\' || ch.is_control())
    };
    if key.split('/').all(plain) {
        Ok(())
    } else {
        Err(StoreError::BadKey(key.to_owned()))
    }
}

/// Opens the store of `location`.
pub fn open(location: &RunLocation) -> Result<Box<dyn RunStore>, StoreError> {
    open_within(location, None)
}

/// Opens the store of `location`; with a `budget`, every write to object storage that takes
/// longer (retries included) is abandoned ([`ObjectRunStore::set_request_budget`]).
pub fn open_within(
    location: &RunLocation,
    budget: Option<Duration>,
) -> Result<Box<dyn RunStore>, StoreError> {
    match location {
        RunLocation::Local(path) => Ok(Box::new(LocalStore::new(path))),
        RunLocation::Object(url) => {
            let mut store = ObjectRunStore::open(url)?;
            if let Some(b) = budget {
                store.set_request_budget(b);
            }
            Ok(Box::new(store))
        }
    }
}
