//! marvin's three fronts that read durations (command-line flags, policy files, lifecycle
//! scripts) read the same text as the same duration, and each turns a bad one (a bare
//! non-zero number, an unknown unit) away with a message and a non-zero exit.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use clap::Parser;
use marvin::{Cli, Cmd};
use marvin_app::Lifecycle;
use marvin_runtime::duration;
use marvin_swap::PolicyConfig;

/// Texts every front must read alike: each unit, fractions, and (where the front allows a
/// zero duration) a bare 0.
const TEXTS: &[&str] = &[
    "40ns", "250us", "1500ms", "1.5s", "0.25s", "2m", "1h", "0.5m",
];

/// Bad texts and a piece of the message each must produce.
const BAD: &[(&str, &str)] = &[
    ("2", "2ms"),
    ("5 parsecs", "unknown unit"),
    ("-1s", "negative"),
];

fn marvin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_marvin"))
        .args(args)
        .output()
        .expect("run marvin")
}

fn expected(text: &str) -> Duration {
    duration::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn assert_rejected(o: &Output, text: &str, want: &str) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{text:?} was accepted: {stderr}");
    assert!(stderr.contains(want), "{text:?}: {stderr}");
}

#[test]
fn a_command_line_flag_reads_the_shared_syntax() {
    let launch_every = |text: &str| {
        let cli = Cli::try_parse_from(["marvin", "pressure", "--launch-every", text])
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        match cli.cmd {
            Cmd::Pressure(a) => a.launch_every,
            other => panic!("parsed as {other:?}"),
        }
    };
    for text in TEXTS.iter().chain(&["0"]) {
        assert_eq!(launch_every(text), expected(text), "{text}");
    }
    for (text, want) in BAD {
        // `=` so that `-1s` reaches the parser instead of reading as a flag.
        let o = marvin(&["pressure", &format!("--launch-every={text}")]);
        assert_rejected(&o, text, want);
        assert_eq!(o.status.code(), Some(2), "a usage error");
        assert!(String::from_utf8_lossy(&o.stderr).contains("--launch-every"));
    }
}

#[test]
fn a_policy_file_reads_the_shared_syntax() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    let check = |value: &str| {
        std::fs::write(&file, format!("[saver]\nbudget = {value}\n")).unwrap();
        marvin(&["policy", "check", file.to_str().unwrap()])
    };
    for text in TEXTS {
        let p = PolicyConfig::from_toml_str(&format!("[saver]\nbudget = \"{text}\"\n"))
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(p.saver.budget, expected(text), "{text}");
        // Through the binary: the policy printed back holds the same duration.
        let o = check(&format!("\"{text}\""));
        assert!(o.status.success(), "{text}: {o:?}");
        let stdout = String::from_utf8_lossy(&o.stdout);
        let line = format!("budget = \"{}\"", duration::format(expected(text)));
        assert!(stdout.contains(&line), "{text}: no {line:?} in\n{stdout}");
    }
    for (text, want) in BAD {
        assert_rejected(&check(&format!("\"{text}\"")), text, want);
    }
    // A bare TOML number other than 0 is no duration either.
    let o = check("200");
    assert_rejected(&o, "200", "\"200ms\"");
    assert_rejected(&o, "200", "saver.budget");
}

#[test]
fn a_lifecycle_script_reads_the_shared_syntax() {
    for text in TEXTS.iter().chain(&["0"]) {
        let l = Lifecycle::parse(&format!("bg@{text}")).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(l.steps[0].0, expected(text), "{text}");
    }
    let program = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/fib.masm");
    for (text, want) in BAD {
        let spec = format!("bg@{text}");
        let o = marvin(&["run", program.to_str().unwrap(), "--lifecycle", &spec]);
        assert_rejected(&o, text, want);
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--lifecycle"),
            "the message names the flag"
        );
    }
}

#[test]
fn a_lifecycle_time_too_late_names_the_step_and_blames_time_scale_only_when_given() {
    let program = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/fib.masm");
    let run = |spec: &str, scale: Option<&str>| {
        let mut args = vec!["run", program.to_str().unwrap(), "--lifecycle", spec];
        if let Some(s) = scale {
            args.extend(["--time-scale", s]);
        }
        marvin(&args)
    };
    // Too late at any scale: the step's time is named, no flag that nobody gave.
    let o = run("bg@18446744073709551615s", None);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--lifecycle: a step at 18446744073709551615s is later than")
            && stderr.contains("at most 876000h"),
        "{stderr}"
    );
    assert!(!stderr.contains("--time-scale"), "{stderr}");
    // Late only once scaled: the scale given is named with it.
    let o = run("bg@500000h", Some("2"));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a step at 500000h times --time-scale 2 is later than"),
        "{stderr}"
    );
    // At the bound it runs.
    let o = run("bg@876000h", None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_policy_period_under_a_millisecond_or_a_file_that_is_not_utf8_is_a_bad_policy() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    let check = || marvin(&["policy", "check", file.to_str().unwrap()]);
    std::fs::write(&file, "[working_set]\nforeground_period = \"1ns\"\n").unwrap();
    let o = check();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("working_set.foreground_period") && stderr.contains("at least 1ms"),
        "{stderr}"
    );
    std::fs::write(&file, b"[saver]\nbudget = \"1s\" # \xff\n").unwrap();
    let o = check();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(file.to_str().unwrap()) && stderr.contains("not UTF-8"),
        "{stderr}"
    );
}
