//! The docs keep up with the binary: every flag of every subcommand (as the built
//! binary's `--help` lists it) appears in the README's usage block or in `docs/`, and
//! every `marvin bench` subcommand has its row on the benchmarks page.

use std::collections::BTreeSet;
use std::process::Command;

fn help(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_marvin"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(o.status.success(), "marvin {args:?} --help failed");
    String::from_utf8(o.stdout).unwrap()
}

/// The subcommands a help text lists under "Commands:" (without `help`).
fn subcommands(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The flags a help text lists under "Options:" (`--name` and `-X`, without help and
/// version).
fn flags(text: &str) -> BTreeSet<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("Options:"))
        .skip(1)
        .filter(|l| l.trim_start().starts_with('-') && l.starts_with("  "))
        .flat_map(|l| {
            l.split_whitespace()
                .take_while(|w| w.starts_with('-'))
                .map(|w| {
                    w.trim_end_matches(',')
                        .split(['=', '<'])
                        .next()
                        .unwrap()
                        .to_owned()
                })
                .collect::<Vec<_>>()
        })
        .filter(|f| !["-h", "--help", "-V", "--version"].contains(&f.as_str()))
        .collect()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The README's "Using it" usage block.
fn usage_block() -> String {
    let readme = read("README.md");
    let start = readme.find("## Using it").expect("a Using it section");
    let rest = &readme[start..];
    let open = rest.find("```sh").expect("a usage block") + 5;
    let close = rest[open..].find("```").unwrap() + open;
    rest[open..close].to_owned()
}

/// Every doc page's text.
fn docs() -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut all = String::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            all.push_str(&std::fs::read_to_string(p).unwrap());
        }
    }
    all
}

/// Whether `flag` appears as a flag in `text` (not as the prefix of a longer one).
fn mentions(text: &str, flag: &str) -> bool {
    text.match_indices(flag).any(|(i, _)| {
        let next = text[i + flag.len()..].chars().next();
        let prev = text[..i].chars().next_back();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
            && !prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

#[test]
fn every_flag_of_every_subcommand_is_documented() {
    let usage = usage_block();
    let docs = docs();
    let mut missing = Vec::new();
    let mut commands: Vec<Vec<String>> = Vec::new();
    for top in subcommands(&help(&[])) {
        let text = help(&[&top]);
        let subs = subcommands(&text);
        if subs.is_empty() {
            commands.push(vec![top]);
        } else {
            commands.extend(subs.into_iter().map(|s| vec![top.clone(), s]));
        }
    }
    assert!(commands.len() > 15, "{commands:?}");
    for cmd in &commands {
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        for flag in flags(&help(&args)) {
            if !mentions(&usage, &flag) && !mentions(&docs, &flag) {
                missing.push(format!("marvin {} {flag}", cmd.join(" ")));
            }
        }
    }
    assert!(missing.is_empty(), "flags in no doc: {missing:#?}");
}

#[test]
fn every_bench_has_its_row_on_the_benchmarks_page() {
    let page = read("docs/benchmarks.md");
    let benches = subcommands(&help(&["bench"]));
    assert!(benches.len() >= 9, "{benches:?}");
    let missing: Vec<&String> = benches
        .iter()
        .filter(|b| !page.contains(&format!("marvin bench {b}")))
        .collect();
    assert!(
        missing.is_empty(),
        "benches not on docs/benchmarks.md: {missing:?}"
    );
}

#[test]
fn the_help_parsers_read_flags_and_commands() {
    let text = "Usage: x\n\nCommands:\n  run   Run\n  help  Print\n\nOptions:\n  -D <NAME=VALUE>      Override\n      --heap-limit <SIZE>  Live\n  -o, --out <DIR>  Out\n  -h, --help   Print help\n";
    assert_eq!(subcommands(text), ["run"]);
    let f: Vec<String> = flags(text).into_iter().collect();
    assert_eq!(f, ["--heap-limit", "--out", "-D", "-o"]);
    assert!(mentions("[--out DIR]", "--out"));
    assert!(!mentions("[--output DIR]", "--out"));
}
