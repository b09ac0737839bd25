//! The Are We Fast Yet programs of `marvin bench interp --suite awfy` (`benches/awfy/`):
//! each MASM program prints the suite's published verification result under `marvin run`
//! at a small size, the same on every executor path (`--no-fuse`, `--no-resolve`,
//! `--no-barrier`), and each Lua peer prints exactly what its MASM program prints (skipped
//! with a note when `lua5.4` is not installed). The bench itself runs end to end on a
//! directory of stand-in programs, and rejects a wrong suite, program or directory with a
//! clear message.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use marvin_sidebyside::{
    geomean_samples, run_timed, Implementation, Suite, AWFY_PROGRAMS, BASELINE, GEOMEAN,
};
use marvin_sidebyside::{Sample, ROUND_RATIO};

const MARVIN: &str = env!("CARGO_BIN_EXE_marvin");

/// What a program prints after `n` inner iterations: the suite's verification result
/// (Queens' `true` as 1; Richards' two counts; DeltaBlue's checked values and how many
/// projection destinations it checked).
fn expected(name: &str, n: u64) -> String {
    match name {
        "bounce" => "1331\n".into(),
        "list" => "10\n".into(),
        "permute" => "8660\n".into(),
        "queens" => "1\n".into(),
        "sieve" => "669\n".into(),
        "storage" => "5461\n".into(),
        "towers" => "8191\n".into(),
        "richards" => "23246\n9297\n".into(),
        "deltablue" => format!("99\n1170\n5\n{}\n", 2 * (n - 1)),
        other => panic!("no expected output for {other}"),
    }
}

fn marvin_run(program: &str, n: u64, flags: &[&str]) -> Output {
    let path = Suite::Awfy
        .dir()
        .join("programs")
        .join(format!("{program}.masm"));
    Command::new(MARVIN)
        .arg("run")
        .args(flags)
        .arg(&path)
        .arg("-D")
        .arg(format!("N={n}"))
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot start {MARVIN}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn every_awfy_program_has_its_masm_program_and_lua_peer() {
    let names: Vec<&str> = AWFY_PROGRAMS.iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        [
            "bounce",
            "list",
            "permute",
            "queens",
            "sieve",
            "storage",
            "towers",
            "richards",
            "deltablue"
        ]
    );
    let dir = Suite::Awfy.dir();
    for p in AWFY_PROGRAMS {
        for imp in [Implementation::Marvin, Implementation::Lua] {
            let path = imp.source(&dir, p.name);
            assert!(path.is_file(), "missing {}", path.display());
        }
        let masm = std::fs::read_to_string(Implementation::Marvin.source(&dir, p.name))
            .expect("read the MASM program");
        assert!(
            masm.contains(&format!(".const N {}", p.full)),
            "{}.masm must declare `.const N {}` (its full size)",
            p.name,
            p.full
        );
        assert!(p.tiny >= 1 && p.tiny < p.quick && p.quick < p.full, "{p:?}");
    }
}

/// Every program prints its published result at its tiny size and at twice that, and
/// the same on every executor path.
#[test]
fn awfy_programs_print_the_published_results_on_every_executor_path() {
    for p in AWFY_PROGRAMS {
        for n in [p.tiny, 2 * p.tiny] {
            let want = expected(p.name, n);
            for flags in [
                &[][..],
                &["--no-fuse"],
                &["--no-resolve"],
                &["--no-barrier"],
                &["--no-fuse", "--no-resolve"],
            ] {
                let out = marvin_run(p.name, n, flags);
                assert!(
                    out.status.success(),
                    "{} N={n} {flags:?}: {} {}",
                    p.name,
                    out.status,
                    text(&out.stderr)
                );
                assert_eq!(text(&out.stdout), want, "{} N={n} {flags:?}", p.name);
            }
        }
    }
}

