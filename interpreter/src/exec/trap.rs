//! Why a thread stopped running MASM code: a runtime error at a place, `halt`, or the
//! app ending ([`Trap`]); and why an operation the loop asked for failed ([`Fault`]).

use crate::isa::Program;

/// A runtime error or a halt, raised by the executor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trap {
    /// A runtime error at `method`+`pc`.
    Error {
        message: String,
        method: u32,
        pc: u32,
    },
    /// `halt` with an exit status.
    Halt(i64),
    /// The app is ending (another thread halted or failed); this thread unwinds.
    Terminated,
}

impl Trap {
    /// The spec's `error: MESSAGE at METHOD+PC (FILE:LINE)` form, or `None` for a halt.
    pub fn render(&self, p: &Program) -> Option<String> {
        match self {
            Trap::Halt(_) | Trap::Terminated => None,
            Trap::Error {
                message,
                method,
                pc,
            } => {
                let m = p.methods.get(*method as usize);
                let name = m.map_or("?", |m| m.name.as_str());
                let line = m
                    .and_then(|m| m.lines.get(*pc as usize))
                    .copied()
                    .unwrap_or(0);
                Some(format!(
                    "error: {message} at {name}+{pc} ({}:{line})",
                    p.file
                ))
            }
        }
    }
}

/// Builds a runtime error; out of line so the hot loop stays small.
#[cold]
#[inline(never)]
pub fn error(message: impl Into<String>, method: u32, pc: u32) -> Trap {
    Trap::Error {
        message: message.into(),
        method,
        pc,
    }
}

/// Why an allocation or an app operation the executor asked for did not complete. The
/// loop turns [`Fault::Terminated`] into [`Trap::Terminated`] (the thread unwinds) and
/// every other fault into a runtime error with the fault's text.
#[derive(Debug, thiserror::Error)]
pub enum Fault {
    /// The app is ending (another thread halted or failed, or the app was stopped).
    #[error("app terminated")]
    Terminated,
    /// The heap would pass its limit even after a collection.
    #[error("out of memory")]
    OutOfMemory,
    #[error(transparent)]
    Alloc(#[from] marvin_runtime::AllocError),
    /// `send` after the main looper quit.
    #[error("post after quit")]
    PostAfterQuit,
    /// `spawn` could not start an OS thread.
    #[error("cannot start a thread: {0}")]
    Spawn(#[source] std::io::Error),
}

impl Fault {
    /// The trap this fault raises at `method`+`pc`.
    #[cold]
    #[inline(never)]
    pub fn at(self, method: u32, pc: u32) -> Trap {
        match self {
            Fault::Terminated => Trap::Terminated,
            other => error(other.to_string(), method, pc),
        }
    }
}
