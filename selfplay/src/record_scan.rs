//! Finding the record files under a directory that a reader has not read yet, listing again
//! only the directories that changed since their last listing.
//!
//! A trainer looks for new games every few seconds under a tree that grows by a directory a
//! generation and a file a game or chunk; listing every directory each time would cost in
//! proportion to the run's length. A directory's modification time changes whenever an
//! entry is added, removed or renamed in it, so a directory whose time is the one of its
//! last listing holds the same entries and is not listed again (its subdirectories still
//! are looked at, since a file added to one leaves its parent's time alone).

use std::collections::{HashMap, HashSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::record::RECORD_EXTENSION;
use crate::window::natural_cmp;

/// How much older than the listing that saw it a directory's time must be before an equal
/// time is trusted to mean "nothing changed": an entry added in the same tick of the
/// file system's clock as the listing may leave the time as it was.
const SETTLE: Duration = Duration::from_secs(2);

/// What the last listing of one directory found.
#[derive(Debug, Default)]
struct Listing {
    /// The directory's time at that listing, where it was older than the listing by
    /// [`SETTLE`]; `None` lists it again next time.
    settled: Option<SystemTime>,
    /// Its subdirectories.
    subdirs: Vec<PathBuf>,
    /// Its record files that were not read when it was listed.
    unread: Vec<PathBuf>,
}

/// The record files read under some directories, and what each directory held when last
/// listed.
#[derive(Debug, Default)]
pub struct RecordScan {
    listings: HashMap<PathBuf, Listing>,
    read: HashSet<PathBuf>,
}

impl RecordScan {
    /// A scan that has read nothing.
    pub fn new() -> RecordScan {
        RecordScan::default()
    }

    /// The record files under `root` (recursively; a missing `root` has none) not marked
    /// read, in the order they are read: numbers by value ([`natural_cmp`]).
    pub fn unread(&mut self, root: &Path) -> std::io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        self.scan(root, &mut out)?;
        out.sort_by(|a, b| natural_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
        Ok(out)
    }

    /// Marks a file read: [`RecordScan::unread`] no longer returns it.
    pub fn mark_read(&mut self, path: PathBuf) {
        self.read.insert(path);
    }

    fn scan(&mut self, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        let started = SystemTime::now();
        let modified = match std::fs::metadata(dir) {
            Ok(m) => m.modified().ok(),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                self.listings.remove(dir);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let unchanged = match (self.listings.get(dir).and_then(|l| l.settled), modified) {
            (Some(then), Some(now)) => then == now,
            _ => false,
        };
        let subdirs = if unchanged {
            let listing = self.listings.get_mut(dir).expect("checked above");
            let read = &self.read;
            listing.unread.retain(|p| !read.contains(p));
            out.extend(listing.unread.iter().cloned());
            listing.subdirs.clone()
        } else {
            let entries = match std::fs::read_dir(dir) {
                Ok(e) => e,
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    self.listings.remove(dir);
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            let mut listing = Listing {
                settled: modified
                    .filter(|m| started.duration_since(*m).is_ok_and(|age| age >= SETTLE)),
                ..Listing::default()
            };
            for entry in entries {
                let path = entry?.path();
                if path.is_dir() {
                    listing.subdirs.push(path);
                } else if path.extension().is_some_and(|e| e == RECORD_EXTENSION)
                    && !self.read.contains(&path)
                {
                    listing.unread.push(path);
                }
            }
            out.extend(listing.unread.iter().cloned());
            let subdirs = listing.subdirs.clone();
            // What a removed subdirectory held is forgotten; the files read are not (a file
            // that comes back under its old name is not read again).
            if let Some(before) = self.listings.insert(dir.to_path_buf(), listing) {
                for gone in before.subdirs.iter().filter(|d| !subdirs.contains(d)) {
                    self.listings.retain(|p, _| !p.starts_with(gone));
                }
            }
            subdirs
        };
        for sub in subdirs {
            self.scan(&sub, out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"x").unwrap();
    }

    /// Sets a directory's time back, as if it had last changed long before the listing.
    fn age(dir: &Path) {
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::open(dir).unwrap().set_modified(old).unwrap();
    }

    #[test]
    fn files_are_returned_until_read_and_new_ones_in_settled_directories_are_found() {
        let root = tempfile::tempdir().unwrap();
        let gen1 = root.path().join("gen-1");
        touch(&gen1.join("a.cfzg"));
        touch(&gen1.join("notes.txt"));
        let mut scan = RecordScan::new();
        assert_eq!(scan.unread(root.path()).unwrap(), vec![gen1.join("a.cfzg")]);
        // Not marked read: returned again, also from a directory that did not change.
        age(&gen1);
        age(root.path());
        assert_eq!(scan.unread(root.path()).unwrap(), vec![gen1.join("a.cfzg")]);
        assert_eq!(scan.unread(root.path()).unwrap(), vec![gen1.join("a.cfzg")]);
        scan.mark_read(gen1.join("a.cfzg"));
        assert!(scan.unread(root.path()).unwrap().is_empty());
        // A file added to a settled directory changes its time: found, also under a new
        // generation that leaves the settled root's listing as it was.
        touch(&gen1.join("b.cfzg"));
        let gen10 = root.path().join("gen-10");
        touch(&gen10.join("c.cfzg"));
        let gen2 = root.path().join("gen-2");
        touch(&gen2.join("d.cfzg"));
        assert_eq!(
            scan.unread(root.path()).unwrap(),
            vec![
                gen1.join("b.cfzg"),
                gen2.join("d.cfzg"),
                gen10.join("c.cfzg")
            ]
        );
    }

    #[test]
    fn a_settled_directory_is_not_listed_again() {
        let root = tempfile::tempdir().unwrap();
        let gen1 = root.path().join("gen-1");
        touch(&gen1.join("a.cfzg"));
        age(&gen1);
        let mut scan = RecordScan::new();
        assert_eq!(scan.unread(root.path()).unwrap().len(), 1);
        scan.mark_read(gen1.join("a.cfzg"));
        // A file that appears while the directory keeps its time (as an entry added in the
        // listing's clock tick would) is not seen: the listing was trusted, not repeated.
        touch(&gen1.join("b.cfzg"));
        let listed = scan.listings[&gen1].settled.unwrap();
        std::fs::File::open(&gen1)
            .unwrap()
            .set_modified(listed)
            .unwrap();
        assert!(scan.unread(root.path()).unwrap().is_empty());
        // Once the time moves, it is.
        std::fs::File::open(&gen1)
            .unwrap()
            .set_modified(listed + Duration::from_secs(1))
            .unwrap();
        assert_eq!(scan.unread(root.path()).unwrap(), vec![gen1.join("b.cfzg")]);
    }

    #[test]
    fn a_directory_changed_just_before_its_listing_is_listed_again() {
        let root = tempfile::tempdir().unwrap();
        let gen1 = root.path().join("gen-1");
        touch(&gen1.join("a.cfzg"));
        let mut scan = RecordScan::new();
        scan.unread(root.path()).unwrap();
        assert_eq!(scan.listings[&gen1].settled, None, "fresh: listed again");
        assert!(
            scan.unread(Path::new("/nonexistent/cfzero"))
                .unwrap()
                .is_empty()
        );
    }
}
