//! Starting an app: its main looper on a thread of its own and, when it swaps objects,
//! its heap task ([`App::launch`], giving a [`Running`] app); or the main looper on the
//! calling thread ([`App::run_looper`], as `marvin run` does).

use std::sync::Arc;
use std::thread::JoinHandle;

use marvin_interpreter::exec::Trap;

use crate::app::App;
use crate::error::AppError;
use crate::{memory, messages};

/// A launched app and its threads.
pub struct Running {
    app: Arc<App>,
    looper: JoinHandle<Option<Trap>>,
    heap_task: Option<JoinHandle<()>>,
}

impl App {
    /// Starts `app`: its main looper on a new thread named `name` (which flushes the
    /// app's output when the looper returns) and, when it swaps objects, its heap task.
    pub fn launch(app: &Arc<App>, name: String) -> Result<Running, AppError> {
        let heap_task = memory::start_heap_task(app);
        let a = app.clone();
        let looper = std::thread::Builder::new().name(name).spawn(move || {
            let r = messages::run_looper(&a);
            a.flush();
            r
        });
        let looper = match looper {
            Ok(l) => l,
            Err(e) => {
                app.end();
                if let Some(t) = heap_task {
                    let _ = t.join();
                }
                return Err(e.into());
            }
        };
        Ok(Running {
            app: app.clone(),
            looper,
            heap_task,
        })
    }

    /// Runs `app`'s main looper on the calling thread until the app ends: `main` is the
    /// first message. Returns the first terminal trap (halt or runtime error), if any.
    pub fn run_looper(app: &Arc<App>) -> Option<Trap> {
        messages::run_looper(app)
    }
}

impl Running {
    /// The app.
    pub fn app(&self) -> &Arc<App> {
        &self.app
    }

    /// Whether the main looper has returned (the app ended by itself or was ended).
    pub fn looper_finished(&self) -> bool {
        self.looper.is_finished()
    }

    /// Whether every thread of the launch has finished, so [`join`](Running::join) will
    /// not wait.
    pub fn is_finished(&self) -> bool {
        self.looper.is_finished() && self.heap_task.as_ref().is_none_or(|h| h.is_finished())
    }

    /// Waits for the main looper and the heap task; returns the app's first terminal trap
    /// (halt or runtime error), if any; a looper that panicked is a runtime error.
    pub fn join(self) -> Option<Trap> {
        let r = self.looper.join().unwrap_or_else(|_| {
            Some(Trap::Error {
                message: "the main looper panicked".into(),
                method: 0,
                pc: 0,
            })
        });
        if let Some(t) = self.heap_task {
            let _ = t.join();
        }
        r
    }
}
