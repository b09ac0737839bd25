//! Why a thread stopped running MASM code: a runtime error at a place, or `halt`.

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
