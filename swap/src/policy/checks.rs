//! A policy's range checks ([`PolicyConfig::validate`], every error naming its key) and
//! its time scaling ([`PolicyConfig::scaled`]).

use std::time::Duration;

use super::{CandidateKind, PolicyConfig, PolicyError, ReclaimBatch, MAX_LAUNCH_PREFETCH_BYTES};

/// The largest [`RestoreConfig::page_min_bytes`](super::RestoreConfig::page_min_bytes): the
/// largest checkpoint.
const MAX_PAYLOAD_BYTES: u64 = crate::swap_file::layout::MAX_PAYLOAD as u64;
/// The longest period (and saver budget) a policy may set: a day. A longer one never
/// comes round in an experiment, and every `--time-scale` a run accepts keeps it
/// representable.
pub const MAX_PERIOD: Duration = Duration::from_secs(24 * 60 * 60);
/// The shortest saver or working-set period a policy may set, and the shortest a
/// `--time-scale` makes one: a millisecond. A shorter period keeps a core busy with the
/// task alone (a walk of every object, a saver pass) and measures nothing more.
pub const MIN_PERIOD: Duration = Duration::from_millis(1);

impl PolicyConfig {
    /// Checks every range; the error names the key.
    pub(super) fn validate(&self) -> Result<(), (&'static str, String)> {
        let large = marvin_runtime::LARGE_OBJECT_BYTES as u64;
        if self.candidates.min_size_bytes < large {
            return Err((
                "candidates.min_size_bytes",
                format!(
                    "must be at least {large}, found {}: objects under {large} bytes live in \
                     the small-object space, which is never stubbed or swapped",
                    self.candidates.min_size_bytes
                ),
            ));
        }
        if self.candidates.kinds.contains(&CandidateKind::RefArray) {
            return Err((
                "candidates.kinds",
                "reference arrays are never swap candidates".into(),
            ));
        }
        if !(1..=4).contains(&self.coldness.window_rounds) {
            let found = self.coldness.window_rounds;
            return Err((
                "coldness.window_rounds",
                format!("must be 1 to 4 (the history holds 4 rounds), found {found}"),
            ));
        }
        let periods = [
            ("saver.foreground_period", self.saver.foreground_period),
            ("saver.background_period", self.saver.background_period),
            ("saver.budget", self.saver.budget),
            (
                "working_set.foreground_period",
                self.working_set.foreground_period,
            ),
            (
                "working_set.background_period",
                self.working_set.background_period,
            ),
        ];
        for (key, d) in periods {
            if d.is_zero() {
                return Err((key, "must be longer than zero".into()));
            }
            if key != "saver.budget" && d < MIN_PERIOD {
                return Err((
                    key,
                    format!(
                        "must be at least 1ms (a shorter period keeps a core busy with the task alone), found {}",
                        marvin_runtime::duration::format(d)
                    ),
                ));
            }
            if d > MAX_PERIOD {
                return Err((
                    key,
                    format!(
                        "must be at most 24h (a longer period never comes round in a run), found {}",
                        marvin_runtime::duration::format(d)
                    ),
                ));
            }
        }
        if self.reclaimer.batch_bytes == ReclaimBatch::Bytes(0) {
            return Err((
                "reclaimer.batch_bytes",
                "must be more than zero bytes (or \"as-asked\")".into(),
            ));
        }
        if self.restore.prefetch_bytes > MAX_LAUNCH_PREFETCH_BYTES {
            return Err((
                "restore.prefetch_bytes",
                format!(
                    "must be at most {MAX_LAUNCH_PREFETCH_BYTES}, found {}",
                    self.restore.prefetch_bytes
                ),
            ));
        }
        let page_min = self.restore.page_min_bytes;
        let sums_min = crate::swap_file::page_sums::PAGE_SUMS_MIN_BYTES as u64;
        if page_min != 0 && !(sums_min..=MAX_PAYLOAD_BYTES).contains(&page_min) {
            return Err((
                "restore.page_min_bytes",
                format!(
                    "must be 0 (off) or {sums_min} to {MAX_PAYLOAD_BYTES}, found {page_min}: \
                     smaller checkpoints keep no checksum per page"
                ),
            ));
        }
        let t = self.compaction.threshold;
        if !(t > 0.0 && t <= 1.0) {
            return Err((
                "compaction.threshold",
                format!("must be in (0, 1], found {t}"),
            ));
        }
        self.chunks.validate()
    }
    /// The same policy with every period and the saver's budget multiplied by `time_scale`
    /// (0.1 runs an experiment's clocks ten times faster).
    pub fn scaled(&self, time_scale: f64) -> Result<PolicyConfig, PolicyError> {
        if !(time_scale.is_finite() && time_scale > 0.0) {
            return Err(PolicyError::BadScale {
                scale: time_scale,
                key: None,
                reason: "it must be a positive, finite number".into(),
            });
        }
        let scale = |key: &'static str, d: Duration| -> Result<Duration, PolicyError> {
            let scaled =
                Duration::try_from_secs_f64(d.as_secs_f64() * time_scale).map_err(|e| {
                    PolicyError::BadScale {
                        scale: time_scale,
                        key: Some(key),
                        reason: format!(
                            "{} times {time_scale}: {e}",
                            marvin_runtime::duration::format(d)
                        ),
                    }
                })?;
            // A period never scales down below the shortest a policy may set (a busy
            // loop otherwise), nor the saver's budget to zero.
            let floor = if key == "saver.budget" {
                Duration::from_nanos(1)
            } else {
                MIN_PERIOD
            };
            Ok(scaled.max(floor))
        };
        let mut out = self.clone();
        out.saver.foreground_period =
            scale("saver.foreground_period", self.saver.foreground_period)?;
        out.saver.background_period =
            scale("saver.background_period", self.saver.background_period)?;
        out.saver.budget = scale("saver.budget", self.saver.budget)?;
        out.working_set.foreground_period = scale(
            "working_set.foreground_period",
            self.working_set.foreground_period,
        )?;
        out.working_set.background_period = scale(
            "working_set.background_period",
            self.working_set.background_period,
        )?;
        Ok(out)
    }
}
