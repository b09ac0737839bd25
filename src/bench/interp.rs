//! `marvin bench interp`: the MASM interpreter against Lua 5.4 and CPython on the same
//! programs.
//!
//! Each program exists three times with the same algorithm and the same printed result:
//! `benches/programs/NAME.masm` (its size is the constant `N`, overridden with `-D N=...`),
//! `benches/peers/NAME.lua` and `benches/peers/NAME.py` (the size is `argv[1]`). Every
//! implementation runs as a subprocess and is timed by wall clock, start to exit. Each
//! program runs one untimed warm-up round and then `--reps` rounds, a round running every
//! implementation once in turn ([`measure_rounds`]), so that a slow stretch of a shared
//! host lands on all of them alike; the table reports medians, ratios of the medians to
//! Lua, and the median of the per-round ratios to Lua. Every implementation must print
//! exactly what the others print, or the benchmark fails naming the program.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;

use super::{finish, median, CommonArgs, Sample, ROUND_RATIO};

#[derive(Debug, Args)]
#[command(mut_arg("reps", |a| a.default_value("3")))]
pub struct InterpArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Run only this program (fib, loop, sieve, binarytrees, fields, arraysum, count, nested,
    /// bound, hash, methods).
    #[arg(long)]
    pub only: Option<String>,
    /// Run the smaller sizes (seconds instead of minutes).
    #[arg(long)]
    pub quick: bool,
    /// Directory holding `programs/` and `peers/` (default: this source tree's `benches/`).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

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

/// The implementations compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    /// `marvin run`.
    Marvin,
    /// `marvin run --no-barrier`: the interpreter without the access barrier.
    MarvinNoBarrier,
    /// `lua5.4`.
    Lua,
    /// `python3`.
    CPython,
}

impl Implementation {
    pub const ALL: [Implementation; 4] = [
        Implementation::Marvin,
        Implementation::MarvinNoBarrier,
        Implementation::Lua,
        Implementation::CPython,
    ];

    /// The name in the table and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Implementation::Marvin => "marvin",
            Implementation::MarvinNoBarrier => "marvin-nobarrier",
            Implementation::Lua => "lua",
            Implementation::CPython => "cpython",
        }
    }

    /// The interpreter of a peer (`None` for marvin itself).
    pub fn peer_interpreter(self) -> Option<&'static str> {
        match self {
            Implementation::Lua => Some("lua5.4"),
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
                .arg(if self == Implementation::Lua {
                    "-v"
                } else {
                    "--version"
                })
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
        }
    }

    /// The command that runs `program` at `size`; `marvin` is the marvin executable and
    /// `dir` holds `programs/` and `peers/`.
    pub fn command(self, marvin: &Path, dir: &Path, program: &str, size: u64) -> Command {
        let peer = |ext: &str| dir.join("peers").join(format!("{program}.{ext}"));
        let mut cmd;
        match self {
            Implementation::Marvin | Implementation::MarvinNoBarrier => {
                cmd = Command::new(marvin);
                cmd.arg("run")
                    .arg(dir.join("programs").join(format!("{program}.masm")))
                    .arg("-D")
                    .arg(format!("N={size}"));
                if self == Implementation::MarvinNoBarrier {
                    cmd.arg("--no-barrier");
                }
            }
            Implementation::Lua => {
                cmd = Command::new("lua5.4");
                cmd.arg(peer("lua")).arg(size.to_string());
            }
            Implementation::CPython => {
                cmd = Command::new("python3");
                cmd.arg(peer("py")).arg(size.to_string());
            }
        }
        cmd.stdin(Stdio::null());
        cmd
    }
}

/// The `benches/` directory of this source tree.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches")
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
    let dir = args.dir.clone().unwrap_or_else(default_dir);
    let programs: Vec<&BenchProgram> = match &args.only {
        Some(name) => match PROGRAMS.iter().find(|p| p.name == name) {
            Some(p) => vec![p],
            None => bail!(
                "unknown program {name:?}; the programs are: {}",
                PROGRAMS
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
        None => PROGRAMS.iter().collect(),
    };
    let mut notes = Vec::new();
    let implementations: Vec<Implementation> = Implementation::ALL
        .into_iter()
        .filter(|imp| {
            let ok = imp.available();
            if !ok {
                notes.push(format!(
                    "{} skipped: `{}` is not installed",
                    imp.name(),
                    imp.peer_interpreter().unwrap_or("?")
                ));
            }
            ok
        })
        .collect();

    let mut samples = Vec::new();
    for program in programs {
        let size = if args.quick {
            program.quick
        } else {
            program.full
        };
        samples.extend(measure_rounds(
            program,
            size,
            &implementations,
            args.common.reps,
            |imp| {
                let what = format!("{} under {}", program.name, imp.name());
                run_timed(imp.command(&marvin, &dir, program.name, size), &what)
            },
        )?);
        notes.push(format!("{}({size}): {}", program.name, program.about));
    }
    notes.push(format!(
        "each program ran one untimed warm-up round, then {} timed rounds of every \
         implementation in turn; `rounds x {BASELINE}` (JSON `{ROUND_RATIO}`) is the median \
         over the rounds of each round's time over {BASELINE}'s in the same round",
        args.common.reps.max(1)
    ));
    finish(samples, BASELINE, &args.common, &notes)?;
    Ok(())
}

/// The implementation the ratios refer to.
pub const BASELINE: &str = "lua";

/// Measures one program at `size`: one untimed warm-up round, then `reps` (at least 1)
/// timed rounds, each running every implementation once in the order given
/// (round-robin), so a slow stretch of the host lands on every implementation of a round
/// alike. `run` runs one implementation once and returns its stdout and wall time in ns.
/// Every run, the warm-up included, must print what the first one printed.
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
    let rounds = reps.max(1);
    let mut reference: Option<(Implementation, String)> = None;
    let mut check = |imp: Implementation, stdout: String| -> anyhow::Result<()> {
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
        Ok(())
    };
    for &imp in implementations {
        let (stdout, _) = run(imp)?;
        check(imp, stdout)?;
    }
    // times[i][r]: implementation i's time in round r.
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); implementations.len()];
    for _ in 0..rounds {
        for (i, &imp) in implementations.iter().enumerate() {
            let (stdout, ns) = run(imp)?;
            check(imp, stdout)?;
            times[i].push(ns);
        }
    }
    let base = implementations
        .iter()
        .position(|imp| imp.name() == BASELINE)
        .map(|i| times[i].clone());
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
            sample.with("round_times_ns", own)
        })
        .collect())
}
