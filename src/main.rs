//! The `marvin` command line.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "marvin",
    version,
    about = "A managed-heap runtime that swaps objects ahead of time"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Side-by-side benchmarks.
    #[command(subcommand)]
    Bench(marvin::bench::BenchCmd),
}

fn main() {
    let cli = Cli::parse();
    let res = match &cli.cmd {
        Cmd::Bench(b) => marvin::bench::run(b),
    };
    if let Err(e) = res {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
