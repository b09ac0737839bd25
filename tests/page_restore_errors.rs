//! A damaged piece found while an object comes back a page run at a time
//! (`[restore] page_min_bytes`) is an ordinary runtime error, through `marvin run`: the
//! program's earlier output is on stdout, the statistics asked for are written, and the
//! `error:` line names the instruction's position, as docs/masm.md promises for every
//! runtime error. (The touch is answered in a signal handler, which cannot end the run
//! properly; the touching access reports the damage instead.)

use std::os::unix::fs::FileExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use marvin_swap::SLOT_HEADER_BYTES;

#[allow(dead_code)]
mod support;
use support::{live_checkpoints, program, text};

/// The program's arrays and the element it reads back (tests/memory/paged.masm).
const COUNT: u64 = 4;
const FAR: u64 = 38400;

/// A hang guard, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);

#[test]
fn a_damaged_piece_under_page_at_a_time_restore_keeps_the_output_the_statistics_and_the_position() {
    if !marvin_swap::page_restore::available() {
        eprintln!("skipping: this kernel or sandbox offers no userfaultfd with SIGBUS");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let swap_dir = dir.path().join("swap");
    // Saved at 1.5 s, reclaimed at 2.5 s, read back a page run at a time after 3.5 s.
    let mut child = Command::new(env!("CARGO_BIN_EXE_marvin"))
        .arg("run")
        .arg(program("paged.masm"))
        .arg("--policy")
        .arg(program("paged.toml"))
        .args(["--lifecycle", "bg@300ms,save@1500ms,reclaim@2500ms"])
        .arg("--stats-json")
        .arg(&stats)
        .arg("--swap-dir")
        .arg(&swap_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Until the app ends, the element it will read of every checkpoint holds all ones
    // (not what the program wrote, not zero): written again after any save rewrote it.
    let swap_file = swap_dir.join("app");
    let t0 = Instant::now();
    let mut damaged = 0;
    while child.try_wait().unwrap().is_none() {
        assert!(t0.elapsed() < PATIENCE, "the app did not end");
        let live = live_checkpoints(&swap_file);
        if let Ok(file) = std::fs::OpenOptions::new().write(true).open(&swap_file) {
            for (slot, _) in &live {
                let at = slot + SLOT_HEADER_BYTES + FAR * 8;
                if file.write_all_at(&[0xff; 8], at).is_ok() {
                    damaged += 1;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(damaged > 0, "no checkpoint to damage; stderr: {stderr}");
    assert_eq!(
        out.status.code(),
        Some(70),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    // The output written before the error is there, and nothing wrong after it.
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.first(), Some(&"filled"), "{stdout}");
    for (k, line) in lines.iter().skip(1).enumerate() {
        assert_eq!(*line, (FAR + k as u64).to_string(), "{stdout}");
    }
    assert!(lines.len() < 1 + COUNT as usize, "the error came: {stdout}");
    // The error line names the object, what failed, and the position.
    let error = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(error.contains("cannot fault in object "), "{error}");
    assert!(error.contains("fail their checksum"), "{error}");
    assert!(error.contains("(a page at a time)"), "{error}");
    assert!(error.contains(" at main+"), "{error}");
    assert!(error.contains("paged.masm:"), "{error}");
    // The statistics asked for are written.
    let json = std::fs::read_to_string(&stats).expect("the statistics file");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["swap"]["object_faults"].as_u64().unwrap() >= 1, "{json}");
}
