//! The edges of the `marvin` process, run as a user would: closed pipes and full
//! devices on stdout and stderr, stop signals during a run, output paths and flag ranges
//! checked before anything starts, messages that stay short and name what is wrong, and
//! knobs that would do nothing.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const MARVIN: &str = env!("CARGO_BIN_EXE_marvin");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fib() -> PathBuf {
    root().join("examples/fib.masm")
}

fn marvin(args: &[&str]) -> Command {
    let mut c = Command::new(MARVIN);
    c.args(args).current_dir(root());
    c
}

fn stderr_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A pipe whose reading end is already closed: every write to it fails with EPIPE.
fn broken_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    Stdio::from(writer)
}

fn dev_full() -> Stdio {
    Stdio::from(
        File::options()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full"),
    )
}

/// A program whose disassembly is far larger than a pipe's buffer.
fn long_program(dir: &Path) -> PathBuf {
    let mut text = String::from(".method main args=0 locals=0\n");
    for _ in 0..20_000 {
        text.push_str("  push 1\n  pop\n");
    }
    text.push_str("  push 0\n  ret\n.end\n");
    let f = dir.join("long.masm");
    std::fs::write(&f, text).unwrap();
    f
}

/// Every command that prints, with its arguments.
fn printing_commands(dir: &Path) -> Vec<Vec<String>> {
    let long = long_program(dir).display().to_string();
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, "[coldness]\nwindow_rounds = 2\n").unwrap();
    vec![
        vec!["disasm".into(), long],
        vec!["disasm".into(), fib().display().to_string()],
        vec!["policy".into(), "show".into()],
        vec![
            "policy".into(),
            "check".into(),
            policy.display().to_string(),
        ],
        vec!["run".into(), fib().display().to_string()],
        vec!["--help".into()],
        vec![
            "bench".into(),
            "cputime".into(),
            "--reps".into(),
            "1".into(),
        ],
        vec![
            "bench".into(),
            "cputime".into(),
            "--reps".into(),
            "1".into(),
            "--json".into(),
        ],
        tiny_pressure(&[]),
        tiny_pressure(&["--json"]),
    ]
}

/// A pressure run of a fraction of a second (one app, the kill policy).
fn tiny_pressure(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "pressure",
        "--mode",
        "in-process",
        "--policy",
        "kill",
        "--apps",
        "1",
        "--duration",
        "300ms",
        "--budget",
        "64m",
        "-D",
        "ARRAYS=32",
        "--quiet",
    ]
    .map(String::from)
    .to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

