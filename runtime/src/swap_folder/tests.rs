use std::os::unix::fs::{MetadataExt, PermissionsExt};

use super::*;

/// A user other than root and the test's own (`nobody` on most systems).
const OTHER_USER: u32 = 65534;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// What a file outside the folder is: its bytes and every part of its metadata a write,
/// a truncation, a rename or a new link would change.
fn fingerprint(path: &Path) -> (Vec<u8>, [i64; 9]) {
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
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    ];
    (bytes, meta)
}

/// The hostile things another user can place under a name: a symbolic link to a file
/// outside the folder, a FIFO, a file of another user (as root only), and a hard link to
/// a file outside the folder. Each is placed under `name` in `dir`; returns its kind as
/// the refusal names it, and the outside file (if any) that must not change.
fn hostile_kinds() -> Vec<&'static str> {
    let mut kinds = vec!["symlink", "fifo", "hardlink"];
    if is_root() {
        kinds.push("foreign");
    } else {
        eprintln!("skipping another user's file: chown needs root");
    }
    kinds
}

fn plant(kind: &str, dir: &Path, name: &str, outside: &Path) -> &'static str {
    let at = dir.join(name);
    match kind {
        "symlink" => {
            std::os::unix::fs::symlink(outside, &at).unwrap();
            "a symbolic link"
        }
        "fifo" => {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                &at,
                FileType::Fifo,
                Mode::from_raw_mode(0o666),
                0,
            )
            .unwrap();
            "a FIFO"
        }
        "hardlink" => {
            std::fs::hard_link(outside, &at).unwrap();
            "a file with 2 links"
        }
        "foreign" => {
            std::fs::write(&at, b"another user's bytes").unwrap();
            std::os::unix::fs::chown(&at, Some(OTHER_USER), Some(OTHER_USER)).unwrap();
            "a file of user 65534"
        }
        _ => unreachable!(),
    }
}

#[test]
fn a_name_taken_by_a_link_a_fifo_or_another_users_file_is_refused_and_nothing_outside_changes() {
    for kind in hostile_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let outside = elsewhere.path().join("precious");
        std::fs::write(&outside, b"must stay as it is").unwrap();
        let before = fingerprint(&outside);
        let folder = SwapFolder::open(dir.path()).unwrap();
        let said = plant(kind, dir.path(), "app.table", &outside);
        let planted = fingerprint(&dir.path().join("app.table"));

        let e = folder.create_new("app.table").unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, FolderError::Taken { .. }), "{kind}: {text}");
        assert!(text.contains(said), "{kind}: {text}");
        assert!(
            text.contains(&dir.path().join("app.table").display().to_string()),
            "{kind}: {text}"
        );
        let e = folder.open_own("app.table").unwrap_err();
        assert!(matches!(e, FolderError::Taken { .. }), "{kind}: {e}");

        // Neither the outside file nor what was planted changed.
        if kind != "hardlink" {
            assert_eq!(fingerprint(&outside), before, "{kind}");
        } else {
            // The planted hard link added the second link; nothing after it changed.
            assert_eq!(fingerprint(&outside), planted, "{kind}");
        }
        assert_eq!(
            fingerprint(&dir.path().join("app.table")),
            planted,
            "{kind}"
        );
    }
}

#[test]
fn an_earlier_runs_file_is_replaced_by_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let folder = SwapFolder::open(dir.path()).unwrap();
    std::fs::write(dir.path().join("app"), b"an earlier run's checkpoints").unwrap();
    let old = File::open(dir.path().join("app")).unwrap();
    let mut file = folder.create_new("app").unwrap();
    use std::io::Write;
    file.write_all(b"new").unwrap();
    let m = std::fs::metadata(dir.path().join("app")).unwrap();
    // Made new, not truncated in place: the old file is unlinked, its bytes untouched.
    assert_eq!(old.metadata().unwrap().nlink(), 0);
    assert_eq!(old.metadata().unwrap().len(), 28);
    assert_eq!(m.mode() & 0o777, 0o600);
    assert_eq!(std::fs::read(dir.path().join("app")).unwrap(), b"new");
    assert!(folder.open_own("app").unwrap().is_some());
    assert!(folder.open_own("missing").unwrap().is_none());
}

#[test]
fn a_rename_moves_only_the_files_the_caller_holds() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().join("precious");
    std::fs::write(&outside, b"must stay").unwrap();
    let folder = SwapFolder::open(dir.path()).unwrap();
    let current = folder.create_new("app").unwrap();
    let copy = folder.create_new("app.compacting").unwrap();
    // Something else under the target's name: not renamed over.
    std::fs::remove_file(dir.path().join("app")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.path().join("app")).unwrap();
    let e = folder
        .rename_own(("app.compacting", &copy), ("app", Some(&current)))
        .unwrap_err();
    assert!(matches!(e, FolderError::Replaced { .. }), "{e}");
    assert!(std::fs::symlink_metadata(dir.path().join("app"))
        .unwrap()
        .file_type()
        .is_symlink());
    // The real case: both names name the caller's files.
    std::fs::remove_file(dir.path().join("app")).unwrap();
    let current = folder.create_new("app").unwrap();
    folder
        .rename_own(("app.compacting", &copy), ("app", Some(&current)))
        .unwrap();
    assert!(folder.names("app", &copy).unwrap());
    assert_eq!(std::fs::read(&outside).unwrap(), b"must stay");
}

#[test]
fn a_folder_others_may_write_in_without_the_sticky_bit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = SwapFolder::open(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("writable by other users (mode 0777)") && e.contains("sticky"),
        "{e}"
    );
    assert!(e.contains(&dir.path().display().to_string()), "{e}");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o775)).unwrap();
    assert!(SwapFolder::open(dir.path()).is_err());
    // As /tmp is: writable by all, with the sticky bit.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    SwapFolder::open(dir.path()).unwrap();
    // Not a directory at all.
    let file = dir.path().join("file");
    std::fs::write(&file, b"").unwrap();
    assert!(SwapFolder::open(&file).is_err());
}

#[test]
fn a_folder_or_a_folder_link_of_another_user_is_refused() {
    if !is_root() {
        eprintln!("skipping: making a folder of another user needs root");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let theirs = root.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(OTHER_USER), Some(OTHER_USER)).unwrap();
    let e = SwapFolder::open(&theirs).unwrap_err().to_string();
    assert!(e.contains("belongs to user 65534"), "{e}");

    let mine = root.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    let link = root.path().join("link");
    std::os::unix::fs::symlink(&mine, &link).unwrap();
    // A link of this user's (root's) is followed.
    SwapFolder::open(&link).unwrap();
    std::os::unix::fs::lchown(&link, Some(OTHER_USER), Some(OTHER_USER)).unwrap();
    let e = SwapFolder::open(&link).unwrap_err().to_string();
    assert!(e.contains("symbolic link of user 65534"), "{e}");
}
