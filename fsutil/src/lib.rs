//! File writing that every crate of cfzero shares: nets and checkpoints (`cfzero-network`),
//! game records (`cfzero-selfplay`), configs and PGNs (the binary), and the clean-up of what
//! a killed writer left. A crate of its own so that writing a game record does not pull in
//! libtorch through `cfzero-network`.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically and durably: a temporary file beside it, created
/// exclusively (never another writer's), written and synced, renamed over `path`, and the
/// directory synced, so that after a power cut readers see the whole new file or the whole
/// old one. The temporary file is `NAME.tmp<pid>-<random>` (the random part keeps writers of
/// different machines apart, which may share a pid, and tells which machine wrote it); no
/// reader of the project's files picks it up, and [`remove_stale_temporaries`] deletes those
/// a killed writer left.
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temporary_path(path);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_parent(path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A fresh temporary name beside `path`: `NAME.tmp<pid>-<host tag><random>`, unique across
/// processes and machines, recognised by [`is_temporary`] and [`remove_stale_temporaries`].
pub fn temporary_path(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(
        ".tmp{}-{:08x}{:08x}",
        std::process::id(),
        host_tag(),
        rand::random::<u32>()
    ));
    PathBuf::from(tmp)
}

/// This machine's host name (the kernel's), if it can be read and is not empty.
pub fn host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// A hash of this machine's host name, so that a temporary file's name tells whether this
/// machine wrote it (0 where the name cannot be read).
pub fn host_tag() -> u32 {
    let name = host_name().unwrap_or_default();
    // FNV-1a: stable across builds, unlike the standard library's hasher.
    name.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// Whether the writer of the temporary file `path` is known to be gone: it was written on
/// this machine (its host tag is ours) by a process that no longer runs. Unknown (another
/// machine's file, an older name, no `/proc`) counts as not gone.
fn writer_is_gone(path: &Path) -> bool {
    let Some(tail) = temporary_tail(path) else {
        return false;
    };
    let Some((pid, tag)) = tail.split_once('-') else {
        return false;
    };
    let ours = tag.len() == 16 && u32::from_str_radix(&tag[..8], 16).ok() == Some(host_tag());
    ours && Path::new("/proc/self").exists() && !Path::new("/proc").join(pid).exists()
}

/// What follows the last `.tmp` of `path`'s file name (`<pid>-<hex>` in a temporary file's).
fn temporary_tail(path: &Path) -> Option<&str> {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.rsplit_once(".tmp"))
        .map(|(_, tail)| tail)
}

/// Syncs the directory holding `path`, so that a rename into it survives a power cut.
fn sync_parent(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // Directories can be opened and synced on Unix; elsewhere the rename is what there is.
    if cfg!(unix) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Whether `path` names a temporary file of [`write_file_atomically`] (`NAME.tmp<pid>` or
/// `NAME.tmp<pid>-<hex>`).
pub fn is_temporary(path: &Path) -> bool {
    let Some(tail) = temporary_tail(path) else {
        return false;
    };
    let (pid, random) = tail.split_once('-').unwrap_or((tail, ""));
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && random.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Deletes the temporary files of atomic writes under `dir` (recursively) that a killed
/// writer left behind: those whose writer ran on this machine and is gone, and any last
/// modified at least `min_age` ago. Others may belong to a writer still at work (another
/// worker on a shared directory) and stay. Returns how many were removed; unreadable entries
/// are skipped.
pub fn remove_stale_temporaries(dir: &Path, min_age: std::time::Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            removed += remove_stale_temporaries(&path, min_age);
        } else if is_temporary(&path)
            && (writer_is_gone(&path)
                || meta
                    .modified()
                    .ok()
                    .and_then(|m| m.elapsed().ok())
                    .is_some_and(|age| age >= min_age))
            && std::fs::remove_file(&path).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        write_file_atomically(&path, b"first").unwrap();
        write_file_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        write_file_atomically(&path, b"old").unwrap();
        // Renaming a file over a non-empty directory fails after the temporary file exists.
        let blocked = dir.path().join("d");
        std::fs::create_dir(&blocked).unwrap();
        std::fs::write(blocked.join("x"), b"").unwrap();
        assert!(write_file_atomically(&blocked, b"new").is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["d", "f.bin"]);
    }
}
