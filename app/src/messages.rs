//! The app's main looper (its message loop) and the message instructions the executor
//! hands to the app (`send sendfront remove has quit`).
//!
//! Every app's main looper runs on DeliQueue. A message's payload names the method to
//! call and its argument; when the argument is a reference it is pinned as a collector
//! root from the post until the payload is dropped (delivered into a frame, removed or
//! dropped at quit), so a pending message keeps its object alive.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use marvin_deliqueue::{Message, MessageQueue, Next};
use marvin_interpreter::exec::{Fault, Post, PostAt, Thread, Trap};
use marvin_runtime::fasttrack;
use marvin_runtime::trace::names;

use crate::app::App;
pub use crate::pin::{MasmMessage, Pin};

/// `send` / `sendfront`: posts `post` to the main looper's queue; a reference argument
/// is pinned as a root until the message is delivered, removed or dropped.
pub(crate) fn post(app: &Arc<App>, post: Post) -> Result<(), Fault> {
    if app.is_foreground_handler(post.method) && matches!(post.when, PostAt::Delayed { .. }) {
        // `send on_foreground` registers the app's foreground message (see
        // `crate::foreground`); the runtime posts it at the front on each resume.
        app.register_foreground(&post);
        return Ok(());
    }
    let pin = if post.arg_is_ref {
        Pin::new(&app.pinned, post.arg)
    } else {
        None
    };
    let msg = Message::new(
        post.method as u64,
        post.what,
        MasmMessage {
            method: post.method,
            arg: post.arg,
            _pin: pin,
        },
    );
    let posted = match post.when {
        PostAt::Front => app.queue.post_at_front(msg),
        PostAt::Delayed { ms } => app.queue.post_delayed(Duration::from_millis(ms), msg),
    };
    posted.map_err(|_| {
        if app.is_ending() {
            // The queue quit because the app is ending (stopped from outside, or another
            // thread halted or failed): this thread unwinds, as at its next safepoint
            // poll, instead of reporting a `post after quit` of its own.
            Fault::Terminated
        } else {
            Fault::PostAfterQuit
        }
    })
}

/// `remove`: drops the pending messages for `method` with `what`.
pub(crate) fn remove(app: &App, method: u32, what: i64) {
    app.queue
        .remove(&|k| k.target == method as u64 && k.what == what);
}

/// `has`: whether a message for `method` with `what` is pending.
pub(crate) fn has(app: &App, method: u32, what: i64) -> bool {
    app.queue
        .has(&|k| k.target == method as u64 && k.what == what)
}

/// `quit`: the looper ends once the messages already due are handled.
pub(crate) fn quit(app: &App) {
    app.queue.quit_safely()
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
        // Ended before its looper started (a command from outside, say): the ending's
        // trap, if it had one, is the outcome.
        return app.outcome();
    }
    // The main looper is latency-critical: holders of monitors it waits on are boosted.
    fasttrack::set_latency_critical(true);
    let main_track = app.trace.register_thread("main");
    let mut t = match Thread::new(app) {
        Ok(t) => t,
        Err(e) => {
            app.end_with(e);
            return app.outcome();
        }
    };
    loop {
        if app.is_ending() {
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
    app.outcome()
}
