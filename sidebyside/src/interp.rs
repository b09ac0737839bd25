//! `marvin bench interp`: the MASM interpreter against Lua 5.4, LuaJIT's interpreter
//! (`luajit -joff`) and CPython on the same programs.
//!
//! Four suites ([`Suite`], `--suite`): the default one ([`PROGRAMS`], in `benches/`), the
//! Are We Fast Yet benchmarks that need only integers and objects ([`AWFY_PROGRAMS`], in
//! `benches/awfy/`; Marr, Daloze and Mössenböck, DLS 2016), each of which runs its
//! benchmark `N` times (DeltaBlue: its tests at size `N`) and checks the suite's
//! published result, and the held-out programs ([`ELSEWHERE_PROGRAMS`], in
//! `benches/elsewhere/`): small integer programs written apart from the interpreter's
//! tuning, each as a user of MASM and of Lua would write it, and the untuned programs
//! ([`UNTUNED_PROGRAMS`], in `benches/untuned/`), added before any tuning and kept as
//! written. Each program exists up to four times with the same algorithm and the same
//! printed result: `DIR/programs/NAME.masm` (its size is the constant `N`, overridden with
//! `-D N=...`), `DIR/peers/NAME.lua`, `DIR/peers/NAME.jit.lua` (LuaJIT's port, where the
//! Lua peer uses Lua 5.4's integer operators; LuaJIT runs `NAME.lua` otherwise) and
//! `DIR/peers/NAME.py` (the size is `argv[1]`);
//! a peer without its file for a program is skipped for that program with a note. Every
//! implementation runs as a subprocess and is timed by wall clock, start to exit. Each
//! program runs one untimed warm-up round and then `--reps` rounds, a round running every
//! implementation once, the order rotating from round to round so that each goes first in
//! turn ([`measure_rounds`]), so that a slow stretch of a shared host, and whatever the run
//! before leaves behind, lands on all of them alike; the table reports medians, ratios of the medians to
//! Lua, and the median of the per-round ratios to Lua, and last the geometric mean over the
//! programs of each implementation's ratios ([`geomean_samples`]). Every implementation
//! must print exactly what the others print, or the benchmark fails naming the program.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;

use super::{finish, median, rounds, CommonArgs, Sample, JIT_ROUND_RATIO, ROUND_RATIO};

/// Five rounds by default: the verdict is the median of the per-round ratios, and on a
/// shared host one round in four or five runs slow; of three rounds, two slow ones move
/// the median, of five it takes three (`docs/benchmarks.md`).
#[derive(Debug, Args)]
#[command(mut_arg("reps", |a| a.default_value("5")))]
pub struct InterpArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// The programs: `default` (fib, loop, sieve, binarytrees, fields, arraysum, count,
    /// nested, bound, hash, methods), `awfy` (the Are We Fast Yet benchmarks bounce, list,
    /// permute, queens, sieve, storage, towers, richards, deltablue), `elsewhere` (the
    /// held-out programs xorsum, bubble, collatz, matmul, gcd, linked, insertion, digits,
    /// hashtab, tree) or `untuned` (fannkuch, spectral, collatzmax, bubblelocals).
    #[arg(long, value_enum, default_value_t = Suite::Default)]
    pub suite: Suite,
    /// Run only this program of the suite.
    #[arg(long)]
    pub only: Option<String>,
    /// Run the smaller sizes (seconds instead of minutes).
    #[arg(long)]
    pub quick: bool,
    /// Directory holding `programs/` and `peers/` (default: this source tree's `benches/`,
    /// `benches/awfy/` for `--suite awfy`, `benches/elsewhere/` for `--suite elsewhere`,
    /// `benches/untuned/` for `--suite untuned`).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// A set of benchmark programs with its own directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Suite {
    /// The interpreter's own programs, in `benches/`.
    Default,
    /// The Are We Fast Yet benchmarks, in `benches/awfy/`.
    Awfy,
    /// The held-out programs, in `benches/elsewhere/`.
    Elsewhere,
    /// Programs added for issue 46 before any tuning and kept as written, in
    /// `benches/untuned/`.
    Untuned,
}

