//! Scripted app lifecycles: `bg@2s,save@2500ms,reclaim@3s,fg@6s` moves one app to the
//! background at 2 s, runs the saver to completion at 2.5 s, reclaims everything
//! reclaimable at 3 s and brings the app back to the foreground at 6 s (times from the
//! app's start).

use std::sync::Arc;
use std::time::Duration;

use crate::app::App;

/// One scripted transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Background,
    Save,
    Reclaim,
    Foreground,
    /// A full collection.
    Gc,
}

/// A parsed lifecycle script, in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lifecycle {
    pub steps: Vec<(Duration, Action)>,
}

impl Lifecycle {
    /// Parses `ACTION@TIME,...` (actions `bg`, `save`, `reclaim`, `fg`, `gc`; times like
    /// `2s`, `2500ms`).
    pub fn parse(spec: &str) -> Result<Lifecycle, String> {
        let mut steps = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, at) = part
                .split_once('@')
                .ok_or_else(|| format!("lifecycle step '{part}' is not ACTION@TIME"))?;
            let action = match name.trim() {
                "bg" | "background" => Action::Background,
                "save" => Action::Save,
                "reclaim" => Action::Reclaim,
                "fg" | "foreground" => Action::Foreground,
                "gc" => Action::Gc,
                other => {
                    return Err(format!(
                        "unknown lifecycle action '{other}' (expected bg, save, reclaim, fg or gc)"
                    ))
                }
            };
            steps.push((parse_time(at.trim())?, action));
        }
        if steps.is_empty() {
            return Err("empty lifecycle".into());
        }
        steps.sort_by_key(|s| s.0);
        Ok(Lifecycle { steps })
    }
}

fn parse_time(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid lifecycle time '{s}' (expected e.g. 2s or 2500ms)");
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        return Err(bad());
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    if !v.is_finite() || !(0.0..=1e6).contains(&v) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(v * scale))
}

/// Runs the script on its own thread against `app`, stopping early when the app ends.
/// Errors are reported on stderr and do not stop the app.
pub fn start(app: &Arc<App>, lifecycle: Lifecycle) -> std::thread::JoinHandle<()> {
    let app = app.clone();
    std::thread::Builder::new()
        .name("lifecycle".into())
        .spawn(move || {
            for (at, action) in lifecycle.steps {
                let until = app.started_at() + at;
                app.sleep_until(until);
                if app.safepoints.is_terminating() {
                    return;
                }
                let r = match action {
                    Action::Background => app.enter_background().map(drop),
                    Action::Save => app.save_now(true).map(drop),
                    Action::Reclaim => app.reclaim_now(u64::MAX).map(drop),
                    Action::Foreground => app.enter_foreground().map(drop),
                    Action::Gc => {
                        app.collect_stopped();
                        Ok(())
                    }
                };
                if let Err(e) = r {
                    eprintln!("lifecycle: {action:?} at {at:?}: {e}");
                }
            }
        })
        .expect("start the lifecycle thread")
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
                (Duration::from_secs(2), Action::Background),
                (Duration::from_millis(2500), Action::Save),
                (Duration::from_secs(3), Action::Reclaim),
                (Duration::from_secs(6), Action::Foreground),
            ]
        );
    }

    #[test]
    fn rejects_bad_specs_with_a_message() {
        for bad in ["", "bg", "bg@", "sleep@2s", "bg@2", "bg@-1s", "bg@fast"] {
            assert!(Lifecycle::parse(bad).is_err(), "{bad}");
        }
    }
}
