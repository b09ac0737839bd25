//! `marvin run`, `asm`, `check` and `disasm`: loading, verifying and running programs.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use std::sync::Arc;

use marvin_app::Lifecycle;
use marvin_app::{RunConfig, SwapSetup, TraceTarget};
use marvin_interpreter::isa::{Program, VerifiedProgram};
use marvin_interpreter::{binary, disasm, link, load, verify};
use marvin_runtime::trace::Tracer;
use marvin_runtime::HeapConfig;
use marvin_swap::PolicyConfig;

use super::{EXIT_FAILURE, EXIT_REJECTED, EXIT_USAGE};
use marvin_console::parse_size;
use marvin_console::{errln, out};
use marvin_console::{OutputError, EXIT_OUTPUT};
use marvin_machine::signals;
use marvin_system::experiment::read_policy;
use marvin_system::paths;

/// Options shared by every command that loads a program.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// The program: MASM text or the binary form.
    pub file: PathBuf,
    /// Override a `.const` (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = link::parse_define)]
    pub defines: Vec<(String, i64)>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Live bytes the heap may hold after a collection (e.g. 64m); beyond it
    /// allocation fails with "out of memory".
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub heap_limit: Option<usize>,
    /// Print run statistics to stderr at the end.
    #[arg(long)]
    pub stats: bool,
    /// Write run statistics as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
    /// Run without access barriers (for measuring their cost only).
    #[arg(long)]
    pub no_barrier: bool,
    /// Script memory transitions, e.g. `bg@2s,save@2500ms,reclaim@3s,fg@6s` (actions
    /// bg, save, reclaim, fg, gc; times from the start, each a number with a unit: ns, us,
    /// ms, s, m or h). Turns swapping on.
    #[arg(long, value_name = "SPEC")]
    pub lifecycle: Option<String>,
    /// Where the swap file and reclaim table go (default: a temporary directory removed
    /// at exit). Turns swapping on.
    #[arg(long, value_name = "DIR")]
    pub swap_dir: Option<PathBuf>,
    /// A swap policy file (TOML; see `marvin policy show`). Turns swapping on.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// What backs the large-object space: `anonymous` memory, or `memfd` (memory files
    /// a reclaimer in another process can punch holes in; with swapping on, their
    /// directory is published as `app.regions` in the swap directory).
    #[arg(long, value_name = "KIND", default_value = "anonymous")]
    pub large_backing: marvin_runtime::LargeBacking,
    /// The swap file never grows past SIZE (e.g. 256k), as if its disk were full: for
    /// testing how an app copes (saves that do not fit fail, their objects stay
    /// resident). Room the file already has (64 KiB at start) is still used. Turns
    /// swapping on. Hidden from --help: a testing aid, not an experiment knob.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, hide = true)]
    pub swap_limit: Option<usize>,
    /// Write a Perfetto trace of the run to this file (open it at ui.perfetto.dev).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Resolve field operands by name on every execution instead of once at load (for
    /// measuring what resolution saves only).
    #[arg(long)]
    pub no_resolve: bool,
    /// Run one dispatch per instruction, without the superinstructions fused at load (for
    /// checking them against the plain code and measuring what they save).
    #[arg(long)]
    pub no_fuse: bool,
    /// What the main looper blocking on a monitor does to the holder: off, inherit
    /// (priority inheritance) or fasttrack.
    #[arg(long, value_name = "MODE", default_value = "fasttrack")]
    pub fast_track: marvin_runtime::fasttrack::Mode,
    /// Scales every period together, as `marvin pressure --time-scale` does: the
    /// program's `*_MS` constants (unless -D sets them), the lifecycle's times and the
    /// swap policy's periods. 0.1 runs ten times faster.
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    pub time_scale: f64,
}

#[derive(Debug, Args)]
pub struct AsmArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Where to write the binary form.
    #[arg(short = 'o', value_name = "OUT")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Debug, Args)]
