//! A run in a local or network-mounted directory: each key is a file under the root, writes
//! go through a temporary file and a rename, create-if-absent through a hard link (atomic on
//! local file systems and on NFS), the lease is an OS lock on `trainer.lock`. The directory is
//! also the run's local copy: moving an object to or from its own file is nothing to do.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cfzero_fsutil::{is_temporary, temporary_path, write_file_atomically};

use crate::lease::{Lease, LeaseInner};
use crate::{ObjectInfo, RunStore, StoreError, check_key};

/// The file whose OS lock is the trainer lease, with the holder's name inside.
pub const LOCK_FILE: &str = "trainer.lock";

/// A run directory.
#[derive(Debug, Clone)]
pub struct LocalStore {
    root: PathBuf,
    location: String,
}

impl LocalStore {
    /// The store of the directory `root` (created when first written).
    pub fn new(root: &Path) -> LocalStore {
        LocalStore {
            root: root.to_owned(),
            location: root.display().to_string(),
        }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, key: &str) -> Result<PathBuf, StoreError> {
        check_key(key)?;
        Ok(self.root.join(key))
    }

    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
        move |source| StoreError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    /// Whether `path` is the file of the object at `own` (the same path, however written).
    fn is_own_file(own: &Path, path: &Path) -> bool {
        if own == path {
            return true;
        }
        let canonical_parent = |p: &Path| p.parent().and_then(|d| std::fs::canonicalize(d).ok());
        own.file_name() == path.file_name()
            && canonical_parent(own).is_some()
            && canonical_parent(own) == canonical_parent(path)
    }

    fn make_parent(path: &Path) -> Result<(), StoreError> {
        match path.parent() {
            Some(dir) => std::fs::create_dir_all(dir).map_err(Self::io(dir)),
            None => Ok(()),
        }
    }
}

/// Opens (creating it) and locks the file at `path` with an OS lock that lasts as long as the
/// returned handle or its process, however that ends; `None` if another handle holds it. A
/// child process being spawned at the moment holds a copy of the handle until it executes its
/// program, so a lock just released can read as held for that moment.
pub fn try_lock_file(path: &Path) -> Result<Option<std::fs::File>, StoreError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(LocalStore::io(path))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(LocalStore::io(path)(e)),
    }
}

/// Every file under `dir` (recursively) as a key relative to `root`, temporaries left out.
fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        // A file renamed away (or deleted) between the listing and here is simply gone.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(root, &path, out)?;
        } else if !is_temporary(&path)
            && let Ok(rel) = path.strip_prefix(root)
            && let Some(key) = rel.to_str()
        {
            out.push(key.replace(std::path::MAIN_SEPARATOR, "/"));
        }
    }
    Ok(())
}

impl RunStore for LocalStore {
    fn location(&self) -> &str {
        &self.location
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path(key)?;
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Self::io(&path)(e)),
        }
    }

    fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        let path = self.path(key)?;
        let info = std::fs::metadata(&path).and_then(|m| {
            Ok(ObjectInfo {
                modified: m.modified()?,
                size: m.len(),
            })
        });
        match info {
            Ok(info) => Ok(Some(info)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Self::io(&path)(e)),
        }
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.path(key)?;
        Self::make_parent(&path)?;
        write_file_atomically(&path, bytes).map_err(Self::io(&path))
    }

    fn put_if_absent(&self, key: &str, bytes: &[u8]) -> Result<bool, StoreError> {
        let path = self.path(key)?;
        Self::make_parent(&path)?;
        if path.exists() {
            return Ok(false);
        }
        // Written whole under a temporary name, then linked to the key: the link fails if the
        // key exists, so of two writers exactly one wins and nobody sees a partial file.
        let tmp = temporary_path(&path);
        let written = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()
        })();
        let linked = written.and_then(|()| std::fs::hard_link(&tmp, &path));
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Self::io(&path)(e)),
        }
    }

    fn get_file(&self, key: &str, path: &Path) -> Result<bool, StoreError> {
        let own = self.path(key)?;
        if Self::is_own_file(&own, path) {
            return Ok(own.exists());
        }
        Self::make_parent(path)?;
        // A link under a temporary name, renamed into place: readers of `path` see the whole
        // file or none. A file system without links (or another one) gets a copy.
        let tmp = temporary_path(path);
        let made = match std::fs::hard_link(&own, &tmp) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(_) => std::fs::copy(&own, &tmp).map(|_| ()),
        };
        match made.and_then(|()| std::fs::rename(&tmp, path)) {
            Ok(()) => Ok(true),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                if e.kind() == std::io::ErrorKind::NotFound {
                    Ok(false)
                } else {
                    Err(Self::io(path)(e))
                }
            }
        }
    }

    fn put_file(&self, key: &str, path: &Path) -> Result<Option<u64>, StoreError> {
        let own = self.path(key)?;
        if Self::is_own_file(&own, path) {
            return match std::fs::metadata(path) {
                Ok(m) => Ok(Some(m.len())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(Self::io(path)(e)),
            };
        }
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Self::io(path)(e)),
        };
        self.put(key, &bytes)?;
        Ok(Some(bytes.len() as u64))
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        let path = self.path(key)?;
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Self::io(&path)(e)),
            _ => Ok(()),
        }
    }

    fn list_after(&self, prefix: &str, after: Option<&str>) -> Result<Vec<String>, StoreError> {
        let dir = self.path(prefix)?;
        let mut keys = Vec::new();
        walk(&self.root, &dir, &mut keys).map_err(Self::io(&dir))?;
        keys.retain(|k| after.is_none_or(|a| k.as_str() > a));
        keys.sort_unstable();
        Ok(keys)
    }

    fn acquire_lease(&self, holder: &str, _ttl: Duration) -> Result<Lease, StoreError> {
        std::fs::create_dir_all(&self.root).map_err(Self::io(&self.root))?;
        let path = self.root.join(LOCK_FILE);
        let Some(mut file) = try_lock_file(&path)? else {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            return Err(StoreError::Leased {
                run: self.location.clone(),
                holder: holder.trim().to_owned(),
                until: String::new(),
            });
        };
        // The holder's name, for the message a second trainer gets.
        file.set_len(0)
            .and_then(|()| file.write_all(holder.as_bytes()))
            .and_then(|()| file.sync_all())
            .map_err(Self::io(&path))?;
        Ok(Lease {
            holder: holder.to_owned(),
            ttl: Duration::MAX,
            // An OS lock lasts as long as its process: it never needs renewing.
            expires: SystemTime::now() + Duration::from_secs(100 * 365 * 86_400),
            valid_until: None,
            inner: LeaseInner::File(file),
        })
    }

    fn renew_lease(&self, _lease: &mut Lease) -> Result<(), StoreError> {
        Ok(())
    }

    fn release_lease(&self, lease: Lease) -> Result<(), StoreError> {
        // Closing the file releases the lock.
        drop(lease);
        Ok(())
    }
}
