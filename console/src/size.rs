//! Parsing of sizes (`64k`, `16m`, `1g`, `512MiB`). Durations are parsed by
//! [`marvin_runtime::duration::parse`].

/// Parses a byte size: a number with an optional k/m/g suffix (binary units; `b`,
/// `ib` and `ib`-less forms accepted: `16m`, `16M`, `16MiB`, `16mb`).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1usize << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("invalid size '{s}' (expected e.g. 4096, 64k, 16m, 1g)"))?;
    if !n.is_finite() || n < 0.0 || n * mult as f64 > usize::MAX as f64 / 2.0 {
        return Err(format!("invalid size '{s}'"));
    }
    Ok((n * mult as f64) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("16MiB"), Ok(16 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1m").is_err());
    }
}
