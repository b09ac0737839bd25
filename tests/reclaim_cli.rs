//! `marvin reclaim` against a running `marvin run --large-backing memfd`: the pages of the
//! app's saved objects go back from another process, the app carries on and ends verified,
//! and a bad target is a clear error.

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
