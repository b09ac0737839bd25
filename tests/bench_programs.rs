//! The interpreter benchmark's programs compute the same thing in every language: each
//! peer (Lua, CPython) prints exactly what the MASM program prints, at the tiny sizes.
//! A peer whose interpreter is not installed is skipped with a note.

use std::path::Path;

use marvin_sidebyside::{default_dir, run_timed, Implementation, Suite, PROGRAMS};

const MARVIN: &str = env!("CARGO_BIN_EXE_marvin");

/// The peers installed here (a note for each one that is not).
fn installed_peers() -> Vec<Implementation> {
    [Implementation::Lua, Implementation::CPython]
        .into_iter()
        .filter(|imp| {
            let ok = imp.available();
            if !ok {
                eprintln!(
                    "note: {} not installed; its programs are not checked",
                    imp.peer_interpreter().unwrap_or("?")
                );
            }
            ok
        })
        .collect()
}

fn output(imp: Implementation, program: &str, size: u64) -> String {
    let what = format!("{program} under {}", imp.name());
    let (stdout, _) = run_timed(
        imp.command(Path::new(MARVIN), &default_dir(), program, size),
        &what,
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    assert!(!stdout.trim().is_empty(), "{what} printed nothing");
    stdout
}

#[test]
fn every_program_has_all_three_versions() {
    let dir = default_dir();
    for p in PROGRAMS {
        for path in [
            dir.join("programs").join(format!("{}.masm", p.name)),
            dir.join("peers").join(format!("{}.lua", p.name)),
            dir.join("peers").join(format!("{}.py", p.name)),
        ] {
            assert!(path.is_file(), "missing {}", path.display());
        }
        let masm = std::fs::read_to_string(dir.join("programs").join(format!("{}.masm", p.name)))
            .expect("read the MASM program");
        assert!(
            masm.contains(&format!(".const N {}", p.full)),
            "{}.masm must declare `.const N {}` (its full size)",
            p.name,
            p.full
        );
    }
}

#[test]
fn peers_print_the_same_at_tiny_sizes() {
    let peers = installed_peers();
    for p in PROGRAMS {
        let outputs: Vec<(Implementation, String)> = peers
            .iter()
            .map(|&imp| (imp, output(imp, p.name, p.tiny)))
            .collect();
        for pair in outputs.windows(2) {
            assert_eq!(
                pair[0].1,
                pair[1].1,
                "{}: {} and {} disagree",
                p.name,
                pair[0].0.name(),
                pair[1].0.name()
            );
        }
    }
}

/// Needs the MASM executor (`marvin run`): every MASM program prints what its peers print,
/// with and without the access barrier.
#[test]
fn masm_programs_print_what_the_peers_print() {
    let peers = installed_peers();
    for p in PROGRAMS {
        let masm = output(Implementation::Marvin, p.name, p.tiny);
        let no_barrier = output(Implementation::MarvinNoBarrier, p.name, p.tiny);
        assert_eq!(
            masm, no_barrier,
            "{}: --no-barrier changes the output",
            p.name
        );
        for &imp in &peers {
            assert_eq!(
                output(imp, p.name, p.tiny),
                masm,
                "{}: {} disagrees with the MASM program",
                p.name,
                imp.name()
            );
        }
    }
}

/// The bench runs a warm-up round, then every implementation once per round (not all of one
/// implementation's repetitions back to back), the order rotating from round to round so
/// that each implementation goes first in turn, and the per-round ratio cancels
/// a host whose speed changes from round to round. A fake runner stands in for the
/// subprocesses: each implementation has a fixed cost, scaled by the round's "host speed".
#[test]
fn rounds_interleave_and_round_ratios_cancel_drift() {
    use marvin_sidebyside::{measure_rounds, BASELINE};
    use marvin_sidebyside::{JIT_ROUND_RATIO, ROUND_RATIO};

    let program = &PROGRAMS[0];
    let imps = Implementation::ALL;
    let cost = |imp: Implementation| match imp {
        Implementation::Marvin => 48.0,
        Implementation::MarvinNoBarrier => 40.0,
        Implementation::Lua => 64.0,
        Implementation::LuaJit => 32.0,
        Implementation::CPython => 320.0,
    };
    // The host's slowdown in the warm-up round (index 0) and each timed round after it.
    let slowdown = [1000.0, 1.0, 4.0, 2.0, 8.0, 0.5];
    let reps = slowdown.len() - 1;
    let mut calls = Vec::new();
    let samples = measure_rounds(program, 7, &imps, reps, |imp| {
        let round = calls.len() / imps.len();
        calls.push(imp);
        Ok(("same\n".to_string(), cost(imp) * slowdown[round]))
    })
    .expect("the fake runs succeed");

    // One warm-up run of each in order, then rounds whose order rotates: round r starts
    // with implementation r (mod 5), so each goes first in turn.
    let mut expected: Vec<Implementation> = imps.to_vec();
    for r in 0..reps {
        expected.extend((0..imps.len()).map(|k| imps[(r + k) % imps.len()]));
    }
    assert_eq!(
        calls[..2 * imps.len()],
        imps.iter().chain(&imps).copied().collect::<Vec<_>>(),
        "the warm-up and the first round run in the order given"
    );
    assert_eq!(
        calls[2 * imps.len()..3 * imps.len()],
        [
            Implementation::MarvinNoBarrier,
            Implementation::Lua,
            Implementation::LuaJit,
            Implementation::CPython,
            Implementation::Marvin
        ],
        "the second round starts with the second implementation"
    );
    assert_eq!(calls, expected, "one warm-up round, then rotating rounds");

    assert_eq!(samples.len(), imps.len());
    for (sample, imp) in samples.iter().zip(imps) {
        assert_eq!(sample.implementation, imp.name());
        assert_eq!(sample.scenario, format!("{}(7)", program.name));
        let times: Vec<f64> = sample.extra["round_times_ns"]
            .as_array()
            .expect("round times")
            .iter()
            .map(|v| v.as_f64().expect("a time"))
            .collect();
        let own: Vec<f64> = slowdown[1..].iter().map(|s| cost(imp) * s).collect();
        assert_eq!(times, own, "{}: the warm-up round is not timed", imp.name());
        let mut sorted = own.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(sample.median_ns, sorted[reps / 2], "{}", imp.name());
        // Every round's ratio is the costs' ratio, however fast the host was that round.
        let want = cost(imp) / cost(Implementation::Lua);
        let ratio = sample.extra[ROUND_RATIO].as_f64().expect("a round ratio");
        assert!(
            (ratio - want).abs() < 1e-12,
            "{}: {ratio} vs {want}",
            imp.name()
        );
        for r in sample.extra["round_ratios"].as_array().expect("ratios") {
            assert!((r.as_f64().expect("a ratio") - want).abs() < 1e-12);
        }
        // And the ratio to LuaJIT's interpreter, round by round, as its own figure.
        let want = cost(imp) / cost(Implementation::LuaJit);
        let jit = sample.extra[JIT_ROUND_RATIO]
            .as_f64()
            .expect("a LuaJIT ratio");
        assert!(
            (jit - want).abs() < 1e-12,
            "{}: {jit} vs {want}",
            imp.name()
        );
    }
    assert_eq!(BASELINE, Implementation::Lua.name());

    // Without the baseline there is no round ratio.
    let no_lua = [Implementation::Marvin, Implementation::CPython];
    let samples = measure_rounds(program, 7, &no_lua, 2, |imp| {
        Ok(("same\n".to_string(), cost(imp)))
    })
    .expect("the fake runs succeed");
    assert!(samples.iter().all(|s| !s.extra.contains_key(ROUND_RATIO)));
}

/// A run that prints something else than the first one, the warm-up included, fails the
/// bench naming the program and both implementations.
#[test]
fn rounds_fail_on_different_output() {
    use marvin_sidebyside::measure_rounds;

    let program = &PROGRAMS[1];
    let mut n = 0;
    let err = measure_rounds(program, 3, &Implementation::ALL, 3, |imp| {
        n += 1;
        let out = if imp == Implementation::CPython && n > Implementation::ALL.len() {
            "other\n"
        } else {
            "same\n"
        };
        Ok((out.to_string(), 1.0))
    })
    .expect_err("a different output fails");
    let text = format!("{err:#}");
    assert!(text.contains(program.name), "{text}");
    assert!(
        text.contains("cpython") && text.contains("marvin"),
        "{text}"
    );
    assert_eq!(
        n,
        2 * Implementation::ALL.len(),
        "stops at the first mismatch"
    );

    let err = measure_rounds(program, 3, &Implementation::ALL, 3, |_| {
        anyhow::bail!("cannot start")
    })
    .expect_err("a failing run fails the bench");
    assert!(format!("{err:#}").contains("cannot start"));
}

/// Every program of every suite that has a Lua peer runs under `luajit -joff` (on its
/// LuaJIT port `peers/NAME.jit.lua` where the peer uses Lua 5.4's integer operators) and
/// prints exactly what its MASM program prints, at the tiny size and twice that (at the
/// sizes it measures, the bench itself fails on a peer that prints something else).
#[test]
fn luajit_ports_print_what_the_masm_programs_print() {
    if !Implementation::LuaJit.available() {
        eprintln!("note: luajit is not installed (benches/install-peers.sh); ports not checked");
        return;
    }
    let marvin = Path::new(MARVIN);
    let mut checked = 0;
    for suite in Suite::ALL {
        let dir = suite.dir();
        for p in suite.programs() {
            if !Implementation::Lua.source(&dir, p.name).is_file() {
                continue;
            }
            for size in [p.tiny, 2 * p.tiny] {
                let run = |imp: Implementation| {
                    let what = format!(
                        "{} ({}) at {size} under {}",
                        p.name,
                        suite.name(),
                        imp.name()
                    );
                    run_timed(imp.command(marvin, &dir, p.name, size), &what)
                        .unwrap_or_else(|e| panic!("{e:#}"))
                        .0
                };
                let masm = run(Implementation::Marvin);
                assert_eq!(
                    run(Implementation::LuaJit),
                    masm,
                    "{} ({}) at {size}: luajit -joff disagrees with the MASM program",
                    p.name,
                    suite.name()
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "no program was checked");
}
