//! A swap directory, its swap file and its reclaim table belong to one run and are never
//! trusted blindly, tested through `marvin run` as subprocesses: a second run on the same
//! directory is refused while the first carries on unharmed; a swap file rolled back to an
//! older copy of itself is a runtime error naming the object, not old data; random bytes
//! in a live reclaim table end the app with an error (not a hang); a full disk during a
//! save is one warning naming the directory, and the objects stay resident and correct; a
//! full disk during a compaction is one warning saying the file is not compacted; links,
//! FIFOs and other users' files under the run's names are refused, never written through.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use marvin_swap::SlotHeader;

mod support;
use support::{live_checkpoints, program, text, QUICK_COLD};

/// Long enough for anything these tests wait for, on a loaded machine: a hang guard, not
/// a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_marvin"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run marvin")
}

/// Waits for `child` at most [`PATIENCE`]; kills it (and fails) if it does not end.
fn wait_bounded(mut child: Child, what: &str) -> Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > PATIENCE {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what}: the app did not end within {PATIENCE:?}; stderr:\n{}",
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Waits until `ready` holds of the swap file's live checkpoints, the app still running.
fn wait_for_checkpoints(
    child: &mut Child,
    swap_file: &Path,
    what: &str,
    ready: impl Fn(&[(u64, SlotHeader)]) -> bool,
) {
    let t0 = Instant::now();
    loop {
        if ready(&live_checkpoints(swap_file)) {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the app ended ({status}) before {what}");
        }
        assert!(t0.elapsed() < PATIENCE, "{what} never happened");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_second_run_on_the_same_swap_directory_is_refused_and_the_first_is_unharmed() {
    const COUNT: usize = 16;
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().to_str().unwrap();
    let count = format!("COUNT={COUNT}");
    let hold = program("hold.masm");
    let args = [
        "run",
        hold.to_str().unwrap(),
        "-D",
        &count,
        "-D",
        "ARRAY_BYTES=8176",
        "-D",
        "SLEEP_MS=2500",
        "--swap-dir",
        dir_arg,
        "--policy",
        QUICK_COLD,
        "--lifecycle",
        "bg@300ms,save@400ms,reclaim@600ms",
    ];
    let mut first = spawn(&args);
    wait_for_checkpoints(
        &mut first,
        &dir.path().join("app"),
        "the first run saved",
        |l| l.len() == COUNT,
    );
    // The same command again, while the first holds the directory.
    let second = wait_bounded(spawn(&args), "the second run");
    let stderr = text(&second.stderr);
    // Status 1: the flags were right, the directory is taken (docs/swap-safety.md).
    assert_eq!(
        second.status.code(),
        Some(1),
        "the second run was let in, or ended otherwise: {stderr}"
    );
    assert!(
        stderr.contains(&format!("in use by another run (pid {})", first.id())),
        "{stderr}"
    );
    assert!(stderr.contains(dir_arg), "{stderr}");
    assert!(text(&second.stdout).is_empty(), "the second app ran");
    let first = wait_bounded(first, "the first run");
    let stderr = text(&first.stderr);
    assert!(first.status.success(), "{:?}\n{stderr}", first.status);
    assert_eq!(text(&first.stdout), "ready\nok\n", "{stderr}");
}

#[test]
fn a_swap_file_rolled_back_to_an_older_copy_is_a_runtime_error_naming_the_object() {
    use std::os::unix::fs::FileExt;
    const COUNT: usize = 16;
    let dir = tempfile::tempdir().unwrap();
    let count = format!("COUNT={COUNT}");
    // Saved at 600 ms (generation 1), written again at 1.5 s and saved in place at 2.5 s
    // (generation 2), reclaimed at 3 s, read back at 4.5 s.
    let mut child = spawn(&[
        "run",
        program("rewrite.masm").to_str().unwrap(),
        "-D",
        &count,
        "--swap-dir",
        dir.path().to_str().unwrap(),
        "--policy",
        QUICK_COLD,
        "--lifecycle",
        "bg@300ms,save@600ms,save@2500ms,reclaim@3000ms",
    ]);
    let swap_file = dir.path().join("app");
    let every = |generation: u32| {
        move |live: &[(u64, SlotHeader)]| {
            live.len() == COUNT && live.iter().all(|(_, h)| h.generation == generation)
        }
    };
    wait_for_checkpoints(&mut child, &swap_file, "the first save", every(1));
    let copy = std::fs::read(&swap_file).unwrap();
    wait_for_checkpoints(&mut child, &swap_file, "the second save", every(2));
    // Put the old copy back in place (same file, no truncation): every checksum holds.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&swap_file)
        .unwrap();
    file.write_all_at(&copy, 0).unwrap();
    drop(file);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the app ended before its swap file was rolled back"
    );
    let keys: Vec<u64> = live_checkpoints(&swap_file)
        .iter()
        .map(|(_, h)| h.key)
        .collect();
    let out = wait_bounded(child, "the rolled-back run");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(70), "{stderr}");
    assert!(
        keys.iter()
            .any(|k| stderr.contains(&format!("cannot fault in object {k}:"))),
        "{stderr}"
    );
    assert!(stderr.contains("stale checkpoint"), "{stderr}");
    let stdout = text(&out.stdout);
    assert!(
        !stdout.contains("ok") && !stdout.contains("verification failed"),
        "{stdout}"
    );
}

