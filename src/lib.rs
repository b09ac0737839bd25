//! The `marvin` package: the command line's building blocks and, with the experiments,
//! the System facade (many apps, one memory budget).

pub mod bench;
pub mod cli;
pub mod host;
pub mod system;