#[test]
fn a_closed_pipe_on_stdout_ends_quietly_with_141() {
    let dir = tempfile::tempdir().unwrap();
    for args in printing_commands(dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = marvin(&args)
            .stdout(broken_pipe())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = stderr_of(&o);
        assert_eq!(o.status.code(), Some(141), "{args:?}: {err}");
        // Quietly: nothing about the pipe (pressure's own lines about its mode stay).
        assert!(
            !err.contains("error") && !err.contains("pipe") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
        if args[0] != "pressure" {
            assert_eq!(err, "", "{args:?}: quietly");
        }
    }
}

#[test]
fn head_reads_one_line_of_a_long_disassembly() {
    let dir = tempfile::tempdir().unwrap();
    let long = long_program(dir.path());
    let mut child = marvin(&["disasm", long.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 32];
    stdout.read_exact(&mut first).unwrap();
    assert!(first.starts_with(b".method main"), "{first:?}");
    drop(stdout);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(141), "{}", stderr_of(&o));
    assert!(!stderr_of(&o).contains("panicked"), "{}", stderr_of(&o));
}

#[test]
fn a_full_device_on_stdout_is_an_error_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    for args in printing_commands(dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = marvin(&args)
            .stdout(dev_full())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = stderr_of(&o);
        assert_eq!(o.status.code(), Some(74), "{args:?}: {err}");
        assert!(err.contains("No space left on device"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn an_unwritable_stderr_keeps_the_documented_status() {
    let dir = tempfile::tempdir().unwrap();
    let fails = dir.path().join("fails.masm");
    std::fs::write(
        &fails,
        ".method main args=0 locals=0\n  push 1\n  push 0\n  div\n  ret\n.end\n",
    )
    .unwrap();
    let rejected = dir.path().join("rejected.masm");
    std::fs::write(&rejected, ".method main args=0 locals=0\n  bogus\n.end\n").unwrap();
    for stderr in [dev_full as fn() -> Stdio, broken_pipe] {
        let run = |file: &Path, extra: &[&str]| {
            let mut args = vec!["run", file.to_str().unwrap()];
            args.extend_from_slice(extra);
            marvin(&args)
                .stdout(Stdio::null())
                .stderr(stderr())
                .status()
                .unwrap()
                .code()
        };
        assert_eq!(run(&fails, &[]), Some(70), "a runtime error");
        assert_eq!(run(&fails, &["--stats"]), Some(70), "--stats on stderr");
        assert_eq!(run(&rejected, &[]), Some(65), "a rejected program");
        assert_eq!(
            run(&fib(), &["--heap-limit", "lots"]),
            Some(2),
            "a bad flag"
        );
        let pressure = tiny_pressure(&[]);
        let status = marvin(&pressure.iter().map(String::as_str).collect::<Vec<_>>())
            .stdout(Stdio::null())
            .stderr(stderr())
            .status()
            .unwrap();
        assert_eq!(
            status.code(),
            Some(0),
            "pressure reports its mode on stderr"
        );
    }
}

#[test]
fn a_full_device_under_a_program_is_not_success() {
    let o = marvin(&["run", fib().to_str().unwrap()])
        .stdout(dev_full())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(74), "{}", stderr_of(&o));
    assert!(
        stderr_of(&o).contains("the program's output"),
        "{}",
        stderr_of(&o)
    );
}

/// A bound on waiting for something a run makes, once it runs: a guard against a hang, not
/// a timing expectation.
const HANG_GUARD: Duration = Duration::from_secs(300);

/// How long a process-mode run may wait for the machine-wide lock that another real-mode
/// run holds (about 5 minutes for a default experiment, longer behind a queue of them);
/// past it the test is skipped with the reason, not failed: what else runs on the machine
/// is not the test's subject.
const MACHINE_WAIT: Duration = Duration::from_secs(20 * 60);

/// Says `msg` on the test's stderr at once (not held back by the test harness's capture).
fn note(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "cli_edges: {msg}");
}

/// Ends `child` (if it still runs) and fails the test with `msg`, the child's stderr and
/// what is left in `dir`, so that a failure says what the run was doing.
fn fail(child: &mut Child, dir: &Path, msg: &str) -> ! {
    let _ = child.kill();
    let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let left: Vec<_> = walkdir(dir);
    panic!(
        "{msg}\nmarvin ({status}) said on stderr:\n{err}\nin {}: {left:?}",
        dir.display()
    );
}

/// Every path under `dir` with its size, for failure messages.
fn walkdir(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let len = e.metadata().map(|m| m.len()).unwrap_or(0);
        out.push((e.path(), len));
        if e.path().is_dir() {
            out.extend(walkdir(&e.path()));
        }
    }
    out
}

/// Waits until `found(dir)`, at most [`HANG_GUARD`].
fn wait_for(dir: &Path, child: &mut Child, what: &str, found: impl Fn(&Path) -> bool) {
    let end = Instant::now() + HANG_GUARD;
    loop {
        if found(dir) {
            return;
        }
        if child.try_wait().unwrap().is_some() {
            fail(child, dir, &format!("marvin ended before {what} appeared"));
        }
        if Instant::now() > end {
            fail(
                child,
                dir,
                &format!("{what} never appeared ({HANG_GUARD:?})"),
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The pid a lock file names (its holder's, or its last holder's).
fn pid_in(lock: &Path) -> Option<u32> {
    std::fs::read_to_string(lock).ok()?.trim().parse().ok()
}

/// Waits until the process-mode run `child` holds the machine-wide lock (the lock file
/// names its pid), saying so at once when another run holds it. `false` when the machine
/// stayed held by others for [`MACHINE_WAIT`] (the child is then killed: it waited in
/// the lock and had set nothing up).
fn wait_for_the_machine(child: &mut Child) -> bool {
    let lock = marvin_machine::machine_lock_path();
    let start = Instant::now();
    let mut told = None;
    loop {
        let holder = pid_in(&lock);
        if holder == Some(child.id()) {
            if told.is_some() {
                note(&format!(
                    "marvin (pid {}) has the machine after waiting {:.0?}",
                    child.id(),
                    start.elapsed()
                ));
            }
            return true;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("marvin ended ({status}) before it had the machine");
        }
        let other = holder.filter(|p| Path::new(&format!("/proc/{p}")).exists());
        if other.is_some() && told != other {
            note(&format!(
                "marvin (pid {}) waits for the machine: another real-mode run (pid {}) holds {}; \
                 the test waits up to {} min, then skips",
                child.id(),
                other.unwrap_or_default(),
                lock.display(),
                MACHINE_WAIT.as_secs() / 60
            ));
            told = other;
        }
        if start.elapsed() > MACHINE_WAIT {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig}");
}

/// Waits for `child` to end after a signal, at most [`HANG_GUARD`]; `dir` is its
/// temporary root (named in a failure).
fn wait_bounded(mut child: Child, dir: &Path) -> Output {
    let end = Instant::now() + HANG_GUARD;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            fail(
                &mut child,
                dir,
                &format!("marvin did not end after the signal ({HANG_GUARD:?})"),
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The size of the swap file named `app` under some directory of `dir`, if any.
fn swap_file_len(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| std::fs::metadata(e.path().join("app")).ok())
                .map(|m| m.len())
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

#[test]
fn stop_signals_during_a_swapping_run_flush_clean_up_and_exit_128_plus_the_signal() {
    // Prints a line (held in the app's output buffer), then allocates an array of
    // 100,000 bytes and runs until stopped. In the background (saved by the script, or by
    // the saver every 10 ms if the script's saves came before the array), the array
    // reaches the swap file, which shows from outside that the line was printed.
    let program = ".method main args=0 locals=1
  prints \"started\"
  push 100000
  newarray byte
  store 0
forever:
  push 10
  sleep
  jmp forever
.end
";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("forever.masm");
    std::fs::write(&file, program).unwrap();
    let policy = dir.path().join("saver.toml");
    std::fs::write(
        &policy,
        "[saver]\nbackground_period = \"10ms\"\n[working_set]\nbackground_period = \"10ms\"\n",
    )
    .unwrap();
    for (sig, status) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = marvin(&[
            "run",
            file.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
            "--lifecycle",
            "bg@1ms,save@5ms,save@50ms,save@500ms",
        ])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        // Nothing here depends on timing: `marvin run` installs its signal handlers before
        // it makes the temporary swap directory, and the only object of 100,000 bytes is
        // the array the program allocates after its print; so a swap file that large means
        // the handlers are in place and the line is in the buffer, however slowly the run
        // got there.
        wait_for(tmp.path(), &mut child, "the saved array", |d| {
            swap_file_len(d) >= 100_000
        });
        signal(&child, sig);
        let o = wait_bounded(child, tmp.path());
        assert_eq!(o.status.code(), Some(status), "SIG{sig}: {}", stderr_of(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "started\n",
            "SIG{sig}: buffered output is flushed"
        );
        assert_eq!(
            entries(tmp.path()),
            Vec::<String>::new(),
            "SIG{sig}: nothing left in the temporary root"
        );
    }
}

#[test]
fn stop_signals_during_a_tiny_pressure_run_clean_up_and_exit_128_plus_the_signal() {
    for (sig, status) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = marvin(&[
            "pressure",
            "--mode",
            "in-process",
            "--policy",
            "marvin,kill",
            "--apps",
            "2",
            "--duration",
            "10m",
            "--budget",
            "64m",
            "-D",
            "ARRAYS=32",
            "--quiet",
        ])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        // The handlers are installed before the first policy makes its apps' directories.
        wait_for(tmp.path(), &mut child, "an app's swap directory", |d| {
            std::fs::read_dir(d).is_ok_and(|es| {
                es.flatten()
                    .any(|e| e.path().join("app0").join("swap.table").exists())
            })
        });
        signal(&child, sig);
        let o = wait_bounded(child, tmp.path());
        assert_eq!(o.status.code(), Some(status), "SIG{sig}: {}", stderr_of(&o));
        assert!(
            stderr_of(&o).contains(&format!(
                "stopped by signal {status}",
                status = status - 128
            )),
            "{}",
            stderr_of(&o)
        );
        assert_eq!(
            entries(tmp.path()),
            Vec::<String>::new(),
            "SIG{sig}: nothing left in the temporary root"
        );
    }
}

#[test]
fn output_paths_are_checked_before_the_program_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let under_file = file.join("x.json");
    let under = under_file.to_str().unwrap();
    for (flag, value) in [
        ("--stats-json", under),
        ("--trace", under),
        ("--stats-json", dir.path().to_str().unwrap()),
    ] {
        let o = marvin(&["run", fib().to_str().unwrap(), flag, value])
            .output()
            .unwrap();
        let err = stderr_of(&o);
        assert_eq!(o.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.starts_with(&format!("error: {flag} {value}: ")),
            "{err}"
        );
        assert!(o.stdout.is_empty(), "{flag}: the program did not run");
    }
    // The experiment does not start: its first line (the mode) never comes.
    for flag in ["--out", "--trace", "--swap-dir"] {
        let o = marvin(&["pressure", "--mode", "in-process", flag, under])
            .output()
            .unwrap();
        let err = stderr_of(&o);
        assert_eq!(o.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.starts_with(&format!("error: {flag} {under}: ")),
            "{err}"
        );
        assert!(!err.contains("mode:"), "{flag}: {err}");
    }
    let o = marvin(&["bench", "queue", "--reps", "1", "--plot", under])
        .output()
        .unwrap();
    let err = stderr_of(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!("error: --plot {under}: ")),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "the benchmark did not run");
}

#[test]
fn every_figure_bench_refuses_an_unwritable_plot_dir_with_status_2_naming_it() {
    for bench in ["alloc", "reclaim", "interpose", "faults"] {
        let o = marvin(&["bench", bench, "--plot", "/proc/nope"])
            .output()
            .unwrap();
        let err = stderr_of(&o);
        assert_eq!(o.status.code(), Some(2), "bench {bench}: {err}");
        assert!(
            err.starts_with("error: --plot /proc/nope: "),
            "bench {bench}: the flag and the given path: {err}"
        );
        assert!(
            !err.contains(".marvin-check"),
            "bench {bench}: no internal probe path: {err}"
        );
        assert!(
            o.stdout.is_empty(),
            "bench {bench}: the benchmark did not run"
        );
    }
}

#[test]
fn a_swap_dir_naming_a_file_is_named_in_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let f = file.to_str().unwrap();
    for args in [
        vec!["run", fib().to_str().unwrap(), "--swap-dir", f],
        vec!["pressure", "--mode", "in-process", "--swap-dir", f],
    ] {
        let o = marvin(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(
            stderr_of(&o),
            format!("error: --swap-dir {f}: is not a directory\n")
        );
    }
}

#[test]
fn a_huge_bad_token_is_quoted_as_a_short_excerpt() {
    let dir = tempfile::tempdir().unwrap();
    let token = "x".repeat(1 << 20);
    let file = dir.path().join("big.masm");
    std::fs::write(
        &file,
        format!(".method main args=0 locals=0\n  {token}\n  push 0\n  ret\n.end\n"),
    )
    .unwrap();
    let o = marvin(&["check", file.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(65));
    let err = stderr_of(&o);
    assert!(err.len() < 1000, "{} bytes of message", err.len());
    assert!(err.contains("unknown instruction `xxxx"), "{err}");
    assert!(
        err.contains(&format!("[{} bytes]", token.len() + 2)),
        "{err}"
    );
    // Flag values too (clap's own message and marvin's); one argument holds at most
    // 128 KiB.
    let token = "9".repeat(100_000);
    let fib = fib().display().to_string();
    for args in [
        [fib.as_str(), "--heap-limit", &token],
        [fib.as_str(), "--lifecycle", &token],
        [fib.as_str(), "-D", &token],
    ] {
        let o = marvin(&["run", args[0], args[1], args[2]])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", args[1]);
        let err = stderr_of(&o);
        assert!(err.len() < 1000, "{}: {} bytes", args[1], err.len());
    }
    let o = marvin(&["pressure", "--duration", &token])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_of(&o).len() < 1000, "{}", stderr_of(&o).len());
}

#[test]
fn apps_and_time_scale_get_their_own_messages() {
    let apps = marvin(&["pressure", "--apps", "0"]).output().unwrap();
    let scale = marvin(&["pressure", "--time-scale", "0"]).output().unwrap();
    assert_eq!(apps.status.code(), Some(2));
    assert_eq!(scale.status.code(), Some(2));
    assert!(stderr_of(&apps).contains("--apps"), "{}", stderr_of(&apps));
    assert!(!stderr_of(&apps).contains("--time-scale"));
    assert!(
        stderr_of(&scale).contains("--time-scale"),
        "{}",
        stderr_of(&scale)
    );
    assert!(!stderr_of(&scale).contains("--apps"));
}

#[test]
fn a_file_that_cannot_be_read_exits_1_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.masm");
    let m = missing.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    for (args, file) in [
        (vec!["run", m], m),
        (vec!["check", m], m),
        (vec!["disasm", m], m),
        (vec!["asm", m, "-o", "/dev/null"], m),
        (vec!["run", d], d),
        (vec!["policy", "check", m], m),
        (vec!["run", "F", "--policy", m], m),
        (vec!["pressure", "--workload", m], m),
    ] {
        let fib = fib();
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "F" { fib.to_str().unwrap() } else { a })
            .collect();
        let o = marvin(&args).output().unwrap();
        let err = stderr_of(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("error: cannot read {file}: ")),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn knobs_that_would_do_nothing_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.toml");
    std::fs::write(&small, "[candidates]\nmin_size_bytes = 64\n").unwrap();
    let s = small.to_str().unwrap();
    for args in [
        vec!["policy", "check", s],
        vec!["run", fib().to_str().unwrap(), "--policy", s],
        vec!["pressure", "--policy-file", s, "--mode", "in-process"],
    ] {
        let o = marvin(&args).output().unwrap();
        let err = stderr_of(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("candidates.min_size_bytes"), "{err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    let mut messages = Vec::new();
    for (flag, value) in [
        ("--duration", "0s"),
        ("--budget", "0"),
        ("--sample-every", "0s"),
        ("--switch-every", "0s"),
    ] {
        let o = marvin(&["pressure", "--mode", "in-process", flag, value])
            .output()
            .unwrap();
        let err = stderr_of(&o);
        assert_eq!(o.status.code(), Some(2), "{flag}: {err}");
        assert!(err.starts_with(&format!("error: {flag} ")), "{err}");
        messages.push(err);
    }
    messages.dedup();
    assert_eq!(messages.len(), 4, "each flag its own message");
}

#[test]
fn a_stop_signal_during_the_process_mode_removes_its_group_swap_and_directories() {
    if let Err(e) = marvin_machine::cgroup::Hierarchy::available() {
        println!("skipped: the process mode cannot run here: {e}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut child = marvin(&[
        "pressure",
        "--mode",
        "processes",
        "--policy",
        "kernel-swap",
        "--settle",
        "off",
        "--apps",
        "2",
        "--duration",
        "10m",
        "--budget",
        "48m",
        "--swap-size",
        "64m",
        "--time-scale",
        "0.05",
        "-D",
        "ARRAYS=32",
        "--quiet",
    ])
    .env("TMPDIR", tmp.path())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    if !wait_for_the_machine(&mut child) {
        println!(
            "skipped: the machine stayed held by other real-mode runs for {} min",
            MACHINE_WAIT.as_secs() / 60
        );
        return;
    }
    wait_for(tmp.path(), &mut child, "an app's swap directory", |d| {
        std::fs::read_dir(d).is_ok_and(|es| {
            es.flatten().any(|e| {
                std::fs::read_dir(e.path()).is_ok_and(|apps| {
                    apps.flatten()
                        .any(|a| a.file_name().to_string_lossy().starts_with("app"))
                })
            })
        })
    });
    signal(&child, "TERM");
    let o = wait_bounded(child, tmp.path());
    assert_eq!(o.status.code(), Some(143), "{}", stderr_of(&o));
    assert_eq!(entries(tmp.path()), Vec::<String>::new(), "temporary root");
    let h = marvin_machine::cgroup::Hierarchy::available().unwrap();
    let prefix = format!("marvin-run-{pid}-");
    let groups: Vec<_> = std::fs::read_dir(&h.parent)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .collect();
    assert!(groups.is_empty(), "groups left behind: {groups:?}");
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap();
    assert!(
        !swaps.contains(&tmp.path().display().to_string()),
        "swap left on: {swaps}"
    );
}
