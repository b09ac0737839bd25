//! The process mode's app side: `marvin app` speaks the control protocol, runs the
//! workload, obeys background/foreground/stop, and names a crash.

use std::path::Path;
use std::time::Duration;

use marvin_system::processes::launcher::AppProcess;
use marvin_system::processes::protocol::Command;

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_marvin"))
}

fn workload() -> String {
    format!(
        "{}/examples/workloads/buckets.masm",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn args(mode: &str, swap_dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        workload().as_str(),
        "-D",
        "ARRAYS=32",
        "-D",
        "DELETE_GAP_MS=20",
        "-D",
        "ROUND_GAP_MS=50",
        "--mode",
        mode,
        "--gc-max-free",
        "256k",
        "--report-every",
        "20ms",
        "--swap-dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(swap_dir.display().to_string());
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// Waits (bounded) until `cond` holds of the app's reports.
fn wait_for(
    p: &AppProcess,
    what: &str,
    cond: impl Fn(&marvin_system::processes::launcher::Seen) -> bool,
) {
    for _ in 0..3000 {
        if cond(&p.seen()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the app never reported {what}: {:?}", p.seen());
}

#[test]
fn a_marvin_app_goes_to_the_background_and_back_and_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = AppProcess::spawn(exe(), &args("marvin", dir.path(), &[])).unwrap();
    wait_for(&p, "ready", |s| s.ready);
    wait_for(&p, "two rounds", |s| s.mark("round") >= 2);
    p.tell(&Command::Background);
    wait_for(&p, "the background transition", |s| {
        s.transitions.iter().any(|(a, _)| a == "background")
    });
    assert!(
        dir.path().join("swap.table").exists(),
        "a marvin app keeps its reclaim table in its swap directory"
    );
    let before = p.mark("round");
    wait_for(&p, "rounds in the background", |s| s.mark("round") > before);
    p.tell(&Command::Foreground);
    wait_for(&p, "the foreground transition", |s| {
        s.transitions.iter().any(|(a, _)| a == "foreground")
    });
    let status = p.stop(Duration::from_secs(30)).unwrap();
    p.drain();
    assert!(status.success(), "{status}: {}", p.stderr_tail());
    assert_eq!(p.seen().exit, Some((0, None)));
    assert_eq!(p.seen().mark("verify_failed"), 0);
    assert_eq!(p.crash(), None);
}

#[test]
fn a_plain_app_ignores_transitions_and_ends_when_its_input_closes() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = AppProcess::spawn(exe(), &args("plain", dir.path(), &[])).unwrap();
    wait_for(&p, "a round", |s| s.mark("round") >= 1);
    p.tell(&Command::Background);
    let status = p.stop(Duration::from_secs(30)).unwrap();
    p.drain();
    assert!(status.success());
    assert!(
        p.seen().transitions.is_empty(),
        "a plain heap makes no transition"
    );
    assert!(
        !dir.path().join("swap.table").exists(),
        "a plain app has no swap file"
    );
}

#[test]
fn a_crash_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // A program that fails at run time: the app reports the runtime error, then exits
    // with 70.
    let prog = dir.path().join("fails.masm");
    std::fs::write(
        &prog,
        ".method main args=0 locals=0\n  mark \"round\"\n  push 1\n  push 0\n  div\n  ret\n.end\n",
    )
    .unwrap();
    let mut a = args("plain", dir.path(), &[]);
    a[0] = prog.display().to_string();
    a.drain(1..7); // the workload's defines
    let mut p = AppProcess::spawn(exe(), &a).unwrap();
    wait_for(&p, "its exit", |s| s.exit.is_some());
    for _ in 0..3000 {
        if !p.is_running() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    p.drain();
    let crash = p.crash().expect("a crash");
    assert!(
        crash.starts_with("error: ") && crash.contains("fails.masm:5"),
        "{crash}"
    );
    assert_eq!(p.seen().exit.map(|e| e.0), Some(70));
    assert_eq!(p.seen().mark("round"), 1);
}

#[test]
fn a_bad_command_ends_the_app_with_a_protocol_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(exe())
        .arg("app")
        .args(args("plain", dir.path(), &[]))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"to\":\"sideways\"}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let why = format!(
        "{}\nstdout:\n{text}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(70), "{why}");
    let exit = text
        .lines()
        .find(|l| l.contains("\"ev\":\"exit\""))
        .unwrap_or_else(|| panic!("an exit report: {why}"));
    assert!(exit.contains("bad control line"), "{why}");
    assert_eq!(
        text.lines().last(),
        Some(exit),
        "the exit report is the last line: {why}"
    );
}
