//! The grid of runs an experiment is made of: its columns (one per pressure policy, and
//! for Marvin one per `--variant` policy file and `--sweep` point), the repetitions of
//! each, and which of those runs one `--shard I/N` takes.
//!
//! Runs are numbered repetition by repetition (every column of repetition 0, then of
//! repetition 1, ...); shard `I` of `N` takes the runs whose number is `I-1` modulo `N`,
//! so the shards of a grid are disjoint, together make the whole grid, and each holds
//! about as many runs of every column as the others.

use marvin_swap::PolicyConfig;
use serde::{Deserialize, Serialize};

use crate::PressurePolicy;

/// One column of the table: a pressure policy and the swap policy it runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// `kill`, `page-swap`, `kernel-swap`, `marvin`, or `marvin:NAME` for a variant or
    /// sweep point.
    pub label: String,
    pub pressure: PressurePolicy,
    /// The swap policy before `--time-scale` (the experiment scales it).
    pub policy: PolicyConfig,
}

/// One run of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// The run's number in the whole grid.
    pub index: usize,
    pub rep: u32,
    /// Index into the columns.
    pub column: usize,
    /// `--seed` plus the repetition.
    pub seed: u64,
}

/// `--shard I/N`: the `I`-th of `N` shares of the grid (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("invalid shard '{s}' (expected I/N with 1 <= I <= N, e.g. 2/8)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    pub fn contains(&self, run: usize) -> bool {
        run % self.count == self.index - 1
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// `--variant NAME=FILE`: a name for a policy file.
pub fn parse_variant(s: &str) -> Result<(String, std::path::PathBuf), String> {
    let (name, file) = s
        .split_once('=')
        .ok_or_else(|| format!("invalid variant '{s}' (expected NAME=FILE)"))?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(format!(
            "invalid variant name '{name}' (letters, digits, '-', '_' and '.' only)"
        ));
    }
    if file.is_empty() {
        return Err(format!("variant '{name}' names no file"));
    }
    Ok((name.to_owned(), file.into()))
}

/// `--sweep KEY=V1,V2,...`: a policy knob (its dotted TOML path) and its values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweep {
    pub key: String,
    pub values: Vec<String>,
}

impl Sweep {
    pub fn parse(s: &str) -> Result<Sweep, String> {
        let (key, values) = s
            .split_once('=')
            .ok_or_else(|| format!("invalid sweep '{s}' (expected KEY=V1,V2,...)"))?;
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_owned()).collect();
        if key.trim().is_empty() || values.iter().any(String::is_empty) {
            return Err(format!("invalid sweep '{s}' (expected KEY=V1,V2,...)"));
        }
        Ok(Sweep {
            key: key.trim().to_owned(),
            values,
        })
    }

    /// The flag's text (as `--sweep` takes it).
    pub fn to_arg(&self) -> String {
        format!("{}={}", self.key, self.values.join(","))
    }
}

/// Sets the knob at the dotted `key` (as `marvin policy show` prints it) to `value`,
/// read as the knob's own type; the result is checked as a policy file would be.
pub fn set_knob(policy: &PolicyConfig, key: &str, value: &str) -> Result<PolicyConfig, String> {
    let mut doc: toml::Table = toml::from_str(&policy.to_toml_string())
        .map_err(|e| format!("the policy does not read back: {e}"))?;
    let unknown = || format!("unknown policy knob '{key}' (see `marvin policy show`)");
    let mut parts = key.split('.').peekable();
    let mut table = &mut doc;
    let slot = loop {
        let part = parts.next().ok_or_else(unknown)?;
        if parts.peek().is_none() {
            break table.get_mut(part).ok_or_else(unknown)?;
        }
        table = table
            .get_mut(part)
            .and_then(toml::Value::as_table_mut)
            .ok_or_else(unknown)?;
    };
    let bad = |what: &str| format!("'{value}' is not {what} (the knob {key})");
    *slot = match slot {
        toml::Value::Integer(_) => {
            toml::Value::Integer(value.parse().map_err(|_| bad("an integer"))?)
        }
        toml::Value::Float(_) => toml::Value::Float(value.parse().map_err(|_| bad("a number"))?),
        toml::Value::Boolean(_) => {
            toml::Value::Boolean(value.parse().map_err(|_| bad("true or false"))?)
        }
        toml::Value::String(_) => toml::Value::String(value.to_owned()),
        // A knob that takes a list: its items joined by '+' (e.g. int-array+byte-array).
        toml::Value::Array(_) => toml::Value::Array(
            value
                .split('+')
                .map(|v| toml::Value::String(v.trim().to_owned()))
                .collect(),
        ),
        toml::Value::Table(_) | toml::Value::Datetime(_) => return Err(unknown()),
    };
    let text = toml::to_string(&doc).map_err(|e| format!("{e}"))?;
    PolicyConfig::from_toml_str(&text).map_err(|e| format!("{key}={value}: {e}"))
}

