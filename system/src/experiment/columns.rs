//! The columns of an experiment: from its flags ([`new_columns`]), or as a record holds
//! them with the experiment it came from ([`from_record`], [`recorded_columns`]).

use marvin_swap::PolicyConfig;

use super::flags::{to_args, PolicyChoice, PressureArgs};
use crate::plan::{self, Column};
use crate::record::Record;
use crate::PressurePolicy;

/// The experiment a config record holds, with `given`'s output flags; an error when
/// `given` sets anything else (the record decides every setting).
pub(super) fn from_record(
    given: &PressureArgs,
    path: &std::path::Path,
) -> Result<(PressureArgs, Option<Record>), String> {
    let defaults = PressureArgs::parse_args(&[]).map_err(|e| e.to_string())?;
    let mut bare = given.clone();
    (bare.out, bare.trace, bare.json, bare.quiet, bare.config) = (None, None, false, false, None);
    if to_args(&bare, None) != to_args(&defaults, None) {
        return Err(format!(
            "--config takes every setting from {}; beside it give only --out, --trace, --json or --quiet",
            path.display()
        ));
    }
    let rec = Record::read(path)?;
    let mut a = PressureArgs::parse_args(&rec.args).map_err(|e| {
        format!(
            "{}: the recorded arguments do not parse: {e}",
            path.display()
        )
    })?;
    a.out.clone_from(&given.out);
    a.trace.clone_from(&given.trace);
    a.json = given.json;
    a.quiet = given.quiet;
    Ok((a, Some(rec)))
}

/// The columns of a new experiment: its policies in order, Marvin's variants (their
/// files read now) and sweeps applied to the plain `marvin`; `marvin-eager` and
/// `marvin-on-demand` are marvin columns with the restore mode set.
pub(super) fn new_columns(
    a: &PressureArgs,
    choices: &[PolicyChoice],
    base: &PolicyConfig,
) -> Result<Vec<Column>, String> {
    let mut variants = Vec::new();
    for (name, file) in &a.variant {
        let p = PolicyConfig::from_file(file).map_err(|e| format!("--variant {name}: {e}"))?;
        variants.push((name.clone(), p));
    }
    let plain_marvin = choices
        .iter()
        .any(|c| c.pressure == PressurePolicy::Marvin && c.restore.is_none());
    if (!variants.is_empty() || !a.sweep.is_empty()) && !plain_marvin {
        return Err(
            "--variant and --sweep vary Marvin's policy, but marvin is not among the policies run"
                .into(),
        );
    }
    let mut out = Vec::new();
    for c in choices {
        let marvin = c.pressure == PressurePolicy::Marvin;
        match c.restore {
            None => out.extend(plan::columns(
                &[c.pressure],
                base,
                if marvin { &variants } else { &[] },
                if marvin { &a.sweep } else { &[] },
            )?),
            Some(mode) => {
                let mut policy = base.clone();
                policy.restore.mode = mode;
                out.push(Column {
                    label: c.name().to_owned(),
                    pressure: PressurePolicy::Marvin,
                    policy,
                });
            }
        }
    }
    Ok(out)
}

/// The columns a record holds, policies as recorded.
pub(super) fn recorded_columns(rec: &Record) -> Result<Vec<Column>, String> {
    rec.columns
        .iter()
        .map(|c| {
            Ok(Column {
                label: c.label.clone(),
                pressure: PressurePolicy::parse(&c.pressure)?,
                policy: c.policy.clone(),
            })
        })
        .collect()
}
