//! The `/proc/self/task/<tid>/stat` reader: a thread's user and system time in clock ticks.
//!
//! This is the slow, portable way (one open, read and parse per call) that the clock-id path
//! replaces; it stays as a fallback and as the `marvin bench cputime` baseline.

use std::io;
use std::sync::OnceLock;

/// Clock ticks per second of the `/proc` time fields (`sysconf(_SC_CLK_TCK)`, almost always
/// 100), read once.
pub fn clock_ticks_per_second() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        // The kernel's USER_HZ is 100 on every architecture Linux ships; use it if sysconf fails.
        if ticks > 0 {
            ticks as u64
        } else {
            100
        }
    })
}

/// User and system time of thread `tid` of this process, in nanoseconds (tick precision),
/// parsed from `/proc/self/task/<tid>/stat`.
pub fn proc_thread_times(tid: i32) -> io::Result<(u64, u64)> {
    let path = format!("/proc/self/task/{tid}/stat");
    let contents = std::fs::read_to_string(&path)?;
    let (user_ticks, system_ticks) = parse_stat_times(&contents).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{path}: no utime/stime fields in {contents:?}"),
        )
    })?;
    let tick_ns = 1_000_000_000 / clock_ticks_per_second();
    Ok((
        user_ticks.saturating_mul(tick_ns),
        system_ticks.saturating_mul(tick_ns),
    ))
}

/// The `utime` and `stime` fields (14 and 15, in clock ticks) of a `stat` line.
///
/// The second field, the command name in parentheses, may itself contain spaces and
/// parentheses, so fields are counted from the *last* `)`: after it come `state` (field 3),
/// ..., `utime` (14), `stime` (15). Returns `None` for a line without those fields.
pub fn parse_stat_times(stat: &str) -> Option<(u64, u64)> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first after the command name, so field N is at index N - 3.
    let mut fields = after_comm.split_ascii_whitespace().skip(14 - 3);
    let user = fields.next()?.parse().ok()?;
    let system = fields.next()?.parse().ok()?;
    Some((user, system))
}

#[cfg(test)]
mod tests {
    use super::*;

    // A real line's shape: pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
    // majflt cmajflt utime stime ...
    const PLAIN: &str = "4242 (marvin) R 1 4242 4242 0 -1 4194304 120 0 0 0 37 5 0 0 20 0 3 0";

    #[test]
    fn reads_utime_and_stime() {
        assert_eq!(parse_stat_times(PLAIN), Some((37, 5)));
    }

    #[test]
    fn command_names_with_spaces_and_parens_do_not_shift_fields() {
        let tricky = "4243 (a) b (c) d)) S 1 4242 4242 0 -1 4194304 1 0 0 0 911 12 0 0 20 0";
        assert_eq!(parse_stat_times(tricky), Some((911, 12)));
        let spaced = "4244 (worker 7 (pool)) S 1 4242 4242 0 -1 0 1 0 0 0 3 4 0 0";
        assert_eq!(parse_stat_times(spaced), Some((3, 4)));
    }

    #[test]
    fn malformed_lines_are_rejected() {
        assert_eq!(parse_stat_times(""), None);
        assert_eq!(parse_stat_times("4242 marvin R 1 2 3"), None);
        assert_eq!(parse_stat_times("4242 (marvin) R 1 4242"), None);
        assert_eq!(
            parse_stat_times("1 (x) R 1 1 1 0 -1 0 0 0 0 0 seven 5"),
            None
        );
    }

    #[test]
    fn reads_this_thread() {
        let tid = crate::cpuclock::current_tid();
        assert!(proc_thread_times(tid).is_ok());
        assert!(proc_thread_times(-1).is_err());
    }
}
