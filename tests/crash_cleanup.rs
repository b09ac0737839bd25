//! A process-mode run killed with SIGKILL leaves nothing behind: in each policy of a tiny
//! run the System is killed (`kill -9`) while its apps run, and once a second run has
//! started and ended, no memory cgroup, swap area or temporary directory of the first is
//! left, and each removal was announced once. The run's guardian removes them (kill,
//! marvin); where the guardian is killed as well (kernel-swap, its swap file on), the
//! second run's start-up sweep does. Needs root and a memory controller; elsewhere the
//! test prints why it skips. Every run uses a temporary root of the test's own.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a wait for a condition of the run may last before the test fails.
const HANG_GUARD: Duration = Duration::from_secs(300);
/// How long the test waits while other real-mode runs hold the machine, before it skips.
const MACHINE_WAIT: Duration = Duration::from_secs(20 * 60);

fn marvin(tmp: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_marvin"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("TMPDIR", tmp)
        .args(args);
    c
}

/// Says `msg` at once, past the harness's capture.
fn note(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "crash_cleanup: {msg}");
}

/// Reads a child's stderr on a thread until every writer has closed it (the run and its
/// guardian, which shares it).
fn read_all(mut from: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = from.read_to_string(&mut text);
        let _ = tx.send(text);
    });
    rx
}

