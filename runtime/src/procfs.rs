//! The process's resident memory, read from `/proc/self/statm`.

/// Resident bytes of this process now (resident pages times the page size).
pub fn resident_bytes() -> std::io::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    parse_statm_resident(&statm)
        .map(|pages| pages * page_size())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "malformed /proc/self/statm"))
}

/// The resident page count (second field) of a `statm` line.
pub fn parse_statm_resident(statm: &str) -> Option<u64> {
    statm.split_whitespace().nth(1)?.parse().ok()
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_statm() {
        assert_eq!(parse_statm_resident("1000 250 30 5 0 100 0\n"), Some(250));
        assert_eq!(parse_statm_resident("1000"), None);
        assert!(resident_bytes().unwrap() > 0);
    }
}
