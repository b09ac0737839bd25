//! `marvin bench alloc`: how long a foreground app takes to allocate 512 MiB (`--size`)
//! of one-page int arrays when memory is free, and when the System's memory budget is
//! full of background apps.
//!
//! The apps are real [`App`]s sharing one [`Budget`] (the System's, `system/src/budget.rs`)
//! through [`BudgetHook`], so every allocation asks the budget first, on the allocating
//! thread, as in `marvin pressure`:
//! - `free`: a budget with room to spare;
//! - `marvin`: two background apps hold the budget's worth of arrays, stubbed and saved
//!   ahead of time; the budget makes room by reclaiming them (no I/O);
//! - `page-swap`: the same background apps under page-granular swapping; the budget
//!   makes room by writing least recently used page runs to their swap files
//!   synchronously.
//!
//! Under pressure the budget is the arrays' bytes plus what the runtime holds for the
//! apps (charged to them as in the pressure experiment), so the background apps fill it.
//! Set-up is not timed. The ratio column is to `free`; published: 450 ms free, almost
//! 8 s under pressure with Linux swap. Goal: marvin under pressure at most 1.25x free.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{ensure, Context};
use clap::Args;
use marvin_app::{App, RunConfig};
use marvin_interpreter::exec::Loaded;
use marvin_interpreter::{asm, verify};
use marvin_runtime::ObjKind;
use marvin_runtime::{Handle, HeapConfig, PAGE, RUNTIME_HEADROOM};
use marvin_swap::{PolicyConfig, SwapPolicy};

use super::reclaim::{ARRAY_BYTES, ARRAY_WORDS};
use super::{finish, median, CommonArgs, Sample};
use marvin_console::parse_size;
use marvin_figures::{Bar, Chart};
use marvin_system::budget::{Budget, BudgetHook, Member};
use marvin_system::PressurePolicy;

#[derive(Debug, Args)]
#[command(mut_arg("reps", |a| a.default_value("3")))]
pub struct AllocArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Bytes the foreground app allocates (the budget is this much too, plus what the
    /// runtime holds for the apps).
    #[arg(long, value_parser = parse_size, default_value = "512m")]
    pub size: usize,
    /// Allocate 16 MiB instead of `--size`.
    #[arg(long)]
    pub quick: bool,
    /// Draw the paper's figure 3 from the results (SVG and PNG, with the published
    /// values beside marvin's) into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<std::path::PathBuf>,
}

const ARRAY_CLASS: u32 = u32::MAX;
/// Background apps sharing the full budget.
const BACKGROUND_APPS: usize = 2;
const FREE: &str = "free";

/// A program for the apps to carry (they are driven from outside; it never runs).
const IDLE: &str = ".method main args=0 locals=0\n  push 0\n  ret\n.end\n";

/// One set-up: a budget and its apps.
struct World {
    budget: Arc<Budget>,
    apps: Vec<Arc<App>>,
    _members: Vec<Arc<Member>>,
    kills: Arc<AtomicU64>,
    _dir: tempfile::TempDir,
}

fn loaded() -> anyhow::Result<Arc<Loaded>> {
    let p = asm::assemble("idle.masm", IDLE).map_err(|d| anyhow::anyhow!("{d}"))?;
    let vp = verify::verify(p).map_err(|d| anyhow::anyhow!("{d}"))?;
    Ok(Arc::new(Loaded::new(vp)))
}

fn new_app(loaded: &Arc<Loaded>, arrays: u64) -> anyhow::Result<Arc<App>> {
    let cfg = RunConfig {
        heap: HeapConfig {
            handle_capacity: ((arrays as u32) + 4096).next_power_of_two(),
            ..HeapConfig::default()
        },
        out: Box::new(std::io::sink()),
        ..RunConfig::default()
    };
    Ok(Arc::new(App::new(loaded.clone(), cfg)?))
}

fn alloc_arrays(app: &App, n: u64) -> anyhow::Result<Vec<Handle>> {
    (0..n)
        .map(|_| {
            app.heap()
                .alloc(ObjKind::IntArray, ARRAY_CLASS, ARRAY_WORDS, 0)
                .context("allocating an array")
        })
        .collect()
}

