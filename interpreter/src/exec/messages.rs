//! The app's main looper and the message, thread and looper instructions
//! (`send sendfront remove has quit spawn sleep`).
//!
//! Every app's main looper runs on DeliQueue. A message's payload names the method to
//! call and its argument; when the argument is a reference it is pinned as a collector
//! root from the post until the payload is dropped (delivered into a frame, removed or
//! dropped at quit), so a pending message keeps its object alive.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use marvin_runtime::deliqueue::{Message, MessageQueue, Next};
use marvin_runtime::fasttrack;
use marvin_runtime::trace::names;

use super::app::App;
use super::interp::{Thread, TERMINATED};
use super::op::Op;
use super::trap::Trap;
use crate::isa::Ty;

/// What a MASM message carries.
pub struct MasmMessage {
    pub method: u32,
    pub arg: u64,
    _pin: Option<Pin>,
}

/// Keeps a reference alive as a root while a message or a thread start holds it. It
/// holds its app weakly: pending messages live in the app's own queue, and a strong
/// reference would keep an ended app (and its heap) alive forever.
pub struct Pin {
    app: std::sync::Weak<App>,
    value: u64,
}

impl Pin {
    pub fn new(app: &Arc<App>, value: u64) -> Option<Pin> {
        if value == 0 {
            return None;
        }
        *app.pinned.lock().entry(value).or_insert(0) += 1;
        Some(Pin {
            app: Arc::downgrade(app),
            value,
        })
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        let Some(app) = self.app.upgrade() else {
            return;
        };
        let mut p = app.pinned.lock();
        if let Some(n) = p.get_mut(&self.value) {
            *n -= 1;
            if *n == 0 {
                p.remove(&self.value);
            }
        }
    }
}

impl Thread {
    /// Executes one message, thread or looper instruction at `method`+`pc` on the value
    /// stack whose top is `sp`; returns the new top.
    pub(crate) fn message_op(
        &mut self,
        op: Op,
        mut sp: usize,
        method: u32,
        pc: usize,
    ) -> Result<usize, String> {
        let app = self.app.clone();
        let arg_is_ref = |depth_from_top: usize| {
            let types = &app.loaded.vp.info[method as usize].stack_types[pc];
            types.len() >= depth_from_top && types[types.len() - depth_from_top] == Ty::Ref
        };
        let pop = |sp: &mut usize| {
            *sp -= 1;
            self.stack.get(*sp)
        };
        match op {
            Op::Send(m) | Op::SendFront(m) => {
                let front = matches!(op, Op::SendFront(_));
                let ref_arg = arg_is_ref(if front { 1 } else { 2 });
                let delay_ms = if front { 0 } else { pop(&mut sp) as i64 };
                let arg = pop(&mut sp);
                let what = pop(&mut sp) as i64;
                let pin = if ref_arg { Pin::new(&app, arg) } else { None };
                let msg = Message::new(
                    m as u64,
                    what,
                    MasmMessage {
                        method: m,
                        arg,
                        _pin: pin,
                    },
                );
                let posted = if front {
                    app.queue.post_at_front(msg)
                } else {
                    let ms = delay_ms.max(0) as u64;
                    app.queue.post_delayed(Duration::from_millis(ms), msg)
                };
                if posted.is_err() {
                    return Err("post after quit".into());
                }
            }
            Op::Remove(m) => {
                let what = pop(&mut sp) as i64;
                app.queue
                    .remove(&|k| k.target == m as u64 && k.what == what);
            }
            Op::Has(m) => {
                let what = pop(&mut sp) as i64;
                let has = app.queue.has(&|k| k.target == m as u64 && k.what == what);
                self.stack.set(sp, has as u64);
                sp += 1;
            }
            Op::Quit => app.queue.quit_safely(),
            Op::Spawn(m) => {
                let ref_arg = arg_is_ref(1);
                let arg = pop(&mut sp);
                let pin = if ref_arg { Pin::new(&app, arg) } else { None };
                spawn_thread(&app, m, arg, pin)?;
            }
            Op::Sleep => {
                let ms = pop(&mut sp) as i64;
                let until = Instant::now() + Duration::from_millis(ms.max(0) as u64);
                let a = app.clone();
                self.blocking(&[], || a.sleep_until(until));
                if app.safepoints.is_terminating() {
                    return Err(TERMINATED.into());
                }
            }
            _ => unreachable!("not a message instruction: {op:?}"),
        }
        Ok(sp)
    }
}

