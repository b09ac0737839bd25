//! Checked writes to the standard streams, and the exit statuses they lead to.
//!
//! Everything the command line prints goes through here instead of `print!` and
//! `eprint!` (which panic when the stream cannot be written):
//! - [`out!`](crate::out) and [`outln!`](crate::outln) write to stdout and return an
//!   [`OutputError`] that the caller passes up with `?`; the command line turns it
//!   into the exit status: [`EXIT_BROKEN_PIPE`] (quietly) when the reader went away, else
//!   [`EXIT_OUTPUT`] with a message;
//! - [`errln!`](crate::errln) writes a message to stderr and ignores a failure: there is
//!   nowhere left to report it, and the command's own exit status (65, 70, ...) is the
//!   better signal than a panic's 101.

use std::fmt;
use std::io::{self, Write};

/// The exit status after stdout's reader went away (a broken pipe, as in
/// `marvin disasm FILE | head -1`): 128 + SIGPIPE, what a shell reports for a process
/// that SIGPIPE ended.
pub const EXIT_BROKEN_PIPE: i32 = 141;
/// The exit status after any other failure writing output (`EX_IOERR` of sysexits.h),
/// e.g. stdout on a full disk or `/dev/full`.
pub const EXIT_OUTPUT: i32 = 74;

/// Writing to one of the standard streams failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot write to {stream}: {source}")]
pub struct OutputError {
    pub stream: &'static str,
    #[source]
    pub source: io::Error,
}

impl OutputError {
    /// Whether the reader went away (a closed pipe), which ends a command quietly.
    pub fn is_broken_pipe(&self) -> bool {
        self.source.kind() == io::ErrorKind::BrokenPipe
    }

    /// The exit status this failure ends the command with.
    pub fn exit_status(&self) -> i32 {
        if self.is_broken_pipe() {
            EXIT_BROKEN_PIPE
        } else {
            EXIT_OUTPUT
        }
    }
}

/// Writes `args` to stdout and flushes it, so a failure shows here and not at exit.
pub fn write_stdout(args: fmt::Arguments<'_>) -> Result<(), OutputError> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.flush())
        .map_err(|source| OutputError {
            stream: "stdout",
            source,
        })
}

/// Writes `args` to stderr with every overlong token [shortened](shorten_tokens); a
/// failure is ignored (see the module doc).
pub fn write_stderr(args: fmt::Arguments<'_>) {
    let text = args.to_string();
    let _ = io::stderr()
        .lock()
        .write_all(shorten_tokens(&text).as_bytes());
}

/// Tokens (runs without white space) longer than this many bytes are shortened in
/// messages: long enough for any path or value a person types, short enough that a
/// 1 MB bad token is not echoed whole.
pub const MAX_TOKEN_BYTES: usize = 160;
/// How much of a shortened token's start and end is kept.
const KEPT_HEAD: usize = 60;
const KEPT_TAIL: usize = 8;

/// `text` with every token longer than [`MAX_TOKEN_BYTES`] replaced by its first and
/// last characters around `…` and followed by its length, e.g.
/// `` `xxxx…xxx` [1000002 bytes] ``.
pub fn shorten_tokens(text: &str) -> std::borrow::Cow<'_, str> {
    if !text
        .split(char::is_whitespace)
        .any(|t| t.len() > MAX_TOKEN_BYTES)
    {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len().min(4096));
    let mut rest = text;
    while !rest.is_empty() {
        let ws = rest.len() - rest.trim_start().len();
        out.push_str(&rest[..ws]);
        rest = &rest[ws..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let token = &rest[..end];
        rest = &rest[end..];
        if token.len() <= MAX_TOKEN_BYTES {
            out.push_str(token);
            continue;
        }
        let head = floor_char_boundary(token, KEPT_HEAD);
        let tail = ceil_char_boundary(token, token.len() - KEPT_TAIL);
        out.push_str(&token[..head]);
        out.push('…');
        out.push_str(&token[tail..]);
        out.push_str(&format!(" [{} bytes]", token.len()));
    }
    std::borrow::Cow::Owned(out)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// `print!` that returns a [`Result<(), OutputError>`] instead of panicking.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {
        $crate::write_stdout(format_args!($($t)*))
    };
}

/// `println!` that returns a [`Result<(), OutputError>`] instead of panicking.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::write_stdout(format_args!("\n"))
    };
    ($($t:tt)*) => {
        $crate::write_stdout(format_args!("{}\n", format_args!($($t)*)))
    };
}

/// `eprintln!` that never panics: a failure to write to stderr is ignored.
#[macro_export]
macro_rules! errln {
    ($($t:tt)*) => {
        $crate::write_stderr(format_args!("{}\n", format_args!($($t)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(kind: io::ErrorKind) -> OutputError {
        OutputError {
            stream: "stdout",
            source: io::Error::from(kind),
        }
    }

    #[test]
    fn long_tokens_are_shortened() {
        let token = format!("`{}`", "é".repeat(500_000));
        let msg = format!("f.masm:2: unknown instruction {token}\nnext line stays\n");
        let short = shorten_tokens(&msg);
        assert!(short.len() < 200, "{short}");
        assert!(short.starts_with("f.masm:2: unknown instruction `éé"));
        assert!(short.contains(&format!("éé` [{} bytes]\nnext line stays\n", token.len())));
        let ok = "a short message with a /normal/path.masm\n";
        assert_eq!(shorten_tokens(ok), ok);
    }

    #[test]
    fn statuses() {
        assert_eq!(
            err(io::ErrorKind::BrokenPipe).exit_status(),
            EXIT_BROKEN_PIPE
        );
        assert_eq!(err(io::ErrorKind::StorageFull).exit_status(), EXIT_OUTPUT);
    }
}