impl Suite {
    /// Every suite, in the order `--suite` lists them.
    pub const ALL: [Suite; 4] = [
        Suite::Default,
        Suite::Awfy,
        Suite::Elsewhere,
        Suite::Untuned,
    ];

    /// The suite's programs, in the order they run.
    pub fn programs(self) -> &'static [BenchProgram] {
        match self {
            Suite::Default => PROGRAMS,
            Suite::Awfy => AWFY_PROGRAMS,
            Suite::Elsewhere => ELSEWHERE_PROGRAMS,
            Suite::Untuned => UNTUNED_PROGRAMS,
        }
    }

    /// The directory of this source tree holding the suite's `programs/` and `peers/`.
    pub fn dir(self) -> PathBuf {
        match self {
            Suite::Default => default_dir(),
            Suite::Awfy => default_dir().join("awfy"),
            Suite::Elsewhere => default_dir().join("elsewhere"),
            Suite::Untuned => default_dir().join("untuned"),
        }
    }

    /// The name `--suite` takes.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Default => "default",
            Suite::Awfy => "awfy",
            Suite::Elsewhere => "elsewhere",
            Suite::Untuned => "untuned",
        }
    }
}

/// Programs of shapes the interpreter was not tuned on, added before any tuning and kept
/// as written (issue 46), each with a Lua 5.4 peer and, where that peer uses Lua 5.4's
/// integer operators, a LuaJIT port.
pub const UNTUNED_PROGRAMS: &[BenchProgram] = &[
    BenchProgram {
        name: "fannkuch",
        about: "fannkuch-redux(N): permutations, flips and rotations on small int arrays",
        full: 9,
        quick: 8,
        tiny: 5,
    },
    BenchProgram {
        name: "spectral",
        about: "ten rounds of v = A u, u = A^T v over an N x N integer matrix, a call per entry",
        full: 600,
        quick: 150,
        tiny: 8,
    },
    BenchProgram {
        name: "collatzmax",
        about: "the longest Collatz chain below N: a branch inside `while x != 1`, `and`, `shr`",
        full: 200_000,
        quick: 20_000,
        tiny: 300,
    },
    BenchProgram {
        name: "bubblelocals",
        about: "bubble sort of N ints, the bound `j < N - 1 - i` in the test, both neighbours in locals",
        full: 3_000,
        quick: 600,
        tiny: 40,
    },
];

/// One benchmark program and its sizes (the value of `N` / `argv[1]`).
#[derive(Debug, Clone, Copy)]
pub struct BenchProgram {
    pub name: &'static str,
    /// What it measures, for the table's notes.
    pub about: &'static str,
    /// The full size (also the default of the program's `.const N`).
    pub full: u64,
    /// The size `--quick` runs.
    pub quick: u64,
    /// A size small enough for tests.
    pub tiny: u64,
}