impl World {
    /// Builds the background apps for `pressure` (none for `None`, the free case) and a
    /// foreground app; the budget is `bytes` (or unlimited when free).
    fn build(pressure: Option<PressurePolicy>, bytes: u64) -> anyhow::Result<World> {
        let loaded = loaded()?;
        let dir = tempfile::tempdir().context("creating the swap directory")?;
        let kills = Arc::new(AtomicU64::new(0));
        let k = kills.clone();
        let policy: Arc<dyn SwapPolicy> = Arc::new(PolicyConfig::default());
        let arrays = bytes / ARRAY_BYTES;
        let mut apps = Vec::new();
        let mut members = Vec::new();
        let per_app = arrays / BACKGROUND_APPS as u64;
        let background = if pressure.is_some() {
            BACKGROUND_APPS
        } else {
            0
        };
        for id in 0..=background {
            let foreground = id == background;
            let app = new_app(&loaded, if foreground { arrays } else { per_app })?;
            let name = format!("app{id}");
            if let Some(mode) = pressure.and_then(PressurePolicy::swap_mode) {
                app.enable_swap(dir.path(), &name, policy.clone(), mode)?;
            }
            if !foreground {
                let handles = alloc_arrays(&app, per_app)?;
                std::mem::forget(handles); // kept alive by the app's handle table
                if pressure == Some(PressurePolicy::Marvin) {
                    app.enter_background()?;
                    let saved = app.save_now(true)?;
                    ensure!(
                        saved.objects == per_app,
                        "saved {} of {per_app}",
                        saved.objects
                    );
                }
            }
            members.push(Arc::new(Member {
                id,
                app: Arc::downgrade(&app),
                foreground: AtomicBool::new(foreground),
                last_foreground_ns: AtomicU64::new(id as u64),
                alive: AtomicBool::new(true),
            }));
            apps.push(app);
        }
        // The budget holds the arrays and what the runtime holds for the apps: the
        // background apps' charge as built, and the foreground app's handle-table pages
        // for its arrays with the charge's headroom.
        let limit = if pressure.is_some() {
            let charged: u64 = apps.iter().map(|a| a.charged_bytes()).sum();
            let resident: u64 = apps.iter().map(|a| a.resident_bytes()).sum();
            let handles = (arrays * 8).next_multiple_of(PAGE as u64);
            bytes + (charged - resident) + handles + 2 * RUNTIME_HEADROOM as u64
        } else {
            u64::MAX / 4
        };
        let budget = Arc::new(Budget::new(
            limit,
            pressure.unwrap_or(PressurePolicy::Marvin),
            policy,
            Box::new(move |_| {
                k.fetch_add(1, Ordering::Relaxed);
            }),
        ));
        for (app, member) in apps.iter().zip(&members) {
            app.set_memory_budget(Arc::new(BudgetHook(Arc::downgrade(&budget))))?;
            budget.members.lock().push(member.clone());
        }
        Ok(World {
            budget,
            apps,
            _members: members,
            kills,
            _dir: dir,
        })
    }

    /// Times the foreground app allocating `arrays` arrays.
    fn time_alloc(&self, arrays: u64) -> anyhow::Result<f64> {
        let fg = self.apps.last().context("a foreground app")?;
        let t = Instant::now();
        let handles = alloc_arrays(fg, arrays)?;
        let ns = t.elapsed().as_nanos() as f64;
        ensure!(handles.len() as u64 == arrays, "allocation stopped short");
        Ok(ns)
    }
}

pub fn run(args: &AllocArgs) -> anyhow::Result<()> {
    let bytes = if args.quick {
        16 << 20
    } else {
        args.size as u64
    };
    ensure!(bytes >= 1 << 20, "--size must be at least 1m");
    if let Some(dir) = &args.plot {
        super::prepare_plot(dir)?;
    }
    let arrays = bytes / ARRAY_BYTES;
    let reps = args.common.reps.max(1);
    let scenario = format!("allocate {} MiB", bytes >> 20);
    let mut samples = Vec::new();
    let mut notes = vec![format!(
        "{arrays} one-page int arrays; budget = {} MiB held by {BACKGROUND_APPS} background apps under pressure; median of {reps} (fresh set-up each)",
        bytes >> 20
    )];
    for (name, pressure) in [
        (FREE, None),
        ("marvin", Some(PressurePolicy::Marvin)),
        ("page-swap", Some(PressurePolicy::PageSwap)),
    ] {
        let mut times = Vec::new();
        let (mut kills, mut over, mut reclaimed) = (0, 0, 0);
        for _ in 0..reps {
            let world = World::build(pressure, bytes)?;
            times.push(world.time_alloc(arrays)?);
            kills += world.kills.load(Ordering::Relaxed);
            over += world.budget.over_budget().0;
            reclaimed = world.budget.stats.lock().reclaimed_bytes;
        }
        let ns = median(&mut times);
        samples.push(
            Sample::new(&scenario, name, ns)
                .with("bytes", bytes)
                .with("reclaimed_bytes", reclaimed)
                .with("kills", kills)
                .with("over_budget_events", over),
        );
        if kills > 0 || over > 0 {
            notes.push(format!(
                "{name}: {kills} kills and {over} over-budget allocations (the budget could not be met)"
            ));
        }
    }
    let free = samples[0].median_ns;
    let marvin = samples[1].median_ns;
    let page = samples[2].median_ns;
    notes.push(format!(
        "under pressure marvin costs {:.2}x free (goal <= 1.25x: {}), page-swap {:.2}x (published: Linux swap ~17x, 8 s vs 450 ms)",
        marvin / free,
        if marvin / free <= 1.25 { "met" } else { "NOT met" },
        page / free
    ));
    if let Some(dir) = &args.plot {
        let mut bars: Vec<Bar> = samples
            .iter()
            .map(|s| Bar {
                label: s.implementation.clone(),
                value: s.median_ns / 1e6,
                published: false,
            })
            .collect();
        bars.push(Bar {
            label: "paper: free".into(),
            value: 450.0,
            published: true,
        });
        bars.push(Bar {
            label: "paper: Linux swap".into(),
            value: 8000.0,
            published: true,
        });
        let chart = Chart {
            name: "alloc",
            title: format!("Figure 3: allocating {} MiB, free and under pressure", bytes >> 20),
            x_label: "memory free, or the budget full of background apps (grey: published, 512 MB)",
            y_label: "time to allocate (ms, log scale)",
            curves: Vec::new(),
            bars,
            y_log: false,
            caption: format!(
                "marvin bench alloc, {} MiB of one-page arrays, {BACKGROUND_APPS} background apps, median of {reps}, commit {}",
                bytes >> 20,
                marvin_system::provenance::commit()
            ),
        };
        for f in chart.write(dir)? {
            notes.push(format!("wrote {}", f.display()));
        }
    }
    finish(samples, FREE, &args.common, &notes)?;
    Ok(())
}
