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

use super::record::Record;
use crate::system::{self, series, summary, PolicySeries, Summary};
use crate::{errln, out, outln};

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
}

/// One directory's results.
struct Loaded {
    name: String,
    summaries: Vec<Summary>,
    series: Vec<PolicySeries>,
    /// Column labels in the experiment's order, from its config.toml.
    order: Vec<String>,
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
    let order = match Record::read(&dir.join("config.toml")) {
        Ok(r) => r.columns.into_iter().map(|c| c.label).collect(),
        Err(_) => Vec::new(),
    };
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
    })
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
        if let Err(e) = super::paths::check_output_dir("--out", out) {
            errln!("error: {e}");
            return Ok(super::EXIT_USAGE);
        }
    }
    let mut dirs = Vec::new();
    for d in &a.dirs {
        match load(d) {
            Ok(l) => dirs.push(l),
            Err(e) => {
                errln!("error: {e:#}");
                return Ok(super::EXIT_USAGE);
            }
        }
    }
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
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        std::fs::write(
            out.join("summary.json"),
            serde_json::to_string_pretty(&summaries)?,
        )?;
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
        system::write_outputs(out, &series, budget, counted, &caption)?;
        std::fs::write(out.join("sources.txt"), sources.join("\n") + "\n")?;
        errln!("wrote {}", out.display());
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
