//! Starting app processes on a thread of their own, so the System's control loop never
//! waits for one: moving a new process into the memory cgroup before it runs its
//! program waits for an RCU grace period in the kernel (`cgroup.procs`), and the child
//! runs at normal priority on CPUs the apps keep busy, so a start took the loop 40-70
//! ms of its turn (measured), where the killer and the sampler must act every 20 ms.
//!
//! The control loop asks ([`Spawner::start`]) and collects what has started at each
//! turn ([`Spawner::started`]). Traced, each start is a `start appN` slice on the
//! spawner's thread track.

use std::path::PathBuf;

use crossbeam_channel::{Receiver, Sender};

use super::launcher::AppProcess;
use super::trace::Tracks;
use marvin_machine::cgroup;
use marvin_runtime::trace::ArgValue;

/// One start asked for: app `id` with the arguments after `marvin app`.
struct Start {
    id: usize,
    args: Vec<String>,
}

/// An app that started, or why it did not.
pub struct Started {
    pub id: usize,
    pub result: std::io::Result<AppProcess>,
}

/// The control loop's end of the spawner thread.
pub struct Spawner {
    tx: Option<Sender<Start>>,
    rx: Receiver<Started>,
    /// Starts asked for and not yet collected.
    in_flight: usize,
}

impl Spawner {
    /// Starts the spawner on a thread of `scope`: each app it starts is `exe app ARGS`
    /// inside `group`. It ends once [`Spawner::finish`] has run. With `trace`, each start
    /// is traced on a track of its thread.
    pub fn spawn<'scope, 'env>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        group: &'env cgroup::Group,
        exe: PathBuf,
        trace: Option<Tracks>,
    ) -> Spawner {
        let (tx, requests) = crossbeam_channel::unbounded::<Start>();
        let (done, rx) = crossbeam_channel::unbounded();
        std::thread::Builder::new()
            .name("app-spawner".into())
            .spawn_scoped(scope, move || {
                let trace = trace.map(|t| t.thread("app spawner"));
                for s in requests {
                    let mut span = trace.as_ref().map(|t| t.span(format!("start app{}", s.id)));
                    let result = AppProcess::spawn_with(&exe, &s.args, |cmd| {
                        group.spawn_inside(cmd).map_err(std::io::Error::other)
                    });
                    if let (Some(span), Ok(p)) = (span.as_mut(), &result) {
                        span.arg("pid", ArgValue::Uint(p.pid().into()));
                    }
                    drop(span);
                    if done.send(Started { id: s.id, result }).is_err() {
                        break;
                    }
                }
            })
            .expect("spawning the app spawner thread");
        Spawner {
            tx: Some(tx),
            rx,
            in_flight: 0,
        }
    }

    /// Asks for app `id` to be started with `args`.
    pub fn start(&mut self, id: usize, args: Vec<String>) {
        if let Some(tx) = &self.tx {
            if tx.send(Start { id, args }).is_ok() {
                self.in_flight += 1;
            }
        }
    }

    /// The apps that have started since the last call (without waiting).
    pub fn started(&mut self) -> Vec<Started> {
        let got: Vec<Started> = self.rx.try_iter().collect();
        self.in_flight -= got.len();
        got
    }

    /// Takes no more starts and waits for those under way; returns them (the caller
    /// stops what started). The thread then ends.
    pub fn finish(&mut self) -> Vec<Started> {
        self.tx = None;
        let mut got = Vec::new();
        while self.in_flight > 0 {
            match self.rx.recv() {
                Ok(s) => {
                    self.in_flight -= 1;
                    got.push(s);
                }
                Err(_) => break,
            }
        }
        got
    }
}
