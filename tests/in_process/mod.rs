//! What the in-process interpreter tests (`calls.rs`, `fusion.rs`) share: running a
//! verified program in this process with what it prints captured.

use std::io::Write;
use std::sync::{Arc, Mutex};

use marvin_app::{Outcome, RunConfig};
use marvin_interpreter::isa::VerifiedProgram;

/// A `Write` that keeps what the app prints.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `program` under `cfg` (its `out` replaced by a capture); returns the outcome and
/// what the program printed.
pub fn run_captured(program: VerifiedProgram, mut cfg: RunConfig) -> (Outcome, String) {
    let out = Captured::default();
    cfg.out = Box::new(out.clone());
    let outcome = marvin_app::run(program, cfg).expect("app starts");
    let printed = String::from_utf8_lossy(&out.0.lock().expect("lock")).into_owned();
    (outcome, printed)
}
