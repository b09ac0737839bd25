//! Both ways of hosting an app go through the one run loop (`system/src/run_loop`) and
//! its activity manager: the same tiny run (apps launched one per interval, then a launch
//! phase in the seeded random order) in the in-process model and in the process mode
//! brings the same apps back in the same order, and every launch the plan asks for is
//! made. The launch phase's order is drawn by the activity manager from the apps the
//! driver offers, so a host that decided its own launches (or offered other candidates)
//! would bring back another sequence; the foreground intervals on each run's timeline,
//! which only the driver's launch phase writes, come in the same order in both and never
//! overlap; and in the source, both hosts implement the driver's `Host` and call its
//! `drive`, and nothing outside the run loop turns an activity manager or samples a
//! series. The process mode needs root and a memory controller; elsewhere the runs print
//! why they skip.

mod tiny_pressure;
use tiny_pressure::{summaries, TINY_CLOCK};

const LAUNCHES: usize = 6;

/// What a run's launch phase did: the apps it brought back in order, its unfinished
/// launches, and the apps whose foreground intervals the run's timeline holds, in time.
struct Launches {
    order: Vec<u64>,
    unfinished: u64,
    fronts: Vec<u64>,
}

/// The apps of each `foreground` interval of a run's timeline (its `apps.csv` in `out`),
/// in time; asserts that no two overlap (one app is in front at a time).
fn foreground_intervals(out: &std::path::Path) -> Vec<u64> {
    let csv = std::fs::read_to_string(out.join("apps.csv")).expect("the run's apps.csv");
    // policy,rep,app,event,t_s,t_end_s,value: a foreground interval's value is empty.
    let mut fronts: Vec<(f64, f64, u64)> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f.get(3) == Some(&"foreground"))
        .map(|f| {
            let num = |i: usize| -> f64 { f[i].parse().unwrap_or_else(|_| panic!("{f:?}")) };
            (num(4), num(5), f[2].parse().expect("an interval's app"))
        })
        .collect();
    fronts.sort_by(|a, b| a.0.total_cmp(&b.0));
    for w in fronts.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "app {} still in front at {} when app {} came: {fronts:?}",
            w[0].2,
            w[1].0,
            w[1].2
        );
    }
    fronts.into_iter().map(|(_, _, app)| app).collect()
}

fn launch_order(mode: &str, seed: &str) -> Launches {
    let out = tempfile::tempdir().unwrap();
    let launches = LAUNCHES.to_string();
    let mut args = vec![
        "--mode",
        mode,
        "--policy",
        "marvin",
        "--apps",
        "5",
        // Room for every app: nothing is killed, so every app stays a candidate.
        "--budget",
        "512m",
        "--swap-size",
        "256m",
        "--launch-every",
        "600ms",
        "--duration",
        "4s",
        "-D",
        "ARRAYS=32",
        "--launches",
        &launches,
        "--launch-gap",
        "100ms",
        "--launch-seed",
        seed,
        "--out",
        out.path().to_str().expect("a UTF-8 path"),
    ];
    args.extend(TINY_CLOCK);
    let v = summaries(&args);
    assert_eq!(v.len(), 1, "one policy, one summary");
    let s = &v[0];
    assert_eq!(s["mode"], mode);
    assert_eq!(s["crashed_apps"], 0, "{s}");
    assert_eq!(s["deaths"], 0, "nothing dies with room for every app: {s}");
    let order = s["launch_records"]
        .as_array()
        .unwrap_or_else(|| panic!("no launch records: {s}"))
        .iter()
        .map(|r| r["app"].as_u64().expect("a launch record's app"))
        .collect();
    let unfinished = s["launches_unfinished"]
        .as_u64()
        .expect("launches_unfinished");
    Launches {
        order,
        unfinished,
        fronts: foreground_intervals(out.path()),
    }
}

#[test]
fn in_process_and_process_hosts_bring_back_the_same_apps_in_the_same_order() {
    if let Err(why) = marvin_machine::cgroup::Hierarchy::available() {
        eprintln!("skipped: the process mode cannot run here: {why}");
        return;
    }
    for seed in ["7", "42"] {
        let t = launch_order("in-process", seed);
        let p = launch_order("processes", seed);
        let (threads, t_unfinished) = (t.order.clone(), t.unfinished);
        let (processes, p_unfinished) = (p.order, p.unfinished);
        // A launch given up (no frame within its 10 s timeout) would leave no record
        // and shift the order: a tiny app draws its frame in milliseconds.
        assert_eq!((t_unfinished, p_unfinished), (0, 0), "seed {seed}");
        assert_eq!(threads.len(), LAUNCHES, "in-process, seed {seed}");
        assert_eq!(
            threads, processes,
            "seed {seed}: the two hosts' launch phases diverged"
        );
        // Never the app already in front: the manager asks its host for candidates.
        assert!(
            threads.windows(2).all(|w| w[0] != w[1]),
            "seed {seed}: {threads:?}"
        );
        // The driver puts each app in front as it is launched (0 to 4), then each app the
        // launch phase brings back: the same intervals in both hosts.
        let expected: Vec<u64> = (0..5).chain(threads.iter().copied()).collect();
        assert_eq!(t.fronts, expected, "in-process, seed {seed}");
        assert_eq!(p.fronts, expected, "processes, seed {seed}");
    }
}

/// The text of `path` (under the repository root) without its comments and its
/// `#[cfg(test)]` module (everything from it to the end of the file).
fn code_of(path: &str) -> String {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"));
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `.rs` file under `dir` (relative to the repository root).
fn rust_files(dir: &str) -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut todo = vec![root.join(dir)];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy();
                out.push(rel.replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn both_hosts_implement_the_one_driver_and_no_other_loop_exists() {
    // Each host implements the driver's trait and hands its run to the driver.
    for (host, driven) in [
        ("system/src/engine.rs", "system/src/engine.rs"),
        (
            "system/src/processes/host.rs",
            "system/src/processes/run.rs",
        ),
    ] {
        assert!(
            code_of(host).contains("impl Host for"),
            "{host} does not implement the run loop's Host"
        );
        assert!(
            code_of(driven).contains("run_loop::drive("),
            "{driven} does not run its policy through run_loop::drive"
        );
    }
    // What the loop does is written once: outside the run loop no code turns an
    // activity manager, hosts it, samples a series or observes the summary.
    let once = [
        "ActivityManager::new(",
        "AppHost for",
        ".push_sample(",
        "summary.observe(",
    ];
    let mut found = Vec::new();
    for file in rust_files("system/src") {
        let code = code_of(&file);
        for piece in once {
            if code.contains(piece) {
                found.push((piece, file.clone()));
            }
        }
    }
    for piece in once {
        let at: Vec<&String> = found
            .iter()
            .filter(|(p, _)| *p == piece)
            .map(|(_, f)| f)
            .collect();
        assert!(
            at.iter().all(|f| f.starts_with("system/src/run_loop/")),
            "{piece} outside the run loop: {at:?}"
        );
    }
    assert!(
        found.iter().any(|(p, _)| *p == "ActivityManager::new("),
        "the run loop turns no activity manager"
    );
}