/// Waits until the run `child` holds the machine-wide lock (the lock file names its
/// pid); `false` when other runs held it for [`MACHINE_WAIT`] (the child is then ended).
fn wait_for_the_machine(child: &mut Child) -> bool {
    let lock = marvin_machine::machine_lock_path();
    let start = Instant::now();
    let mut told = false;
    loop {
        let holder: Option<u32> = std::fs::read_to_string(&lock)
            .ok()
            .and_then(|t| t.trim().parse().ok());
        if holder == Some(child.id()) {
            return true;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("marvin ended ({status}) before it had the machine");
        }
        if !told && start.elapsed() > Duration::from_secs(2) {
            note(&format!(
                "waiting for the machine: {} names pid {holder:?}",
                lock.display()
            ));
            told = true;
        }
        if start.elapsed() > MACHINE_WAIT {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `found()`, at most [`HANG_GUARD`], failing if the run ends first.
fn wait_until(child: &mut Child, what: &str, found: impl Fn() -> bool) {
    let end = Instant::now() + HANG_GUARD;
    while !found() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("marvin ended ({status}) before {what}");
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("{what} never happened ({HANG_GUARD:?})");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill9(pid: u32) {
    let ok = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -9 {pid}");
}

/// The guardian the run `pid` started (a child of it running `marvin guardian`).
fn guardian_of(pid: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|p| {
        let child: u32 = p.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(p.path().join("stat")).ok()?;
        let ppid: u32 = stat
            .rsplit(')')
            .next()?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        let cmdline = std::fs::read(p.path().join("cmdline")).ok()?;
        (ppid == pid && String::from_utf8_lossy(&cmdline).contains("guardian")).then_some(child)
    })
}

/// What a run of pid `pid` has on the machine: its memory cgroups, the active swap
/// areas under `tmp`, and everything in `tmp` (the test's own temporary root).
#[derive(Debug, Default)]
struct Objects {
    groups: Vec<PathBuf>,
    swaps: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

fn objects(pid: u32, tmp: &Path) -> Objects {
    let h = marvin_machine::cgroup::Hierarchy::available().unwrap();
    let prefix = format!("marvin-run-{pid}-");
    let groups = std::fs::read_dir(&h.parent)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    let swaps = marvin_machine::swapdev::active_swaps()
        .unwrap()
        .into_iter()
        .map(|s| s.path)
        .filter(|p| p.starts_with(tmp))
        .collect();
    let dirs = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    Objects {
        groups,
        swaps,
        dirs,
    }
}

/// The lines of `text` that announce the removal of `path` itself (not of a path under
/// it).
fn removals(text: &str, path: &Path) -> usize {
    let p = path.display().to_string();
    text.lines()
        .filter(|l| l.starts_with("marvin: removed"))
        .filter(|l| {
            l.match_indices(&p)
                .any(|(i, _)| matches!(l[i + p.len()..].chars().next(), None | Some(' ')))
        })
        .count()
}

#[test]
fn a_sigkilled_run_leaves_nothing_once_the_next_run_has_started() {
    if let Err(e) = marvin_machine::cgroup::Hierarchy::available() {
        println!("skipped: the process mode cannot run here: {e}");
        return;
    }
    // (policy, whether the guardian is killed too)
    for (policy, guardian_too) in [("kill", false), ("kernel-swap", true), ("marvin", false)] {
        let tmp = tempfile::tempdir().unwrap();
        let mut first = marvin(
            tmp.path(),
            &[
                "pressure",
                "--mode",
                "processes",
                "--policy",
                policy,
                "--apps",
                "3",
                "--budget",
                "48m",
                "--swap-size",
                "64m",
                "--duration",
                "10m",
                "--launches",
                "0",
                "--settle",
                "off",
                "--time-scale",
                "0.05",
                "-D",
                "ARRAYS=32",
                "--quiet",
            ],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let said_first = read_all(first.stderr.take().unwrap());
        if !wait_for_the_machine(&mut first) {
            println!(
                "skipped: the machine stayed held by other real-mode runs for {} min",
                MACHINE_WAIT.as_secs() / 60
            );
            return;
        }
        let pid = first.id();
        let apps_running = || {
            std::fs::read_dir(tmp.path()).is_ok_and(|es| {
                es.flatten().any(|e| {
                    std::fs::read_dir(e.path()).is_ok_and(|apps| {
                        apps.flatten()
                            .filter(|a| a.file_name().to_string_lossy().starts_with("app"))
                            .count()
                            >= 2
                    })
                })
            })
        };
        wait_until(&mut first, "two apps' directories", apps_running);
        if policy == "kernel-swap" {
            wait_until(&mut first, "the run's swap on", || {
                !objects(pid, tmp.path()).swaps.is_empty()
            });
        }
        let before = objects(pid, tmp.path());
        assert!(!before.groups.is_empty(), "{policy}: {before:?}");
        assert!(before.dirs.len() >= 2, "{policy}: {before:?}");
        let guardian = guardian_of(pid).unwrap_or_else(|| panic!("{policy}: no guardian"));
        if guardian_too {
            kill9(guardian);
        }
        kill9(pid);
        let status = first.wait().unwrap();
        assert_eq!(status.code(), None, "{policy}: killed by a signal");
        let said_first = said_first
            .recv_timeout(HANG_GUARD + MACHINE_WAIT)
            .expect("the first run's stderr closed (the run and its guardian ended)");

        let second = marvin(
            tmp.path(),
            &[
                "pressure",
                "--mode",
                "processes",
                "--policy",
                "kill",
                "--apps",
                "1",
                "--budget",
                "48m",
                "--duration",
                "1s",
                "--launches",
                "0",
                "--settle",
                "off",
                "--time-scale",
                "0.05",
                "-D",
                "ARRAYS=32",
                "--quiet",
            ],
        )
        .output()
        .unwrap();
        let said_second = String::from_utf8_lossy(&second.stderr).into_owned();
        assert!(
            second.status.success(),
            "{policy}: second run: {said_second}"
        );
        let said = format!("first run and its guardian:\n{said_first}\nsecond run:\n{said_second}");

        let after = objects(pid, tmp.path());
        assert!(
            after.groups.is_empty(),
            "{policy}: groups left: {after:?}\n{said}"
        );
        assert!(
            after.swaps.is_empty(),
            "{policy}: swap left on: {after:?}\n{said}"
        );
        assert!(
            after.dirs.is_empty(),
            "{policy}: left in the temporary root: {after:?}\n{said}"
        );
        for path in before
            .groups
            .iter()
            .chain(&before.swaps)
            .chain(&before.dirs)
        {
            let (by_first, by_second) = (removals(&said_first, path), removals(&said_second, path));
            assert_eq!(
                by_first + by_second,
                1,
                "{policy}: the removal of {} announced once\n{said}",
                path.display()
            );
            if guardian_too {
                assert_eq!(
                    by_second,
                    1,
                    "{policy}: the second run removed {}\n{said}",
                    path.display()
                );
            } else {
                assert_eq!(
                    by_first,
                    1,
                    "{policy}: the guardian removed {}\n{said}",
                    path.display()
                );
            }
        }
    }
}
