//! Running Python with Perfetto's published trace schema, for the tests that decode
//! marvin's traces (`runtime/tests/trace_decode.rs` and the root `tests/trace_run.rs`,
//! which includes this file by path).

use std::process::{Command, Output};
use std::sync::Once;

const IMPORT_CHECK: &str = "from perfetto.protos.perfetto.trace import perfetto_trace_pb2";

/// Runs `python3` with `args`.
pub fn python(args: &[&str]) -> Output {
    match Command::new("python3").args(args).output() {
        Ok(out) => out,
        Err(e) => panic!(
            "python3 is needed to decode traces with Perfetto's schema but could not be run: {e}"
        ),
    }
}

/// Makes sure `perfetto_trace_pb2` imports, installing the `perfetto` package if needed.
pub fn ensure_perfetto() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        if python(&["-c", IMPORT_CHECK]).status.success() {
            return;
        }
        let pip = python(&["-m", "pip", "install", "--quiet", "perfetto"]);
        let check = python(&["-c", IMPORT_CHECK]);
        assert!(
            check.status.success(),
            "could not install the perfetto Python package:\npip: {}\nimport: {}",
            String::from_utf8_lossy(&pip.stderr),
            String::from_utf8_lossy(&check.stderr)
        );
    });
}
