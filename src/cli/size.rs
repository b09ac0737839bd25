//! Parsing of sizes (`64k`, `16m`, `1g`, `512MiB`) and durations (`2s`, `2500ms`).

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

/// Parses a duration: a number with a unit `ms`, `s`, `m` or `h` (`s` if none).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix("min") {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t.as_str(), 1.0)
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("invalid duration '{s}' (expected e.g. 500ms, 2s, 10m)"))?;
    if !n.is_finite() || n < 0.0 || n * mult > 1e9 {
        return Err(format!("invalid duration '{s}'"));
    }
    Ok(std::time::Duration::from_secs_f64(n * mult))
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

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2500ms").unwrap().as_millis(), 2500);
        assert_eq!(parse_duration("2s").unwrap().as_secs(), 2);
        assert_eq!(parse_duration("3").unwrap().as_secs(), 3);
        assert_eq!(parse_duration("10m").unwrap().as_secs(), 600);
        assert!(parse_duration("soon").is_err());
    }
}