/// Starts a background thread running `method(arg)`.
fn spawn_thread(app: &Arc<App>, method: u32, arg: u64, pin: Option<Pin>) -> Result<(), String> {
    app.threads_alive.fetch_add(1, Ordering::SeqCst);
    let a = app.clone();
    let spawned = std::thread::Builder::new()
        .name(format!(
            "masm-{}",
            app.loaded.vp.program.methods[method as usize].name
        ))
        .spawn(move || {
            a.trace
                .register_thread(&a.loaded.vp.program.methods[method as usize].name);
            let r = match Thread::new(&a) {
                Ok(mut t) => {
                    drop(pin); // registered: from here on a collection waits for this thread
                    let r = t.invoke(method, &[arg]);
                    a.monitors.release_all(t.id);
                    r
                }
                Err(e) => Err(e),
            };
            if let Err(trap) = r {
                a.end_with(trap);
            }
            a.threads_alive.fetch_sub(1, Ordering::SeqCst);
            a.queue.wake();
        });
    match spawned {
        Ok(h) => {
            app.handles.lock().push(h);
            Ok(())
        }
        Err(e) => {
            app.threads_alive.fetch_sub(1, Ordering::SeqCst);
            Err(format!("cannot start a thread: {e}"))
        }
    }
}

/// Runs the app's main looper on the calling thread until the app ends: `main` is the
/// first message. Returns the first terminal trap (halt or runtime error), if any.
pub fn run_looper(app: &Arc<App>) -> Option<Trap> {
    let entry = app.loaded.vp.entry;
    let first = Message::new(
        entry as u64,
        0,
        MasmMessage {
            method: entry,
            arg: 0,
            _pin: None,
        },
    );
    if app.queue.post(first).is_err() {
        return None;
    }
    // The main looper is latency-critical: holders of monitors it waits on are boosted.
    fasttrack::set_latency_critical(true);
    let main_track = app.trace.register_thread("main");
    let mut t = match Thread::new(app) {
        Ok(t) => t,
        Err(e) => {
            app.end_with(e);
            return app.outcome.lock().clone();
        }
    };
    loop {
        if app.safepoints.is_terminating() {
            break;
        }
        match app.queue.next() {
            Next::Message { message, .. } => {
                let key = message.key;
                let MasmMessage { method, arg, _pin } = message.payload;
                let args = if app.loaded.vp.program.methods[method as usize].args == 0 {
                    vec![]
                } else {
                    vec![key.what as u64, arg]
                };
                let _dispatch = main_track.map(|track| {
                    app.trace
                        .count(|c| c.pending_messages, app.queue.pending() as f64);
                    let handler = &app.loaded.vp.program.methods[method as usize].name;
                    app.trace
                        .tracer()
                        .slice(track, names::looper_dispatch_name(handler, key.what))
                });
                let r = t.invoke(method, &args);
                drop(_dispatch);
                drop(_pin);
                if let Err(trap) = r {
                    app.end_with(trap);
                    break;
                }
            }
            Next::Idle => {
                if app.queue.is_empty() && app.threads_alive.load(Ordering::SeqCst) == 0 {
                    break;
                }
                let q = app.queue.clone();
                t.blocking(&[], || q.wait());
            }
            Next::Quit => break,
        }
    }
    app.monitors.release_all(t.id);
    drop(t);
    fasttrack::set_latency_critical(false);
    // The app is over: stop what is left (after quit or a halt) and wait for it.
    app.safepoints.terminate();
    app.wake_sleepers();
    if !app.queue.is_quitting() {
        app.queue.quit();
    }
    let handles: Vec<_> = std::mem::take(&mut *app.handles.lock());
    for h in handles {
        let _ = h.join();
    }
    app.outcome.lock().clone()
}
