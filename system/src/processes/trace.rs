//! The process mode's Perfetto trace (`marvin pressure --trace FILE`), the System's side.
//!
//! The System records its own tracks in the run's tracer ([`crate::SystemConfig`]'s
//! `tracer`): a process `marvin System` with the control loop's thread (a slice per policy,
//! a `turn` slice per turn with the killer's wait inside, instants for launches, foreground
//! switches, restarts, kills and other deaths, a slice while it makes room ahead of a launch),
//! the reclaimer's thread (a `reclaim pass` slice per pass that had something to take, its
//! bytes and the apps it took from as annotations), the app spawner's thread (a slice per
//! process start), and counters sampled at each sample (the group's usage and working set,
//! the apps alive, the app in front).
//!
//! Every app process traces itself: the System starts each life with `--trace FILE` (a
//! file of its own in the app's directory, [`SystemTrace::app_args`]), the app appends its
//! trace to it as it runs, and at the end of the policy [`merge_apps`] adds every file's
//! whole packets to the System's trace (a killed app's file may end inside a packet).
//! Sequence ids and track uuids are unique per process (`marvin_runtime::trace`), so the
//! files concatenate into one trace.
//!
//! With tracing off the run has no [`SystemTrace`]: each call site is one `Option` test.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use marvin_runtime::cpuclock::current_tid;
use marvin_runtime::trace::{ArgValue, Tracer, TrackId};
use parking_lot::Mutex;

use crate::PressurePolicy;

/// The name of an app life's trace file in its directory: `trace-LIFE.perfetto-trace`.
const FILE_PREFIX: &str = "trace-";
const FILE_SUFFIX: &str = ".perfetto-trace";

/// The System's process and its counters in one tracer: declared once per tracer, so every
/// policy of a `marvin pressure` run records on the same tracks.
#[derive(Clone, Copy, Debug)]
struct Declared {
    process: TrackId,
    usage: TrackId,
    working_set: TrackId,
    alive: TrackId,
    foreground: TrackId,
}

