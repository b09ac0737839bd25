//! Who this run is: a random 128-bit run id, the process id and the start time, made once
//! per process and written into every swap file's and reclaim table's header, so a file
//! left by (or shared with) another run is recognised and refused rather than read.

use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The identity of one run (one process).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RunIdentity {
    /// Random, from the kernel's generator.
    pub id: [u8; 16],
    /// The process.
    pub pid: u32,
    /// When the identity was made, nanoseconds since the Unix epoch.
    pub started_unix_ns: u64,
}

impl RunIdentity {
    /// This process's identity (made on first use).
    pub fn current() -> &'static RunIdentity {
        static CURRENT: OnceLock<RunIdentity> = OnceLock::new();
        CURRENT.get_or_init(RunIdentity::fresh)
    }

    /// A new identity for this process (tests make several to play several runs).
    pub fn fresh() -> RunIdentity {
        RunIdentity {
            id: random_id(),
            pid: std::process::id(),
            started_unix_ns: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
        }
    }

    /// The run id as 32 hex digits.
    pub fn id_hex(&self) -> String {
        id_hex(&self.id)
    }
}

/// A run id as 32 hex digits.
pub fn id_hex(id: &[u8; 16]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

impl std::fmt::Display for RunIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "run {} of process {}", self.id_hex(), self.pid)
    }
}

/// 16 random bytes: from `/dev/urandom`, or (where it cannot be read) from the standard
/// library's randomly keyed hashers over the time and the pid.
fn random_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut id));
    if read.is_err() {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        for half in id.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(now);
            h.write_u32(std::process::id());
            half.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_differ_and_the_current_one_is_stable() {
        let (a, b) = (RunIdentity::fresh(), RunIdentity::fresh());
        assert_ne!(a.id, b.id);
        assert_eq!(a.pid, std::process::id());
        assert_eq!(RunIdentity::current(), RunIdentity::current());
        assert_eq!(a.id_hex().len(), 32);
    }
}
