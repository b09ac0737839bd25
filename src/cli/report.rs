//! A command's error as the command line reports it: the message on stderr and the exit
//! status ([`report`]).

use marvin_console::{write_stderr, OutputError};

/// The exit status and message for a command's error: an [`OutputError`] anywhere in
/// its chain gives that error's status (and no message for a broken pipe), a
/// [`PathError`](marvin_system::paths::PathError) status 2; anything else is status 1 with the
/// whole chain.
pub fn report(e: &anyhow::Error) -> i32 {
    let (message, status) = message_and_status(e);
    if let Some(m) = message {
        write_stderr(format_args!("error: {m}\n"));
    }
    status
}

/// What [`report`] prints (without `error: `; none for a broken pipe) and returns.
pub fn message_and_status(e: &anyhow::Error) -> (Option<String>, i32) {
    if let Some(p) = e
        .chain()
        .find_map(|c| c.downcast_ref::<marvin_system::paths::PathError>())
    {
        return (Some(p.to_string()), super::EXIT_USAGE);
    }
    if let Some(o) = e.chain().find_map(|c| c.downcast_ref::<OutputError>()) {
        let message = (!o.is_broken_pipe()).then(|| o.to_string());
        return (message, o.exit_status());
    }
    (Some(chain_text(e)), 1)
}

/// An error and its causes joined by `: `, leaving out a cause whose text the messages
/// before it already hold (many errors quote their source in their own message, and
/// would otherwise print it twice: `... No space left on device (os error 28): No space
/// left on device (os error 28)`).
pub fn chain_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if s.is_empty() || text.contains(&s) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&s);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use marvin_console::EXIT_BROKEN_PIPE;
    use std::io;

    fn err(kind: io::ErrorKind) -> OutputError {
        OutputError {
            stream: "stdout",
            source: io::Error::from(kind),
        }
    }

    #[test]
    fn report_finds_an_output_error_under_context() {
        let e = anyhow::Error::new(err(io::ErrorKind::BrokenPipe)).context("printing");
        assert_eq!(message_and_status(&e), (None, EXIT_BROKEN_PIPE));
        let e = anyhow::anyhow!("something else");
        assert_eq!(
            message_and_status(&e),
            (Some("something else".to_owned()), 1)
        );
    }

    #[test]
    fn a_cause_quoted_by_its_parent_is_printed_once() {
        let io = io::Error::from_raw_os_error(libc::ENOSPC);
        let host = marvin_machine::HostError::io("writing swap file", "/tmp/s.swap", io);
        let e = anyhow::Error::new(host).context("setting up the run's cgroup and swap");
        let text = chain_text(&e);
        assert_eq!(text.matches("No space left on device").count(), 1, "{text}");
        assert!(
            text.starts_with(
                "setting up the run's cgroup and swap: writing swap file /tmp/s.swap:"
            ),
            "{text}"
        );
    }
}
