//! The interpreter benchmark's programs compute the same thing in every language: each
//! peer (Lua, CPython) prints exactly what the MASM program prints, at the tiny sizes.
//! A peer whose interpreter is not installed is skipped with a note.

use std::path::Path;

use marvin::bench::interp::{default_dir, run_timed, Implementation, PROGRAMS};

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
