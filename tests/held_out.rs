//! The held-out programs of `marvin bench interp --suite elsewhere` (`benches/elsewhere/`):
//! every program has its MASM program and Lua peer with the suite's full size as their
//! default, the suite runs end to end on the real programs (every implementation of every
//! program in interleaved rounds, outputs compared), and a peer that prints something else
//! fails the bench naming the program. (`tests/fusion.rs` runs each program fused and
//! unfused against its Lua peer.) No test looks at a time.

use std::process::{Command, Output, Stdio};

use marvin_sidebyside::ROUND_RATIO;
use marvin_sidebyside::{Implementation, Suite, ELSEWHERE_PROGRAMS, GEOMEAN};

const MARVIN: &str = env!("CARGO_BIN_EXE_marvin");

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `marvin bench interp ARGS`.
fn bench(args: &[&str]) -> Output {
    Command::new(MARVIN)
        .args(["bench", "interp"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot start {MARVIN}: {e}"))
}

#[test]
fn every_held_out_program_has_its_masm_program_and_lua_peer_at_the_full_size() {
    let names: Vec<&str> = ELSEWHERE_PROGRAMS.iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        [
            "xorsum",
            "bubble",
            "collatz",
            "matmul",
            "gcd",
            "linked",
            "insertion",
            "digits",
            "hashtab",
            "tree"
        ]
    );
    let dir = Suite::Elsewhere.dir();
    assert!(dir.ends_with("benches/elsewhere"), "{}", dir.display());
    for p in ELSEWHERE_PROGRAMS {
        let masm = std::fs::read_to_string(Implementation::Marvin.source(&dir, p.name))
            .unwrap_or_else(|e| panic!("{}: the MASM program: {e}", p.name));
        assert!(
            masm.contains(&format!(".const N {}\n", p.full)),
            "{}.masm must declare `.const N {}` (its full size)",
            p.name,
            p.full
        );
        let lua = std::fs::read_to_string(Implementation::Lua.source(&dir, p.name))
            .unwrap_or_else(|e| panic!("{}: the Lua peer: {e}", p.name));
        assert!(
            lua.contains(&format!("tonumber(arg[1]) or {}\n", p.full)),
            "{}.lua must take its size from argv[1], {} by default",
            p.name,
            p.full
        );
        assert!(p.tiny >= 1 && p.tiny < p.quick && p.quick < p.full, "{p:?}");
    }
}

/// The suite on the real programs at their `--quick` sizes, one round: a sample of every
/// program for marvin (with and without barriers) and Lua, each with its round ratio, and
/// the geometric-mean rows over the ten. The bench compares every run's output with the
/// first one's, so its success says marvin and Lua printed the same for each program.
#[test]
fn the_held_out_suite_runs_every_program_and_compares_outputs() {
    let out = bench(&["--suite", "elsewhere", "--quick", "--reps", "1", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let samples: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let samples = samples.as_array().expect("an array");
    let lua = Implementation::Lua.available();
    let mut impls = vec!["marvin", "marvin-nobarrier"];
    if lua {
        impls.push("lua");
    }
    if Implementation::LuaJit.available() {
        impls.push("luajit");
    }
    for p in ELSEWHERE_PROGRAMS {
        let scenario = format!("{}({})", p.name, p.quick);
        for imp in &impls {
            let s = samples
                .iter()
                .find(|s| s["scenario"] == scenario.as_str() && s["impl"] == *imp)
                .unwrap_or_else(|| panic!("no {imp} sample for {scenario}"));
            assert_eq!(s["reps"], 1, "{s}");
            if lua {
                assert!(s[ROUND_RATIO].as_f64().is_some_and(|r| r > 0.0), "{s}");
            }
        }
    }
    assert!(samples.iter().all(|s| s["impl"] != "cpython"));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cpython skipped for xorsum, bubble,"),
        "{stderr}"
    );
    let geomeans: Vec<&serde_json::Value> = samples
        .iter()
        .filter(|s| s["scenario"] == GEOMEAN)
        .collect();
    if lua {
        assert_eq!(geomeans.len(), impls.len(), "{geomeans:?}");
        for g in geomeans {
            assert_eq!(g["programs"].as_array().map(Vec::len), Some(10), "{g}");
        }
    }
}

/// A Lua peer that prints something else than its MASM program fails the bench, naming
/// the program and both outputs.
#[test]
fn the_held_out_suite_fails_when_a_peer_prints_otherwise() {
    if !Implementation::Lua.available() {
        eprintln!("note: lua5.4 not installed; the comparison with Lua is not checked");
        return;
    }
    let tmp = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir_all(tmp.path().join("programs")).unwrap();
    std::fs::create_dir_all(tmp.path().join("peers")).unwrap();
    std::fs::write(
        tmp.path().join("programs").join("gcd.masm"),
        ".const N 1000\n.method main args=0 locals=0\n  push 7\n  print\n  push 0\n  ret\n.end\n",
    )
    .unwrap();
    std::fs::write(tmp.path().join("peers").join("gcd.lua"), "print(8)\n").unwrap();
    let dir = tmp.path().display().to_string();
    let out = bench(&[
        "--suite",
        "elsewhere",
        "--only",
        "gcd",
        "--dir",
        &dir,
        "--reps",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("gcd: lua printed \"8\\n\" but marvin printed \"7\\n\""),
        "{err}"
    );
}
