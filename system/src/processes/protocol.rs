//! The control protocol between the System and an app process: one JSON object per
//! line, commands on the app's standard input, reports on its standard output.
//!
//! Pipes rather than a socket or shared counters: every app has exactly one parent,
//! the kernel closes both ends when either side dies (a killed app is an end of file,
//! not a timeout), and a line of JSON can be read by a person with `strace` or a test
//! with a `BufRead`. The app's program output (`print`) goes nowhere in an experiment,
//! so standard output is free for reports; its standard error is kept by the System and
//! names the error when the app crashes.
//!
//! ```text
//! System -> app (stdin)            app -> System (stdout)
//!   {"to":"background"}              {"ev":"ready","pid":4242,"run":"5f0c…e1"}
//!   {"to":"foreground"}              {"ev":"marks","marks":{"round":3,"frame":1}}
//!   {"to":"age"}                     {"ev":"marks","marks":{...},"counters":{...}}
//!   {"to":"stop"}
//!                                    {"ev":"transition","action":"background",...}
//!                                    {"ev":"frame","at_ns":N,"major_faults":N,...}
//!                                    {"ev":"exit","status":0,"error":null}
//! ```
//!
//! `ready` names the app's process and its run id (32 hex digits, the id written into its
//! swap file's and reclaim table's headers): the System's reclaimer acts only on a table
//! of that run. `marks` carries the app's cumulative `mark` counts and runtime counters
//! (`gc_major_faults`: major page faults taken while the app collected;
//! `object_faults`: objects faulted back in), sent every report period and after each
//! transition; `frame` is sent at once on every `mark "frame"` (a launch's end, timed
//! on `CLOCK_BOOTTIME`, which the System reads too, with when the app read the command and
//! finished its transition, and its threads' CPU and run-queue time since); `exit` is the last line an app writes. An app whose standard
//! input closes stops as if told `stop`. A line that does not parse is a protocol error
//! on either side: the app reports it and stops; the System counts the app as crashed.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

/// What the System tells an app.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "to", rename_all = "snake_case")]
pub enum Command {
    /// Another app came to the foreground: this one is cached now.
    Background,
    /// The user came back to this app.
    Foreground,
    /// Memory is short and the System's reclaimer found nothing to take: a background app
    /// runs a working-set round now, and saves what that found cold, rather than at its
    /// background period ([`crate::processes`]' aging on demand).
    Age,
    /// End the app (its process exits after its `exit` report).
    Stop,
}

/// What an app tells the System.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum Report {
    /// The app is set up (heap, swap, looper) and running its program.
    Ready {
        /// The app's process id.
        pid: u32,
        /// The app's run id, 32 hex digits (`RunIdentity::id_hex`).
        run: String,
    },
    /// Cumulative `mark` counts by name, and the runtime's own counters.
    Marks {
        /// Every mark the program made so far, by its string.
        marks: BTreeMap<String, u64>,
        /// Runtime counters so far (`gc_major_faults`, `object_faults`, ...).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        counters: BTreeMap<String, u64>,
    },
    /// A memory transition the app made on a command.
    Transition {
        /// `background` or `foreground`.
        action: String,
        /// How long the transition took.
        duration_ns: u64,
        /// Objects it touched (stubbed or restored).
        objects: u64,
        /// Bytes it touched.
        bytes: u64,
    },
    /// The app drew a frame (`mark "frame"`): the end of a launch.
    Frame {
        /// When (`CLOCK_BOOTTIME` ns, a clock every process of the machine reads alike).
        at_ns: u64,
        /// Its process's major page faults at the frame (`/proc/self/stat`).
        major_faults: u64,
        /// Since it was last told to come to the foreground (0 for a frame without
        /// one, such as its first after starting): objects restored eagerly, objects
        /// faulted in, and bytes read from its swap file.
        restored_objects: u64,
        object_faults: u64,
        swap_read_bytes: u64,
        /// Where the launch's time went, as the app saw it (0 for a frame without a
        /// command): when its control thread read the command, when its transition
        /// was done and the foreground message posted (`CLOCK_BOOTTIME` ns), and the
        /// CPU time its threads ran (the process's CPU clock, exact for the thread
        /// reporting) and waited on a run queue (schedstat) since the command.
        #[serde(default)]
        received_ns: u64,
        #[serde(default)]
        resumed_ns: u64,
        #[serde(default)]
        run_ns: u64,
        #[serde(default)]
        runqueue_ns: u64,
        /// Of `runqueue_ns`, the looper thread's own wait (the frame is drawn there;
        /// `runqueue_ns` sums every thread of the app).
        #[serde(default)]
        looper_runqueue_ns: u64,
        /// Bytes of its swap file it started reading ahead of its faults since the
        /// command.
        #[serde(default)]
        prefetch_bytes: u64,
        /// The frame was drawn on a real-time UI thread (`SCHED_FIFO`: the System
        /// raised the app in front).
        #[serde(default)]
        ui_fifo: bool,
    },
    /// The app's end: the last line it writes.
    Exit {
        /// The status `marvin run` would exit with (0, a halt code, 70).
        status: i32,
        /// The runtime error, when the program failed.
        error: Option<String>,
    },
}

