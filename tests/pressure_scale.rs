//! `marvin pressure --scale paper` on a tiny in-process run (every size given beside it,
//! so it runs in seconds): its first lines say what it chose and why, config.toml records
//! the scale and its settings, the table has the published row group, the active-apps
//! figure carries the published peaks as labelled marks, and the record re-runs it.

use std::process::{Command, Output};

mod tiny_pressure;
use tiny_pressure::TINY_CLOCK;

fn marvin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_marvin"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("pressure")
        .args(args)
        .output()
        .expect("run marvin pressure")
}

fn ok(o: &Output) -> (String, String) {
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(
        o.status.success(),
        "marvin pressure failed: {}\n{err}",
        o.status
    );
    (out, err)
}

#[test]
fn a_tiny_paper_scale_run_shows_the_published_results_beside_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out_arg = out.to_str().unwrap();
    let mut args = vec![
        "--mode",
        "in-process",
        "--scale",
        "paper",
        "--apps",
        "2",
        "-D",
        "ARRAYS=8",
        "--launch-every",
        "200ms",
        "--duration",
        "2s",
        "--launches",
        "0",
        "--policy",
        "kill,marvin",
        "--out",
        out_arg,
    ];
    args.extend(TINY_CLOCK);
    let (table, err) = ok(&marvin(&args));
    // The first lines: one per setting, then the mode.
    let lines: Vec<&str> = err.lines().collect();
    for (i, setting) in [
        "-D ARRAYS 8",
        "apps 2",
        "gc-max-free",
        "time-scale",
        "budget",
        "swap-size",
        "launch-every 200ms",
        "duration 2s",
    ]
    .iter()
    .enumerate()
    {
        assert!(
            lines[i].starts_with(&format!("scale paper: {setting}")),
            "line {i}: {}\n{err}",
            lines[i]
        );
    }
    assert!(lines[4].contains("about 10 apps"), "{err}");
    assert!(lines[8].starts_with("mode: "), "{err}");
    // The table's published row group.
    assert!(
        table.contains("published (Marvin, USENIX ATC 2020, figure 7)"),
        "{table}"
    );
    // The marks on the active-apps figure, and not on the resident one.
    let svg = std::fs::read_to_string(out.join("active_apps.svg")).unwrap();
    for label in ["paper: kill 10", "paper: swap 13", "paper: marvin 27"] {
        assert!(svg.contains(label), "{label} is not in active_apps.svg");
    }
    let resident = std::fs::read_to_string(out.join("resident.svg")).unwrap();
    assert!(!resident.contains("paper: kill"));
    // The record.
    let config = out.join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("scale = \"paper\""), "{text}");
    assert!(text.contains("[[scale_settings]]"), "{text}");
    assert!(text.contains("setting = \"budget\""), "{text}");
    // The record re-runs it, the same settings.
    let again = dir.path().join("again");
    let (_, err2) = ok(&marvin(&[
        "--config",
        config.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
        "--json",
    ]));
    assert!(err2.contains("as recorded in the --config file"), "{err2}");
    let text2 = std::fs::read_to_string(again.join("config.toml")).unwrap();
    let args_line = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("args = "))
            .unwrap()
            .to_owned()
    };
    assert_eq!(args_line(&text), args_line(&text2));
    assert!(text2.contains("scale = \"paper\""));
    let svg2 = std::fs::read_to_string(again.join("active_apps.svg")).unwrap();
    assert!(svg2.contains("paper: marvin 27"));
}

#[test]
fn a_bad_scale_is_a_usage_error() {
    let o = marvin(&["--scale", "huge"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("default, paper"));
}
