//! The one duration syntax of marvin: command-line flags (`--launch-every 1400ms`), policy
//! files (`budget = "1s"`) and lifecycle scripts (`bg@2s,save@2500ms`) all read durations
//! with [`parse`] and write them with [`format`].
//!
//! A duration is a number with a unit: `ns`, `us`, `ms`, `s`, `m` (minutes) or `h`, as in
//! `40ns`, `250us`, `1500ms`, `2s`, `0.5s`, `10m`, `1h`. Fractions are allowed as long as
//! they come to a whole number of nanoseconds. A bare `0` means no time at all; any other
//! bare number is an error that suggests the units, because it would be a guess whether
//! `2` meant seconds or milliseconds. Units are lower-case; a space between the number and
//! the unit is allowed (`2 s`). Negative durations do not exist.

use std::time::Duration;

/// The units, largest first, with their length in nanoseconds.
const UNITS: [(&str, u128); 6] = [
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("ns", 1),
];

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Why a text is not a duration. Every message quotes the text and says what to write.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty duration (write a number with a unit, e.g. 2s or 1500ms)")]
    Empty,
    #[error(
        "duration {text:?} has no unit: write {number}s, {number}ms or another unit \
         (ns, us, ms, s, m, h)"
    )]
    NoUnit { text: String, number: String },
    #[error("duration {text:?} has an unknown unit {unit:?} (units: ns, us, ms, s, m, h)")]
    UnknownUnit { text: String, unit: String },
    #[error("{text:?} is not a duration (write a number with a unit, e.g. 2s, 1500ms or 0.5s)")]
    NotANumber { text: String },
    #[error("duration {text:?} is negative (durations are zero or more)")]
    Negative { text: String },
    #[error("duration {text:?} is not a whole number of nanoseconds")]
    FinerThanNanoseconds { text: String },
    #[error("duration {text:?} is too long")]
    TooLong { text: String },
}

/// Parses a duration in marvin's syntax (see the module doc). Surrounding whitespace is
/// ignored.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    let owned = || t.to_string();
    if t.is_empty() {
        return Err(DurationError::Empty);
    }
    if t.starts_with('-') {
        return Err(DurationError::Negative { text: owned() });
    }
    let number_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(number_end);
    let unit = unit.trim_start();
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let well_formed = !whole.is_empty()
        && !fraction.contains('.')
        && (fraction.is_empty() != number.contains('.'));
    if !well_formed {
        return Err(DurationError::NotANumber { text: owned() });
    }
    let per_unit = if unit.is_empty() {
        if whole.bytes().chain(fraction.bytes()).all(|b| b == b'0') {
            return Ok(Duration::ZERO);
        }
        return Err(DurationError::NoUnit {
            text: owned(),
            number: number.to_string(),
        });
    } else {
        match UNITS.iter().find(|(name, _)| *name == unit) {
            Some((_, nanos)) => *nanos,
            None => {
                return Err(DurationError::UnknownUnit {
                    text: owned(),
                    unit: unit.to_string(),
                })
            }
        }
    };
    let too_long = || DurationError::TooLong { text: owned() };
    // Whole part: at most 38 digits fit a u128; longer is too long for any unit anyway.
    let whole: u128 = whole.parse().map_err(|_| too_long())?;
    let mut nanos = whole.checked_mul(per_unit).ok_or_else(too_long)?;
    let fraction = fraction.trim_end_matches('0');
    if !fraction.is_empty() {
        // A fraction with more digits than the unit has nanoseconds cannot be whole.
        let scale = u32::try_from(fraction.len())
            .ok()
            .and_then(|digits| 10u128.checked_pow(digits))
            .filter(|scale| *scale <= per_unit)
            .ok_or_else(|| DurationError::FinerThanNanoseconds { text: owned() })?;
        let digits: u128 = fraction.parse().map_err(|_| too_long())?;
        let part = digits * per_unit; // digits < scale <= per_unit, so no overflow
        if !part.is_multiple_of(scale) {
            return Err(DurationError::FinerThanNanoseconds { text: owned() });
        }
        nanos = nanos.checked_add(part / scale).ok_or_else(too_long)?;
    }
    let secs = u64::try_from(nanos / NANOS_PER_SEC).map_err(|_| too_long())?;
    // The remainder is below 10^9 and fits a u32.
    Ok(Duration::new(secs, (nanos % NANOS_PER_SEC) as u32))
}

