//! The process mode's `apps.csv` has the foreground and active intervals the in-process
//! model writes, as the System saw them: every launch and cold restart opens a
//! foreground interval, one app's intervals never overlap, and nothing of a life is
//! foreground or active after the System saw it killed. Needs root and a memory
//! controller; elsewhere it prints why it skips.

use std::collections::BTreeMap;

mod tiny_pressure;
use tiny_pressure::{summaries, TINY_CLOCK};

/// One row of `apps.csv`.
#[derive(Debug)]
struct Row {
    app: u64,
    event: String,
    t_s: f64,
    t_end_s: Option<f64>,
    value: String,
}

fn rows(csv: &str) -> Vec<Row> {
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("policy,rep,app,event,t_s,t_end_s,value"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.splitn(7, ',').collect();
            assert_eq!(f.len(), 7, "{l}");
            assert_eq!((f[0], f[1]), ("kill", "0"), "{l}");
            Row {
                app: f[2].parse().unwrap(),
                event: f[3].to_string(),
                t_s: f[4].parse().unwrap(),
                t_end_s: (!f[5].is_empty()).then(|| f[5].parse().unwrap()),
                value: f[6].to_string(),
            }
        })
        .collect()
}

#[test]
fn the_process_mode_apps_csv_has_consistent_foreground_and_active_intervals() {
    if let Err(e) = marvin_machine::cgroup::Hierarchy::available() {
        println!("skipped: the process mode cannot run here: {e}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let swap = tmp.path().join("swap");
    std::fs::create_dir(&swap).unwrap();
    // Eight apps in a budget for a few: the killer kills, and the launch phase brings
    // killed apps back cold.
    let mut args = vec![
        "--mode",
        "processes",
        "--policy",
        "kill",
        "--apps",
        "8",
        "--budget",
        "48m",
        "--launch-every",
        "700ms",
        "--duration",
        "10s",
        "-D",
        "ARRAYS=96",
        "--swap-dir",
        swap.to_str().expect("a UTF-8 path"),
        "--out",
        out.to_str().expect("a UTF-8 path"),
    ];
    args.extend(TINY_CLOCK);
    let summaries = summaries(&args);
    let summary = &summaries[0];
    let csv = std::fs::read_to_string(out.join("apps.csv")).unwrap();
    let rows = rows(&csv);
    let count = |event: &str| rows.iter().filter(|r| r.event == event).count() as u64;
    assert_eq!(count("launch"), 8, "every app launched once: {csv}");
    assert_eq!(
        count("restart"),
        summary["restarts"].as_u64().unwrap(),
        "{csv}"
    );
    let killed_lives = rows
        .iter()
        .filter(|r| r.event == "end" && r.value == "killed")
        .count() as u64;
    assert_eq!(count("kill"), killed_lives, "{csv}");
    assert!(count("active") > 0, "apps ran rounds: {csv}");

    let mut by_app: BTreeMap<u64, Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        by_app.entry(r.app).or_default().push(r);
    }
    assert_eq!(by_app.len(), 8, "{csv}");
    for (app, events) in &by_app {
        let starts: Vec<f64> = events
            .iter()
            .filter(|r| r.event == "launch" || r.event == "restart")
            .map(|r| r.t_s)
            .collect();
        let kills: Vec<f64> = events
            .iter()
            .filter(|r| r.event == "kill")
            .map(|r| r.t_s)
            .collect();
        for kind in ["foreground", "active"] {
            let mut spans: Vec<(f64, f64)> = events
                .iter()
                .filter(|r| r.event == kind)
                .map(|r| (r.t_s, r.t_end_s.expect("every interval is closed")))
                .collect();
            spans.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (a, b) in &spans {
                assert!(a <= b, "app {app} {kind} ends before it begins: {csv}");
                // Nothing foreground or active in a life the System saw killed: an
                // interval begun before a kill ends at or before it.
                for k in &kills {
                    assert!(
                        a > k || b <= k,
                        "app {app} {kind} {a}-{b} spans its kill at {k}: {csv}"
                    );
                }
            }
            for w in spans.windows(2) {
                assert!(
                    w[0].1 <= w[1].0,
                    "app {app} {kind} intervals overlap: {csv}"
                );
            }
        }
        // Each launch and cold restart opens a foreground interval (the next one that
        // begins, no earlier than it).
        let fg: Vec<f64> = events
            .iter()
            .filter(|r| r.event == "foreground")
            .map(|r| r.t_s)
            .collect();
        for s in &starts {
            let next = fg
                .iter()
                .copied()
                .filter(|t| t >= s)
                .fold(f64::MAX, f64::min);
            let between = events
                .iter()
                .any(|r| (r.event == "kill" || r.event == "active") && r.t_s >= *s && r.t_s < next);
            assert!(
                next < f64::MAX && !between,
                "app {app}: the start at {s} opens no foreground interval: {csv}"
            );
        }
        // The first foreground interval is the launch's.
        let first_fg = fg.iter().copied().fold(f64::MAX, f64::min);
        let launch = events.iter().find(|r| r.event == "launch").unwrap().t_s;
        assert!(
            first_fg >= launch,
            "app {app} in front before its launch: {csv}"
        );
    }
}
