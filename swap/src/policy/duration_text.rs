//! Durations in policy files, for `#[serde(with = "duration_text")]`: strings in marvin's one
//! duration syntax ([`marvin_runtime::duration`]: `"5s"`, `"1500ms"`, `"0.5s"`), written
//! back with the largest unit that keeps the value exact. A TOML number is accepted only
//! when it is 0; any other number is an error that suggests the string with a unit.

use std::time::Duration;

use marvin_runtime::duration;
use serde::{de, Deserializer, Serializer};

/// `#[serde(with = "duration_text")]`.
pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&duration::format(*d))
}

/// `#[serde(with = "duration_text")]`.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    struct Visitor;
    impl de::Visitor<'_> for Visitor {
        type Value = Duration;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a duration: a string with a unit such as \"5s\" or \"1500ms\"")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
            duration::parse(v).map_err(E::custom)
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
            number(&v.to_string())
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
            number(&v.to_string())
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
            number(&v.to_string())
        }
    }
    d.deserialize_any(Visitor)
}

/// A TOML number: 0 is no time; anything else lacks its unit.
fn number<E: de::Error>(n: &str) -> Result<Duration, E> {
    match duration::parse(n) {
        Ok(d) => Ok(d),
        Err(duration::DurationError::NoUnit { .. }) => Err(E::custom(format!(
            "duration {n} has no unit: write \"{n}s\", \"{n}ms\" or another unit \
             (ns, us, ms, s, m, h) as a string"
        ))),
        Err(e) => Err(E::custom(e)),
    }
}
