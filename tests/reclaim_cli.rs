//! `marvin reclaim` against a running `marvin run --large-backing memfd`: the pages of the
//! app's saved objects go back from another process, the app carries on and ends verified,
//! a bad target is a clear error, and a table whose entries contradict themselves is
//! refused with nothing taken.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn marvin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_marvin"))
}

/// The number after `key` in `text` (e.g. `reclaimed 12 objects`: key `reclaimed`).
fn number_after(text: &str, key: &str) -> u64 {
    let rest = &text[text.find(key).unwrap_or_else(|| panic!("{key} in {text}")) + key.len()..];
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn marvin_reclaim_takes_a_running_apps_saved_objects_from_outside() {
    let dir = tempfile::tempdir().unwrap();
    let workload = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workloads/buckets.masm");
    let app = marvin()
        .arg("run")
        .arg(&workload)
        .args([
            "-D",
            "ARRAYS=128",
            "-D",
            "ROUNDS=8",
            "-D",
            "ROUND_GAP_MS=300",
        ])
        .args(["-D", "DELETE_GAP_MS=100"])
        .arg("--swap-dir")
        .arg(dir.path())
        .args([
            "--large-backing",
            "memfd",
            "--lifecycle",
            "bg@300ms,save@500ms",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = app.id().to_string();
    let t0 = Instant::now();
    let mut taken = 0;
    let mut last = String::new();
    while taken == 0 && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(200));
        if !dir.path().join("app.regions").exists() {
            continue;
        }
        let out = marvin()
            .args(["reclaim", "--pid", &pid, "--swap-dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        last = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{last}");
        if last.contains("in the foreground") {
            continue;
        }
        taken = number_after(&last, "objects, ");
    }
    assert!(taken > 0, "nothing became reclaimable in 30 s: {last}");
    assert!(last.contains(&format!("from process {pid}")), "{last}");
    let out = app.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && !text.contains("verification failed"),
        "{}: {text}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_wrong_process_or_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = marvin()
        .args(["reclaim", "--pid", "1", "--swap-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: cannot open app 'app' of process 1")
            && err.contains("reclaim table"),
        "{err}"
    );
}

/// A table whose entry carries a flag bit no runtime sets is refused: `marvin reclaim`
/// takes nothing, says which entry and why, and fails (exit 1). The app, which finds the
/// same entry when it next locks it, ends with a runtime error or carries on; it is
/// stopped here either way.
#[test]
fn marvin_reclaim_refuses_a_table_whose_entries_contradict_themselves() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let workload = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workloads/buckets.masm");
    let mut app = marvin()
        .arg("run")
        .arg(&workload)
        .args([
            "-D",
            "ARRAYS=32",
            "-D",
            "ROUNDS=40",
            "-D",
            "ROUND_GAP_MS=300",
        ])
        .arg("--swap-dir")
        .arg(dir.path())
        .args(["--large-backing", "memfd", "--lifecycle", "bg@300ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = app.id().to_string();
    let table = dir.path().join("app.table");
    let t0 = Instant::now();
    let mut last = String::new();
    let mut refused = false;
    while !refused && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
        if !dir.path().join("app.regions").exists() {
            continue;
        }
        // Entry 0's flag word, once the app has stubbed something: bit 31 set.
        let Ok(f) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&table)
        else {
            continue;
        };
        let mut word = [0u8; 4];
        f.read_exact_at(&mut word, 64).unwrap();
        let flags = u32::from_le_bytes(word);
        if flags & 1 == 0 {
            continue;
        }
        f.write_all_at(&(flags | 1 << 31).to_le_bytes(), 64)
            .unwrap();
        let out = marvin()
            .args(["reclaim", "--pid", &pid, "--swap-dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        last = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if last.contains("in the foreground") {
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{last}");
        refused = true;
    }
    // Our own child, by its handle.
    let _ = app.kill();
    let _ = app.wait();
    assert!(refused, "never refused in 30 s: {last}");
    assert!(
        last.contains(&format!(
            "of process {pid} is refused: entry #0 carries flag bits"
        )) && last.contains("nothing taken"),
        "{last}"
    );
}
