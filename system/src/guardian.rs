//! A run's guardian: a small process (`marvin guardian`, hidden) that a run starts
//! before it sets anything up and that outlives it. The run holds the write end of a
//! pipe to the guardian's stdin. At a normal end, an error or a stop signal the run
//! cleans up itself and then says so through the pipe (`done`); the guardian ends
//! without doing anything. When the pipe closes without it (SIGKILL, a crash, a second
//! stop signal that exits at once), the guardian waits for the run to be gone and
//! removes what dead runs left: in the process mode, under the machine lock, their
//! frozen apps' freezer groups (thawed), their memory cgroups (killing the apps still in
//! them), swap and zswap settings, then, in either mode, their
//! temporary directories ([`super::tempdirs`]). Each removal is announced once, on the
//! run's stderr, which the guardian shares.
//!
//! The guardian runs in a process group of its own, so Ctrl-C at a terminal does not
//! reach it. A guardian killed together with its run (a SIGKILL of both) leaves the
//! same work to the next run's start-up sweep ([`sweep_dead_runs`]).

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use marvin_machine::Owner;
use marvin_machine::{cgroup, freezer, swapdev, zswap_charge, MachineLock};

/// What a run writes to its guardian when it has cleaned up itself.
const DONE: &[u8] = b"done\n";
/// How long the guardian waits, after the pipe closed without [`DONE`], for every thread
/// of the run to be gone (its pipe closes first, its locks with its last thread).
const EXIT_WAIT: Duration = Duration::from_secs(30);
/// The hidden subcommand.
pub const SUBCOMMAND: &str = "guardian";

/// The run's side: dropping it tells the guardian that the run cleaned up itself.
pub struct Guardian {
    child: Child,
    pipe: Option<ChildStdin>,
}

impl Guardian {
    /// Starts the guardian of this process: `exe` is marvin; `machine` says the run sets
    /// up cgroups and swap (the process mode); `dirs` are where the run makes its
    /// temporary directories.
    pub fn spawn(exe: &Path, machine: bool, dirs: &[PathBuf]) -> std::io::Result<Guardian> {
        let me = Owner::current()?;
        let mut cmd = Command::new(exe);
        cmd.arg(SUBCOMMAND)
            .args(["--pid", &me.pid.to_string()])
            .args(["--start", &me.start_time.to_string()]);
        if machine {
            cmd.arg("--machine");
        }
        for d in dirs {
            cmd.arg("--dir").arg(d);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()?;
        let pipe = child.stdin.take();
        Ok(Guardian { child, pipe })
    }

    /// The guardian's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Guardian {
    fn drop(&mut self) {
        if let Some(mut pipe) = self.pipe.take() {
            let _ = pipe.write_all(DONE);
        }
        let _ = self.child.wait();
    }
}

/// The guardian's side: waits for the run `owner` to end and, unless it said it cleaned
/// up, removes what it (and any other dead run) left. Returns the exit status.
pub fn serve(owner: Owner, machine: bool, dirs: &[PathBuf]) -> i32 {
    let mut said = Vec::new();
    let _ = std::io::stdin().take(64).read_to_end(&mut said);
    if said == DONE {
        return 0;
    }
    let deadline = Instant::now() + EXIT_WAIT;
    while !owner.is_gone() {
        if Instant::now() > deadline {
            marvin_machine::announce(&format!(
                "guardian: the run ({owner}) closed its pipe but still runs; it cleans up itself"
            ));
            return 0;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    marvin_machine::announce(&format!(
        "the run ({owner}) ended without cleaning up; its guardian removes what it left"
    ));
    // What needs no machine lock first: a run killed while it waited for the machine
    // left only directories, and another run may hold the machine for minutes.
    for d in dirs {
        super::tempdirs::sweep(d, None);
    }
    let result = if machine && left_on_the_machine(owner) {
        sweep_dead_runs(true, dirs)
    } else {
        Ok(())
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            marvin_machine::announce(&format!("guardian: {e:#}"));
            1
        }
    }
}

/// Whether `owner` left a memory cgroup or swap on the machine (read without the
/// machine lock: a run creates them only while it holds the lock, and a run that takes
/// the lock after it sweeps them itself).
fn left_on_the_machine(owner: Owner) -> bool {
    let ours = |prefix: &str, name: &str| Owner::parse_name(prefix, name) == Some(owner);
    let name_of = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let group = cgroup::Hierarchy::available().is_ok_and(|h| {
        std::fs::read_dir(&h.parent).is_ok_and(|es| {
            es.flatten()
                .any(|e| ours(cgroup::PREFIX, &e.file_name().to_string_lossy()))
        })
    });
    let swap = swapdev::active_swaps().is_ok_and(|s| {
        s.iter()
            .any(|s| ours(swapdev::FILE_PREFIX, &name_of(&s.path)))
    });
    let zram = std::fs::read_dir(swapdev::default_state_dir()).is_ok_and(|es| {
        es.flatten().any(|e| {
            ours(
                swapdev::ZRAM_MARKER_PREFIX,
                &e.file_name().to_string_lossy(),
            )
        })
    });
    let parent = cgroup::Hierarchy::available().ok().map(|h| h.parent);
    let frozen = freezer::left_by(owner, parent.as_deref());
    let zswap = std::fs::read_dir(swapdev::default_state_dir()).is_ok_and(|es| {
        es.flatten().any(|e| {
            ours(
                zswap_charge::ZSWAP_MARKER_PREFIX,
                &e.file_name().to_string_lossy(),
            )
        })
    });
    group || swap || zram || frozen || zswap
}

/// Removes what runs that died left, each removal announced once: with `machine`,
/// taking the machine lock for it, the memory cgroups of dead runs (their apps killed)
/// and their swap; then their temporary directories in `dirs`.
pub fn sweep_dead_runs(machine: bool, dirs: &[PathBuf]) -> anyhow::Result<()> {
    if machine {
        let _lock = take_machine()?;
        sweep_machine()?;
    }
    for d in dirs {
        super::tempdirs::sweep(d, None);
    }
    Ok(())
}

/// Takes the machine, waiting while another real-mode run holds it: the one place marvin
/// takes the [`MachineLock`]. A process-mode experiment holds it from before its sweep
/// to its last policy's end and passes the hold down (to the process mode's runner, and
/// from there to [`marvin_machine::Machine::set_up`]); a guardian holds it for its sweep.
pub fn take_machine() -> anyhow::Result<std::sync::Arc<MachineLock>> {
    Ok(MachineLock::acquire()?)
}

/// The machine part of [`sweep_dead_runs`]; the caller holds the machine lock.
pub fn sweep_machine() -> anyhow::Result<()> {
    let hierarchy = cgroup::Hierarchy::available()?;
    // Frozen groups first: a task frozen by cgroup v1's freezer does not die of the
    // SIGKILL that removing its memory group sends.
    freezer::sweep(Some(&hierarchy.parent))?;
    hierarchy.sweep()?;
    swapdev::sweep(&swapdev::default_state_dir(), &[])?;
    zswap_charge::sweep_zswap(&swapdev::default_state_dir())?;
    Ok(())
}
