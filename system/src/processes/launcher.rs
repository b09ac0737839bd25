//! Starting an app process and following it: the System's handle on one child.
//!
//! [`AppProcess::spawn`] starts `marvin app` with piped standard streams; a reader
//! thread follows the child's [`Report`]s into [`Seen`], another keeps the tail of its
//! standard error (which names the error if it crashes). The System sends
//! [`Command`]s with [`AppProcess::tell`]. Killing is not done here: the low-memory
//! killer kills by pid file descriptor, and the handle then only reaps the child.

use std::collections::BTreeMap;
use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command as Process, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::protocol::{self, Command, Report};

/// The most standard-error text kept per app.
const STDERR_TAIL: usize = 4096;

/// What the System has heard from one app process so far.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// The app said it is running.
    pub ready: bool,
    /// The run id it gave then (its swap file's and reclaim table's owner).
    pub run: Option<[u8; 16]>,
    /// Cumulative mark counts, as last reported.
    pub marks: BTreeMap<String, u64>,
    /// Runtime counters, as last reported.
    pub counters: BTreeMap<String, u64>,
    /// Transitions it reported: (action, duration).
    pub transitions: Vec<(String, Duration)>,
    /// Its last frame (`mark "frame"`), with what came back before it.
    pub frame: Option<FrameSeen>,
    /// Frames reported so far.
    pub frames: u64,
    /// Its last report: exit status and runtime error.
    pub exit: Option<(i32, Option<String>)>,
    /// A line that did not parse (the app is then counted as crashed).
    pub protocol_error: Option<String>,
    /// When the last report came.
    pub last_report: Option<Instant>,
}

impl Seen {
    /// The count of mark `name` so far.
    pub fn mark(&self, name: &str) -> u64 {
        self.marks.get(name).copied().unwrap_or(0)
    }

    /// The runtime counter `name` so far.
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }
}

/// An app's frame as it reported it ([`Report::Frame`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameSeen {
    /// `CLOCK_BOOTTIME` ns.
    pub at_ns: u64,
    pub major_faults: u64,
    pub restored_objects: u64,
    pub object_faults: u64,
    pub swap_read_bytes: u64,
    pub prefetch_bytes: u64,
    pub looper_runqueue_ns: u64,
    /// The app's times (see [`Report::Frame`]).
    pub received_ns: u64,
    pub resumed_ns: u64,
    pub run_ns: u64,
    pub runqueue_ns: u64,
    pub ui_fifo: bool,
}

/// One app process.
pub struct AppProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    seen: Arc<Mutex<Seen>>,
    stderr_tail: Arc<Mutex<Vec<u8>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
    status: Option<ExitStatus>,
}

impl AppProcess {
    /// Starts `exe app ARGS...`.
    pub fn spawn(exe: &std::path::Path, args: &[String]) -> std::io::Result<AppProcess> {
        AppProcess::spawn_with(exe, args, |cmd| cmd.spawn())
    }

    /// Starts `exe app ARGS...` through `spawn` (which may, for example, start the
    /// child inside a cgroup).
    pub fn spawn_with(
        exe: &std::path::Path,
        args: &[String],
        spawn: impl FnOnce(&mut Process) -> std::io::Result<Child>,
    ) -> std::io::Result<AppProcess> {
        let mut cmd = Process::new(exe);
        cmd.arg("app")
            .args(args)
            // One malloc arena: each thread's arena would keep its own free memory
            // resident, charged to the group (every policy's apps alike).
            .env("MALLOC_ARENA_MAX", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn(&mut cmd)?;
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut readers = Vec::new();
        {
            let seen = seen.clone();
            readers.push(
                std::thread::Builder::new()
                    .name("app-reports".into())
                    .spawn(move || follow_reports(BufReader::new(stdout), &seen))?,
            );
        }
        {
            let tail = stderr_tail.clone();
            readers.push(
                std::thread::Builder::new()
                    .name("app-stderr".into())
                    .spawn(move || keep_tail(stderr, &tail))?,
            );
        }
        Ok(AppProcess {
            stdin: child.stdin.take(),
            child,
            seen,
            stderr_tail,
            readers,
            status: None,
        })
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the app reported so far.
    pub fn seen(&self) -> Seen {
        self.seen.lock().clone()
    }

    /// The run id the app gave once ready (its swap file's and reclaim table's owner).
    pub fn run_id(&self) -> Option<[u8; 16]> {
        self.seen.lock().run
    }

    /// The signal that ended the process, once it has ended by one.
    pub fn signal(&mut self) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        self.try_status()?.signal()
    }

    /// The last mark count of `name`.
    pub fn mark(&self, name: &str) -> u64 {
        self.seen.lock().mark(name)
    }

    /// Frames reported so far, and the last one.
    pub fn frames(&self) -> (u64, Option<FrameSeen>) {
        let s = self.seen.lock();
        (s.frames, s.frame)
    }

    /// Sends a command; a child that is gone is not an error (it was killed).
    pub fn tell(&mut self, cmd: &Command) {
        if let Some(w) = self.stdin.as_mut() {
            if protocol::send(w, cmd).is_err() {
                self.stdin = None;
            }
        }
    }

    /// The exit status once the process has ended (reaps it without blocking).
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.try_status().is_none()
    }

