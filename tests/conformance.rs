//! The MASM conformance suite: runs every program in `tests/conformance/` through the
//! `marvin` binary and compares what it prints, its exit status and its error output with
//! the files next to it.
//!
//! A case `NAME` is `NAME.masm` plus:
//! - `NAME.status`: the expected exit status (required);
//! - `NAME.out`: the exact expected stdout (absent means empty);
//! - `NAME.args`: extra arguments for `marvin run`, one a line (e.g. `-D` then `N=5`);
//! - `NAME.err`: substrings that must appear in stderr, one a line. A line that names a
//!   `.masm` file is checked only for the text form, since the binary form need not carry
//!   source positions;
//! - `NAME.stats`: checks on the `--stats-json` output, one a line: `KEY OP NUMBER` where
//!   KEY is a dotted path (`marks.round`) and OP one of `=`, `>=`, `<=`, `>`.
//!
//! Every case runs four ways: `marvin check`, `marvin run` on the text, `marvin run` on the
//! binary form written by `marvin asm`, and `marvin run --no-resolve` on the text (field
//! operands resolved by name on every execution instead of once at load); all must agree
//! with the expectations. Each
//! process is killed after a timeout (20 s, or `MARVIN_CONFORMANCE_TIMEOUT_SECS`), so a
//! hang fails the suite instead of stalling it. All failures are reported together.
//!
//! `MARVIN_CONFORMANCE_BIN` runs the suite against another `marvin` binary.
//!
//! `messages/` (threads and the main looper) runs only when `MARVIN_CONFORMANCE_MESSAGES=1`
//! or the file `tests/conformance/messages/ENABLED` exists.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

/// The binary under test: this package's `marvin`, or `MARVIN_CONFORMANCE_BIN` to check
/// another build against the same suite.
fn marvin() -> String {
    std::env::var("MARVIN_CONFORMANCE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_marvin").into())
}
/// Output beyond this many bytes per stream is drained but not kept.
const OUTPUT_CAP: usize = 1 << 20;

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

fn timeout() -> Duration {
    let secs = std::env::var("MARVIN_CONFORMANCE_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    Duration::from_secs(secs)
}

/// What a finished (or killed) process produced.
struct Outcome {
    /// The exit status; `None` when the process was killed by a signal or the timeout.
    status: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    timed_out: bool,
}

impl Outcome {
    fn describe_status(&self) -> String {
        match (self.timed_out, self.status) {
            (true, _) => format!("killed after the {:?} timeout", timeout()),
            (false, Some(code)) => format!("exit status {code}"),
            (false, None) => "terminated by a signal (a crash)".to_string(),
        }
    }

    fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Reads a stream to its end on another thread, keeping at most [`OUTPUT_CAP`] bytes.
fn drain(mut stream: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = OUTPUT_CAP.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        kept
    })
}

/// Runs `marvin ARGS`, killing it after the timeout.
fn run_marvin(args: &[String]) -> Outcome {
    let marvin = marvin();
    let mut child: Child = Command::new(&marvin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {marvin}: {e}"));
    let out = drain(child.stdout.take().expect("piped stdout"));
    let err = drain(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + timeout();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().expect("wait for a killed child");
            }
            Ok(None) => thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("waiting for marvin: {e}"),
        }
    };
    Outcome {
        status: if timed_out { None } else { status.code() },
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
        timed_out,
    }
}

/// One stats expectation: `KEY OP NUMBER`.
struct StatCheck {
    key: String,
    op: String,
    value: f64,
}

/// One conformance case and its expectations.
struct Case {
    /// Name shown in failures, relative to the suite directory (`messages/has`).
    label: String,
    masm: PathBuf,
    args: Vec<String>,
    status: i32,
    stdout: Vec<u8>,
    err: Vec<String>,
    stats: Vec<StatCheck>,
}

