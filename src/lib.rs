//! The `marvin` package: the System facade (many apps, one memory budget) and the
//! command-line tool's building blocks.

pub mod bench;
