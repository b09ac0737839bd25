//! The swap file's own names in its swap folder: a link, a FIFO, a hard link or another
//! user's file placed under the compaction's copy (`NAME.compacting`) stops the
//! compaction with an error naming the path, the swap file carries on with every
//! checkpoint readable, nothing outside the folder changes, and compaction succeeds once
//! the name is free again. The names a run makes at its start are tested through
//! `marvin run` (`tests/swap_safety.rs`) and on the folder itself
//! (`runtime/src/swap_folder/tests.rs`).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use marvin_swap::{SlotId, SwapError, SwapFile};

/// A user other than root and the test's own (`nobody` on most systems).
const OTHER_USER: u32 = 65534;

fn fingerprint(path: &Path) -> (Vec<u8>, [i64; 7]) {
    let m = std::fs::symlink_metadata(path).unwrap();
    let bytes = if m.is_file() {
        std::fs::read(path).unwrap()
    } else {
        Vec::new()
    };
    let meta = [
        m.len() as i64,
        m.mode() as i64,
        m.uid() as i64,
        m.nlink() as i64,
        m.ino() as i64,
        m.mtime_nsec() + m.mtime() * 1_000_000_000,
        m.ctime_nsec() + m.ctime() * 1_000_000_000,
    ];
    (bytes, meta)
}

fn object(key: u64) -> Vec<u8> {
    (0..6000).map(|i| (key as usize * 31 + i) as u8).collect()
}

/// A swap file with 3 live checkpoints and 5 freed ones between them (well over the
/// compaction threshold).
fn with_dead_space(dir: &Path) -> (SwapFile, Vec<(u64, SlotId)>) {
    let mut f = SwapFile::create(dir, "app").unwrap();
    let slots: Vec<_> = (0..8)
        .map(|key| (key, f.write(key, &object(key), None).unwrap()))
        .collect();
    let mut live = Vec::new();
    for (key, slot) in slots {
        if [0, 4, 7].contains(&key) {
            live.push((key, slot));
        } else {
            f.free(slot).unwrap();
        }
    }
    assert!(f.dead_fraction() > 0.5, "{}", f.dead_fraction());
    (f, live)
}

fn reads_back(f: &SwapFile, live: &[(u64, SlotId)]) {
    for &(key, slot) in live {
        let mut out = vec![0; 6000];
        f.read(slot, key, &mut out).unwrap();
        assert_eq!(out, object(key), "object {key}");
    }
}

#[test]
fn a_name_taken_under_the_compactions_copy_stops_it_and_nothing_outside_changes() {
    let mut kinds = vec!["symlink", "dangling symlink", "fifo", "hard link"];
    if marvin_runtime::run_user() == 0 {
        kinds.push("another user's file");
    } else {
        eprintln!("skipping another user's file: chown needs root");
    }
    for kind in kinds {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let outside = elsewhere.path().join("precious");
        std::fs::write(&outside, b"bytes that must stay as they are").unwrap();
        let missing = elsewhere.path().join("never-made");
        let (mut f, live) = with_dead_space(dir.path());
        let at = dir.path().join("app.compacting");
        match kind {
            "symlink" => std::os::unix::fs::symlink(&outside, &at).unwrap(),
            "dangling symlink" => std::os::unix::fs::symlink(&missing, &at).unwrap(),
            "fifo" => {
                let made = std::process::Command::new("mkfifo").arg(&at).status();
                assert!(made.unwrap().success(), "mkfifo {}", at.display());
            }
            "hard link" => std::fs::hard_link(&outside, &at).unwrap(),
            _ => {
                std::fs::write(&at, b"another user's bytes").unwrap();
                std::os::unix::fs::chown(&at, Some(OTHER_USER), Some(OTHER_USER)).unwrap();
            }
        }
        let (outside_before, planted) = (fingerprint(&outside), fingerprint(&at));
        let swap_file = fingerprint(&dir.path().join("app"));

        let e = f.compact().unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, SwapError::Folder(_)), "{kind}: {text}");
        assert!(
            text.contains(&format!("{} is refused", at.display())),
            "{kind}: {text}"
        );
        assert_eq!(
            fingerprint(&outside),
            outside_before,
            "{kind}: target changed"
        );
        assert_eq!(
            fingerprint(&at),
            planted,
            "{kind}: the planted entry changed"
        );
        assert!(!missing.exists(), "{kind}: created through a dangling link");
        // The swap file was neither renamed over nor changed, and carries on.
        assert_eq!(fingerprint(&dir.path().join("app")), swap_file, "{kind}");
        reads_back(&f, &live);
        assert_eq!(f.compact_if_needed(2.0).unwrap(), None);

        // Once the name is free again, compaction works, and only the copy moved.
        std::fs::remove_file(&at).unwrap();
        // (Removing a hard link changed the outside file's link count: the test's doing.)
        let outside_before = fingerprint(&outside);
        let report = f.compact().unwrap();
        let live: Vec<_> = live
            .iter()
            .map(|&(k, s)| (k, report.new_slot(s).unwrap()))
            .collect();
        reads_back(&f, &live);
        assert!(!at.exists(), "{kind}: the copy was left behind");
        assert_eq!(fingerprint(&outside), outside_before, "{kind}");
    }
}

#[test]
fn a_swap_file_name_taken_by_a_link_is_refused_when_the_file_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().join("precious");
    std::fs::write(&outside, b"bytes that must stay as they are").unwrap();
    std::os::unix::fs::symlink(&outside, dir.path().join("app")).unwrap();
    let before = fingerprint(&outside);
    let e = SwapFile::create(dir.path(), "app").unwrap_err().to_string();
    assert!(e.contains("is refused: it is a symbolic link"), "{e}");
    assert_eq!(fingerprint(&outside), before);
}
