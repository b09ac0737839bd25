//! The experiment's settings: every flag recorded and read back, `--scale paper`'s
//! choices, the values written exactly, and the warnings about runs that measured nothing.

use std::time::Duration;

use marvin_interpreter::load;
use marvin_runtime::duration::parse as parse_duration;

use super::flags::*;
use super::guards::*;
use super::settings::*;
use crate::published::Published;
use crate::scale::{self, ScaleArg};
use crate::workloads::Source;
use crate::Summary;
use clap::CommandFactory;

fn args(list: &[&str]) -> PressureArgs {
    let owned: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    PressureArgs::parse_args(&owned).unwrap()
}

/// A command line that sets every flag that is not an output flag.
const EVERY_FLAG: &[&str] = &[
    "--mode",
    "in-process",
    "--apps",
    "3",
    "--budget",
    "20m",
    "--swap-device",
    "zram",
    "--swap-size",
    "64m",
    "--launch-every",
    "1500us",
    "--duration",
    "2s",
    "--switch-every",
    "300ms",
    "--launches",
    "3",
    "--launch-gap",
    "200ms",
    "--launch-seed",
    "4",
    "--workload",
    "builtin:mixed",
    "-D",
    "ARRAYS=4",
    "-D",
    "STRIDE=8",
    "--policy",
    "kill,marvin",
    "--policy-file",
    "p.toml",
    "--time-scale",
    "0.05",
    "--gc-max-free",
    "256k",
    "--sample-every",
    "100ms",
    "--swap-dir",
    "/tmp/x",
    "--reps",
    "2",
    "--seed",
    "9",
    "--variant",
    "a=a.toml",
    "--variant",
    "b=b.toml",
    "--sweep",
    "coldness.window_rounds=1,2",
    "--shard",
    "1/2",
    "--scale",
    "paper",
];

#[test]
fn every_setting_flag_is_recorded_and_reads_back() {
    let full = args(EVERY_FLAG);
    let recorded = to_args(&full, None);
    for arg in Standalone::command().get_arguments() {
        let name = match (arg.get_long(), arg.get_short()) {
            (Some(long), _) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) => continue,
        };
        if arg.get_long().is_some_and(|l| OUTPUT_FLAGS.contains(&l)) || name == "--help" {
            continue;
        }
        assert!(
            recorded.contains(&name),
            "{name} is not recorded by to_args (add it there and to EVERY_FLAG)"
        );
    }
    // What is recorded parses back to the same settings.
    let again = PressureArgs::parse_args(&recorded).unwrap();
    assert_eq!(to_args(&again, None), recorded);
    assert_eq!(again.launch_every, Duration::from_micros(1500));
    assert_eq!(again.defines, full.defines);
}

fn buckets() -> marvin_interpreter::isa::Program {
    let source = Source::parse(std::path::Path::new("builtin:buckets")).unwrap();
    load::load_bytes("builtin:buckets", &source.read().unwrap()).unwrap()
}

#[test]
fn scale_paper_derives_every_setting_it_is_not_given() {
    let mut a = args(&["--scale", "paper"]);
    let (choices, published) = apply_scale(&mut a, &buckets(), false).unwrap();
    assert_eq!(published, Some(Published { mixed: false }));
    assert_eq!(a.apps, 30);
    assert_eq!(a.budget, Some(2272 << 20));
    assert_eq!(a.swap_size, 5 << 30);
    assert_eq!(a.launch_every, Duration::from_secs(14));
    assert_eq!(a.duration, Duration::from_secs(500));
    assert_eq!(a.time_scale, 1.0);
    assert_eq!(a.gc_max_free, 8 << 20);
    assert_eq!(a.defines, [("ARRAYS".to_owned(), 2560)]);
    let settings: Vec<&str> = choices.iter().map(|c| c.setting.as_str()).collect();
    assert_eq!(
        settings,
        [
            "-D ARRAYS",
            "apps",
            "gc-max-free",
            "time-scale",
            "budget",
            "swap-size",
            "launch-every",
            "duration"
        ]
    );
    assert!(choices.iter().all(|c| !c.reason.contains("given")));
    // The record of the run re-parses to the same settings, every one kept.
    let mut again = PressureArgs::parse_args(&to_args(&a, None)).unwrap();
    let (kept, _) = apply_scale(&mut again, &buckets(), true).unwrap();
    assert_eq!(to_args(&again, None), to_args(&a, None));
    assert!(
        kept.iter().all(|c| c.reason.contains("recorded")),
        "{kept:?}"
    );
    // The mix.
    let mut m = args(&["--scale", "paper", "--workload", "builtin:mixed"]);
    let source = Source::parse(std::path::Path::new("builtin:mixed")).unwrap();
    let program = load::load_bytes("builtin:mixed", &source.read().unwrap()).unwrap();
    let (_, published) = apply_scale(&mut m, &program, false).unwrap();
    assert_eq!(published, Some(Published { mixed: true }));
}