#[test]
fn random_bytes_in_a_live_reclaim_table_end_the_app_with_an_error_naming_an_object() {
    use std::os::unix::fs::FileExt;
    const COUNT: usize = 16;
    let dir = tempfile::tempdir().unwrap();
    let count = format!("COUNT={COUNT}");
    let mut child = spawn(&[
        "run",
        program("hold.masm").to_str().unwrap(),
        "-D",
        &count,
        "-D",
        "ARRAY_BYTES=8176",
        "-D",
        "SLEEP_MS=2500",
        "--swap-dir",
        dir.path().to_str().unwrap(),
        "--policy",
        QUICK_COLD,
        "--lifecycle",
        "bg@300ms,save@400ms,reclaim@600ms",
    ]);
    wait_for_checkpoints(&mut child, &dir.path().join("app"), "the save", |l| {
        l.len() == COUNT
    });
    // Random bytes (xorshift, seeded from the clock) over the whole table in use.
    let table = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("app.table"))
        .unwrap();
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let garbage: Vec<u8> = (0..64 + 32 * (COUNT + 16))
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    table.write_all_at(&garbage, 0).unwrap();
    drop(table);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the app ended before its table was overwritten"
    );
    // The app reads its arrays back after its sleep: each access checks its entry.
    let out = wait_bounded(child, "the app with a garbage table");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(70), "{stderr}");
    assert!(stderr.contains("cannot fault in object"), "{stderr}");
    assert!(stderr.contains("reclaim table"), "{stderr}");
    let stdout = text(&out.stdout);
    assert!(
        !stdout.contains("ok") && !stdout.contains("verification failed"),
        "{stdout}"
    );
}

/// A small tmpfs mounted for one test and unmounted when dropped.
struct SmallFs {
    dir: tempfile::TempDir,
}