/// The programs, in the order they run.
pub const PROGRAMS: &[BenchProgram] = &[
    BenchProgram {
        name: "fib",
        about: "recursive fib(N): calls",
        full: 30,
        quick: 22,
        tiny: 10,
    },
    BenchProgram {
        name: "loop",
        about: "N iterations of integer arithmetic",
        full: 100_000_000,
        quick: 2_000_000,
        tiny: 1_000,
    },
    BenchProgram {
        name: "sieve",
        about: "sieve of Eratosthenes up to N on a byte array",
        full: 10_000_000,
        quick: 300_000,
        tiny: 1_000,
    },
    BenchProgram {
        name: "binarytrees",
        about: "binary-trees of depth N: allocation",
        full: 16,
        quick: 10,
        tiny: 4,
    },
    BenchProgram {
        name: "fields",
        about: "N object field read/write rounds",
        full: 10_000_000,
        quick: 300_000,
        tiny: 1_000,
    },
    BenchProgram {
        name: "arraysum",
        about: "fill and sum an array of N ints",
        full: 10_000_000,
        quick: 300_000,
        tiny: 1_000,
    },
    BenchProgram {
        name: "count",
        about: "s = s + i for i below N, the test at the top of the loop",
        full: 100_000_000,
        quick: 2_000_000,
        tiny: 1_000,
    },
    BenchProgram {
        name: "nested",
        about: "nested loops over a 2-D index: fill and sum an N x N int grid",
        full: 3_000,
        quick: 500,
        tiny: 30,
    },
    BenchProgram {
        name: "bound",
        about: "a while loop of N iterations whose bound is an object's field",
        full: 30_000_000,
        quick: 1_000_000,
        tiny: 1_000,
    },
    BenchProgram {
        name: "hash",
        about: "N integers through a 32-bit integer hash mixer, summed",
        full: 10_000_000,
        quick: 300_000,
        tiny: 1_000,
    },
    BenchProgram {
        name: "methods",
        about: "N calls of an instance method with two arguments",
        full: 10_000_000,
        quick: 300_000,
        tiny: 1_000,
    },
];

/// The Are We Fast Yet benchmarks that need only integers and objects (`--suite awfy`),
/// in the suite's order: micro, then macro. `N` is the benchmark's inner iterations: how
/// many times a run repeats the benchmark (each result checked), except DeltaBlue, whose
/// inner iterations are the size of its two tests, as in the suite. The full sizes take
/// about a second each for marvin on the 2-vCPU machine of `docs/benchmarks.md`.
pub const AWFY_PROGRAMS: &[BenchProgram] = &[
    BenchProgram {
        name: "bounce",
        about: "AWFY Bounce: 100 balls for 50 steps, N times (1331 bounces each)",
        full: 2_000,
        quick: 200,
        tiny: 2,
    },
    BenchProgram {
        name: "list",
        about: "AWFY List: recursive tail over linked lists, N times (length 10)",
        full: 3_500,
        quick: 350,
        tiny: 2,
    },
    BenchProgram {
        name: "permute",
        about: "AWFY Permute: the permutations of 6 elements, N times (8660 calls)",
        full: 2_000,
        quick: 200,
        tiny: 2,
    },
    BenchProgram {
        name: "queens",
        about: "AWFY Queens: eight queens ten times, N times (true)",
        full: 3_000,
        quick: 300,
        tiny: 2,
    },
    BenchProgram {
        name: "sieve",
        about: "AWFY Sieve: primes up to 5000, N times (669)",
        full: 5_000,
        quick: 500,
        tiny: 2,
    },
    BenchProgram {
        name: "storage",
        about: "AWFY Storage: a tree of arrays 7 deep, N times (5461 arrays)",
        full: 1_500,
        quick: 150,
        tiny: 2,
    },
    BenchProgram {
        name: "towers",
        about: "AWFY Towers: towers of Hanoi with 13 disks moved, N times (8191 moves)",
        full: 1_000,
        quick: 100,
        tiny: 2,
    },
    BenchProgram {
        name: "richards",
        about: "AWFY Richards: the OS task simulation, N times (23246 packets, 9297 holds)",
        full: 80,
        quick: 8,
        tiny: 1,
    },
    BenchProgram {
        name: "deltablue",
        about: "AWFY DeltaBlue: chain and projection tests of N constraints",
        full: 50_000,
        quick: 5_000,
        tiny: 20,
    },
];

