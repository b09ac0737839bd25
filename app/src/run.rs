//! The front door used by the command line and the experiments: [`run`] runs a verified
//! program as one app to its end.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use marvin_interpreter::exec::{Loaded, Trap};
use marvin_interpreter::isa::VerifiedProgram;

use crate::app::App;
use crate::command::Command;
use crate::config::RunConfig;
use crate::error::AppError;
use crate::lifecycle::Lifecycle;
use crate::memory;
use crate::memory::SwapMode;
use crate::stats::RunStats;

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    /// The process exit status the spec asks for: 0, the halt code, or 70.
    pub status: i32,
    /// The rendered runtime error, if any.
    pub error: Option<String>,
    /// Writing the program's output failed (a closed pipe, a full disk): the app was
    /// ended at the first failed write, and `status` is not to be trusted as success.
    pub output_error: Option<std::io::Error>,
    /// The run was ended from outside by [`run_until`]'s `stop`.
    pub stopped: bool,
    pub stats: RunStats,
}

/// How often [`run_until`] asks its `stop` whether to end the app.
const STOP_POLL: Duration = Duration::from_millis(10);

/// Runs a verified program to its end.
pub fn run(vp: VerifiedProgram, cfg: RunConfig) -> Result<Outcome, AppError> {
    run_until(vp, cfg, None)
}

/// Runs a verified program to its end, or until `stop` (asked every 10 ms from a
/// watcher thread, with the app) says to end it: then the app is ended as by
/// [`App::end`], its helpers are joined and its output flushed, and the outcome says
/// `stopped`.
pub fn run_until(
    vp: VerifiedProgram,
    cfg: RunConfig,
    stop: Option<&(dyn Fn(&App) -> bool + Sync)>,
) -> Result<Outcome, AppError> {
    let loaded = Arc::new(Loaded::translated_with(vp, cfg.resolve, cfg.fuse));
    let mut cfg = cfg;
    let swap = cfg.swap.take();
    let app = Arc::new(App::new(loaded.clone(), cfg)?);
    let mut helpers = Vec::new();
    if let Some(setup) = swap {
        app.enable_swap(&setup.dir, "app", setup.policy, SwapMode::Objects)?;
        if let Some(limit) = setup.file_limit {
            app.limit_swap_file(limit)?;
        }
        helpers.extend(memory::start_heap_task(&app));
        if let Some(l) = setup.lifecycle {
            helpers.push(start_lifecycle(&app, l));
        }
    }
    let done = AtomicBool::new(false);
    let stopped = AtomicBool::new(false);
    let result = std::thread::scope(|scope| {
        let watcher = stop.map(|stop| {
            let (app, done, stopped) = (&app, &done, &stopped);
            scope.spawn(move || {
                while !done.load(Ordering::Acquire) {
                    if stop(app) {
                        stopped.store(true, Ordering::Release);
                        app.end();
                        return;
                    }
                    std::thread::park_timeout(STOP_POLL);
                }
            })
        });
        let result = App::run_looper(&app);
        done.store(true, Ordering::Release);
        // Wake the watcher so a run that ends by itself does not wait out its poll.
        if let Some(w) = &watcher {
            w.thread().unpark();
        }
        result
    });
    for h in helpers {
        let _ = h.join();
    }
    app.flush();
    let (status, error) = match result {
        None => (0, None),
        Some(Trap::Halt(code)) => (code as i32, None),
        Some(t) => (70, t.render(&loaded.vp.program)),
    };
    Ok(Outcome {
        status,
        error,
        output_error: app.take_output_error(),
        stopped: stopped.load(Ordering::Acquire),
        stats: app.stats(),
    })
}

/// Runs the script on its own thread against `app`, stopping early when the app ends.
/// Errors are reported on stderr and do not stop the app.
fn start_lifecycle(app: &Arc<App>, lifecycle: Lifecycle) -> std::thread::JoinHandle<()> {
    let app = app.clone();
    std::thread::Builder::new()
        .name("lifecycle".into())
        .spawn(move || {
            for (at, action) in lifecycle.steps {
                let until = app.started_at() + at;
                app.sleep_until(until);
                if app.is_ending() {
                    return;
                }
                if let Err(e) = app.apply(action) {
                    // Not eprintln!, which panics when stderr cannot be written.
                    let _ = writeln!(
                        std::io::stderr(),
                        "lifecycle: {} at {at:?}: {e}",
                        step_name(action)
                    );
                }
            }
        })
        .expect("start the lifecycle thread")
}

/// The name the script's error lines give a step (as they did before steps were commands).
fn step_name(c: Command) -> &'static str {
    match c {
        Command::Background => "Background",
        Command::Foreground => "Foreground",
        Command::Save => "Save",
        Command::Reclaim(_) => "Reclaim",
        Command::Gc => "Gc",
        Command::Stop => "Stop",
    }
}
