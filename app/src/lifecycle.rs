//! Scripted app lifecycles: `bg@2s,save@2500ms,reclaim@3s,fg@6s` moves one app to the
//! background at 2 s, runs the saver to completion at 2.5 s, reclaims everything
//! reclaimable at 3 s and brings the app back to the foreground at 6 s (times from the
//! app's start). Each step is a [`Command`], carried out as a command from outside is.

use std::time::Duration;

use crate::command::Command;

/// Why a lifecycle script was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LifecycleError {
    #[error("empty lifecycle")]
    Empty,
    #[error("lifecycle step '{0}' is not ACTION@TIME")]
    NotActionAtTime(String),
    #[error("unknown lifecycle action '{0}' (expected bg, save, reclaim, fg or gc)")]
    UnknownAction(String),
    #[error("lifecycle step '{step}': {source}")]
    BadTime {
        step: String,
        source: marvin_runtime::duration::DurationError,
    },
}

/// A parsed lifecycle script, in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lifecycle {
    pub steps: Vec<(Duration, Command)>,
}

impl Lifecycle {
    /// Parses `ACTION@TIME,...` (actions `bg`, `save`, `reclaim`, `fg`, `gc`; times in
    /// marvin's duration syntax, [`marvin_runtime::duration`]: `2s`, `2500ms`, `0.5s`).
    pub fn parse(spec: &str) -> Result<Lifecycle, LifecycleError> {
        let mut steps = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, at) = part
                .split_once('@')
                .ok_or_else(|| LifecycleError::NotActionAtTime(part.to_string()))?;
            let action = match name.trim() {
                "bg" | "background" => Command::Background,
                "save" => Command::Save,
                "reclaim" => Command::Reclaim(u64::MAX),
                "fg" | "foreground" => Command::Foreground,
                "gc" => Command::Gc,
                other => return Err(LifecycleError::UnknownAction(other.to_string())),
            };
            let at =
                marvin_runtime::duration::parse(at).map_err(|source| LifecycleError::BadTime {
                    step: part.to_string(),
                    source,
                })?;
            steps.push((at, action));
        }
        if steps.is_empty() {
            return Err(LifecycleError::Empty);
        }
        steps.sort_by_key(|s| s.0);
        Ok(Lifecycle { steps })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let l = Lifecycle::parse("bg@2s,save@2500ms,reclaim@3s,fg@6s").unwrap();
        assert_eq!(
            l.steps,
            vec![
                (Duration::from_secs(2), Command::Background),
                (Duration::from_millis(2500), Command::Save),
                (Duration::from_secs(3), Command::Reclaim(u64::MAX)),
                (Duration::from_secs(6), Command::Foreground),
            ]
        );
    }

    #[test]
    fn rejects_bad_specs_with_a_message() {
        for bad in ["", "bg", "bg@", "sleep@2s", "bg@2", "bg@-1s", "bg@fast"] {
            assert!(Lifecycle::parse(bad).is_err(), "{bad}");
        }
        let e = Lifecycle::parse("bg@1s,fg@2").unwrap_err();
        assert!(
            matches!(&e, LifecycleError::BadTime { step, .. } if step == "fg@2"),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(text.contains("'fg@2'") && text.contains("2ms"), "{text}");
    }

    #[test]
    fn times_use_the_one_duration_syntax() {
        let l = Lifecycle::parse("gc@0,bg@0.5s,fg@1m").unwrap();
        assert_eq!(
            l.steps,
            vec![
                (Duration::ZERO, Command::Gc),
                (Duration::from_millis(500), Command::Background),
                (Duration::from_secs(60), Command::Foreground),
            ]
        );
    }
}
