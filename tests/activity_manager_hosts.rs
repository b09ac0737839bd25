//! Both ways of hosting an app go through the one activity manager: the same tiny run
//! (apps launched one per interval, then a launch phase in the seeded random order) in
//! the in-process model and in the process mode brings the same apps back in the same
//! order, and every launch the plan asks for is made. The launch phase's order is drawn
//! by the activity manager from the apps its host offers, so a host that decided its own
//! launches (or offered other candidates) would bring back another sequence. The process
//! mode needs root and a memory controller; elsewhere the test prints why it skips.

mod tiny_pressure;
use tiny_pressure::{summaries, TINY_CLOCK};

const LAUNCHES: usize = 6;

/// The apps a run's launch phase brought back, in order, and its unfinished launches.
fn launch_order(mode: &str, seed: &str) -> (Vec<u64>, u64) {
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
    (order, unfinished)
}

#[test]
fn in_process_and_process_hosts_bring_back_the_same_apps_in_the_same_order() {
    if let Err(why) = marvin_machine::cgroup::Hierarchy::available() {
        eprintln!("skipped: the process mode cannot run here: {why}");
        return;
    }
    for seed in ["7", "42"] {
        let (threads, t_unfinished) = launch_order("in-process", seed);
        let (processes, p_unfinished) = launch_order("processes", seed);
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
    }
}