#[test]
fn scale_paper_scales_an_app_shaped_workload_by_its_declared_size() {
    let mut a = args(&["--scale", "paper", "--workload", "builtin:app"]);
    let source = Source::parse(std::path::Path::new("builtin:app")).unwrap();
    let program = load::load_bytes("builtin:app", &source.read().unwrap()).unwrap();
    let (choices, published) = apply_scale(&mut a, &program, false).unwrap();
    // No published figures for a heap the paper did not run.
    assert_eq!(published, None);
    assert_eq!(a.defines, [("SCALE".to_owned(), 10)]);
    let app = 10 * 24_756_864;
    assert_eq!(
        a.budget,
        Some(scale::budget_for(app, scale::PAPER_GC_MAX_FREE) as usize)
    );
    assert_eq!(a.apps, 30);
    assert_eq!(choices[0].setting, "-D SCALE");
    assert!(choices.iter().all(|c| c.setting != "-D ARRAYS"));
    // A SCALE given is kept, and the rest follows from it.
    let mut b = args(&[
        "--scale",
        "paper",
        "--workload",
        "builtin:app",
        "-D",
        "SCALE=2",
    ]);
    apply_scale(&mut b, &program, false).unwrap();
    assert_eq!(b.defines, [("SCALE".to_owned(), 2)]);
    assert_eq!(
        b.budget,
        Some(scale::budget_for(2 * 24_756_864, scale::PAPER_GC_MAX_FREE) as usize)
    );
}

#[test]
fn every_flag_given_beside_scale_paper_wins() {
    let mut a = args(&[
        "--scale",
        "paper",
        "--apps",
        "2",
        "--budget",
        "64m",
        "--swap-size",
        "2g",
        "--launch-every",
        "50ms",
        "--duration",
        "2s",
        "--time-scale",
        "0.05",
        "--gc-max-free",
        "256k",
        "-D",
        "ARRAYS=8",
    ]);
    let (choices, _) = apply_scale(&mut a, &buckets(), false).unwrap();
    assert_eq!(a.apps, 2);
    assert_eq!(a.budget, Some(64 << 20));
    assert_eq!(a.swap_size, 2 << 30);
    assert_eq!(a.launch_every, Duration::from_millis(50));
    assert_eq!(a.duration, Duration::from_secs(2));
    assert_eq!(a.time_scale, 0.05);
    assert_eq!(a.gc_max_free, 256 << 10);
    assert_eq!(a.defines, [("ARRAYS".to_owned(), 8)]);
    assert_eq!(choices.len(), 8);
    assert!(
        choices.iter().all(|c| c.reason.starts_with("given")),
        "{choices:?}"
    );
    // One flag given: only that setting is kept, the rest derived from the app it
    // implies (-D ARRAYS=8: 22 x 8 x 4,076 bytes).
    let mut b = args(&["--scale", "paper", "-D", "ARRAYS=8"]);
    apply_scale(&mut b, &buckets(), false).unwrap();
    let app = 22 * 8 * 4076;
    assert_eq!(
        b.budget,
        Some(scale::budget_for(app, scale::PAPER_GC_MAX_FREE) as usize)
    );
    assert_eq!(b.apps, 30);
    // --scale default changes nothing; a bad scale is a usage error.
    let d = args(&[]);
    assert_eq!(d.scale, ScaleArg::Default);
    assert!(!to_args(&d, None).contains(&"--scale".to_owned()));
    let e = PressureArgs::parse_args(&["--scale".into(), "huge".into()]).unwrap_err();
    assert_eq!(e.exit_code(), 2);
}

#[test]
fn resolved_values_replace_auto_ones() {
    let a = args(&[]);
    let r = Resolved {
        mode: "in-process",
        policies: vec![
            PolicyChoice::parse("kill").unwrap(),
            PolicyChoice::parse("marvin").unwrap(),
        ],
        budget: 5 << 20,
    };
    let v = to_args(&a, Some(&r));
    let value = |flag: &str| v[v.iter().position(|x| x == flag).unwrap() + 1].clone();
    assert_eq!(value("--mode"), "in-process");
    assert_eq!(value("--policy"), "kill,marvin");
    assert_eq!(value("--budget"), (5 << 20).to_string());
    assert_eq!(value("--workload"), "builtin:buckets");
}

#[test]
fn sizes_are_written_exactly() {
    for b in [1usize, 4096, 1000, 256 << 10, 2272 << 20, 5 << 30] {
        assert_eq!(marvin_console::parse_size(&size_arg(b)), Ok(b), "{b}");
    }
    assert_eq!(size_arg(2272 << 20), "2272m");
}

#[test]
fn durations_are_written_exactly() {
    for d in [
        Duration::from_secs(50),
        Duration::from_millis(1400),
        Duration::from_nanos(1_000_001),
        Duration::ZERO,
    ] {
        assert_eq!(parse_duration(&duration_arg(d)), Ok(d), "{d:?}");
    }
}

#[test]
fn guards_warn_when_nothing_was_measured() {
    let idle = Summary {
        peak_committed_bytes: 10 << 20,
        ..Summary::new("kill")
    };
    let w = guards(std::slice::from_ref(&idle), 100 << 20);
    assert_eq!(w.len(), 1);
    assert!(
        w[0].contains("never reached") && w[0].contains("10.0 MiB"),
        "{w:?}"
    );
    // Reached, but nobody acted.
    let full = Summary {
        peak_committed_bytes: 99 << 20,
        ..idle.clone()
    };
    let w = guards(std::slice::from_ref(&full), 100 << 20);
    assert!(w[0].contains("no policy acted"), "{w:?}");
    // One policy acted: no warning.
    let killed = Summary {
        kills: 2,
        ..full.clone()
    };
    assert!(guards(&[full, killed], 100 << 20).is_empty());
}