pub struct DisasmArgs {
    /// The program: MASM text or the binary form.
    pub file: PathBuf,
}

/// Loads, links and verifies a program; on rejection prints the diagnostics and
/// returns the exit status 65 (1 when the file cannot be read).
pub fn load_verified(args: &LoadArgs) -> Result<VerifiedProgram, i32> {
    let mut p = load_program(&args.file)?;
    if let Err(d) = p.link(&args.defines) {
        errln!("{d}");
        return Err(EXIT_REJECTED);
    }
    verify::verify(p).map_err(|d| {
        errln!("{d}");
        EXIT_REJECTED
    })
}

/// Reads and parses a program file: a file that cannot be read is exit status 1 with
/// `error: cannot read FILE: reason`; a program that does not parse is 65 with its
/// diagnostics.
pub fn load_program(path: &Path) -> Result<Program, i32> {
    let bytes = read_file(path)?;
    load::load_bytes(&path.display().to_string(), &bytes).map_err(|d| {
        errln!("{d}");
        EXIT_REJECTED
    })
}

/// The defines of a run at `scale`: every `*_MS` constant of `program` scaled, unless
/// the user's defines (which follow) set it.
fn scaled_defines(program: &Program, user: &[(String, i64)], scale: f64) -> Vec<(String, i64)> {
    let mut defs: Vec<(String, i64)> = Vec::new();
    if scale != 1.0 {
        for c in &program.consts {
            if c.name.ends_with("_MS") && !user.iter().any(|(n, _)| *n == c.name) {
                defs.push((c.name.clone(), ((c.value as f64) * scale).round() as i64));
            }
        }
    }
    defs.extend(user.iter().cloned());
    defs
}

/// Reads a file given to marvin; failing that prints `error: cannot read FILE: reason`
/// and returns the exit status 1.
pub fn read_file(path: &Path) -> Result<Vec<u8>, i32> {
    let res = if path.is_dir() {
        Err(std::io::Error::other("is a directory"))
    } else {
        std::fs::read(path)
    };
    res.map_err(|e| {
        errln!("error: cannot read {}: {e}", path.display());
        EXIT_FAILURE
    })
}

/// Checks every output path of `run` before anything runs.
fn check_run_paths(a: &RunArgs) -> Result<(), paths::PathError> {
    if let Some(p) = &a.stats_json {
        paths::check_output_file("--stats-json", p)?;
    }
    if let Some(p) = &a.trace {
        paths::check_output_file("--trace", p)?;
    }
    if let Some(d) = &a.swap_dir {
        paths::check_swap_dir("--swap-dir", d)?;
    }
    Ok(())
}

/// The longest a lifecycle script may wait for a step (after `--time-scale`): a century,
/// past which no run lasts and the app's clock could not count.
const MAX_LIFECYCLE_TIME: std::time::Duration =
    std::time::Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// Multiplies every step's time by `time_scale`; a time that is (or scales to) more than
/// [`MAX_LIFECYCLE_TIME`] is an error naming it, and `--time-scale` only when it was given
/// (a scale of 1 changes nothing, so it is never blamed).
fn scale_lifecycle(l: &mut Lifecycle, time_scale: f64) -> Result<(), String> {
    use marvin_runtime::duration::format;
    for (at, _) in &mut l.steps {
        let given = *at;
        let scaled = if time_scale == 1.0 {
            Some(given)
        } else {
            std::time::Duration::try_from_secs_f64(given.as_secs_f64() * time_scale).ok()
        };
        match scaled.filter(|t| *t <= MAX_LIFECYCLE_TIME) {
            Some(t) => *at = t,
            None => {
                let by = if time_scale == 1.0 {
                    String::new()
                } else {
                    format!(" times --time-scale {time_scale}")
                };
                return Err(format!(
                    "--lifecycle: a step at {}{by} is later than a script may wait (at most {})",
                    format(given),
                    format(MAX_LIFECYCLE_TIME)
                ));
            }
        }
    }
    Ok(())
}