/// `N` is the number of iterations: at 0 the benchmark never runs, so a program with one
/// result prints its initial value (0) and Richards prints nothing.
#[test]
fn awfy_programs_take_their_iterations_from_n() {
    let out = marvin_run("richards", 0, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    let out = marvin_run("bounce", 0, &[]);
    assert_eq!(text(&out.stdout), "0\n");
}

#[test]
fn lua_peers_print_what_the_masm_programs_print() {
    if !Implementation::Lua.available() {
        eprintln!("note: lua5.4 not installed; the Lua peers are not checked");
        return;
    }
    let dir = Suite::Awfy.dir();
    for p in AWFY_PROGRAMS {
        for n in [p.tiny, 2 * p.tiny] {
            let what = format!("{} under lua", p.name);
            let (stdout, _) = run_timed(
                Implementation::Lua.command(Path::new(MARVIN), &dir, p.name, n),
                &what,
            )
            .unwrap_or_else(|e| panic!("{e:#}"));
            assert_eq!(stdout, expected(p.name, n), "{what}, n = {n}");
        }
    }
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

/// The whole bench on stand-in programs that print one line at once: every program runs
/// under marvin (with and without barriers) and Lua, CPython is skipped for lack of
/// peers with a note naming them, and each implementation gets a geometric-mean row over
/// all nine programs.
#[test]
fn the_awfy_bench_runs_every_program_and_adds_geometric_means() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir_all(tmp.path().join("programs")).unwrap();
    std::fs::create_dir_all(tmp.path().join("peers")).unwrap();
    for p in AWFY_PROGRAMS {
        std::fs::write(
            tmp.path().join("programs").join(format!("{}.masm", p.name)),
            format!(
                ".const N {}\n.method main args=0 locals=0\n  push 7\n  print\n  push 0\n  ret\n.end\n",
                p.full
            ),
        )
        .unwrap();
        std::fs::write(
            tmp.path().join("peers").join(format!("{}.lua", p.name)),
            "print(7)\n",
        )
        .unwrap();
    }
    let dir = tmp.path().display().to_string();
    let out = bench(&[
        "--suite", "awfy", "--dir", &dir, "--reps", "1", "--quick", "--json",
    ]);
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
    for p in AWFY_PROGRAMS {
        let scenario = format!("{}({})", p.name, p.quick);
        for imp in &impls {
            assert!(
                samples
                    .iter()
                    .any(|s| s["scenario"] == scenario.as_str() && s["impl"] == *imp),
                "no {imp} sample for {scenario}"
            );
        }
    }
    assert!(samples.iter().all(|s| s["impl"] != "cpython"));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cpython skipped for bounce, list,"),
        "{stderr}"
    );
    let geomeans: Vec<&serde_json::Value> = samples
        .iter()
        .filter(|s| s["scenario"] == GEOMEAN)
        .collect();
    if lua {
        assert_eq!(geomeans.len(), impls.len(), "{geomeans:?}");
        for g in geomeans {
            assert_eq!(g["programs"].as_array().map(Vec::len), Some(9), "{g}");
            assert!(g[ROUND_RATIO].as_f64().is_some_and(|r| r > 0.0), "{g}");
            assert!(g["ratio_to_baseline"].as_f64().is_some(), "{g}");
        }
    } else {
        assert!(geomeans.is_empty(), "no baseline, no geometric mean");
    }
}

#[test]
fn the_bench_rejects_a_wrong_suite_program_or_directory() {
    let out = bench(&["--suite", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--suite"),
        "{}",
        text(&out.stderr)
    );

    let out = bench(&["--suite", "awfy", "--only", "fib"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("unknown program \"fib\" in the awfy suite")
            && err.contains("bounce, list, permute"),
        "{err}"
    );

    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path().display().to_string();
    let out = bench(&["--suite", "awfy", "--only", "towers", "--dir", &dir]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("towers: no MASM program") && err.contains("towers.masm"),
        "{err}"
    );
}

fn sample(scenario: &str, imp: &str, median_ns: f64, round_ratio: f64) -> Sample {
    Sample::new(scenario, imp, median_ns).with(ROUND_RATIO, round_ratio)
}

/// The geometric-mean rows: of the medians (so that their ratio is the geometric mean of
/// the programs' ratios) and of the round ratios; none for an implementation that missed a
/// program, none without the baseline or with a single program.
#[test]
fn geometric_means_are_over_the_programs_every_row_shares() {
    let samples = vec![
        sample("a(1)", BASELINE, 100.0, 1.0),
        sample("a(1)", "marvin", 200.0, 2.0),
        sample("a(1)", "cpython", 400.0, 4.0),
        sample("b(1)", BASELINE, 400.0, 1.0),
        sample("b(1)", "marvin", 200.0, 0.5),
    ];
    let rows = geomean_samples(&samples);
    let names: Vec<&str> = rows.iter().map(|s| s.implementation.as_str()).collect();
    assert_eq!(names, [BASELINE, "marvin"], "cpython missed b");
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);
    assert!(close(rows[0].median_ns, 200.0), "{:?}", rows[0]);
    assert!(close(rows[1].median_ns, 200.0), "{:?}", rows[1]);
    assert!(close(rows[1].extra[ROUND_RATIO].as_f64().unwrap(), 1.0));
    assert!(rows.iter().all(|s| s.scenario == GEOMEAN));

    assert!(geomean_samples(&samples[..3]).is_empty(), "one program");
    let no_base: Vec<Sample> = samples
        .iter()
        .filter(|s| s.implementation != BASELINE)
        .cloned()
        .collect();
    assert!(geomean_samples(&no_base).is_empty(), "no baseline");
}
