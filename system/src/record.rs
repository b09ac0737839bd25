//! The `config.toml` every `marvin pressure --out DIR` writes: every flag's value (as a
//! command line that re-runs the experiment), each column's resolved swap policy, the
//! workload's source, content hash and overrides, the runs the directory holds, the
//! commit the binary was built from and the host. `marvin pressure --config
//! DIR/config.toml --out NEW` re-runs exactly that experiment: the recorded policies
//! are used as recorded (the policy files need not exist any more) and the workload
//! must still have the recorded hash.

use std::path::Path;

use marvin_swap::PolicyConfig;
use serde::{Deserialize, Serialize};

use crate::plan::Run;
use crate::provenance::Host;
use crate::scale::Choice;

/// A column as recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnRecord {
    pub label: String,
    pub pressure: String,
    /// The swap policy before `--time-scale`.
    pub policy: PolicyConfig,
}

/// The workload as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadRecord {
    /// `builtin:NAME` or the path given.
    pub source: String,
    /// FNV-1a 64 of its bytes.
    pub fnv1a64: String,
    /// The `-D` overrides given on the command line.
    pub overrides: Vec<String>,
    /// Every constant the experiment set (the model's, the scaled `*_MS`, the overrides).
    pub defines: Vec<String>,
}

/// The whole record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The command line, for reading (and pasting).
    pub command: String,
    /// Every flag's resolved value, as arguments of `marvin pressure`.
    pub args: Vec<String>,
    /// The mode that ran (`processes` or `in-process`).
    pub mode: String,
    pub marvin_version: String,
    /// The commit the binary was built from (`-dirty`: with uncommitted changes).
    pub commit: String,
    /// `I/N` when the directory holds one shard of the grid.
    pub shard: Option<String>,
    pub workload: WorkloadRecord,
    pub host: Host,
    /// The columns in order, with their policies.
    pub columns: Vec<ColumnRecord>,
    /// The runs this directory holds.
    pub runs: Vec<Run>,
    /// `--scale`: `default` or `paper` (records before the flag: `default`).
    #[serde(default = "default_scale")]
    pub scale: String,
    /// With `--scale paper`: every setting it chose (or a flag beside it gave), with why.
    #[serde(default)]
    pub scale_settings: Vec<Choice>,
    /// The `zram` policy: how its compressed pool was charged to the budget, as its
    /// run announced it (with the algorithm).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zram_charging: Option<String>,
}

fn default_scale() -> String {
    "default".to_owned()
}

const HEADER: &str = "# The settings of this experiment, written by marvin pressure.\n\
# Re-run it with: marvin pressure --config THIS_FILE --out NEW_DIR\n";

impl Record {
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let text = toml::to_string(self)?;
        std::fs::write(path, format!("{HEADER}{text}"))
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
    }

    /// Reads a record; errors name the file.
    pub fn read(path: &Path) -> Result<Record, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        toml::from_str(&text)
            .map_err(|e| format!("{}: not a marvin config record: {e}", path.display()))
    }
}

/// Quotes an argument for a POSIX shell when it needs it.
pub fn shell_quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:+@%".contains(c))
    {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_toml() {
        let mut fast = PolicyConfig::default();
        fast.coldness.window_rounds = 1;
        let r = Record {
            command: "marvin pressure --apps 2".into(),
            args: vec!["--apps".into(), "2".into()],
            mode: "in-process".into(),
            marvin_version: "0.1.0".into(),
            commit: "abc".into(),
            shard: Some("1/2".into()),
            workload: WorkloadRecord {
                source: "builtin:buckets".into(),
                fnv1a64: "0123456789abcdef".into(),
                overrides: vec!["ARRAYS=48".into()],
                defines: vec!["ARRAYS=48".into(), "ROUND_GAP_MS=250".into()],
            },
            host: Host::current(),
            columns: vec![
                ColumnRecord {
                    label: "kill".into(),
                    pressure: "kill".into(),
                    policy: PolicyConfig::default(),
                },
                ColumnRecord {
                    label: "marvin:fast".into(),
                    pressure: "marvin".into(),
                    policy: fast,
                },
            ],
            runs: vec![Run {
                index: 1,
                rep: 0,
                column: 1,
                seed: 7,
            }],
            scale: "paper".into(),
            scale_settings: vec![Choice {
                setting: "budget".into(),
                value: "2382364672".into(),
                reason: "about ten apps".into(),
            }],
            zram_charging: Some("compressed swap charged by the System: zram (lz4)".into()),
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        r.write(&path).unwrap();
        assert_eq!(Record::read(&path).unwrap(), r);
        std::fs::write(&path, "args = 3").unwrap();
        assert!(Record::read(&path).unwrap_err().contains("config.toml"));
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("--apps"), "--apps");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
