//! The app's background threads (`spawn`): each runs one method on a MASM thread of its
//! own and ends the app if it traps.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use marvin_deliqueue::MessageQueue;
use marvin_interpreter::exec::{Fault, Thread};

use crate::app::App;
use crate::pin::Pin;

/// Starts a background thread running `method(arg)`.
pub(crate) fn spawn(app: &Arc<App>, method: u32, arg: u64, arg_is_ref: bool) -> Result<(), Fault> {
    let pin = if arg_is_ref {
        Pin::new(&app.pinned, arg)
    } else {
        None
    };
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
            Err(Fault::Spawn(e))
        }
    }
}
