//! `marvin compare DIR...`: merges the output directories of several `marvin pressure`
//! runs (shards of one sweep, or separate experiments) into one table, and with `--out`
//! into one `summary.json`, `series.csv` and figures that overlay them.
//!
//! Runs are told apart by their column label and repetition. When two directories hold
//! the same (label, repetition), their labels are prefixed with the directory's name
//! (`DIR/label`), so separate experiments stay apart; shards of one grid never collide
//! and merge into the unsharded experiment's set of runs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use marvin_console::{errln, out, outln};
use marvin_system::record::Record;
use marvin_system::{self as system, series, summary, PolicySeries, Summary};

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Output directories of `marvin pressure --out` (or of `marvin compare --out`).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Write the merged summary.json, series.csv and figures here.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the merged runs as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Merge runs of different modes (in-process and processes) or time scales, which
    /// compare refuses otherwise: their figures do not measure the same thing.
    #[arg(long)]
    pub allow_mixed: bool,
    /// Merge a `marvin sweep` folder whose grid is incomplete (failed, missing or
    /// unfinished tasks), which compare refuses otherwise: its finished tasks only.
    #[arg(long)]
    pub partial: bool,
}

/// One directory's results.
struct Loaded {
    name: String,
    summaries: Vec<Summary>,
    series: Vec<PolicySeries>,
    /// Column labels in the experiment's order, from its config.toml.
    order: Vec<String>,
    /// Its config.toml, where it has one.
    record: Option<Record>,
}

impl Loaded {
    /// The modes its runs ran in.
    fn modes(&self) -> Vec<String> {
        let mut m: Vec<String> = self
            .summaries
            .iter()
            .map(|s| mode_name(&s.mode).to_owned())
            .chain(self.record.iter().map(|r| r.mode.clone()))
            .collect();
        m.sort();
        m.dedup();
        m
    }

    /// The time scale its record gives.
    fn time_scale(&self) -> Option<String> {
        let args = &self.record.as_ref()?.args;
        let i = args.iter().position(|a| a == "--time-scale")?;
        args.get(i + 1).cloned()
    }
}

/// A summary's mode as a record names it (older summaries of the model leave it empty).
fn mode_name(mode: &str) -> &str {
    if mode.is_empty() {
        "in-process"
    } else {
        mode
    }
}

/// Refuses to merge directories whose runs differ in mode or time scale, naming each
/// directory with its own.
fn check_alike(dirs: &[Loaded]) -> Result<(), String> {
    let mut modes: Vec<String> = dirs.iter().flat_map(Loaded::modes).collect();
    modes.sort();
    modes.dedup();
    if modes.len() > 1 {
        let each: Vec<String> = dirs
            .iter()
            .map(|d| format!("{} ({})", d.name, d.modes().join(" and ")))
            .collect();
        return Err(format!(
            "the runs were made in different modes, {}: {}. The in-process model counts its \
             budget itself and the process mode is held to it by the kernel, so their figures \
             do not compare; give --allow-mixed to merge them anyway",
            modes.join(" and "),
            each.join(", ")
        ));
    }
    let scales: Vec<(String, String)> = dirs
        .iter()
        .filter_map(|d| Some((d.name.clone(), d.time_scale()?)))
        .collect();
    if scales.iter().any(|(_, s)| *s != scales[0].1) {
        let each: Vec<String> = scales
            .iter()
            .map(|(n, s)| format!("{n} (--time-scale {s})"))
            .collect();
        return Err(format!(
            "the runs were made at different time scales: {}; give --allow-mixed to merge them anyway",
            each.join(", ")
        ));
    }
    Ok(())
}

fn load(dir: &Path) -> anyhow::Result<Loaded> {
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {} (not a marvin pressure output directory?)",
            path.display()
        )
    })?;
    let summaries: Vec<Summary> = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a list of runs", path.display()))?;
    let csv = dir.join("series.csv");
    let series = if csv.exists() {
        series::read_csv(&csv)?
    } else {
        Vec::new()
    };
    let record = Record::read(&dir.join("config.toml")).ok();
    let order = record
        .iter()
        .flat_map(|r| r.columns.iter().map(|c| c.label.clone()))
        .collect();
    let name = dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| dir.display().to_string());
    Ok(Loaded {
        name,
        summaries,
        series,
        order,
        record,
    })
}