    /// Tells the app to stop and waits up to `grace` for it; kills it after that.
    /// Returns its exit status.
    pub fn stop(&mut self, grace: Duration) -> std::io::Result<ExitStatus> {
        self.tell(&Command::Stop);
        self.stdin = None;
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Some(s) = self.try_status() {
                return Ok(s);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let s = self.child.wait()?;
        self.status = Some(s);
        Ok(s)
    }

    /// Whether the reader threads have read everything the ended process wrote (a
    /// [`AppProcess::drain`] then waits for nothing). They run at normal priority, so a
    /// real-time caller that waited for them could wait behind every busy app.
    pub fn reports_done(&self) -> bool {
        self.readers.iter().all(|r| r.is_finished())
    }

    /// Waits for the reader threads (after the process ended) so every report is in.
    pub fn drain(&mut self) {
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }

    /// The last lines the app wrote on standard error.
    pub fn stderr_tail(&self) -> String {
        String::from_utf8_lossy(&self.stderr_tail.lock()).into_owned()
    }

    /// Why the app crashed, if it ended by itself with an error: a runtime error it
    /// reported, a protocol error, or an exit without a report (its standard error says
    /// why). `None` for a clean end, a stop, or a kill by signal.
    pub fn crash(&mut self) -> Option<String> {
        let status = self.try_status()?;
        let seen = self.seen();
        if let Some(e) = seen.protocol_error {
            return Some(e);
        }
        match seen.exit {
            Some((0, None)) => None,
            Some((code, err)) => Some(err.unwrap_or_else(|| format!("exit status {code}"))),
            None if status.code().is_none() => None, // killed by a signal
            None => Some(format!(
                "ended with {status} before reporting: {}",
                self.stderr_tail().trim()
            )),
        }
    }
}

impl Drop for AppProcess {
    fn drop(&mut self) {
        if self.try_status().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn follow_reports(mut r: impl std::io::BufRead, seen: &Mutex<Seen>) {
    loop {
        match protocol::recv::<Report>(&mut r) {
            Ok(None) => return,
            Ok(Some(rep)) => {
                let mut s = seen.lock();
                s.last_report = Some(Instant::now());
                match rep {
                    Report::Ready { run, .. } => match marvin_swap::external::parse_run_id(&run) {
                        Some(run) => {
                            s.ready = true;
                            s.run = Some(run);
                        }
                        None => {
                            s.protocol_error = Some(format!(
                                "ready with a run id that is not 32 hex digits: {:?}",
                                run.chars().take(40).collect::<String>()
                            ));
                        }
                    },
                    Report::Marks { marks, counters } => {
                        s.marks = marks;
                        s.counters = counters;
                    }
                    Report::Transition {
                        action,
                        duration_ns,
                        ..
                    } => s
                        .transitions
                        .push((action, Duration::from_nanos(duration_ns))),
                    Report::Frame {
                        at_ns,
                        major_faults,
                        restored_objects,
                        object_faults,
                        swap_read_bytes,
                        prefetch_bytes,
                        looper_runqueue_ns,
                        received_ns,
                        resumed_ns,
                        run_ns,
                        runqueue_ns,
                        ui_fifo,
                    } => {
                        s.frames += 1;
                        s.frame = Some(FrameSeen {
                            at_ns,
                            major_faults,
                            restored_objects,
                            object_faults,
                            swap_read_bytes,
                            prefetch_bytes,
                            looper_runqueue_ns,
                            received_ns,
                            resumed_ns,
                            run_ns,
                            runqueue_ns,
                            ui_fifo,
                        });
                    }
                    Report::Exit { status, error } => s.exit = Some((status, error)),
                }
            }
            Err(e) => {
                seen.lock().protocol_error = Some(e.to_string());
                // Keep reading so the child never blocks on a full pipe.
                let _ = std::io::copy(&mut r, &mut std::io::sink());
                return;
            }
        }
    }
}

fn keep_tail(mut r: impl Read, tail: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 1024];
    while let Ok(n) = r.read(&mut buf) {
        if n == 0 {
            return;
        }
        let mut t = tail.lock();
        t.extend_from_slice(&buf[..n]);
        if t.len() > STDERR_TAIL {
            let cut = t.len() - STDERR_TAIL;
            t.drain(..cut);
        }
    }
}

/// The program the System starts apps with: `MARVIN_EXE` if set (tests that run the
/// System from a test binary), else this executable.
pub fn app_exe() -> std::io::Result<PathBuf> {
    match std::env::var_os("MARVIN_EXE") {
        Some(p) => Ok(PathBuf::from(p)),
        None => std::env::current_exe(),
    }
}
