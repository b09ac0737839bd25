//! `marvin reclaim`: Marvin's reclaimer acting on another process from the command line,
//! as the System's reclaimer does in the process mode: it opens a running app's reclaim
//! table and region directory in its swap directory (an app started with
//! `marvin run --swap-dir DIR --large-backing memfd`, or a process-mode app) and returns
//! the pages of its saved, clean, cold objects without the app's help.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use marvin_swap::external::ExternalApp;

use marvin_console::parse_size;

#[derive(Debug, Args)]
pub struct ReclaimArgs {
    /// The app's process id.
    #[arg(long)]
    pub pid: u32,
    /// The app's swap directory (where its `NAME.table` and `NAME.regions` are).
    #[arg(long, value_name = "DIR")]
    pub swap_dir: PathBuf,
    /// The app's name in its swap directory (`app` for `marvin run`, `swap` for a
    /// process-mode app).
    #[arg(long, default_value = "app")]
    pub name: String,
    /// Take at most this many bytes (e.g. 64m; default: everything reclaimable).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub bytes: Option<usize>,
}

/// The app's resident shared memory (`RssShmem` of `/proc/PID/status`), if readable.
fn rss_shmem(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("RssShmem:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

pub fn reclaim(a: &ReclaimArgs) -> anyhow::Result<i32> {
    let mut app = ExternalApp::open(a.pid, &a.swap_dir, &a.name).with_context(|| {
        format!(
            "cannot open app '{}' of process {} in {}",
            a.name,
            a.pid,
            a.swap_dir.display()
        )
    })?;
    if app.table().is_foreground() {
        marvin_console::outln!("process {} is in the foreground: nothing taken", a.pid)?;
        return Ok(0);
    }
    let before = rss_shmem(a.pid);
    let r = app.reclaim(a.bytes.map_or(u64::MAX, |b| b as u64));
    let after = rss_shmem(a.pid);
    if let Some(refusal) = r.refused {
        // Shared memory that cannot all be the runtime's: nothing was taken.
        anyhow::bail!(
            "reclaim table {} of process {} is refused: {refusal}; nothing taken",
            app.table().path().display(),
            a.pid
        );
    }
    marvin_console::outln!(
        "reclaimed {} objects, {} bytes from process {} in {:.3} ms ({} fallocate calls, {} failed; {} entries contended, {} unreachable)",
        r.objects,
        r.bytes,
        a.pid,
        r.latency.as_secs_f64() * 1e3,
        r.madvise_calls,
        r.failed_calls,
        r.contended,
        r.unreachable
    )?;
    if let (Some(b), Some(f)) = (before, after) {
        marvin_console::outln!("RssShmem of process {}: {b} -> {f} bytes", a.pid)?;
    }
    let (bytes, objects) = app.table().reclaimed_out();
    marvin_console::outln!("reclaimed from outside so far: {objects} objects, {bytes} bytes")?;
    Ok(0)
}
