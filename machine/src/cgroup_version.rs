//! Which cgroup interface the memory controller is mounted with: the one fact the
//! group ([`crate::cgroup`]) and the readers of its counter files ([`crate::memstat`])
//! both need, apart from either.

/// Which cgroup interface the memory controller is mounted with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

impl Version {
    pub fn name(self) -> &'static str {
        match self {
            Version::V1 => "cgroup v1",
            Version::V2 => "cgroup v2",
        }
    }
}
