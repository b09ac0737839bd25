//! Diagnostics of the front end: one `FILE:LINE: message` per problem found while
//! assembling, decoding, linking or verifying a program.

use std::fmt;

/// At most this many problems are reported for one program; the rest are summarised.
pub const MAX_DIAGS: usize = 100;

/// One problem, displayed as `FILE:LINE: message`. Line 0 means "the file as a whole"
/// (a binary file, a `-D` override).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diag {
    pub file: String,
    pub line: u32,
    pub message: String,
}

impl fmt::Display for Diag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// Every problem found in one program, one per line when displayed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", lines(.0))]
pub struct Diagnostics(pub Vec<Diag>);

fn lines(diags: &[Diag]) -> String {
    let all: Vec<String> = diags.iter().map(Diag::to_string).collect();
    all.join("\n")
}

impl Diagnostics {
    /// A single problem.
    #[cold]
    pub fn one(file: &str, line: u32, message: impl Into<String>) -> Self {
        Diagnostics(vec![Diag {
            file: file.to_owned(),
            line,
            message: message.into(),
        }])
    }
}

/// Collects problems for one file, capped at [`MAX_DIAGS`].
pub(crate) struct Sink {
    file: String,
    diags: Vec<Diag>,
    dropped: usize,
}

impl Sink {
    pub(crate) fn new(file: &str) -> Self {
        Sink {
            file: file.to_owned(),
            diags: Vec::new(),
            dropped: 0,
        }
    }

    #[cold]
    pub(crate) fn error(&mut self, line: u32, message: impl Into<String>) {
        if self.diags.len() < MAX_DIAGS {
            self.diags.push(Diag {
                file: self.file.clone(),
                line,
                message: message.into(),
            });
        } else {
            self.dropped += 1;
        }
    }

    /// `Ok` when nothing was reported.
    pub(crate) fn finish(mut self) -> Result<(), Diagnostics> {
        if self.diags.is_empty() {
            return Ok(());
        }
        if self.dropped > 0 {
            let message = format!("{} more problems not shown", self.dropped);
            self.diags.push(Diag {
                file: self.file,
                line: 0,
                message,
            });
        }
        Err(Diagnostics(self.diags))
    }
}
