//! What the experiment writes and prints once every run is finished: the trace, the
//! guards' warnings, the table (or JSON), and the results directory's data, record and
//! figures.

use anyhow::Context;
use marvin_console::{errln, out, outln};

use super::driver::{RecordBase, Results};
use super::flags::duration_arg;
use super::guards::guards;
use super::mode::Mode;
use super::prepare::{Given, Planned};
use crate::{provenance, summary};

/// Writes and prints the results of every run.
pub(super) fn finish(
    given: &Given,
    planned: &Planned,
    record: &RecordBase,
    results: &Results,
) -> anyhow::Result<()> {
    let a = &given.a;
    let budget = planned.budget;
    let summaries = &results.summaries;
    if let (Some(tracer), Some(path)) = (&planned.cfg.tracer, &a.trace) {
        tracer
            .write_to(path)
            .with_context(|| format!("writing the trace {}", path.display()))?;
    }
    let warnings = guards(summaries, budget as u64);
    for w in &warnings {
        errln!("warning: {w}");
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(summaries)?)?;
    } else {
        outln!("{}", planned.mode.title(budget))?;
        out!(
            "{}",
            summary::table_with(summaries, given.published.as_ref())
        )?;
        for w in &warnings {
            outln!("warning: {w}")?;
        }
    }
    if let Some(dir) = &a.out {
        let counted = match planned.mode {
            Mode::Processes(_) => crate::plot::Counted::Kernel,
            Mode::InProcess(_) => crate::plot::Counted::Runtime,
        };
        let caption = format!(
            "{}, {} apps, budget {} MiB, a launch every {}, {} per run, time scale {}, \
             workload {}, {} repetition(s), seed {}, commit {}",
            planned.resolved.mode,
            a.apps,
            budget >> 20,
            duration_arg(a.launch_every),
            duration_arg(a.duration),
            a.time_scale,
            given.source.display(),
            a.reps,
            a.seed,
            provenance::commit()
        );
        let mut files = crate::write_data(dir, summaries, &results.series)?;
        let config = dir.join("config.toml");
        record.with_runs(&planned.runs, summaries).write(&config)?;
        files.push(config);
        files.extend(crate::write_figures(
            dir,
            summaries,
            &results.series,
            budget as u64,
            counted,
            &caption,
            given.published.as_ref(),
        )?);
        errln!("wrote {}: {}", dir.display(), crate::file_names(&files));
    }
    if let Some(path) = &a.trace {
        errln!("wrote {}", path.display());
    }
    Ok(())
}
