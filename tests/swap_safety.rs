//! A swap directory, its swap file and its reclaim table belong to one run and are never
//! trusted blindly, tested through `marvin run` as subprocesses: a second run on the same
//! directory is refused while the first carries on unharmed; a swap file rolled back to an
//! older copy of itself is a runtime error naming the object, not old data; random bytes
//! in a live reclaim table end the app with an error (not a hang); a full disk during a
//! save is one warning naming the directory, and the objects stay resident and correct.

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
    assert!(
        !second.status.success(),
        "the second run was let in: {stderr}"
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
