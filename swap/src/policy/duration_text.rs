//! Durations in policy files: a string with a unit (`"5s"`, `"1500ms"`, `"250us"`, `"2min"`,
//! `"40ns"`) or a bare integer, read as milliseconds. Written back with the largest unit that
//! keeps the value exact.

use std::time::Duration;

use serde::{de, Deserializer, Serializer};

/// Parses `"<integer><unit>"` with unit `ns`, `us`, `ms`, `s` or `min`.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (try \"5s\", \"1500ms\" or \"250us\")"))?;
    let per_unit_nanos: u64 = match unit.trim() {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "min" => 60_000_000_000,
        other => {
            return Err(format!(
                "unknown duration unit {other:?} in {text:?} (use ns, us, ms, s or min)"
            ))
        }
    };
    let nanos = value
        .checked_mul(per_unit_nanos)
        .ok_or_else(|| format!("duration {text:?} is too long"))?;
    Ok(Duration::from_nanos(nanos))
}

/// Formats a duration with the largest exact unit.
pub fn format(d: Duration) -> String {
    let nanos = d.as_nanos();
    for (unit, per) in [
        ("min", 60_000_000_000u128),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
    ] {
        if nanos >= per && nanos.checked_rem(per) == Some(0) {
            return format!("{}{unit}", nanos / per);
        }
    }
    format!("{nanos}ns")
}

/// `#[serde(with = "duration_text")]`.
pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(*d))
}

/// `#[serde(with = "duration_text")]`.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    struct Visitor;
    impl de::Visitor<'_> for Visitor {
        type Value = Duration;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a duration such as \"5s\" or \"1500ms\", or an integer of milliseconds")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
            parse(v).map_err(E::custom)
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
            u64::try_from(v)
                .map(Duration::from_millis)
                .map_err(|_| E::custom(format!("a duration cannot be negative ({v} ms)")))
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
            Ok(Duration::from_millis(v))
        }
    }
    d.deserialize_any(Visitor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_parse_and_format_back() {
        for (text, d) in [
            ("5s", Duration::from_secs(5)),
            ("1500ms", Duration::from_millis(1500)),
            ("250us", Duration::from_micros(250)),
            ("40ns", Duration::from_nanos(40)),
            ("2min", Duration::from_secs(120)),
        ] {
            assert_eq!(parse(text), Ok(d), "{text}");
            assert_eq!(format(d), text);
        }
        assert_eq!(format(Duration::from_millis(30_000)), "30s");
        assert_eq!(format(Duration::ZERO), "0ns");
    }

    #[test]
    fn bad_durations_say_why() {
        assert!(parse("5 parsecs").unwrap_err().contains("unit"));
        assert!(parse("fast").unwrap_err().contains("not a duration"));
        assert!(parse("99999999999999min").unwrap_err().contains("too long"));
    }
}