/// What each tracer of this process has declared: (its sequence id, its tracks, its
/// thread tracks by (tid, name)).
type Registry = Vec<(u32, Declared, Vec<((i32, &'static str), TrackId)>)>;
static DECLARED: Mutex<Registry> = Mutex::new(Vec::new());

/// The System's process track, declared once per tracer.
fn declared(tracer: &Tracer) -> Declared {
    let mut all = DECLARED.lock();
    if let Some((_, d, _)) = all.iter().find(|(s, _, _)| *s == tracer.sequence_id()) {
        return *d;
    }
    let process = tracer.process_track(std::process::id() as i32, "marvin System");
    let counter = |name| tracer.counter_track(process, name);
    let d = Declared {
        process,
        usage: counter("group usage bytes"),
        working_set: counter("group working-set bytes"),
        alive: counter("apps alive"),
        foreground: counter("app in front"),
    };
    all.push((tracer.sequence_id(), d, Vec::new()));
    d
}

/// The calling thread's track named `name` in the System's process (one per thread and
/// name per tracer).
fn thread_track(tracer: &Tracer, process: TrackId, name: &'static str) -> TrackId {
    let tid = current_tid();
    let mut all = DECLARED.lock();
    let Some((_, _, threads)) = all.iter_mut().find(|(s, _, _)| *s == tracer.sequence_id()) else {
        // Not a tracer of ours (the process is declared first): a track of its own.
        return tracer.thread_track(process, tid, name);
    };
    if let Some((_, t)) = threads.iter().find(|(k, _)| *k == (tid, name)) {
        return *t;
    }
    let t = tracer.thread_track(process, tid, name);
    threads.push(((tid, name), t));
    t
}

/// The System's trace tracks, handed to its threads (the reclaimer, the spawner), which
/// declare their own.
#[derive(Clone, Debug)]
pub struct Tracks {
    tracer: Tracer,
    process: TrackId,
}

impl Tracks {
    /// Declares (or finds) the calling thread's track, named `name`.
    pub fn thread(&self, name: &'static str) -> ThreadTrace {
        ThreadTrace {
            tracer: self.tracer.clone(),
            track: thread_track(&self.tracer, self.process, name),
        }
    }
}

/// One thread's track in the System's trace.
#[derive(Clone, Debug)]
pub struct ThreadTrace {
    tracer: Tracer,
    track: TrackId,
}

impl ThreadTrace {
    /// A slice named `name` from now until the span is dropped.
    pub fn span(&self, name: impl Into<Cow<'static, str>>) -> Span {
        Span {
            tracer: self.tracer.clone(),
            track: self.track,
            name: name.into(),
            start_ns: Tracer::now_ns(),
            args: Vec::new(),
        }
    }

    /// An instant named `name` now, with `args`.
    pub fn instant(&self, name: impl Into<String>, args: marvin_runtime::trace::Args) {
        self.tracer.instant_with(self.track, name, args);
    }

    /// A slice named `name` that began `took` ago and ends now, with `args`.
    pub fn finished(
        &self,
        name: impl Into<String>,
        took: Duration,
        args: marvin_runtime::trace::Args,
    ) {
        let end = Tracer::now_ns();
        let start = end.saturating_sub(took.as_nanos() as u64);
        self.tracer
            .complete_with(self.track, name, start, end, args);
    }
}

/// A slice recorded when it is dropped (so it always ends, whatever way its scope is left).
#[must_use = "the slice ends when the span is dropped"]
pub struct Span {
    tracer: Tracer,
    track: TrackId,
    name: Cow<'static, str>,
    start_ns: u64,
    args: marvin_runtime::trace::Args,
}

impl Span {
    /// Adds a named value to the slice.
    pub fn arg(&mut self, name: &'static str, value: ArgValue) {
        self.args.push((name, value));
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        let name = std::mem::take(&mut self.name).into_owned();
        let args = std::mem::take(&mut self.args);
        self.tracer
            .complete_with(self.track, name, self.start_ns, Tracer::now_ns(), args);
    }
}

/// One policy's trace on the control loop's side: its tracks, and the lives of its apps.
pub struct SystemTrace {
    policy: PressurePolicy,
    tracks: Tracks,
    control: ThreadTrace,
    declared: Declared,
    /// App lives started so far (each its own trace file).
    lives: u64,
}

impl SystemTrace {
    /// The trace of policy `policy` in `tracer`, made on the control loop's thread.
    pub fn new(tracer: &Tracer, policy: PressurePolicy) -> SystemTrace {
        let declared = declared(tracer);
        let tracks = Tracks {
            tracer: tracer.clone(),
            process: declared.process,
        };
        SystemTrace {
            policy,
            control: tracks.thread("control loop"),
            tracks,
            declared,
            lives: 0,
        }
    }

    /// The tracks the System's other threads declare theirs in.
    pub fn tracks(&self) -> Tracks {
        self.tracks.clone()
    }

    /// A slice on the control loop's track until the span is dropped.
    pub fn span(&self, name: impl Into<Cow<'static, str>>) -> Span {
        self.control.span(name)
    }

    /// The slice of the whole policy.
    pub fn policy_span(&self) -> Span {
        self.span(format!("policy {}", self.policy.name()))
    }

    /// One turn of the control loop.
    pub fn turn(&self) -> Span {
        self.span("turn")
    }

    /// The killer's wait for the tick or a pressure event, inside a turn.
    pub fn wait(&self) -> Span {
        self.span("killer wait")
    }

    /// Making room ahead of app `id`'s launch (marvin).
    pub fn room(&self, id: usize) -> Span {
        self.span(format!("make room for app{id}"))
    }

    /// The arguments that make app `id`'s next life trace itself into a file of its own
    /// in `dir` (its directory), its process track named as the in-process model names
    /// its apps (`POLICY appN`).
    pub fn app_args(&mut self, id: usize, dir: &Path) -> [String; 4] {
        self.lives += 1;
        let file = dir.join(format!("{FILE_PREFIX}{}{FILE_SUFFIX}", self.lives));
        [
            "--trace".into(),
            file.display().to_string(),
            "--trace-name".into(),
            format!("{} app{id}", self.policy.name()),
        ]
    }

    /// Something the activity manager did to app `id` (`launch`, `foreground`,
    /// `background`, `restart`).
    pub fn app_event(&self, what: &str, id: usize) {
        self.control.instant(format!("{what} app{id}"), Vec::new());
        if what == "launch" || what == "foreground" {
            self.tracks
                .tracer
                .counter(self.declared.foreground, id as f64);
        }
    }

    /// The low-memory killer killed process `pid` (app `id`, if it is one) for `why`.
    pub fn kill(&self, id: Option<usize>, pid: u32, why: &str) {
        let app = id.map_or_else(|| format!("pid {pid}"), |id| format!("app{id}"));
        self.control.instant(
            format!("kill {app} ({why})"),
            vec![("pid", ArgValue::Uint(pid.into()))],
        );
    }

    /// App `id` (process `pid`) ended otherwise than by the killer's hand, or was seen
    /// gone after it: `how` is the death's name; `error` what it said if it crashed.
    pub fn death(&self, id: usize, pid: u32, how: &str, error: Option<&str>) {
        let mut args = vec![("pid", ArgValue::Uint(pid.into()))];
        if let Some(e) = error {
            args.push(("error", ArgValue::Str(e.to_string())));
        }
        self.control.instant(format!("{how} app{id}"), args);
    }

    /// The sample's figures: the group's usage and working set, the apps alive.
    pub fn sample(&self, usage: u64, working_set: Option<u64>, alive: u32) {
        let (t, d) = (&self.tracks.tracer, &self.declared);
        t.counter(d.usage, usage as f64);
        if let Some(ws) = working_set {
            t.counter(d.working_set, ws as f64);
        }
        t.counter(d.alive, f64::from(alive));
    }
}

/// Adds the trace file of every app life under `run_dir` (`appN/trace-LIFE.perfetto-trace`,
/// in the order the lives started) to `tracer`, whole packets only. A life that left no
/// file (killed before it opened it) is skipped; one whose file ends inside a packet loses
/// that tail, noted as an instant on the System's control loop track. Returns how many
/// files were merged.
pub fn merge_apps(tracer: &Tracer, run_dir: &Path) -> usize {
    let mut files: Vec<(u64, usize, PathBuf)> = Vec::new();
    let Ok(dirs) = std::fs::read_dir(run_dir) else {
        return 0;
    };
    for dir in dirs.flatten() {
        let Some(id) = dir
            .file_name()
            .to_str()
            .and_then(|n| n.strip_prefix("app")?.parse::<usize>().ok())
        else {
            continue;
        };
        let Ok(entries) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        for e in entries.flatten() {
            let life = e.file_name().to_str().and_then(|n| {
                n.strip_prefix(FILE_PREFIX)?
                    .strip_suffix(FILE_SUFFIX)?
                    .parse::<u64>()
                    .ok()
            });
            if let Some(life) = life {
                files.push((life, id, e.path()));
            }
        }
    }
    files.sort();
    let control = Tracks {
        tracer: tracer.clone(),
        process: declared(tracer).process,
    }
    .thread("control loop");
    let mut merged = 0;
    for (_, id, path) in files {
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                marvin_console::errln!(
                    "marvin: the trace of app{id} ({}) cannot be read ({e}); left out",
                    path.display()
                );
                continue;
            }
        };
        let got = tracer.append_trace(&bytes);
        merged += 1;
        if got.torn_bytes > 0 {
            control.instant(
                format!("app{id}'s trace ends inside a packet"),
                vec![
                    ("packets", ArgValue::Uint(got.packets as u64)),
                    ("torn_bytes", ArgValue::Uint(got.torn_bytes as u64)),
                ],
            );
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_life_gets_a_file_of_its_own_and_the_merge_takes_them_in_order() {
        let tracer = Tracer::new();
        let mut t = SystemTrace::new(&tracer, PressurePolicy::Kill);
        let run = tempfile::tempdir().unwrap();
        let mut lives = Vec::new();
        for id in [0, 1, 0] {
            let dir = run.path().join(format!("app{id}"));
            std::fs::create_dir_all(&dir).unwrap();
            let args = t.app_args(id, &dir);
            assert_eq!(args[0], "--trace");
            assert_eq!(args[3], format!("kill app{id}"));
            lives.push(PathBuf::from(&args[1]));
        }
        assert_eq!(
            lives.iter().collect::<std::collections::HashSet<_>>().len(),
            3
        );
        // Each life writes a trace; the last one is cut inside a packet.
        for (i, path) in lives.iter().enumerate() {
            let app = Tracer::new();
            let p = app.process_track(100 + i as i32, "kill app");
            app.instant(p, "x");
            let mut bytes = Vec::new();
            app.flush_to(&mut bytes).unwrap();
            if i == 2 {
                bytes.truncate(bytes.len() - 2);
            }
            std::fs::write(path, bytes).unwrap();
        }
        std::fs::write(run.path().join("app1/swap"), b"not a trace").unwrap();
        assert_eq!(merge_apps(&tracer, run.path()), 3);
        let trace: marvin_runtime::trace::proto::Trace =
            prost::Message::decode(tracer.encode().as_slice()).unwrap();
        let pids: Vec<i32> = trace
            .packet
            .iter()
            .filter_map(|p| match &p.data {
                Some(marvin_runtime::trace::proto::PacketData::TrackDescriptor(d)) => {
                    d.process.as_ref()?.pid
                }
                _ => None,
            })
            .collect();
        let own = std::process::id() as i32;
        assert_eq!(
            pids,
            [own, 100, 101, 102],
            "the System's, then the lives in order"
        );
        // The torn tail is noted on the control loop's track.
        let notes: Vec<String> = trace
            .packet
            .iter()
            .filter_map(|p| match &p.data {
                Some(marvin_runtime::trace::proto::PacketData::TrackEvent(e)) => e.name.clone(),
                _ => None,
            })
            .collect();
        assert!(
            notes.contains(&"app0's trace ends inside a packet".to_string()),
            "{notes:?}"
        );
    }

    #[test]
    fn policies_share_the_system_tracks() {
        let tracer = Tracer::new();
        let a = SystemTrace::new(&tracer, PressurePolicy::Kill);
        let b = SystemTrace::new(&tracer, PressurePolicy::Marvin);
        assert_eq!(a.declared.process, b.declared.process);
        assert_eq!(a.control.track, b.control.track);
        assert_eq!(
            a.tracks().thread("reclaimer").track,
            b.tracks().thread("reclaimer").track
        );
        let other = Tracer::new();
        assert_ne!(
            SystemTrace::new(&other, PressurePolicy::Kill)
                .declared
                .process
                .uuid(),
            a.declared.process.uuid()
        );
    }
}