/// The held-out programs (`--suite elsewhere`): integer programs written apart from the
/// interpreter's own suites and its tuning (the xor loop, bubble sort and Collatz
/// counts, then shapes written before the interpreter was measured on them). The full
/// sizes are the programs' own defaults (`.const N`, Lua's `argv[1]` default), 50-700 ms
/// each for marvin on the 2-vCPU machine of `docs/benchmarks.md`; `--quick` runs the sizes
/// the instruction counts of the notes use.
pub const ELSEWHERE_PROGRAMS: &[BenchProgram] = &[
    BenchProgram {
        name: "xorsum",
        about: "the sum of `i xor j` over N x N",
        full: 5_000,
        quick: 500,
        tiny: 60,
    },
    BenchProgram {
        name: "bubble",
        about: "bubble sort of N ints in an int array, then a checksum",
        full: 3_000,
        quick: 300,
        tiny: 70,
    },
    BenchProgram {
        name: "collatz",
        about: "the total Collatz steps of 1..N",
        full: 300_000,
        quick: 30_000,
        tiny: 1000,
    },
    BenchProgram {
        name: "matmul",
        about: "an N x N int matrix product in flat arrays",
        full: 200,
        quick: 60,
        tiny: 12,
    },
    BenchProgram {
        name: "gcd",
        about: "the sum of Euclid's gcd(i, j), a method call each, N x N",
        full: 1_000,
        quick: 150,
        tiny: 40,
    },
    BenchProgram {
        name: "linked",
        about: "an N-node linked list walked 5000 times, a field sum",
        full: 1_000,
        quick: 300,
        tiny: 30,
    },
    BenchProgram {
        name: "insertion",
        about: "insertion sort of N ints, a while loop shifting elements up",
        full: 4_000,
        quick: 600,
        tiny: 70,
    },
    BenchProgram {
        name: "digits",
        about:
            "the digit sums of 1..N by `% 10` and `/ 10`, and how many of the numbers they divide",
        full: 1_000_000,
        quick: 100_000,
        tiny: 3000,
    },
    BenchProgram {
        name: "hashtab",
        about: "N keys counted in an open-addressing hash table on int arrays, a method call each",
        full: 60_000,
        quick: 6_000,
        tiny: 500,
    },
    BenchProgram {
        name: "tree",
        about: "a depth-N binary tree built and walked 12 times by recursive methods",
        full: 15,
        quick: 12,
        tiny: 5,
    },
];

/// The implementations compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    /// `marvin run`.
    Marvin,
    /// `marvin run --no-barrier`: the interpreter without the access barrier.
    MarvinNoBarrier,
    /// `lua5.4`.
    Lua,
    /// LuaJIT's interpreter (`luajit -joff`: the JIT compiler off), on the program's Lua
    /// peer or, where the peer uses Lua 5.4's integer operators, its port
    /// `peers/NAME.jit.lua` (`bit` and `math.floor` in their place, the same result).
    LuaJit,
    /// `python3`.
    CPython,
}

impl Implementation {
    pub const ALL: [Implementation; 5] = [
        Implementation::Marvin,
        Implementation::MarvinNoBarrier,
        Implementation::Lua,
        Implementation::LuaJit,
        Implementation::CPython,
    ];