/// The columns: one per pressure policy in order; Marvin's column becomes one per
/// variant (`marvin:NAME`, in the order given), and each of those one per point of the
/// sweeps' grid (`marvin:KEY=V` or `marvin:NAME:KEY=V,KEY2=W`).
pub fn columns(
    pressures: &[PressurePolicy],
    base: &PolicyConfig,
    variants: &[(String, PolicyConfig)],
    sweeps: &[Sweep],
) -> Result<Vec<Column>, String> {
    if (!variants.is_empty() || !sweeps.is_empty()) && !pressures.contains(&PressurePolicy::Marvin)
    {
        return Err(
            "--variant and --sweep vary Marvin's policy, but marvin is not among the policies run"
                .into(),
        );
    }
    let mut names = std::collections::HashSet::new();
    if let Some((dup, _)) = variants.iter().find(|(n, _)| !names.insert(n.clone())) {
        return Err(format!("the variant name '{dup}' is given twice"));
    }
    let mut out = Vec::new();
    for &p in pressures {
        if p != PressurePolicy::Marvin {
            out.push(Column {
                label: p.name().to_owned(),
                pressure: p,
                policy: base.clone(),
            });
            continue;
        }
        let starts: Vec<(String, PolicyConfig)> = if variants.is_empty() {
            vec![("marvin".to_owned(), base.clone())]
        } else {
            variants
                .iter()
                .map(|(n, pol)| (format!("marvin:{n}"), pol.clone()))
                .collect()
        };
        for (label, policy) in starts {
            // The sweeps' grid: every combination of one value per sweep.
            let mut points: Vec<(Vec<String>, PolicyConfig)> = vec![(Vec::new(), policy)];
            for sweep in sweeps {
                let mut next = Vec::new();
                for (names, pol) in &points {
                    for v in &sweep.values {
                        let mut names = names.clone();
                        names.push(format!("{}={v}", sweep.key));
                        next.push((names, set_knob(pol, &sweep.key, v)?));
                    }
                }
                points = next;
            }
            for (names, policy) in points {
                let label = match (names.is_empty(), label == "marvin") {
                    (true, _) => label.clone(),
                    (false, true) => format!("marvin:{}", names.join(",")),
                    (false, false) => format!("{label}:{}", names.join(",")),
                };
                out.push(Column {
                    label,
                    pressure: p,
                    policy,
                });
            }
        }
    }
    Ok(out)
}

/// Every run of the grid, repetition by repetition.
pub fn grid(columns: usize, reps: u32, seed: u64) -> Vec<Run> {
    (0..reps)
        .flat_map(|rep| (0..columns).map(move |column| (rep, column)))
        .enumerate()
        .map(|(index, (rep, column))| Run {
            index,
            rep,
            column,
            seed: seed.wrapping_add(u64::from(rep)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_the_grid_without_overlap() {
        let all = grid(4, 3, 10);
        assert_eq!(all.len(), 12);
        assert_eq!((all[5].rep, all[5].column, all[5].seed), (1, 1, 11));
        let shards: Vec<Shard> = (1..=5).map(|i| Shard { index: i, count: 5 }).collect();
        let mut seen = vec![0; all.len()];
        for s in &shards {
            for r in all.iter().filter(|r| s.contains(r.index)) {
                seen[r.index] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    }

    #[test]
    fn shard_and_variant_syntax() {
        assert_eq!(Shard::parse("2/8"), Ok(Shard { index: 2, count: 8 }));
        for bad in ["0/2", "3/2", "1", "a/b", "1/0"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_variant("fast=a.toml").unwrap().0, "fast");
        assert!(parse_variant("fast").is_err());
        assert!(parse_variant("a b=x.toml").is_err());
        assert!(parse_variant("x=").is_err());
        assert!(Sweep::parse("k=").is_err());
        assert_eq!(Sweep::parse("a.b=1, 2").unwrap().values, ["1", "2"]);
    }

    #[test]
    fn knobs_are_set_by_their_dotted_name_and_checked() {
        let base = PolicyConfig::default();
        let p = set_knob(&base, "coldness.window_rounds", "2").unwrap();
        assert_eq!(p.coldness.window_rounds, 2);
        let p = set_knob(&base, "saver.background_period", "5s").unwrap();
        assert_eq!(p.saver.background_period, std::time::Duration::from_secs(5));
        assert!(set_knob(&base, "coldness.nope", "1")
            .unwrap_err()
            .contains("unknown"));
        assert!(set_knob(&base, "coldness", "1")
            .unwrap_err()
            .contains("unknown"));
        assert!(set_knob(&base, "coldness.window_rounds", "x")
            .unwrap_err()
            .contains("integer"));
        // Out of the knob's range: the policy's own check says so.
        assert!(set_knob(&base, "coldness.window_rounds", "9").is_err());
    }

    #[test]
    fn variants_and_sweeps_make_labelled_marvin_columns() {
        let base = PolicyConfig::default();
        let all = [
            PressurePolicy::Kill,
            PressurePolicy::PageSwap,
            PressurePolicy::Marvin,
        ];
        let plain = columns(&all, &base, &[], &[]).unwrap();
        let labels = |c: &[Column]| c.iter().map(|c| c.label.clone()).collect::<Vec<_>>();
        assert_eq!(labels(&plain), ["kill", "page-swap", "marvin"]);

        let mut fast = base.clone();
        fast.coldness.window_rounds = 1;
        let variants = vec![("a".to_owned(), base.clone()), ("fast".to_owned(), fast)];
        let sweep = Sweep::parse("restore.mode=eager,on-demand").unwrap();
        let cols = columns(&all, &base, &variants, std::slice::from_ref(&sweep)).unwrap();
        assert_eq!(
            labels(&cols),
            [
                "kill",
                "page-swap",
                "marvin:a:restore.mode=eager",
                "marvin:a:restore.mode=on-demand",
                "marvin:fast:restore.mode=eager",
                "marvin:fast:restore.mode=on-demand"
            ]
        );
        assert_eq!(cols[5].policy.coldness.window_rounds, 1);
        assert_ne!(cols[4].policy, cols[5].policy);
        let swept = columns(&all, &base, &[], &[sweep]).unwrap();
        assert_eq!(labels(&swept)[2], "marvin:restore.mode=eager");
        assert!(columns(&[PressurePolicy::Kill], &base, &variants, &[]).is_err());
        let twice = vec![
            ("a".to_owned(), base.clone()),
            ("a".to_owned(), base.clone()),
        ];
        assert!(columns(&all, &base, &twice, &[])
            .unwrap_err()
            .contains("twice"));
    }
}
