//! How an app process's life ended, as the System books it: killed by the run's
//! low-memory killer, by the kernel's OOM killer, by a signal from elsewhere, crashed
//! (a runtime error it reported, or a fatal signal such as `SIGSEGV`), or ended by itself.
//! Every death but an app's own end is counted as one, and the app starts cold when the
//! launch phase asks for it again.

/// The end of one app process's life (`end` in `apps.csv` and `summary.json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Death {
    /// The run's low-memory killer killed it.
    Killed,
    /// The kernel's OOM killer killed it (the group's `oom_kill` count rose).
    OomKilled,
    /// A signal from elsewhere ended it (`kill -9` from a shell, for example).
    Signalled,
    /// It reported a runtime error, ended without a report, or died of a fatal signal.
    Crashed,
    /// It finished by itself.
    Ended,
}

impl Death {
    /// Classifies an ended process: `by_killer`, whether the run's killer chose it;
    /// `crash_reported`, whether it reported an error or ended without a report;
    /// `signal`, the signal that ended it; `oom_unbooked`, whether the group counts a
    /// kernel OOM kill no earlier death was booked against.
    pub fn classify(
        by_killer: bool,
        crash_reported: bool,
        signal: Option<i32>,
        oom_unbooked: bool,
    ) -> Death {
        if by_killer {
            return Death::Killed;
        }
        if crash_reported {
            return Death::Crashed;
        }
        match signal {
            None => Death::Ended,
            Some(libc::SIGKILL) if oom_unbooked => Death::OomKilled,
            Some(s) if is_fatal_fault(s) => Death::Crashed,
            Some(_) => Death::Signalled,
        }
    }

    /// Its name in the records.
    pub fn name(self) -> &'static str {
        match self {
            Death::Killed => "killed",
            Death::OomKilled => "oom-killed",
            Death::Signalled => "signalled",
            Death::Crashed => "crashed",
            Death::Ended => "ended",
        }
    }

    /// Whether the app died (rather than finished): it starts cold when launched again.
    pub fn restarts(self) -> bool {
        self != Death::Ended
    }
}

/// A signal the process raised on itself by a fault or an abort.
fn is_fatal_fault(sig: i32) -> bool {
    matches!(
        sig,
        libc::SIGSEGV
            | libc::SIGBUS
            | libc::SIGABRT
            | libc::SIGILL
            | libc::SIGFPE
            | libc::SIGTRAP
            | libc::SIGSYS
    )
}

/// A signal's name (`SIGKILL`), or its number.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_death_is_told_apart() {
        assert_eq!(
            Death::classify(true, false, Some(libc::SIGKILL), true),
            Death::Killed
        );
        assert_eq!(
            Death::classify(false, false, Some(libc::SIGKILL), true),
            Death::OomKilled
        );
        // A SIGKILL the group's OOM count does not explain came from elsewhere.
        assert_eq!(
            Death::classify(false, false, Some(libc::SIGKILL), false),
            Death::Signalled
        );
        assert_eq!(
            Death::classify(false, false, Some(libc::SIGTERM), true),
            Death::Signalled
        );
        assert_eq!(
            Death::classify(false, false, Some(libc::SIGSEGV), false),
            Death::Crashed
        );
        assert_eq!(Death::classify(false, true, None, false), Death::Crashed);
        assert_eq!(Death::classify(false, false, None, true), Death::Ended);
        assert!(!Death::Ended.restarts());
        for d in [
            Death::Killed,
            Death::OomKilled,
            Death::Signalled,
            Death::Crashed,
        ] {
            assert!(d.restarts(), "{d:?}");
        }
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(64), "signal 64");
    }
}