/// Writes a duration in the largest unit that keeps it exact (`1500ms`, `2s`, `10m`), so
/// that [`parse`] reads it back to the same value. Zero is `0s`.
pub fn format(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    let (unit, per) = UNITS
        .iter()
        .find(|(_, per)| nanos.is_multiple_of(*per))
        .expect("every duration is a whole number of nanoseconds");
    format!("{}{unit}", nanos / per)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Duration {
        parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn every_unit_parses() {
        assert_eq!(ok("40ns"), Duration::from_nanos(40));
        assert_eq!(ok("250us"), Duration::from_micros(250));
        assert_eq!(ok("1500ms"), Duration::from_millis(1500));
        assert_eq!(ok("2s"), Duration::from_secs(2));
        assert_eq!(ok("10m"), Duration::from_secs(600));
        assert_eq!(ok("1h"), Duration::from_secs(3600));
    }

    #[test]
    fn fractions_are_exact() {
        assert_eq!(ok("0.5s"), Duration::from_millis(500));
        assert_eq!(ok("1.5ms"), Duration::from_micros(1500));
        assert_eq!(ok("2.25m"), Duration::from_secs(135));
        assert_eq!(ok("0.000000001s"), Duration::from_nanos(1));
        assert_eq!(ok("1.500s"), Duration::from_millis(1500), "trailing zeros");
        assert_eq!(ok("1.0ns"), Duration::from_nanos(1));
        // Same value written in different units.
        assert_eq!(ok("2.5s"), ok("2500ms"));
        assert_eq!(ok("0.1s"), ok("100ms"));
    }

    #[test]
    fn zero_needs_no_unit_and_whitespace_is_allowed() {
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("0.0"), Duration::ZERO);
        assert_eq!(ok("000"), Duration::ZERO);
        assert_eq!(ok("0ms"), Duration::ZERO);
        assert_eq!(ok("  2 s "), Duration::from_secs(2));
    }

    #[test]
    fn a_bare_number_is_rejected_with_the_units() {
        let e = parse("2").unwrap_err();
        assert_eq!(
            e,
            DurationError::NoUnit {
                text: "2".into(),
                number: "2".into()
            }
        );
        let msg = e.to_string();
        assert!(msg.contains("2s") && msg.contains("2ms"), "{msg}");
        assert!(msg.contains("ns, us, ms, s, m, h"), "{msg}");
        assert!(matches!(parse("1.5"), Err(DurationError::NoUnit { .. })));
    }

    #[test]
    fn bad_texts_say_why() {
        assert_eq!(parse(""), Err(DurationError::Empty));
        assert_eq!(parse("   "), Err(DurationError::Empty));
        for (text, want) in [
            ("5 parsecs", "unknown unit \"parsecs\""),
            ("2S", "unknown unit \"S\""),
            ("2min", "unknown unit \"min\""),
            ("2sec", "unknown unit"),
            ("fast", "not a duration"),
            ("s", "not a duration"),
            (".5s", "not a duration"),
            ("5.s", "not a duration"),
            ("1.2.3s", "not a duration"),
            ("1e3ms", "unknown unit \"e3ms\""),
            ("-1s", "negative"),
            ("-0", "negative"),
            ("1.5ns", "whole number of nanoseconds"),
            ("0.0000000001s", "whole number of nanoseconds"),
            ("99999999999999999999999h", "too long"),
            ("999999999999999999999999999999999999999999s", "too long"),
        ] {
            let msg = parse(text)
                .map(|d| format!("{d:?}"))
                .unwrap_or_else(|e| e.to_string());
            assert!(msg.contains(want), "{text}: {msg}");
            assert!(
                msg.contains(text.trim()),
                "{text}: the message quotes the text: {msg}"
            );
        }
    }

    #[test]
    fn the_longest_duration_round_trips() {
        let max = Duration::new(u64::MAX, 999_999_999);
        assert_eq!(format(max), format!("{}ns", max.as_nanos()));
        assert_eq!(ok(&format(max)), max);
        assert!(matches!(
            parse(&format!("{}ns", max.as_nanos() + 1)),
            Err(DurationError::TooLong { .. })
        ));
    }

    #[test]
    fn format_uses_the_largest_exact_unit_and_parses_back() {
        for (d, text) in [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(40), "40ns"),
            (Duration::from_micros(250), "250us"),
            (Duration::from_millis(1500), "1500ms"),
            (Duration::from_secs(30), "30s"),
            (Duration::from_secs(120), "2m"),
            (Duration::from_secs(7200), "2h"),
            (Duration::from_secs(90 * 60), "90m"),
        ] {
            assert_eq!(format(d), text);
            assert_eq!(ok(text), d);
        }
    }

    /// Durations spread over the whole range: every power of two of nanoseconds up to the
    /// longest, each also one nanosecond off, and whole units.
    fn sample() -> Vec<Duration> {
        let max = Duration::new(u64::MAX, 999_999_999).as_nanos();
        let mut out: Vec<Duration> = (0..=94u32)
            .flat_map(|shift| {
                let n = 1u128 << shift;
                [n - 1, n, n + 1]
            })
            .filter(|&n| n <= max)
            .map(|n| Duration::new((n / NANOS_PER_SEC) as u64, (n % NANOS_PER_SEC) as u32))
            .collect();
        for (_, per) in UNITS {
            for k in [1u128, 7, 60, 1000, 123_456] {
                let n = per * k;
                out.push(Duration::new(
                    (n / NANOS_PER_SEC) as u64,
                    (n % NANOS_PER_SEC) as u32,
                ));
            }
        }
        out
    }

    #[test]
    fn any_duration_formats_and_parses_back() {
        for d in sample() {
            assert_eq!(parse(&format(d)), Ok(d), "{d:?} as {}", format(d));
        }
    }

    #[test]
    fn a_fraction_of_seconds_means_the_same_as_its_milliseconds() {
        for ms in (0..10_000_000u64).step_by(997) {
            let text = format!("{}.{:03}s", ms / 1000, ms % 1000);
            assert_eq!(parse(&text), Ok(Duration::from_millis(ms)), "{text}");
            assert_eq!(parse(&format!("{ms}ms")), parse(&text), "{text}");
        }
    }
}
