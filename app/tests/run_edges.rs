//! The edges of running one app to its end (`marvin_app::run_until`): a `stop` that ends
//! it from outside, and output that cannot be written, which ends it and is reported
//! rather than lost.

use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use marvin_app::{run_until, App, RunConfig};
use marvin_interpreter::isa::VerifiedProgram;
use marvin_interpreter::{asm, verify};

fn program(text: &str) -> VerifiedProgram {
    let mut p = asm::assemble("t.masm", text).expect("assembles");
    p.link(&[]).expect("links");
    verify::verify(p).expect("verifies")
}

/// Prints a line (held in the app's output buffer), marks that it did, then runs until
/// stopped.
const FOREVER: &str = ".method main args=0 locals=0
  prints \"started\"
  mark \"printed\"
forever:
  push 5
  sleep
  jmp forever
.end
";

/// Prints a line on every round, forever.
const CHATTY: &str = ".method main args=0 locals=0
forever:
  prints \"a line of output\"
  jmp forever
.end
";

/// Collects what the app writes; shared so the test can read it after the run.
#[derive(Clone, Default)]
struct Collect(Arc<parking_lot::Mutex<Vec<u8>>>);

impl Write for Collect {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Fails every write with `kind` after `ok` successful writes.
struct Failing {
    ok: Arc<AtomicUsize>,
    kind: io::ErrorKind,
}

impl Write for Failing {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        if self.ok.load(Ordering::SeqCst) == 0 {
            return Err(io::Error::from(self.kind));
        }
        self.ok.fetch_sub(1, Ordering::SeqCst);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn stop_ends_the_app_and_its_output_is_flushed() {
    let out = Collect::default();
    // Stop once the app has printed: its line then sits in the app's buffer.
    let stop = |app: &App| app.mark_count("printed") > 0;
    let cfg = RunConfig {
        out: Box::new(out.clone()),
        ..RunConfig::default()
    };
    let o = run_until(program(FOREVER), cfg, Some(&stop)).expect("runs");
    assert!(o.stopped, "ended by stop");
    assert!(o.output_error.is_none());
    assert_eq!(String::from_utf8_lossy(&out.0.lock()), "started\n");
}

#[test]
fn a_run_without_stop_is_not_stopped() {
    let cfg = RunConfig {
        out: Box::new(io::sink()),
        ..RunConfig::default()
    };
    let o = run_until(
        program(".method main args=0 locals=0\n  push 3\n  halt\n.end\n"),
        cfg,
        Some(&|_: &App| false),
    )
    .expect("runs");
    assert!(!o.stopped);
    assert_eq!(o.status, 3);
}

#[test]
fn failing_output_ends_the_app_and_is_reported() {
    for kind in [io::ErrorKind::BrokenPipe, io::ErrorKind::StorageFull] {
        let cfg = RunConfig {
            out: Box::new(Failing {
                ok: Arc::new(AtomicUsize::new(3)),
                kind,
            }),
            ..RunConfig::default()
        };
        // Without the failure this program would never end.
        let o = run_until(program(CHATTY), cfg, None).expect("runs");
        let e = o.output_error.expect("the write error is kept");
        assert_eq!(e.kind(), kind);
        assert!(!o.stopped);
    }
}
