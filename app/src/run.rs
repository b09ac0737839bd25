//! The front door used by the command line and the experiments: [`run`] runs a verified
//! program as one app to its end.

use std::sync::Arc;

use marvin_interpreter::exec::{Loaded, Trap};
use marvin_interpreter::isa::VerifiedProgram;

use crate::app::App;
use crate::config::RunConfig;
use crate::error::AppError;
use crate::memory::SwapMode;
use crate::stats::RunStats;
use crate::{lifecycle, memory};

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    /// The process exit status the spec asks for: 0, the halt code, or 70.
    pub status: i32,
    /// The rendered runtime error, if any.
    pub error: Option<String>,
    pub stats: RunStats,
}

/// Runs a verified program to its end.
pub fn run(vp: VerifiedProgram, cfg: RunConfig) -> Result<Outcome, AppError> {
    let loaded = Arc::new(Loaded::translated(vp, cfg.resolve));
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
            helpers.push(lifecycle::start(&app, l));
        }
    }
    let result = App::run_looper(&app);
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
        stats: app.stats(),
    })
}