fn read_lines(path: &Path) -> Vec<String> {
    match fs::read_to_string(path) {
        Ok(text) => text
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn load_case(masm: &Path, label: String) -> Result<Case, String> {
    let with = |ext: &str| masm.with_extension(ext);
    let status_text = fs::read_to_string(with("status"))
        .map_err(|e| format!("{label}: cannot read {}: {e}", with("status").display()))?;
    let status = status_text
        .trim()
        .parse()
        .map_err(|e| format!("{label}: bad .status {status_text:?}: {e}"))?;
    let stdout = fs::read(with("out")).unwrap_or_default();
    let mut stats = Vec::new();
    for line in read_lines(&with("stats")) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [key, op, value] = parts[..] else {
            return Err(format!("{label}: bad .stats line {line:?}"));
        };
        if !["=", ">=", "<=", ">"].contains(&op) {
            return Err(format!("{label}: bad .stats operator in {line:?}"));
        }
        let value = value
            .parse()
            .map_err(|e| format!("{label}: bad .stats number in {line:?}: {e}"))?;
        stats.push(StatCheck {
            key: key.to_string(),
            op: op.to_string(),
            value,
        });
    }
    Ok(Case {
        label,
        masm: masm.to_path_buf(),
        args: read_lines(&with("args")),
        status,
        stdout,
        err: read_lines(&with("err")),
        stats,
    })
}

/// The cases of one directory (not its subdirectories), sorted by name.
fn discover(dir: &Path, prefix: &str) -> Vec<Result<Case, String>> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "masm"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let stem = p.file_stem().expect("file stem").to_string_lossy();
            load_case(p, format!("{prefix}{stem}"))
        })
        .collect()
}

/// Shows the first differing line and both outputs, for a readable failure.
fn stdout_diff(expected: &[u8], actual: &[u8]) -> String {
    let exp = String::from_utf8_lossy(expected);
    let act = String::from_utf8_lossy(actual);
    let exp_lines: Vec<&str> = exp.split('\n').collect();
    let act_lines: Vec<&str> = act.split('\n').collect();
    let first = (0..exp_lines.len().max(act_lines.len()))
        .find(|&i| exp_lines.get(i) != act_lines.get(i))
        .unwrap_or(0);
    let clip = |s: &str| -> String {
        let lines: Vec<&str> = s.split('\n').take(40).collect();
        lines
            .iter()
            .map(|l| format!("      |{l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    format!(
        "stdout differs at line {}: expected {:?}, got {:?}\n    expected:\n{}\n    got:\n{}",
        first + 1,
        exp_lines.get(first).copied().unwrap_or("<end>"),
        act_lines.get(first).copied().unwrap_or("<end>"),
        clip(&exp),
        clip(&act)
    )
}

fn lookup<'a>(json: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    key.split('.').try_fold(json, |v, part| v.get(part))
}

/// Checks one run of a case; `form` names the run in messages.
fn check_outcome(
    case: &Case,
    form: &str,
    outcome: &Outcome,
    source_positions: bool,
    stats_file: Option<&Path>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let head = format!("{} [{form}]", case.label);
    if outcome.status != Some(case.status) {
        problems.push(format!(
            "{head}: expected exit status {}, got {}; stderr:\n{}",
            case.status,
            outcome.describe_status(),
            outcome.stderr_text()
        ));
    }
    if outcome.stdout != case.stdout {
        problems.push(format!(
            "{head}: {}",
            stdout_diff(&case.stdout, &outcome.stdout)
        ));
    }
    let stderr = outcome.stderr_text();
    for want in &case.err {
        if !source_positions && want.contains(".masm:") {
            continue;
        }
        if !stderr.contains(want.as_str()) {
            problems.push(format!(
                "{head}: stderr lacks {want:?}; stderr was:\n{stderr}"
            ));
        }
    }
    if let Some(path) = stats_file {
        problems.extend(check_stats(&head, case, path));
    }
    problems
}

fn check_stats(head: &str, case: &Case, path: &Path) -> Vec<String> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return vec![format!("{head}: no --stats-json output: {e}")],
    };
    let json: serde_json::Value = match serde_json::from_str(&text) {
        Ok(j) => j,
        Err(e) => return vec![format!("{head}: --stats-json is not JSON ({e}):\n{text}")],
    };
    let mut problems = Vec::new();
    for check in &case.stats {
        let Some(actual) = lookup(&json, &check.key).and_then(serde_json::Value::as_f64) else {
            problems.push(format!("{head}: stats lack a number at {:?}", check.key));
            continue;
        };
        let ok = match check.op.as_str() {
            "=" => actual == check.value,
            ">=" => actual >= check.value,
            "<=" => actual <= check.value,
            _ => actual > check.value,
        };
        if !ok {
            problems.push(format!(
                "{head}: stats {} is {actual}, expected {} {}",
                check.key, check.op, check.value
            ));
        }
    }
    problems
}

