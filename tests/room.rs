//! A run checks the room it needs before its first policy starts: a temporary root
//! (TMPDIR) too small for the policies' swap, one on a tmpfs where kernel-swap's swap
//! file cannot be turned on, and an `--out` too small for the results each end the
//! command with status 2, naming the path, before anything is set up or written. And a
//! finished policy's results are in `--out` as soon as it ends, before the next one
//! does. The small file systems are tmpfs mounts (root only, otherwise the tests print
//! why they skip), unmounted when the test ends, also when it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A small tmpfs mounted for one test and unmounted when dropped (lazily if it is
/// still busy), also while a failing test unwinds.
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
            return Err(format!(
                "mount failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(SmallFs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(self.dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

fn marvin(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_marvin"));
    c.current_dir(env!("CARGO_MANIFEST_DIR")).args(args);
    c
}

fn stderr_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect()
}

/// A small pressure run's flags (it never gets to run in the failing tests).
const TINY: [&str; 10] = [
    "--apps",
    "2",
    "--duration",
    "2s",
    "--launches",
    "0",
    "--time-scale",
    "0.05",
    "-D",
    "ARRAYS=32",
];

/// Asserts that `o` ended with status 2 before any policy ran, with a message naming
/// `name` and `path`.
fn refused_up_front(o: &Output, name: &str, path: &Path) -> String {
    let err = stderr_of(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!("error: {name} {}: ", path.display())),
        "the message names {name} and the path: {err}"
    );
    assert_eq!(err.lines().count(), 1, "nothing ran before: {err}");
    assert!(o.stdout.is_empty(), "no table: the run did not start");
    err
}

#[test]
fn a_small_temporary_root_is_refused_before_any_policy_runs() {
    let fs = match SmallFs::mount(4 << 20) {
        Ok(fs) => fs,
        Err(why) => {
            println!("skipped: needs a tmpfs mount as root ({why})");
            return;
        }
    };
    let o = marvin(&[
        "pressure",
        "--mode",
        "in-process",
        "--policy",
        "kill,marvin",
    ])
    .args(["--swap-size", "64m"])
    .args(TINY)
    .env("TMPDIR", fs.path())
    .output()
    .unwrap();
    let err = refused_up_front(&o, "TMPDIR", fs.path());
    assert!(
        err.contains("MiB free, the run needs")
            && err.contains("marvin's swap (--swap-size 64 MiB)"),
        "{err}"
    );
    assert_eq!(
        entries(fs.path()),
        Vec::<PathBuf>::new(),
        "nothing was made"
    );

    if let Err(e) = marvin_machine::cgroup::Hierarchy::available() {
        println!("skipped the process mode's part: {e}");
        return;
    }
    // The process mode's default policies: kernel-swap's swap file cannot be on a tmpfs.
    let o = marvin(&["pressure", "--mode", "processes", "--swap-size", "1m"])
        .args(TINY)
        .env("TMPDIR", fs.path())
        .output()
        .unwrap();
    let err = refused_up_front(&o, "TMPDIR", fs.path());
    assert!(err.contains("is on a tmpfs"), "{err}");
    // marvin alone: room for its swap.
    let o = marvin(&["pressure", "--mode", "processes", "--policy", "marvin"])
        .args(["--swap-size", "64m"])
        .args(TINY)
        .env("TMPDIR", fs.path())
        .output()
        .unwrap();
    let err = refused_up_front(&o, "TMPDIR", fs.path());
    assert!(err.contains("MiB free, the run needs"), "{err}");
    assert_eq!(
        entries(fs.path()),
        Vec::<PathBuf>::new(),
        "nothing was made"
    );
}

#[test]
fn a_small_out_directory_is_refused_before_any_policy_runs() {
    let fs = match SmallFs::mount(1 << 20) {
        Ok(fs) => fs,
        Err(why) => {
            println!("skipped: needs a tmpfs mount as root ({why})");
            return;
        }
    };
    let out = fs.path().join("results");
    let o = marvin(&["pressure", "--mode", "in-process", "--policy", "kill"])
        .args(TINY)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = refused_up_front(&o, "--out", &out);
    assert!(
        err.contains("MiB free, the run needs") && err.contains("for the results and figures"),
        "{err}"
    );
    assert!(!out.exists(), "nothing was written");
}

#[test]
fn a_finished_policys_results_are_written_before_the_next_policy_runs() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    // Without --quiet and with stderr not a terminal, a line says when each run finished;
    // the run is stopped (SIGSTOP) as soon as the first says so, and its results must be
    // in --out already, while the second has barely begun.
    let mut child = marvin(&[
        "pressure",
        "--mode",
        "in-process",
        "--policy",
        "kill,marvin",
    ])
    .args(TINY)
    .arg("--out")
    .arg(&out)
    .env("TMPDIR", dir.path())
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id().to_string();
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &pid])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} {pid}");
    };
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            let status = child.wait().unwrap();
            panic!("the run ended ({status}) without saying a run finished:\n{said}");
        }
        said.push_str(&line);
        if line.starts_with("finished 1/2: kill") {
            signal("-STOP");
            break;
        }
    }
    let text = std::fs::read_to_string(out.join("summary.json"));
    signal("-CONT");
    let text = text.unwrap_or_else(|e| panic!("no summary.json once kill finished: {e}\n{said}"));
    let runs: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(runs[0]["label"], "kill", "{text}");
    for f in ["series.csv", "apps.csv", "launches.csv", "config.toml"] {
        assert!(out.join(f).exists(), "{f} once kill finished");
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    said.push_str(&rest);
    let status = child.wait().unwrap();
    assert!(status.success(), "{said}");
    let wrote = said
        .lines()
        .find(|l| l.starts_with("wrote "))
        .unwrap_or_else(|| panic!("no wrote line: {said}"));
    for f in [
        "summary.json",
        "series.csv",
        "config.toml",
        "active_apps.png",
        "launch_cdf.svg",
    ] {
        assert!(wrote.contains(f), "the last line names {f}: {wrote}");
    }
}
