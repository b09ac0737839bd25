//! `marvin bench interpose`: what the access barrier costs as the share of
//! object-accessing instructions grows.
//!
//! `benches/programs/interpose.masm` (built into the binary) runs about 200 M
//! instructions of which `PCT` percent are `getfield`/`putfield` (set with `-D PCT=`;
//! counted as MASM instructions as written: the interpreter fuses some runs into one
//! dispatch, see the program's header). Each share runs in-process with barriers on
//! (the normal runtime) and off (`--no-barrier`), alternating per repetition; the
//! overhead is on/off - 1. The program prints how many accesses and instructions it ran,
//! and the realised share is reported beside the requested one. Published Marvin: 10%
//! overhead at 1%, 350% at 40%.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, ensure, Context};
use clap::Args;
use marvin_app::RunConfig;
use marvin_interpreter::{asm, verify};
use parking_lot::Mutex;

use super::{finish, median, CommonArgs, Sample};
use marvin_figures::{Chart, Curve};

#[derive(Debug, Args)]
pub struct InterposeArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// About 10 M instructions per run instead of 200 M.
    #[arg(long)]
    pub quick: bool,
    /// Draw the paper's figure 9 from the results (SVG and PNG, with the published
    /// values beside marvin's) into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<std::path::PathBuf>,
}

/// The program, built in so that the benchmark runs from anywhere.
pub const PROGRAM: &str = include_str!("../../benches/programs/interpose.masm");
/// Shares of object-accessing instructions measured, in percent.
const SHARES: [i64; 5] = [1, 5, 10, 20, 40];
const ON: &str = "barriers";
const OFF: &str = "no-barrier";

/// Collects what a run prints.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs the program once; returns (wall ns, accesses, instructions) as it reports them.
fn run_once(pct: i64, total: i64, barriers: bool) -> anyhow::Result<(f64, u64, u64)> {
    let mut p = asm::assemble("interpose.masm", PROGRAM).map_err(|d| anyhow::anyhow!("{d}"))?;
    p.link(&[("PCT".into(), pct), ("TOTAL".into(), total)])
        .map_err(|d| anyhow::anyhow!("{d}"))?;
    let vp = verify::verify(p).map_err(|d| anyhow::anyhow!("{d}"))?;
    let out = Captured::default();
    let cfg = RunConfig {
        barriers,
        out: Box::new(out.clone()),
        ..RunConfig::default()
    };
    let t = Instant::now();
    let outcome = marvin_app::run(vp, cfg).context("running interpose.masm")?;
    let ns = t.elapsed().as_nanos() as f64;
    if outcome.status != 0 {
        bail!(
            "interpose.masm failed: {}",
            outcome.error.unwrap_or_default()
        );
    }
    let text = String::from_utf8_lossy(&out.0.lock()).into_owned();
    let nums: Vec<u64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    ensure!(nums.len() == 2, "interpose.masm printed {text:?}");
    Ok((ns, nums[0], nums[1]))
}

pub fn run(args: &InterposeArgs) -> anyhow::Result<()> {
    let total: i64 = if args.quick { 10_000_000 } else { 200_000_000 };
    let reps = args.common.reps.max(1);
    if let Some(dir) = &args.plot {
        super::prepare_plot(dir)?;
    }
    let mut overheads = Vec::new();
    let mut samples = Vec::new();
    let mut notes = vec![format!(
        "~{}M MASM instructions per run, counted as written; in-process, barriers on/off alternating; median of {reps} after a warm-up",
        total / 1_000_000
    )];
    for pct in SHARES {
        let mut on = Vec::new();
        let mut off = Vec::new();
        let mut counts = (0, 0);
        for rep in 0..=reps {
            let (t_on, acc, ins) = run_once(pct, total, true)?;
            let (t_off, acc2, ins2) = run_once(pct, total, false)?;
            ensure!(
                (acc, ins) == (acc2, ins2),
                "the two runs did different work"
            );
            counts = (acc, ins);
            if rep > 0 {
                on.push(t_on);
                off.push(t_off);
            }
        }
        let realised = 100.0 * counts.0 as f64 / counts.1 as f64;
        let (m_on, m_off) = (median(&mut on), median(&mut off));
        let overhead = m_on / m_off - 1.0;
        overheads.push((realised, 100.0 * overhead));
        let scenario = format!("{pct}% accesses");
        for (name, ns) in [(OFF, m_off), (ON, m_on)] {
            samples.push(
                Sample::new(&scenario, name, ns)
                    .with("access_pct", pct)
                    .with("realised_access_pct", realised)
                    .with("accesses", counts.0)
                    .with("instructions", counts.1)
                    .with("ns_per_instruction", ns / counts.1 as f64),
            );
        }
        if let Some(s) = samples.last_mut() {
            *s = s.clone().with("overhead", overhead);
        }
        let goal = match pct {
            1 => Some(0.05),
            40 => Some(0.50),
            _ => None,
        };
        let published = match pct {
            1 => " (published 10%)",
            40 => " (published 350%)",
            _ => "",
        };
        notes.push(format!(
            "{pct:>2}% accesses (realised {realised:.2}%): overhead {:+.1}%{published}{}",
            100.0 * overhead,
            goal.map(|g| format!(
                ", goal < {:.0}%: {}",
                100.0 * g,
                if overhead < g { "met" } else { "NOT met" }
            ))
            .unwrap_or_default()
        ));
    }
    notes.push(
        "barriers on and off are two compilations of the interpreter loop (generic over the \
         barrier mode); they differ in register allocation and code layout, which at low \
         access shares can outweigh the barrier itself either way: a negative overhead means \
         the barrier build's loop came out faster as a whole"
            .to_string(),
    );
    if let Some(dir) = &args.plot {
        let chart = Chart {
            name: "interpose",
            title: "Figure 9: access-barrier overhead".into(),
            x_label: "object-accessing instructions (%)",
            y_label: "overhead of the barriers (%)",
            curves: vec![
                Curve {
                    label: "marvin".into(),
                    points: overheads,
                    published: false,
                },
                Curve {
                    label: "published (Marvin, ATC 2020)".into(),
                    points: vec![(1.0, 10.0), (40.0, 350.0)],
                    published: true,
                },
            ],
            bars: Vec::new(),
            y_log: false,
            caption: format!(
                "marvin bench interpose, ~{}M instructions a run, barriers on vs off, median of {reps}, commit {}",
                total / 1_000_000,
                marvin_system::provenance::commit()
            ),
        };
        for f in chart.write(dir)? {
            notes.push(format!("wrote {}", f.display()));
        }
    }
    finish(samples, OFF, &args.common, &notes)?;
    Ok(())
}