    /// The name in the table and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Implementation::Marvin => "marvin",
            Implementation::MarvinNoBarrier => "marvin-nobarrier",
            Implementation::Lua => "lua",
            Implementation::LuaJit => "luajit",
            Implementation::CPython => "cpython",
        }
    }

    /// The interpreter of a peer (`None` for marvin itself).
    pub fn peer_interpreter(self) -> Option<&'static str> {
        match self {
            Implementation::Lua => Some("lua5.4"),
            Implementation::LuaJit => Some("luajit"),
            Implementation::CPython => Some("python3"),
            _ => None,
        }
    }

    /// Whether this implementation can run here: marvin always can, a peer when its
    /// interpreter starts.
    pub fn available(self) -> bool {
        match self.peer_interpreter() {
            None => true,
            Some(exe) => Command::new(exe)
                .arg(
                    if matches!(self, Implementation::Lua | Implementation::LuaJit) {
                        "-v"
                    } else {
                        "--version"
                    },
                )
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
        }
    }

    /// The file this implementation runs for `program` in `dir` (the MASM program or the
    /// peer).
    pub fn source(self, dir: &Path, program: &str) -> PathBuf {
        match self {
            Implementation::Marvin | Implementation::MarvinNoBarrier => {
                dir.join("programs").join(format!("{program}.masm"))
            }
            Implementation::Lua => dir.join("peers").join(format!("{program}.lua")),
            Implementation::LuaJit => {
                let port = dir.join("peers").join(format!("{program}.jit.lua"));
                if port.is_file() {
                    port
                } else {
                    Implementation::Lua.source(dir, program)
                }
            }
            Implementation::CPython => dir.join("peers").join(format!("{program}.py")),
        }
    }

    /// The command that runs `program` at `size`; `marvin` is the marvin executable and
    /// `dir` holds `programs/` and `peers/`.
    pub fn command(self, marvin: &Path, dir: &Path, program: &str, size: u64) -> Command {
        let mut cmd;
        match self {
            Implementation::Marvin | Implementation::MarvinNoBarrier => {
                cmd = Command::new(marvin);
                cmd.arg("run")
                    .arg(self.source(dir, program))
                    .arg("-D")
                    .arg(format!("N={size}"));
                if self == Implementation::MarvinNoBarrier {
                    cmd.arg("--no-barrier");
                }
            }
            Implementation::Lua => {
                cmd = Command::new("lua5.4");
                cmd.arg(self.source(dir, program)).arg(size.to_string());
            }
            Implementation::LuaJit => {
                cmd = Command::new("luajit");
                cmd.arg("-joff")
                    .arg(self.source(dir, program))
                    .arg(size.to_string());
            }
            Implementation::CPython => {
                cmd = Command::new("python3");
                cmd.arg(self.source(dir, program)).arg(size.to_string());
            }
        }
        cmd.stdin(Stdio::null());
        cmd
    }
}

/// The `benches/` directory of this source tree (beside this crate's folder).
pub fn default_dir() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir.parent().unwrap_or(crate_dir).join("benches")
}