impl SmallFs {
    fn mount(bytes: u64) -> Result<SmallFs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!("mount failed: {}", text(&out.stderr).trim()));
        }
        Ok(SmallFs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Runs `hold.masm` (COUNT arrays of 8 KiB, a second's sleep) with its swap directory
/// `swap_dir` and `lifecycle`, asserts that it succeeded with its objects intact
/// (`ready`, `ok`) and printed exactly one warning, naming the full directory, and
/// returns that warning and the whole stderr.
fn one_full_disk_warning(
    swap_dir: &Path,
    count: &str,
    lifecycle: &str,
    extra: &[&str],
    what: &str,
) -> (String, String) {
    let hold = program("hold.masm");
    let mut args = vec![
        "run",
        hold.to_str().unwrap(),
        "-D",
        count,
        "-D",
        "ARRAY_BYTES=8176",
        "-D",
        "SLEEP_MS=1000",
        "--swap-dir",
        swap_dir.to_str().unwrap(),
        "--policy",
        QUICK_COLD,
        "--lifecycle",
        lifecycle,
    ];
    args.extend(extra);
    let out = wait_bounded(spawn(&args), what);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
    assert_eq!(text(&out.stdout), "ready\nok\n", "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("is full"), "{stderr}");
    assert!(warnings[0].contains(swap_dir.to_str().unwrap()), "{stderr}");
    (warnings[0].to_string(), stderr)
}

#[test]
fn a_full_disk_is_one_warning_naming_the_directory_and_the_data_stays_correct() {
    // 64 arrays of 8 KiB (512 KiB of checkpoints) on a file system of 256 KiB.
    let fs = match SmallFs::mount(256 * 1024) {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!("skipping the full-disk test: needs a tmpfs mount as root ({why})");
            return;
        }
    };
    let swap_dir = fs.path().join("swap");
    one_full_disk_warning(
        &swap_dir,
        "COUNT=64",
        "bg@300ms,save@400ms,reclaim@600ms,save@700ms",
        &[],
        "the full-disk run",
    );
}

#[test]
fn a_reclaim_table_that_does_not_fit_is_a_full_disk_warning_and_the_app_carries_on() {
    // The table of a `run` (2^17 entries, 4 MiB, every block allocated up front) does
    // not fit on 1 MiB; the swap file and 8 arrays of 8 KiB do.
    let fs = match SmallFs::mount(1024 * 1024) {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!("skipping the full-disk table test: needs a tmpfs mount as root ({why})");
            return;
        }
    };
    let swap_dir = fs.path().join("swap");
    let (warning, stderr) = one_full_disk_warning(
        &swap_dir,
        "COUNT=8",
        "bg@300ms,save@400ms,reclaim@600ms",
        &["--stats"],
        "the run whose table does not fit",
    );
    assert!(warning.contains("reclaim table"), "{stderr}");
    // No half-made table is left for another process to map.
    let left: Vec<_> = std::fs::read_dir(&swap_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!left.iter().any(|n| n.ends_with(".table")), "{left:?}");
}

/// What a file is, for checking that nothing changed it: its bytes (a regular file's) and
/// every part of its metadata that a write, a truncation, a rename over it or a new link
/// to it would change. Follows no link: a link's own metadata.
pub fn fingerprint(path: &Path) -> (Vec<u8>, [i64; 9]) {
    use std::os::unix::fs::MetadataExt;
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

/// A user other than root and the test's own (`nobody` on most systems).
const OTHER_USER: u32 = 65534;

/// What another user can place under a name the run uses, each paired with how the
/// refusal describes it. Another user's file needs root to make (skipped otherwise, with
/// a printed reason).
fn hostile_kinds() -> Vec<(&'static str, &'static str)> {
    let mut kinds = vec![
        ("symlink", "a symbolic link"),
        ("dangling symlink", "a symbolic link"),
        ("fifo", "a FIFO"),
        ("hard link", "a file with 2 links"),
    ];
    if marvin_runtime::run_user() == 0 {
        kinds.push(("another user's file", "a file of user 65534"));
    } else {
        eprintln!("skipping another user's file under the run's names: chown needs root");
    }
    kinds
}

/// Places `kind` under `at`; `outside` is a file outside the swap directory that links
/// lead to (a dangling link leads to `missing`, which must stay missing).
fn plant(kind: &str, at: &Path, outside: &Path, missing: &Path) {
    match kind {
        "symlink" => std::os::unix::fs::symlink(outside, at).unwrap(),
        "dangling symlink" => std::os::unix::fs::symlink(missing, at).unwrap(),
        "fifo" => {
            let made = Command::new("mkfifo").arg(at).status().unwrap();
            assert!(made.success(), "mkfifo {}", at.display());
        }
        "hard link" => std::fs::hard_link(outside, at).unwrap(),
        "another user's file" => {
            std::fs::write(at, b"another user's bytes").unwrap();
            std::os::unix::fs::chown(at, Some(OTHER_USER), Some(OTHER_USER)).unwrap();
        }
        _ => unreachable!("{kind}"),
    }
}

/// `hold.masm` swapping in `dir` with every file the run can make there: its lock, swap
/// file, reclaim table and (memory-file backing) region directory.
fn hold_in(dir: &Path) -> Child {
    spawn(&[
        "run",
        program("hold.masm").to_str().unwrap(),
        "-D",
        "COUNT=8",
        "-D",
        "ARRAY_BYTES=8176",
        "-D",
        "SLEEP_MS=300",
        "--swap-dir",
        dir.to_str().unwrap(),
        "--large-backing",
        "memfd",
        "--policy",
        QUICK_COLD,
        "--lifecycle",
        "bg@50ms,save@100ms,reclaim@150ms",
    ])
}

#[test]
fn links_fifos_and_other_users_files_under_the_runs_names_are_refused_and_nothing_outside_changes()
{
    // Every name `marvin run` makes in its swap directory at start (the compaction's copy,
    // made later, is tested on the swap file itself: swap/tests/swap_folder.rs).
    let names = [
        "marvin.lock",
        "app",
        "app.table",
        "app.regions",
        "app.regions.tmp",
    ];
    for (kind, said) in hostile_kinds() {
        for name in names {
            let dir = tempfile::tempdir().unwrap();
            let elsewhere = tempfile::tempdir().unwrap();
            let outside = elsewhere.path().join("precious");
            std::fs::write(&outside, b"bytes that must stay as they are").unwrap();
            let missing = elsewhere.path().join("never-made");
            let at = dir.path().join(name);
            plant(kind, &at, &outside, &missing);
            let (outside_before, planted) = (fingerprint(&outside), fingerprint(&at));

            let out = wait_bounded(hold_in(dir.path()), "a run refused its swap directory");
            let stderr = text(&out.stderr);
            let what = format!("{kind} as {name}");
            assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
            assert!(
                stderr.contains(&format!("{} is refused: it is {said}", at.display())),
                "{what}: {stderr}"
            );
            assert!(text(&out.stdout).is_empty(), "{what}: the app ran");
            assert_eq!(
                fingerprint(&outside),
                outside_before,
                "{what}: target changed"
            );
            assert_eq!(
                fingerprint(&at),
                planted,
                "{what}: the planted entry changed"
            );
            assert!(!missing.exists(), "{what}: created through a dangling link");
        }
    }
}

#[test]
fn an_earlier_runs_files_are_replaced_and_the_next_run_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    for run in ["first", "second"] {
        let out = wait_bounded(hold_in(dir.path()), run);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{run}: {:?}\n{stderr}", out.status);
        assert_eq!(text(&out.stdout), "ready\nok\n", "{run}: {stderr}");
    }
    // What the runs leave: their own files, each with one link, no temporary names.
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["app", "app.regions", "app.table", "marvin.lock"]);
}