/// The record of the merged directories: one experiment's record with the runs of all,
/// when every directory holds a shard (or the whole) of that one experiment; else none.
fn merged_record(dirs: &[Loaded]) -> Option<Record> {
    let without_shard = |r: &Record| {
        let mut args = r.args.clone();
        if let Some(i) = args.iter().position(|a| a == "--shard") {
            args.drain(i..(i + 2).min(args.len()));
        }
        args
    };
    let first = dirs.first()?.record.as_ref()?;
    let mut merged = first.clone();
    merged.shard = None;
    merged.args = without_shard(first);
    merged.command = std::iter::once("marvin pressure".to_owned())
        .chain(
            merged
                .args
                .iter()
                .map(|a| marvin_system::record::shell_quote(a)),
        )
        .collect::<Vec<_>>()
        .join(" ");
    merged.runs.clear();
    for d in dirs {
        let r = d.record.as_ref()?;
        if without_shard(r) != merged.args
            || r.mode != first.mode
            || r.columns != first.columns
            || r.workload != first.workload
        {
            return None;
        }
        for run in &r.runs {
            if !merged.runs.iter().any(|m| m.index == run.index) {
                merged.runs.push(*run);
            }
        }
    }
    merged.runs.sort_by_key(|r| r.index);
    Some(merged)
}

fn label_of(s: &Summary) -> &str {
    if s.label.is_empty() {
        &s.policy
    } else {
        &s.label
    }
}