/// A line that is not a message of the protocol.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// The peer's pipe failed.
    #[error("control pipe: {0}")]
    Io(#[from] std::io::Error),
    /// The line is not a message of the protocol. The parser's reason may quote the
    /// line too, so it is cut (to 150 characters) as the line is.
    #[error("bad control line {line:?}: {}", cut(&source.to_string(), 150))]
    Malformed {
        /// The line as read (cut to 200 characters).
        line: String,
        /// Why it does not parse.
        source: serde_json::Error,
    },
}

/// The first `n` characters of `s`.
fn cut(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Writes one message as a line and flushes it.
pub fn send<T: Serialize>(w: &mut impl Write, msg: &T) -> Result<(), ProtocolError> {
    let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line)?;
    w.flush()?;
    Ok(())
}

/// Reads the next message; `None` at the end of the stream. Blank lines are skipped.
pub fn recv<T: for<'de> Deserialize<'de>>(
    r: &mut impl BufRead,
) -> Result<Option<T>, ProtocolError> {
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        return serde_json::from_str(t)
            .map(Some)
            .map_err(|source| ProtocolError::Malformed {
                line: cut(t, 200),
                source,
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip<T>(msg: T) -> T
    where
        T: Serialize + for<'de> Deserialize<'de>,
    {
        let mut buf = Vec::new();
        send(&mut buf, &msg).unwrap();
        assert_eq!(buf.last(), Some(&b'\n'), "one message, one line");
        assert_eq!(buf.iter().filter(|&&b| b == b'\n').count(), 1);
        recv(&mut buf.as_slice()).unwrap().unwrap()
    }

    #[test]
    fn every_message_survives_the_pipe() {
        for c in [
            Command::Background,
            Command::Foreground,
            Command::Age,
            Command::Stop,
        ] {
            assert_eq!(roundtrip(c.clone()), c);
        }
        let marks: BTreeMap<_, _> = [("round".to_string(), 3), ("frame".to_string(), 1)].into();
        for r in [
            Report::Ready {
                pid: 42,
                run: "00112233445566778899aabbccddeeff".into(),
            },
            Report::Marks {
                marks,
                counters: [("gc_major_faults".to_string(), 2)].into(),
            },
            Report::Transition {
                action: "background".into(),
                duration_ns: 5,
                objects: 2,
                bytes: 8192,
            },
            Report::Frame {
                at_ns: 123_456_789,
                major_faults: 3,
                restored_objects: 4,
                object_faults: 5,
                swap_read_bytes: 8192,
                prefetch_bytes: 4096,
                looper_runqueue_ns: 20_000,
                received_ns: 123_000_000,
                resumed_ns: 123_100_000,
                run_ns: 200_000,
                runqueue_ns: 30_000,
                ui_fifo: true,
            },
            Report::Exit {
                status: 70,
                error: Some("out of memory at main+3".into()),
            },
        ] {
            assert_eq!(roundtrip(r.clone()), r);
        }
    }

    #[test]
    fn the_wire_format_is_the_documented_one() {
        let mut buf = Vec::new();
        send(&mut buf, &Command::Background).unwrap();
        assert_eq!(buf, b"{\"to\":\"background\"}\n");
        buf.clear();
        let run = "0123456789abcdef0123456789abcdef".to_string();
        send(&mut buf, &Report::Ready { pid: 7, run }).unwrap();
        assert_eq!(
            buf,
            b"{\"ev\":\"ready\",\"pid\":7,\"run\":\"0123456789abcdef0123456789abcdef\"}\n"
        );
    }

    #[test]
    fn end_of_stream_and_blank_lines() {
        let mut r: &[u8] = b"\n\n{\"to\":\"stop\"}\n";
        assert_eq!(recv::<Command>(&mut r).unwrap(), Some(Command::Stop));
        assert_eq!(recv::<Command>(&mut r).unwrap(), None);
    }

    #[test]
    fn a_malformed_line_is_an_error_that_quotes_it() {
        let long = format!("{{\"to\":\"{}\"}}\n", "x".repeat(1000));
        for bad in ["{\"to\":\"sideways\"}\n", "not json\n", long.as_str()] {
            let e = recv::<Command>(&mut bad.as_bytes()).unwrap_err();
            let text = e.to_string();
            assert!(text.starts_with("bad control line"), "{text}");
            assert!(text.len() < 400, "the line is cut: {} chars", text.len());
        }
    }
}
