//! `--seed` on the benches: the same seed draws the same work (queue due times,
//! inversion arrivals), another seed draws other work, and the JSON records the seed.

use std::process::Command;

use clap::Parser;
use marvin_sidebyside::delay_plan;
use marvin_sidebyside::stream_seed;
use marvin_sidebyside::{inversion_schedule as schedule, InversionArgs};
use serde_json::Value;

#[derive(Parser)]
struct Inversion {
    #[command(flatten)]
    args: InversionArgs,
}

fn inversion(extra: &[&str]) -> InversionArgs {
    let argv = std::iter::once("inversion").chain(extra.iter().copied());
    Inversion::try_parse_from(argv)
        .expect("inversion flags")
        .args
}

#[test]
fn the_queue_delays_follow_the_seed() {
    for poster in 0..8 {
        let plan = delay_plan(5, poster, 250);
        assert_eq!(plan.len(), 250);
        assert!(plan.iter().all(|&d| d < 5_000_000_000), "0-5 s: {plan:?}");
        assert_eq!(plan, delay_plan(5, poster, 250), "same seed, same plan");
        assert_ne!(
            plan,
            delay_plan(6, poster, 250),
            "another seed, another plan"
        );
    }
    // The posters of one run do not draw the same delays.
    assert_ne!(delay_plan(5, 0, 250), delay_plan(5, 1, 250));
}

#[test]
fn the_inversion_arrivals_follow_the_seed_and_differ_by_round_and_thread() {
    let a = inversion(&["--seed", "11", "--low", "3", "--sections", "20"]);
    let b = inversion(&["--seed", "11", "--low", "3", "--sections", "20"]);
    let c = inversion(&["--seed", "12", "--low", "3", "--sections", "20"]);
    assert_eq!(a.common.seed, 11);
    for rep in 0..3 {
        let plan = schedule(&a, rep);
        assert_eq!(plan.len(), 3, "one list per low thread");
        assert!(plan
            .iter()
            .all(|t| t.len() == 20 && t.windows(2).all(|w| w[0] <= w[1])));
        assert_eq!(plan, schedule(&b, rep), "same seed, same arrivals");
        assert_ne!(plan, schedule(&c, rep), "another seed, other arrivals");
        assert_ne!(plan[0], plan[1], "the threads draw apart");
    }
    assert_ne!(schedule(&a, 0), schedule(&a, 1), "the rounds draw apart");
}

#[test]
fn stream_seeds_are_distinct_per_seed_repetition_and_thread() {
    let mut seen = std::collections::HashSet::new();
    for seed in 0..4 {
        for rep in 0..4 {
            for thread in 0..4 {
                assert!(seen.insert(stream_seed(seed, rep, thread)));
                assert_eq!(
                    stream_seed(seed, rep, thread),
                    stream_seed(seed, rep, thread)
                );
            }
        }
    }
}

#[test]
fn the_json_records_the_seed_and_a_bad_seed_is_refused() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_marvin"))
            .args(args)
            .output()
            .expect("run marvin")
    };
    let out = run(&[
        "bench", "cputime", "--json", "--reps", "1", "--calls", "1000", "--seed", "42",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    let samples = samples.as_array().expect("an array");
    assert!(!samples.is_empty());
    assert!(samples.iter().all(|s| s["seed"] == 42), "{samples:?}");
    let out = run(&["bench", "cputime", "--seed", "minus one"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--seed"), "{err}");
}