pub fn run(a: &RunArgs) -> anyhow::Result<i32> {
    if !(a.time_scale > 0.0 && a.time_scale.is_finite()) {
        errln!(
            "error: --time-scale must be a positive number (got {})",
            a.time_scale
        );
        return Ok(EXIT_USAGE);
    }
    let vp = {
        let mut p = match load_program(&a.load.file) {
            Ok(p) => p,
            Err(code) => return Ok(code),
        };
        let defs = scaled_defines(&p, &a.load.defines, a.time_scale);
        if let Err(d) = p.link(&defs) {
            errln!("{d}");
            return Ok(EXIT_REJECTED);
        }
        match verify::verify(p) {
            Ok(vp) => vp,
            Err(d) => {
                errln!("{d}");
                return Ok(EXIT_REJECTED);
            }
        }
    };
    let lifecycle = match a.lifecycle.as_deref().map(Lifecycle::parse).transpose() {
        Ok(Some(mut l)) => {
            if let Err(e) = scale_lifecycle(&mut l, a.time_scale) {
                errln!("error: {e}");
                return Ok(EXIT_USAGE);
            }
            Some(l)
        }
        Ok(None) => None,
        Err(e) => {
            errln!("error: --lifecycle: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let policy = match &a.policy {
        Some(f) => match read_policy(f) {
            Ok(p) => Some(p),
            Err(code) => return Ok(code),
        },
        None => None,
    };
    let policy = match policy.map(|p| p.scaled(a.time_scale)).transpose() {
        Ok(p) => p,
        Err(e) => {
            errln!("error: --time-scale: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let swap_flags =
        lifecycle.is_some() || policy.is_some() || a.swap_dir.is_some() || a.swap_limit.is_some();
    if a.no_barrier && swap_flags {
        errln!("error: --no-barrier cannot be combined with swapping (--lifecycle, --swap-dir, --policy)");
        return Ok(EXIT_USAGE);
    }
    if let Err(e) = check_run_paths(a) {
        errln!("error: {e}");
        return Ok(EXIT_USAGE);
    }
    // SIGINT, SIGTERM and SIGHUP end the app; the run then flushes its output, removes
    // its temporary swap directory and exits 128 + the signal.
    signals::install().context("installing the stop-signal handlers")?;
    // The guardian of a temporary swap directory (dropped after it: it is told last
    // that the run cleaned up), and the directory, kept until the run ends.
    let mut _guardian = None;
    let mut _tmp = None;
    let swap = if swap_flags {
        let dir = match &a.swap_dir {
            Some(d) => d.clone(),
            None => {
                marvin_system::sweep_stale_temp_dirs(None);
                _guardian = marvin_system::processes::launcher::app_exe()
                    .and_then(|exe| {
                        marvin_system::guardian::Guardian::spawn(
                            &exe,
                            false,
                            &[std::env::temp_dir()],
                        )
                    })
                    .ok();
                let t = marvin_system::tempdirs::create("marvin-swap-", None, None)?;
                let p = t.path().to_path_buf();
                _tmp = Some(t);
                p
            }
        };
        Some(SwapSetup {
            dir,
            policy: Arc::new(match policy {
                Some(p) => p,
                None => PolicyConfig::default().scaled(a.time_scale)?,
            }),
            lifecycle,
            file_limit: a.swap_limit.map(|n| n as u64),
        })
    } else {
        None
    };
    let tracer = a.trace.as_ref().map(|_| Tracer::new());
    let cfg = RunConfig {
        heap: HeapConfig {
            limit: a.heap_limit,
            large_backing: a.large_backing,
            ..HeapConfig::default()
        },
        barriers: !a.no_barrier,
        swap,
        trace: tracer.as_ref().map(|tracer| TraceTarget {
            tracer: tracer.clone(),
            pid: std::process::id() as i32,
            name: app_name(&a.load.file),
        }),
        resolve: !a.no_resolve,
        fuse: !a.no_fuse,
        fast_track: a.fast_track,
        ..RunConfig::default()
    };
    let stop = |_: &marvin_app::App| signals::stop_requested().is_some();
    let outcome = match marvin_app::run_until(vp, cfg, Some(&stop)) {
        Ok(o) => o,
        Err(e) => {
            // The flags were right (they were checked above): what stops the app here is
            // the machine's state, such as a swap directory another run holds or a name
            // in it taken by something this run did not make.
            errln!("error: cannot start the app: {e}");
            return Ok(EXIT_FAILURE);
        }
    };
    // The program's own status, unless its output was lost.
    let mut status = outcome.status;
    if let Some(e) = outcome.output_error {
        let e = OutputError {
            stream: "stdout",
            source: e,
        };
        if !e.is_broken_pipe() {
            errln!("error: the program's output: {e}");
        }
        status = e.exit_status();
    }
    if let Some(e) = &outcome.error {
        errln!("{e}");
    }
    if a.stats {
        errln!("{}", outcome.stats.render().trim_end());
    }
    // The output files were checked before the run; a write that still fails (a full
    // disk) is reported and turns a success into EXIT_OUTPUT, keeping any other status.
    let mut late = |what: &str, path: &Path, res: anyhow::Result<()>| {
        if let Err(e) = res {
            errln!("error: writing {what} {}: {e:#}", path.display());
            if status == 0 {
                status = EXIT_OUTPUT;
            }
        }
    };
    if let (Some(tracer), Some(path)) = (&tracer, &a.trace) {
        late("the trace", path, tracer.write_to(path).map_err(Into::into));
    }
    if let Some(path) = &a.stats_json {
        let res = serde_json::to_string_pretty(&outcome.stats)
            .map_err(anyhow::Error::from)
            .and_then(|json| std::fs::write(path, json).map_err(Into::into));
        late("the statistics", path, res);
    }
    if outcome.stopped {
        if let Some(sig) = signals::stop_requested() {
            drop(_tmp);
            errln!("marvin: stopped by signal {sig}; output flushed, temporary files removed");
            return Ok(128 + sig);
        }
    }
    Ok(status)
}

/// The name an app's process track gets: its program's file name without extension.
fn app_name(file: &Path) -> String {
    file.file_stem()
        .map_or_else(|| "app".into(), |s| s.to_string_lossy().into_owned())
}

pub fn asm(a: &AsmArgs) -> anyhow::Result<i32> {
    // Verify before writing: a binary file always holds a valid program. Constants
    // stay named (not lowered) so `-D` still works on the binary.
    let p = match load_program(&a.load.file) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    if let Err(code) = load_verified(&a.load) {
        return Ok(code);
    }
    if let Err(e) = std::fs::write(&a.out, binary::encode(&p)) {
        errln!("error: -o {}: cannot be written: {e}", a.out.display());
        return Ok(EXIT_FAILURE);
    }
    Ok(0)
}

pub fn check(a: &CheckArgs) -> anyhow::Result<i32> {
    Ok(match load_verified(&a.load) {
        Ok(_) => 0,
        Err(code) => code,
    })
}

pub fn disasm(a: &DisasmArgs) -> anyhow::Result<i32> {
    let p = match load_program(&a.file) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    out!("{}", disasm::disassemble(&p))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_scale_scales_ms_constants_unless_defined() {
        let p = load::load_bytes("t.masm", b".const ROUND_GAP_MS 5000\n.const WAIT_MS 3\n.const N 7\n.method main args=0 locals=0\n  push 0\n  ret\n.end\n")
            .unwrap();
        let user = vec![("WAIT_MS".to_owned(), 40)];
        let d = scaled_defines(&p, &user, 0.1);
        assert_eq!(
            d,
            [("ROUND_GAP_MS".to_owned(), 500), ("WAIT_MS".to_owned(), 40)]
        );
        assert_eq!(scaled_defines(&p, &user, 1.0), user);
    }
}
