//! The error of the host layer: which machine object or file failed and why.

use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("the real mode needs root (effective uid 0)")]
    NotRoot,
    #[error("no cgroup memory controller: {0}")]
    NoMemoryController(String),
    #[error("unexpected content in {}: {msg}", path.display())]
    Parse { path: PathBuf, msg: String },
    #[error("{0}")]
    Refused(String),
}

impl HostError {
    pub fn io(what: &'static str, path: impl Into<PathBuf>, source: io::Error) -> HostError {
        HostError::Io {
            what,
            path: path.into(),
            source,
        }
    }
}

pub type Result<T> = std::result::Result<T, HostError>;
