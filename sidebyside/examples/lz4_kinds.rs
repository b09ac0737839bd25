//! Probe: how well each kind of an app's memory compresses with lz4, page by page, as zram
//! compresses what the kernel swaps. Runs a workload in this process until its set-up is
//! done (its first `mark "round"`), then reads every resident page of its small-object
//! space, its large-object space and its native buffers (`/proc/self/pagemap` says which
//! pages are present, `/proc/self/mem` gives their bytes), compresses each 4 KiB page on
//! its own with `lz4_flex` and prints each kind's pages, same-filled pages and ratio.
//!
//! ```text
//! cargo run --release -p marvin-sidebyside --example lz4_kinds -- examples/workloads/app.masm [NAME=VALUE...]
//! ```
//! Android's docs give 2:1 to 3:1 for zram with lz4 (`/work/shared/sources.md` section 7).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::{anyhow, bail, Context};
use marvin_app::{App, RunConfig};
use marvin_interpreter::exec::AppBinding;
use marvin_interpreter::{load::load, parse_define, verify::verify};

const PAGE: usize = 4096;

/// What one kind's pages came to.
#[derive(Default, Debug)]
struct Packed {
    pages: u64,
    same_filled: u64,
    packed_bytes: u64,
}

impl Packed {
    fn ratio(&self) -> f64 {
        (self.pages * PAGE as u64) as f64 / self.packed_bytes.max(1) as f64
    }
}

/// Compresses every present page of `ranges`, one at a time.
fn pack(ranges: &[(usize, usize)]) -> anyhow::Result<Packed> {
    let mem = File::open("/proc/self/mem").context("/proc/self/mem")?;
    let pagemap = File::open("/proc/self/pagemap").context("/proc/self/pagemap")?;
    let mut out = Packed::default();
    let mut page = vec![0u8; PAGE];
    let mut entry = [0u8; 8];
    for &(start, len) in ranges {
        for addr in (start..start + len).step_by(PAGE) {
            pagemap.read_exact_at(&mut entry, (addr / PAGE * 8) as u64)?;
            if u64::from_le_bytes(entry) >> 63 == 0 {
                continue;
            }
            mem.read_exact_at(&mut page, addr as u64)?;
            out.pages += 1;
            if page.iter().all(|&b| b == page[0]) {
                // zram keeps a same-filled page as its byte alone.
                out.same_filled += 1;
                continue;
            }
            out.packed_bytes += lz4_flex::compress(&page).len().min(PAGE) as u64;
        }
    }
    Ok(out)
}

fn measure(app: &App) -> anyhow::Result<()> {
    let heap = app.heap();
    let kinds = [
        ("small objects", heap.small_ranges()),
        ("large objects", heap.large_space().ranges()),
        ("native buffers", app.native().ranges()),
    ];
    println!("kind            pages   same-filled  lz4 ratio (same-filled pages left out)");
    for (name, ranges) in kinds {
        let p = pack(&ranges)?;
        println!(
            "{name:<15} {:>6}   {:>6}       {:.2}",
            p.pages,
            p.same_filled,
            p.ratio()
        );
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(file) = args.first() else {
        bail!("usage: lz4_kinds WORKLOAD.masm [NAME=VALUE...]");
    };
    let defines = args[1..]
        .iter()
        .map(|d| parse_define(d))
        .collect::<Result<Vec<_>, _>>()?;
    let mut program = load(Path::new(file)).map_err(|d| anyhow!("{d}"))?;
    program.link(&defines).map_err(|d| anyhow!("{d}"))?;
    let vp = verify(program).map_err(|d| anyhow!("{d}"))?;
    let measured = std::sync::Mutex::new(None);
    let stop = |app: &App| {
        if app.mark_counts().get("round").copied().unwrap_or(0) == 0 {
            return false;
        }
        *measured.lock().unwrap() = Some(measure(app));
        true
    };
    let cfg = RunConfig {
        out: Box::new(std::io::sink()),
        ..RunConfig::default()
    };
    marvin_app::run_until(vp, cfg, Some(&stop))?;
    let result = measured.into_inner().unwrap();
    result.ok_or_else(|| anyhow!("the workload ended before its first round"))?
}
