//! How a step of the experiment stops it early ([`Halt`]): with an exit status once it
//! has said why on stderr (a usage error, a rejected workload), or with an error.

use marvin_console::errln;

/// Why the experiment stops before its end.
pub(super) enum Halt {
    /// Said on stderr already; marvin exits with this status.
    Exit(i32),
    /// An error for the caller to report.
    Error(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for Halt {
    fn from(e: E) -> Halt {
        Halt::Error(e.into())
    }
}

/// A step's result.
pub(super) type Step<T> = Result<T, Halt>;

/// Says `error: MSG` and stops with `code`.
pub(super) fn fail(code: i32, msg: impl std::fmt::Display) -> Halt {
    errln!("error: {msg}");
    Halt::Exit(code)
}