/// Runs `marvin run PROGRAM ARGS` (adding `--stats-json` when the case checks stats).
fn run_program(case: &Case, program: &Path, stats_file: Option<&Path>) -> Outcome {
    run_program_with(case, program, stats_file, &[])
}

/// As [`run_program`], with extra `marvin run` flags.
fn run_program_with(
    case: &Case,
    program: &Path,
    stats_file: Option<&Path>,
    flags: &[&str],
) -> Outcome {
    let mut args = vec!["run".to_string(), program.display().to_string()];
    args.extend(flags.iter().map(|f| f.to_string()));
    args.extend(case.args.iter().cloned());
    if let Some(path) = stats_file {
        args.push("--stats-json".into());
        args.push(path.display().to_string());
    }
    run_marvin(&args)
}

/// Runs one case every way and returns its problems.
fn run_case(case: &Case, scratch: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let file_stem = case.label.replace('/', "_");
    let stats_path = |form: &str| -> Option<PathBuf> {
        (!case.stats.is_empty()).then(|| scratch.join(format!("{file_stem}.{form}.json")))
    };

    // The text form.
    let stats_text = stats_path("text");
    let text = run_program(case, &case.masm, stats_text.as_deref());
    problems.extend(check_outcome(
        case,
        "run text",
        &text,
        true,
        stats_text.as_deref(),
    ));

    // By-name execution behaves exactly as resolved execution.
    let stats_named = stats_path("by-name");
    let named = run_program_with(case, &case.masm, stats_named.as_deref(), &["--no-resolve"]);
    problems.extend(check_outcome(
        case,
        "run text --no-resolve",
        &named,
        true,
        stats_named.as_deref(),
    ));

    // `check` and `asm` must agree with each other: both accept, or both reject (65).
    let source = case.masm.display().to_string();
    let check = run_marvin(&["check".into(), source.clone()]);
    let mvb = scratch.join(format!("{file_stem}.mvb"));
    let asm = run_marvin(&["asm".into(), source, "-o".into(), mvb.display().to_string()]);
    if check.status != asm.status {
        problems.push(format!(
            "{}: `marvin check` gave {} but `marvin asm` gave {}",
            case.label,
            check.describe_status(),
            asm.describe_status()
        ));
    }
    match asm.status {
        Some(0) => {
            // The binary form behaves exactly as the text form.
            let stats_bin = stats_path("binary");
            let bin = run_program(case, &mvb, stats_bin.as_deref());
            problems.extend(check_outcome(
                case,
                "run binary",
                &bin,
                false,
                stats_bin.as_deref(),
            ));
        }
        Some(65) if case.status == 65 => {
            // A program rejected as text is rejected the same way by check and asm.
            for (form, outcome) in [("check", &check), ("asm", &asm)] {
                let stderr = outcome.stderr_text();
                for want in &case.err {
                    if !stderr.contains(want.as_str()) {
                        problems.push(format!(
                            "{} [{form}]: stderr lacks {want:?}; stderr was:\n{stderr}",
                            case.label
                        ));
                    }
                }
            }
        }
        _ => problems.push(format!(
            "{} [asm]: expected `marvin asm` to succeed{}, got {}; stderr:\n{}",
            case.label,
            if case.status == 65 {
                " or reject with 65"
            } else {
                ""
            },
            asm.describe_status(),
            asm.stderr_text()
        )),
    }
    problems
}

