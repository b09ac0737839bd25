//! Where a result came from: the commit the binary was built from, the host it ran on
//! (kernel, cores, memory) and a content hash for the files an experiment reads. The
//! experiment's `config.toml` (`crate::record`) holds these beside its settings.

use serde::{Deserialize, Serialize};

/// The git commit the binary was built from (`-dirty` when the tree had uncommitted
/// changes), or `unknown` when it was built without git.
pub fn commit() -> &'static str {
    env!("MARVIN_GIT_COMMIT")
}

/// The machine an experiment ran on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// `uname -sr` and the kernel's version string (`unknown` where unreadable).
    pub kernel: String,
    /// CPUs this process may run on.
    pub cores: usize,
    /// `MemTotal` from `/proc/meminfo`, in bytes (0 where unreadable).
    pub memory_bytes: u64,
    /// `SwapTotal` from `/proc/meminfo`, in bytes.
    pub swap_bytes: u64,
}

impl Host {
    /// Reads the host's description; parts that cannot be read are `unknown` or 0.
    pub fn current() -> Host {
        let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
        let kernel = match (
            read("/proc/sys/kernel/ostype"),
            read("/proc/sys/kernel/osrelease"),
            read("/proc/sys/kernel/version"),
        ) {
            (Some(os), Some(rel), Some(ver)) => format!("{os} {rel} {ver}"),
            (Some(os), Some(rel), None) => format!("{os} {rel}"),
            _ => "unknown".to_owned(),
        };
        let meminfo = read("/proc/meminfo").unwrap_or_default();
        Host {
            kernel,
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory_bytes: meminfo_bytes(&meminfo, "MemTotal"),
            swap_bytes: meminfo_bytes(&meminfo, "SwapTotal"),
        }
    }
}

/// A `/proc/meminfo` field (`NAME:   123 kB`) in bytes, 0 when missing.
fn meminfo_bytes(meminfo: &str, name: &str) -> u64 {
    marvin_machine::settle::meminfo_field(meminfo, name).unwrap_or(0)
}

/// The 64-bit FNV-1a hash of `bytes` as 16 hex digits: a content identity for the
/// workload a run used (not a security hash).
pub fn content_hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_its_reference_values() {
        // The published FNV-1a 64-bit test vectors.
        assert_eq!(content_hash(b""), "cbf29ce484222325");
        assert_eq!(content_hash(b"a"), "af63dc4c8601ec8c");
        assert_eq!(content_hash(b"foobar"), "85944171f73967e8");
    }

    #[test]
    fn meminfo_fields_are_read_in_bytes() {
        let text = "MemTotal:        8041552 kB\nMemFree: 1 kB\nSwapTotal:       0 kB\n";
        assert_eq!(meminfo_bytes(text, "MemTotal"), 8_041_552 * 1024);
        assert_eq!(meminfo_bytes(text, "SwapTotal"), 0);
        assert_eq!(meminfo_bytes(text, "Missing"), 0);
        // A prefix of another field's name does not match it.
        assert_eq!(meminfo_bytes(text, "Mem"), 0);
    }

    #[test]
    fn this_host_is_described() {
        let h = Host::current();
        assert!(h.cores >= 1);
        assert!(h.memory_bytes > 0, "{h:?}");
        assert!(h.kernel.starts_with("Linux"), "{h:?}");
        assert!(!commit().is_empty());
    }
}
