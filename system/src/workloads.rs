//! The workloads shipped with marvin, embedded in the binary so `marvin pressure` runs
//! from any directory (`--workload builtin:NAME`, the default `builtin:buckets`), and
//! how a `--workload` argument names its source. `buckets` and `mixed` are the paper's
//! array heaps; `app`, `feed` and `media` are shaped like real apps (one program, three
//! sets of constants: `docs/experiments.md`, "App-shaped workloads").

use std::path::{Path, PathBuf};

/// The embedded workloads: name and MASM text (the files in `examples/workloads/`).
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "buckets",
        include_str!("../../examples/workloads/buckets.masm"),
    ),
    ("mixed", include_str!("../../examples/workloads/mixed.masm")),
    ("app", include_str!("../../examples/workloads/app.masm")),
    ("feed", include_str!("../../examples/workloads/feed.masm")),
    ("media", include_str!("../../examples/workloads/media.masm")),
];

/// The prefix that names an embedded workload.
pub const PREFIX: &str = "builtin:";

/// Where a workload comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// An embedded workload, by name.
    Builtin(&'static str),
    /// A file.
    File(PathBuf),
}

impl Source {
    /// `builtin:NAME` names an embedded workload (an unknown name is an error that
    /// lists the known ones); anything else is a file path.
    pub fn parse(arg: &Path) -> Result<Source, String> {
        let Some(name) = arg.to_str().and_then(|s| s.strip_prefix(PREFIX)) else {
            return Ok(Source::File(arg.to_path_buf()));
        };
        BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, _)| Source::Builtin(n))
            .ok_or_else(|| {
                let known: Vec<String> = BUILTIN
                    .iter()
                    .map(|(n, _)| format!("{PREFIX}{n}"))
                    .collect();
                format!(
                    "unknown built-in workload '{name}' (known: {})",
                    known.join(", ")
                )
            })
    }

    /// The workload's bytes.
    pub fn read(&self) -> Result<Vec<u8>, String> {
        match self {
            Source::Builtin(name) => Ok(BUILTIN
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, text)| text.as_bytes().to_vec())
                .unwrap_or_default()),
            Source::File(p) => {
                std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
            }
        }
    }

    /// The name diagnostics and records use: `builtin:NAME` or the path.
    pub fn display(&self) -> String {
        match self {
            Source::Builtin(name) => format!("{PREFIX}{name}"),
            Source::File(p) => p.display().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_names_resolve_and_match_the_shipped_files() {
        for (name, text) in BUILTIN {
            let src = Source::parse(Path::new(&format!("builtin:{name}"))).unwrap();
            assert_eq!(src, Source::Builtin(name));
            assert_eq!(src.read().unwrap(), text.as_bytes());
            let file = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../examples/workloads")
                .join(format!("{name}.masm"));
            assert_eq!(std::fs::read(file).unwrap(), text.as_bytes());
        }
    }

    #[test]
    fn the_app_shapes_are_one_program_with_other_constants() {
        let text = |name: &str| {
            BUILTIN
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| *t)
                .unwrap()
        };
        // Past the header (comments and constants) every line is app.masm's.
        let program = |t: &'static str| &t[t.find(".class State").unwrap()..];
        for shape in ["feed", "media"] {
            assert_eq!(program(text(shape)), program(text("app")), "{shape}");
        }
    }

    #[test]
    fn other_arguments_are_files_and_unknown_builtins_are_errors() {
        let p = Path::new("examples/workloads/buckets.masm");
        assert_eq!(Source::parse(p).unwrap(), Source::File(p.to_path_buf()));
        let e = Source::parse(Path::new("builtin:nope")).unwrap_err();
        assert!(e.contains("builtin:buckets") && e.contains("nope"), "{e}");
        let e = Source::File("/no/such/workload.masm".into())
            .read()
            .unwrap_err();
        assert!(e.contains("/no/such/workload.masm"), "{e}");
    }
}