/// Runs a command to completion; returns its stdout and the wall time in ns. A failing
/// run is an error that shows its stderr.
pub fn run_timed(mut cmd: Command, what: &str) -> anyhow::Result<(String, f64)> {
    let start = Instant::now();
    let out = cmd
        .output()
        .with_context(|| format!("{what}: cannot start {:?}", cmd.get_program()))?;
    let ns = start.elapsed().as_nanos() as f64;
    if !out.status.success() {
        bail!(
            "{what}: {} failed ({}): {}",
            cmd.get_program().to_string_lossy(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok((String::from_utf8_lossy(&out.stdout).into_owned(), ns))
}

pub fn run(args: &InterpArgs) -> anyhow::Result<()> {
    let marvin = std::env::current_exe().context("cannot find the marvin executable")?;
    let suite = args.suite;
    let dir = args.dir.clone().unwrap_or_else(|| suite.dir());
    let programs: Vec<&BenchProgram> = match &args.only {
        Some(name) => match suite.programs().iter().find(|p| p.name == name) {
            Some(p) => vec![p],
            None => bail!(
                "unknown program {name:?} in the {} suite; its programs are: {}",
                suite.name(),
                suite
                    .programs()
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
        None => suite.programs().iter().collect(),
    };
    // A program that is missing is an error before anything runs; a missing peer skips
    // that peer for that program.
    for p in &programs {
        let masm = Implementation::Marvin.source(&dir, p.name);
        if !masm.is_file() {
            bail!(
                "{}: no MASM program {} (--dir names the directory holding programs/ and peers/)",
                p.name,
                masm.display()
            );
        }
    }
    let mut notes = Vec::new();
    let implementations: Vec<Implementation> = Implementation::ALL
        .into_iter()
        .filter(|imp| {
            let ok = imp.available();
            if !ok {
                notes.push(format!(
                    "{} skipped: `{}` is not installed (benches/install-peers.sh installs the peers)",
                    imp.name(),
                    imp.peer_interpreter().unwrap_or("?")
                ));
            }
            ok
        })
        .collect();

    let mut samples = Vec::new();
    let mut skipped: Vec<(Implementation, &str)> = Vec::new();
    for program in programs {
        let size = if args.quick {
            program.quick
        } else {
            program.full
        };
        let here: Vec<Implementation> = implementations
            .iter()
            .copied()
            .filter(|imp| {
                let ok = imp.source(&dir, program.name).is_file();
                if !ok {
                    skipped.push((*imp, program.name));
                }
                ok
            })
            .collect();
        samples.extend(measure_rounds(
            program,
            size,
            &here,
            args.common.reps,
            |imp| {
                let what = format!("{} under {}", program.name, imp.name());
                run_timed(imp.command(&marvin, &dir, program.name, size), &what)
            },
        )?);
        notes.push(format!("{}({size}): {}", program.name, program.about));
    }
    for imp in Implementation::ALL {
        let names: Vec<&str> = skipped
            .iter()
            .filter(|(i, _)| *i == imp)
            .map(|(_, n)| *n)
            .collect();
        if !names.is_empty() {
            notes.push(format!(
                "{} skipped for {}: no peer in {}",
                imp.name(),
                names.join(", "),
                dir.join("peers").display()
            ));
        }
    }
    notes.push(format!(
        "each program ran one untimed warm-up round, then {} timed rounds of every \
         implementation, the order rotating from round to round; `rounds x {BASELINE}` (JSON `{ROUND_RATIO}`) is the median \
         over the rounds of each round's time over {BASELINE}'s in the same round",
        args.common.reps.max(1)
    ));
    let geomeans = geomean_samples(&samples);
    if !geomeans.is_empty() {
        notes.push(format!(
            "`{GEOMEAN}`: the geometric mean over the programs of each implementation's \
             medians, so its `x {BASELINE}` is the geometric mean of the programs' `x {BASELINE}` \
             and its `rounds x {BASELINE}` that of theirs; only for an implementation that ran \
             every program {BASELINE} ran"
        ));
    }
    samples.extend(geomeans);
    finish(samples, BASELINE, &args.common, &notes)?;
    Ok(())
}

/// The scenario name of the geometric-mean rows ([`geomean_samples`]).
pub const GEOMEAN: &str = "geomean";

/// One summary sample per implementation: scenario [`GEOMEAN`], the geometric mean of its
/// medians over the programs (so the ratio [`finish`] computes against the baseline's row
/// is the geometric mean of the per-program ratios of the medians), and [`ROUND_RATIO`],
/// the geometric mean of its per-program round ratios, with the programs in `programs`.
/// Only implementations that ran every program the baseline ran get a row, so that every
/// row is over the same programs; nothing when there is fewer than two programs or no
/// baseline.
pub fn geomean_samples(samples: &[Sample]) -> Vec<Sample> {
    let geomean = |xs: &[f64]| (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp();
    let base: Vec<&str> = samples
        .iter()
        .filter(|s| s.implementation == BASELINE)
        .map(|s| s.scenario.as_str())
        .collect();
    if base.len() < 2 {
        return Vec::new();
    }
    let mut impls: Vec<&str> = Vec::new();
    for s in samples {
        if !impls.contains(&s.implementation.as_str()) {
            impls.push(&s.implementation);
        }
    }
    impls
        .into_iter()
        .filter_map(|imp| {
            let own: Vec<&Sample> = base
                .iter()
                .filter_map(|scenario| {
                    samples
                        .iter()
                        .find(|s| s.implementation == imp && s.scenario == *scenario)
                })
                .collect();
            if own.len() != base.len() || !own.iter().all(|s| s.median_ns > 0.0) {
                return None;
            }
            let medians: Vec<f64> = own.iter().map(|s| s.median_ns).collect();
            let mut sample = Sample::new(GEOMEAN, imp, geomean(&medians)).with(
                "programs",
                base.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            );
            let rounds: Option<Vec<f64>> = own
                .iter()
                .map(|s| s.extra.get(ROUND_RATIO).and_then(|v| v.as_f64()))
                .collect();
            if let Some(rounds) = rounds.filter(|r| r.iter().all(|x| *x > 0.0)) {
                sample = sample.with(ROUND_RATIO, geomean(&rounds));
            }
            let jit: Option<Vec<f64>> = own
                .iter()
                .map(|s| s.extra.get(JIT_ROUND_RATIO).and_then(|v| v.as_f64()))
                .collect();
            if let Some(jit) = jit.filter(|r| r.iter().all(|x| *x > 0.0)) {
                sample = sample.with(JIT_ROUND_RATIO, geomean(&jit));
            }
            Some(sample)
        })
        .collect()
}

/// The implementation the ratios refer to.
pub const BASELINE: &str = "lua";

/// Measures one program at `size`: one untimed warm-up run of each implementation, then
/// `reps` (at least 1) timed rounds, each running every implementation once, the order
/// rotating from round to round ([`rounds::interleaved`]: for marvin, marvin without
/// barriers and Lua, round 0 runs them in that order, round 1 starts with the second,
/// round 2 with Lua, ...), so that a slow stretch of the host, and whatever the run before
/// leaves behind, lands on every implementation alike. `run` runs one implementation once
/// and returns its stdout and wall time in ns. Every run, the warm-up included, must print
/// what the first one printed.
///
/// Returns one sample per implementation: the median of its rounds' times, and, when the
/// baseline ([`BASELINE`]) is among the implementations, [`ROUND_RATIO`], the median over
/// the rounds of its time over the baseline's in the same round (the figure that cancels
/// drifts slower than a round), with the rounds' ratios as `round_ratios`.
pub fn measure_rounds(
    program: &BenchProgram,
    size: u64,
    implementations: &[Implementation],
    reps: usize,
    mut run: impl FnMut(Implementation) -> anyhow::Result<(String, f64)>,
) -> anyhow::Result<Vec<Sample>> {
    let mut reference: Option<(Implementation, String)> = None;
    // times[i][r]: implementation i's time in round r.
    let times: Vec<Vec<f64>> =
        rounds::interleaved(implementations.len(), reps, |i| -> anyhow::Result<f64> {
            let imp = implementations[i];
            let (stdout, ns) = run(imp)?;
            match &reference {
                None => reference = Some((imp, stdout)),
                Some((first, expected)) if *expected != stdout => bail!(
                    "{}: {} printed {:?} but {} printed {:?}",
                    program.name,
                    imp.name(),
                    stdout,
                    first.name(),
                    expected
                ),
                Some(_) => {}
            }
            Ok(ns)
        })?;
    let times_of = |name: &str| {
        implementations
            .iter()
            .position(|imp| imp.name() == name)
            .map(|i| times[i].clone())
    };
    let base = times_of(BASELINE);
    let jit = times_of(Implementation::LuaJit.name());
    let scenario = format!("{}({size})", program.name);
    Ok(implementations
        .iter()
        .zip(times)
        .map(|(imp, own)| {
            let mut sample = Sample::new(scenario.clone(), imp.name(), median(&mut own.clone()))
                .with("size", size)
                .with("reps", own.len());
            if let Some(base) = &base {
                let ratios: Vec<f64> = own.iter().zip(base).map(|(t, b)| t / b).collect();
                sample = sample
                    .with(ROUND_RATIO, median(&mut ratios.clone()))
                    .with("round_ratios", ratios);
            }
            if let Some(jit) = &jit {
                let ratios: Vec<f64> = own.iter().zip(jit).map(|(t, j)| t / j).collect();
                sample = sample.with(JIT_ROUND_RATIO, median(&mut ratios.clone()));
            }
            sample.with("round_times_ns", own)
        })
        .collect())
}
