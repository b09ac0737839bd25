//! The commands that drive an app from outside ([`Command`]): what the System's activity
//! manager, a lifecycle script, and a parent process talking to an app in a child process
//! over a pipe ask of it. Each has a one-line text form (`bg`, `fg`, `save`, `reclaim`,
//! `reclaim BYTES`, `gc`, `stop`).

use std::fmt;
use std::str::FromStr;

/// One thing an app is asked to do from outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Go to the background: stub every candidate object ([`App::enter_background`]).
    Background,
    /// Come to the foreground: read reclaimed objects back ([`App::enter_foreground`]).
    Foreground,
    /// Run the saver to completion ([`App::save_now`]).
    Save,
    /// Reclaim up to this many bytes of saved, clean, cold objects
    /// ([`App::reclaim_now`]); `u64::MAX` for everything reclaimable.
    Reclaim(u64),
    /// A full collection ([`App::collect`]).
    Gc,
    /// End the app: its threads unwind and its main looper stops ([`App::end`]).
    Stop,
}

/// A command's text is not one of the known words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown app command '{0}' (expected bg, fg, save, reclaim [BYTES], gc or stop)")]
pub struct UnknownCommand(pub String);

impl FromStr for Command {
    type Err = UnknownCommand;

    /// `bg`/`background`, `fg`/`foreground`, `save`, `reclaim` (everything reclaimable),
    /// `reclaim BYTES`, `gc`, `stop`.
    fn from_str(s: &str) -> Result<Command, UnknownCommand> {
        let unknown = || UnknownCommand(s.trim().to_string());
        let mut words = s.split_whitespace();
        let cmd = match words.next().ok_or_else(unknown)? {
            "bg" | "background" => Command::Background,
            "fg" | "foreground" => Command::Foreground,
            "save" => Command::Save,
            "reclaim" => match words.next() {
                None => Command::Reclaim(u64::MAX),
                Some(n) => Command::Reclaim(n.parse().map_err(|_| unknown())?),
            },
            "gc" => Command::Gc,
            "stop" => Command::Stop,
            _ => return Err(unknown()),
        };
        match words.next() {
            None => Ok(cmd),
            Some(_) => Err(unknown()),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Background => f.write_str("bg"),
            Command::Foreground => f.write_str("fg"),
            Command::Save => f.write_str("save"),
            Command::Reclaim(u64::MAX) => f.write_str("reclaim"),
            Command::Reclaim(n) => write!(f, "reclaim {n}"),
            Command::Gc => f.write_str("gc"),
            Command::Stop => f.write_str("stop"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_reads_back_from_its_text() {
        for c in [
            Command::Background,
            Command::Foreground,
            Command::Save,
            Command::Reclaim(u64::MAX),
            Command::Reclaim(4096),
            Command::Gc,
            Command::Stop,
        ] {
            assert_eq!(c.to_string().parse::<Command>(), Ok(c));
        }
        assert_eq!("background".parse(), Ok(Command::Background));
        for bad in ["", "sleep", "reclaim lots", "bg now"] {
            assert_eq!(bad.parse::<Command>(), Err(UnknownCommand(bad.into())));
        }
    }
}