/// Merges directories' runs: labels prefixed where runs collide, runs ordered by
/// repetition, then by the experiments' column order.
fn merge(mut dirs: Vec<Loaded>) -> anyhow::Result<(Vec<Summary>, Vec<PolicySeries>)> {
    let mut seen: HashMap<(String, u32), usize> = HashMap::new();
    let mut collide = false;
    for (i, d) in dirs.iter().enumerate() {
        for s in &d.summaries {
            if let Some(&j) = seen.get(&(label_of(s).to_owned(), s.rep)) {
                if j != i {
                    collide = true;
                }
            }
            seen.insert((label_of(s).to_owned(), s.rep), i);
        }
    }
    if collide {
        let mut names: Vec<&str> = dirs.iter().map(|d| d.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        anyhow::ensure!(
            names.len() == dirs.len(),
            "the directories hold the same runs and share a name; give directories with distinct names"
        );
        for d in &mut dirs {
            let prefix = |l: &str| format!("{}/{l}", d.name);
            for s in &mut d.summaries {
                s.label = prefix(label_of(s));
            }
            for s in &mut d.series {
                s.policy = prefix(&s.policy);
            }
            d.order = d.order.iter().map(|l| prefix(l)).collect();
        }
    }
    let mut order: Vec<String> = Vec::new();
    for d in &dirs {
        for l in &d.order {
            if !order.contains(l) {
                order.push(l.clone());
            }
        }
    }
    let rank = |label: &str| order.iter().position(|l| l == label).unwrap_or(usize::MAX);
    let mut summaries: Vec<Summary> = dirs.iter().flat_map(|d| d.summaries.clone()).collect();
    // Stable: runs of labels no record names keep their order of appearance.
    summaries.sort_by_key(|s| (s.rep, rank(label_of(s))));
    let mut series: Vec<PolicySeries> = dirs.into_iter().flat_map(|d| d.series).collect();
    series.sort_by_key(|s| (s.rep, rank(&s.policy)));
    Ok((summaries, series))
}

pub fn compare(a: &CompareArgs) -> anyhow::Result<i32> {
    if let Some(out) = &a.out {
        if let Err(e) = marvin_system::paths::check_output_dir("--out", out) {
            errln!("error: {e}");
            return Ok(super::EXIT_USAGE);
        }
    }
    // A sweep's folder stands for its finished tasks' folders.
    let mut given = Vec::new();
    for d in &a.dirs {
        if !d.join(super::sweep::folder::SWEEP_FILE).exists() {
            given.push(d.clone());
            continue;
        }
        match super::sweep::status::finished_dirs(d, a.partial) {
            Ok((tasks, warning)) => {
                if let Some(w) = warning {
                    errln!("warning: {w}");
                }
                given.extend(tasks);
            }
            Err(e) => {
                errln!("error: {e:#}");
                return Ok(super::EXIT_USAGE);
            }
        }
    }
    if let Err(e) = super::sweep::status::one_binary(&given) {
        errln!("error: {e:#}");
        return Ok(super::EXIT_USAGE);
    }
    let mut dirs = Vec::new();
    for d in &given {
        match load(d) {
            Ok(l) => dirs.push(l),
            Err(e) => {
                errln!("error: {e:#}");
                return Ok(super::EXIT_USAGE);
            }
        }
    }
    if !a.allow_mixed {
        if let Err(e) = check_alike(&dirs) {
            errln!("error: {e}");
            return Ok(super::EXIT_USAGE);
        }
    }
    // The records, before merging takes the directories.
    let record = merged_record(&dirs);
    let records: Vec<(String, Record)> = dirs
        .iter()
        .filter_map(|d| Some((d.name.clone(), d.record.clone()?)))
        .collect();
    let (summaries, series) = match merge(dirs) {
        Ok(m) => m,
        Err(e) => {
            errln!("error: {e:#}");
            return Ok(super::EXIT_USAGE);
        }
    };
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&summaries)?)?;
    } else {
        out!("{}", summary::table(&summaries))?;
    }
    if let Some(out) = &a.out {
        let budget = summaries
            .iter()
            .map(|s| s.budget_bytes.max(s.limit_bytes))
            .max()
            .unwrap_or(0);
        let counted = if summaries.iter().any(|s| s.mode == "processes") {
            system::plot::Counted::Kernel
        } else {
            system::plot::Counted::Runtime
        };
        let sources: Vec<String> = a.dirs.iter().map(|d| d.display().to_string()).collect();
        let caption = format!("marvin compare of {}", sources.join(", "));
        // The files a single run writes, merged.
        let mut files = system::write_data(out, &summaries, &series)?;
        match record {
            // Shards of one experiment: its record, holding every run.
            Some(r) => {
                let path = out.join("config.toml");
                r.write(&path)?;
                files.push(path);
            }
            // Separate experiments: each one's record, named after its directory.
            None => {
                for (name, r) in &records {
                    let path = out.join(format!("config-{name}.toml"));
                    r.write(&path)?;
                    files.push(path);
                }
            }
        }
        let list = out.join("sources.txt");
        std::fs::write(&list, sources.join("\n") + "\n")
            .with_context(|| format!("writing {}", list.display()))?;
        files.push(list);
        files.extend(system::write_figures(
            out, &summaries, &series, budget, counted, &caption, None,
        )?);
        errln!("wrote {}: {}", out.display(), system::file_names(&files));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str, runs: &[(&str, u32)], order: &[&str]) -> Loaded {
        Loaded {
            name: name.into(),
            summaries: runs
                .iter()
                .map(|(l, r)| Summary {
                    label: (*l).into(),
                    rep: *r,
                    ..Summary::new("marvin")
                })
                .collect(),
            series: runs
                .iter()
                .map(|(l, r)| PolicySeries {
                    policy: (*l).into(),
                    rep: *r,
                    points: Vec::new(),
                })
                .collect(),
            order: order.iter().map(|s| s.to_string()).collect(),
            record: None,
        }
    }

    fn keys(s: &[Summary]) -> Vec<(String, u32)> {
        s.iter().map(|s| (s.label.clone(), s.rep)).collect()
    }

    #[test]
    fn shards_merge_in_the_experiment_order() {
        let order = ["kill", "page-swap", "marvin"];
        let a = dir(
            "s1",
            &[("kill", 0), ("marvin", 0), ("page-swap", 1)],
            &order,
        );
        let b = dir(
            "s2",
            &[("page-swap", 0), ("kill", 1), ("marvin", 1)],
            &order,
        );
        let (s, series) = merge(vec![a, b]).unwrap();
        let want: Vec<(String, u32)> = [0, 1]
            .into_iter()
            .flat_map(|r| order.iter().map(move |l| (l.to_string(), r)))
            .collect();
        assert_eq!(keys(&s), want);
        assert_eq!(series.len(), 6);
        assert_eq!((series[1].policy.as_str(), series[1].rep), ("page-swap", 0));
    }

    #[test]
    fn separate_experiments_are_prefixed_by_directory() {
        let a = dir("small", &[("kill", 0), ("marvin", 0)], &["kill", "marvin"]);
        let b = dir("large", &[("kill", 0), ("marvin", 0)], &["kill", "marvin"]);
        let (s, series) = merge(vec![a, b]).unwrap();
        let labels: Vec<String> = keys(&s).into_iter().map(|k| k.0).collect();
        assert_eq!(
            labels,
            ["small/kill", "small/marvin", "large/kill", "large/marvin"]
        );
        assert_eq!(series[3].policy, "large/marvin");
        let c = dir("x", &[("kill", 0)], &[]);
        let d = dir("x", &[("kill", 0)], &[]);
        assert!(merge(vec![c, d]).is_err());
    }
}
