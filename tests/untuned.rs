//! The untuned programs of `marvin bench interp --suite untuned` (`benches/untuned/`,
//! added for issue 46 before any tuning of the interpreter on them): every program has its
//! MASM program and Lua peer with the suite's full size as their default, and prints at its
//! tiny size and twice that the same on every executor path (fused, `--no-fuse`,
//! `--no-barrier`, `--no-resolve`) as its Lua peer (when `lua5.4` is installed). No test
//! looks at a time.

use std::path::Path;
use std::process::{Command, Stdio};

use marvin_sidebyside::{run_timed, Implementation, Suite, UNTUNED_PROGRAMS};

const MARVIN: &str = env!("CARGO_BIN_EXE_marvin");

#[test]
fn every_untuned_program_has_its_masm_program_and_lua_peer_at_the_full_size() {
    let names: Vec<&str> = UNTUNED_PROGRAMS.iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        ["fannkuch", "spectral", "collatzmax", "bubblelocals"]
    );
    let dir = Suite::Untuned.dir();
    assert!(dir.ends_with("benches/untuned"), "{}", dir.display());
    for p in UNTUNED_PROGRAMS {
        let masm = std::fs::read_to_string(Implementation::Marvin.source(&dir, p.name))
            .unwrap_or_else(|e| panic!("{}: the MASM program: {e}", p.name));
        assert!(
            masm.contains(&format!(".const N {}\n", p.full)),
            "{}.masm must declare `.const N {}` (its full size)",
            p.name,
            p.full
        );
        for imp in [Implementation::Lua, Implementation::LuaJit] {
            let peer = std::fs::read_to_string(imp.source(&dir, p.name))
                .unwrap_or_else(|e| panic!("{}: the {} peer: {e}", p.name, imp.name()));
            assert!(
                peer.contains(&format!("tonumber(arg[1]) or {}\n", p.full)),
                "{}'s {} peer must take its size from argv[1], {} by default",
                p.name,
                imp.name(),
                p.full
            );
        }
        assert!(p.tiny >= 1 && p.tiny < p.quick && p.quick < p.full, "{p:?}");
    }
}

/// `marvin run FLAGS PROGRAM -D N=n`: its stdout, after asserting it succeeded.
fn marvin(program: &Path, n: u64, flags: &[&str]) -> String {
    let out = Command::new(MARVIN)
        .arg("run")
        .args(flags)
        .arg(program)
        .arg("-D")
        .arg(format!("N={n}"))
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot start {MARVIN}: {e}"));
    let what = format!("{} {flags:?} at {n}", program.display());
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!stdout.trim().is_empty(), "{what} printed nothing");
    stdout
}

#[test]
fn untuned_programs_print_the_same_on_every_executor_path_and_as_their_lua_peers() {
    let dir = Suite::Untuned.dir();
    let lua = Implementation::Lua.available();
    if !lua {
        eprintln!("note: lua5.4 not installed; the comparison with Lua is not checked");
    }
    for p in UNTUNED_PROGRAMS {
        let program = Implementation::Marvin.source(&dir, p.name);
        for n in [p.tiny, 2 * p.tiny] {
            let fused = marvin(&program, n, &[]);
            for flags in [&["--no-fuse"][..], &["--no-barrier"], &["--no-resolve"]] {
                assert_eq!(
                    marvin(&program, n, flags),
                    fused,
                    "{} at {n}: {flags:?} changes the output",
                    p.name
                );
            }
            if lua {
                let what = format!("{} at {n} under lua", p.name);
                let (peer, _) = run_timed(
                    Implementation::Lua.command(Path::new(MARVIN), &dir, p.name, n),
                    &what,
                )
                .unwrap_or_else(|e| panic!("{e:#}"));
                assert_eq!(peer, fused, "{what}: the Lua peer prints otherwise");
            }
        }
    }
}