/// Runs the cases of `dir` on two worker threads and fails with every problem found.
fn run_suite(dir: &Path, prefix: &str) {
    let cases = discover(dir, prefix);
    assert!(!cases.is_empty(), "no cases in {}", dir.display());
    let scratch = tempfile::tempdir().expect("scratch directory");
    let problems = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let found = match case {
                    Ok(case) => run_case(case, scratch.path()),
                    Err(e) => vec![e.clone()],
                };
                problems.lock().expect("problem list").extend(found);
            });
        }
    });
    let problems = problems.into_inner().expect("problem list");
    assert!(
        problems.is_empty(),
        "{} problem(s) in {} case(s) of {}:\n\n{}\n",
        problems.len(),
        cases.len(),
        dir.display(),
        problems.join("\n\n")
    );
}

#[test]
fn conformance_programs() {
    run_suite(&suite_dir(), "");
}

#[test]
fn conformance_rejected_programs() {
    run_suite(&suite_dir().join("reject"), "reject/");
}

#[test]
fn conformance_messages_and_threads() {
    let dir = suite_dir().join("messages");
    let enabled = std::env::var("MARVIN_CONFORMANCE_MESSAGES").is_ok_and(|v| v == "1")
        || dir.join("ENABLED").exists();
    if !enabled {
        eprintln!(
            "note: messages/ conformance cases skipped; set MARVIN_CONFORMANCE_MESSAGES=1 \
             or create {} to run them",
            dir.join("ENABLED").display()
        );
        return;
    }
    run_suite(&dir, "messages/");
}

/// A damaged binary file is rejected with exit status 65 and a message, never a crash or
/// a hang: every truncation point and a flipped bit at every byte.
#[test]
fn damaged_binary_files_are_rejected() {
    let scratch = tempfile::tempdir().expect("scratch directory");
    let source = suite_dir().join("calls.masm");
    let mvb = scratch.path().join("calls.mvb");
    let asm = run_marvin(&[
        "asm".into(),
        source.display().to_string(),
        "-o".into(),
        mvb.display().to_string(),
    ]);
    assert_eq!(asm.status, Some(0), "asm failed: {}", asm.stderr_text());
    let bytes = fs::read(&mvb).expect("read the binary form");
    assert!(!bytes.is_empty());

    let disasm = run_marvin(&["disasm".into(), mvb.display().to_string()]);
    assert_eq!(disasm.status, Some(0), "disasm: {}", disasm.stderr_text());
    assert!(
        String::from_utf8_lossy(&disasm.stdout).contains("fib"),
        "disasm output does not name the method fib"
    );

    // Truncations (at up to 24 evenly spread points) and single flipped bits (at up to 24
    // evenly spread bytes) keep the run short on two cores.
    let step = (bytes.len() / 24).max(1);
    let mut damaged: Vec<(String, Vec<u8>)> = (0..bytes.len())
        .step_by(step)
        .map(|n| (format!("truncated to {n} bytes"), bytes[..n].to_vec()))
        .collect();
    for at in (0..bytes.len()).step_by(step) {
        let mut copy = bytes.clone();
        copy[at] ^= 0x10;
        damaged.push((format!("bit 4 of byte {at} flipped"), copy));
    }
    let mut problems = Vec::new();
    for (what, content) in damaged {
        let path = scratch.path().join("damaged.mvb");
        fs::write(&path, &content).expect("write the damaged file");
        let out = run_marvin(&["run".into(), path.display().to_string()]);
        if out.status != Some(65) || out.stderr.is_empty() {
            problems.push(format!(
                "{what}: expected exit status 65 and a message, got {} with stderr {:?}",
                out.describe_status(),
                out.stderr_text()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
