//! Atomic writes and the clean-up of what a killed writer left: no temporary file stays
//! after a write, temporary names are recognised, and only stale ones are removed (old ones,
//! and those of a writer on this machine that is gone), never a live writer's.

use cfzero_fsutil::{host_tag, is_temporary, remove_stale_temporaries, write_file_atomically};

#[test]
fn atomic_writes_leave_no_temporary_and_stale_ones_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("file.bin");
    for round in 0..3u8 {
        write_file_atomically(&path, &[round; 100]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), vec![round; 100]);
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // The names the writer uses, and the older pid-only ones, are temporary; others not.
    for (name, temporary) in [
        ("gen-0001.safetensors.tmp123-00ff00ff00ff00ff", true),
        ("g00001.cfzg.tmp4242", true),
        ("g00001.cfzg", false),
        ("notes.tmpfile", false),
        ("x.tmp12-zz", false),
    ] {
        assert_eq!(
            is_temporary(std::path::Path::new(name)),
            temporary,
            "{name}"
        );
    }
    let sub = dir.path().join("games/gen-0001");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("g00000.cfzg.tmp77-abc"), b"torn").unwrap();
    std::fs::write(sub.join("g00000.cfzg"), b"kept").unwrap();
    // Young temporaries stay; with no minimum age they go, recursively, and only they.
    assert_eq!(
        remove_stale_temporaries(dir.path(), std::time::Duration::from_secs(3600)),
        0
    );
    assert_eq!(
        remove_stale_temporaries(dir.path(), std::time::Duration::ZERO),
        1
    );
    // One left on this machine by a process that is gone goes at once, however young; a
    // live writer's (this process's) stays.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let tag = host_tag();
    let orphan = sub.join(format!("g00001.cfzg.tmp{dead}-{tag:08x}0000abcd"));
    let live = sub.join(format!(
        "g00002.cfzg.tmp{}-{tag:08x}0000abcd",
        std::process::id()
    ));
    std::fs::write(&orphan, b"torn").unwrap();
    std::fs::write(&live, b"in progress").unwrap();
    assert_eq!(
        remove_stale_temporaries(dir.path(), std::time::Duration::from_secs(3600)),
        1
    );
    assert!(!orphan.exists() && live.exists());
    assert!(sub.join("g00000.cfzg").exists());
    assert!(path.exists());
}
