//! What happened to each app of a run, in time: launches, cold restarts, kills, the
//! intervals it spent in the foreground and active, its errors, and per life its object
//! faults and swap traffic. The engine records these as they happen ([`Timeline`]); the
//! experiment writes them as `apps.csv`, one row per event in long format
//! ([`CSV_HEADER`]), which pandas reads as is (`pd.read_csv("apps.csv")`).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// One event of one app.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AppEvent {
    pub app: usize,
    /// `launch`, `restart`, `kill`, `foreground` and `active` (intervals), `error`, and
    /// per life of the app `object_faults`, `gc_faults`, `swap_bytes_written`,
    /// `swap_bytes_read`.
    pub event: String,
    /// When it happened (or began), in seconds since the run began.
    pub t_s: f64,
    /// When an interval ended (the run's end for one still open then).
    pub t_end_s: Option<f64>,
    /// A count, or an error's message.
    pub value: String,
}

/// The events of a run as they are recorded.
pub struct Timeline {
    start: Instant,
    events: Mutex<Vec<AppEvent>>,
    /// Intervals under way: (app, event) to the index of their event.
    open: Mutex<HashMap<(usize, &'static str), usize>>,
}

impl Timeline {
    pub fn new(start: Instant) -> Timeline {
        Timeline {
            start,
            events: Mutex::new(Vec::new()),
            open: Mutex::new(HashMap::new()),
        }
    }

    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn push(&self, app: usize, event: &str, value: String) -> usize {
        let mut ev = self.events.lock();
        ev.push(AppEvent {
            app,
            event: event.to_owned(),
            t_s: self.now(),
            t_end_s: None,
            value,
        });
        ev.len() - 1
    }

    /// An instant event (`launch`, `restart`, `kill`).
    pub fn point(&self, app: usize, event: &'static str) {
        self.push(app, event, String::new());
    }

    /// A value of the app (a count, an error).
    pub fn value(&self, app: usize, event: &'static str, value: impl ToString) {
        self.push(app, event, value.to_string());
    }

    /// An interval begins (nothing if one of the kind is already open).
    pub fn begin(&self, app: usize, event: &'static str) {
        let mut open = self.open.lock();
        if let std::collections::hash_map::Entry::Vacant(e) = open.entry((app, event)) {
            e.insert(self.push(app, event, String::new()));
        }
    }

    /// An interval ends (nothing if none is open).
    pub fn end(&self, app: usize, event: &'static str) {
        if let Some(i) = self.open.lock().remove(&(app, event)) {
            let t = self.now();
            self.events.lock()[i].t_end_s = Some(t);
        }
    }

    /// Every event, intervals still open closed now.
    pub fn finish(&self) -> Vec<AppEvent> {
        let t = self.now();
        // Locks in the order `begin` and `end` take them: open, then events.
        let mut open = self.open.lock();
        let mut ev = self.events.lock();
        for (_, i) in open.drain() {
            ev[i].t_end_s = Some(t);
        }
        ev.clone()
    }
}

/// Columns of `apps.csv`.
pub const CSV_HEADER: &str = "policy,rep,app,event,t_s,t_end_s,value";

/// Writes `apps.csv`: for each run (its column label and repetition), its events.
pub fn write_csv(path: &Path, runs: &[(&str, u32, &[AppEvent])]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(out, "{CSV_HEADER}")?;
    for (label, rep, events) in runs {
        for e in *events {
            let end = e.t_end_s.map(|t| t.to_string()).unwrap_or_default();
            writeln!(
                out,
                "{},{rep},{},{},{},{end},{}",
                field(label),
                e.app,
                field(&e.event),
                e.t_s,
                field(&e.value)
            )?;
        }
    }
    out.flush()
}

/// Quotes a text field when it holds a comma, a quote or a line break (RFC 4180).
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_open_and_close_once() {
        let t = Timeline::new(Instant::now());
        t.point(0, "launch");
        t.begin(0, "foreground");
        t.begin(0, "foreground");
        t.end(0, "foreground");
        t.end(0, "foreground");
        t.begin(1, "active");
        t.value(1, "error", "bad, \"x\"");
        let ev = t.finish();
        let kinds: Vec<&str> = ev.iter().map(|e| e.event.as_str()).collect();
        assert_eq!(kinds, ["launch", "foreground", "active", "error"]);
        assert!(ev[0].t_end_s.is_none());
        let fg = &ev[1];
        assert!(fg.t_end_s.unwrap() >= fg.t_s);
        assert!(ev[2].t_end_s.is_some(), "closed at the end");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("apps.csv");
        write_csv(&path, &[("marvin:a", 1, &ev)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 5);
        assert!(lines[1].starts_with("marvin:a,1,0,launch,"));
        assert!(lines[1].ends_with(",,"), "no end, no value: {}", lines[1]);
        assert!(lines[4].ends_with(",\"bad, \"\"x\"\"\""), "{}", lines[4]);
    }
}