#[test]
fn a_swap_directory_others_may_write_in_or_of_another_user_is_refused_before_the_run() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = wait_bounded(hold_in(dir.path()), "an open swap directory");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("--swap-dir {}: is refused", dir.path().display()))
            && stderr.contains("writable by other users (mode 0777)"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "a file was made"
    );
    // With the sticky bit (as /tmp has), other users cannot replace the run's files.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let out = wait_bounded(hold_in(dir.path()), "a sticky swap directory");
    assert!(out.status.success(), "{}", text(&out.stderr));
    if marvin_runtime::run_user() != 0 {
        eprintln!("skipping a swap directory of another user: chown needs root");
        return;
    }
    let theirs = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(theirs.path(), Some(OTHER_USER), Some(OTHER_USER)).unwrap();
    let out = wait_bounded(hold_in(theirs.path()), "another user's swap directory");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("belongs to user 65534"), "{stderr}");
    assert_eq!(std::fs::read_dir(theirs.path()).unwrap().count(), 0);
}

#[test]
fn a_compaction_on_a_full_disk_warns_that_the_file_is_not_compacted_and_the_data_stays_correct() {
    // 64 arrays of 8 KiB saved, then half of them dropped and collected: the save after
    // compacts. The file system is filled after the first save, so the compaction's copy
    // finds no room.
    let fs = match SmallFs::mount(8 * 1024 * 1024) {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!(
                "skipping the full-disk compaction test: needs a tmpfs mount as root ({why})"
            );
            return;
        }
    };
    let swap_dir = fs.path().join("swap");
    let mut child = spawn(&[
        "run",
        program("drop_half.masm").to_str().unwrap(),
        "--swap-dir",
        swap_dir.to_str().unwrap(),
        "--policy",
        QUICK_COLD,
        "--lifecycle",
        "bg@300ms,save@400ms,gc@2500ms,save@2700ms",
        "--stats",
    ]);
    wait_for_checkpoints(&mut child, &swap_dir.join("app"), "the save", |l| {
        l.len() == 64
    });
    // Fill what is left of the file system.
    {
        use std::io::Write;
        let mut filler = std::fs::File::create(fs.path().join("filler")).unwrap();
        let chunk = vec![0xa5u8; 64 * 1024];
        while filler.write_all(&chunk).is_ok() {}
        let _ = filler.flush();
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the app ended before the disk was full"
    );
    let out = wait_bounded(child, "the run whose compaction does not fit");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
    assert_eq!(text(&out.stdout), "ready\ndropped\nok\n", "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("is full: the swap file is not compacted")
            && warnings[0].contains("checkpoints stay saved")
            && !warnings[0].contains("unsaved"),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("compactions") && l.trim_end().ends_with(" 0")),
        "{stderr}"
    );
}
