//! Warnings about an experiment that measured nothing ([`guards`]).

use crate::Summary;

/// Warnings about an experiment that measured nothing: the budget never reached, or
/// no policy that acted (no kill, reclaim, page-out or kernel swap-out), so every
/// column ran unpressed and they differ by noise only.
pub fn guards(runs: &[Summary], budget: u64) -> Vec<String> {
    if runs.is_empty() {
        return Vec::new();
    }
    let usage = |s: &Summary| {
        if s.mode == "processes" {
            s.peak_cgroup_bytes
        } else {
            s.peak_committed_bytes.max(s.peak_accounted_bytes)
        }
    };
    let acted = |s: &Summary| {
        s.kills + s.lmk_kills + s.kernel_oom_kills > 0
            || s.reclaimed_bytes + s.swap_out_bytes + s.external_reclaimed_bytes > 0
    };
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let peak = runs.iter().map(usage).max().unwrap_or(0);
    let reached = runs
        .iter()
        .any(|s| acted(s) || s.reclaim_requests > 0 || usage(s) >= budget - budget / 20);
    let mut out = Vec::new();
    if !reached {
        out.push(format!(
            "the budget ({:.1} MiB) was never reached: the most any run used was {:.1} MiB, \
             so no policy had anything to do and the columns differ by noise only; \
             raise --apps or lower --budget",
            mib(budget),
            mib(peak)
        ));
    } else if !runs.iter().any(acted) {
        out.push(
            "no policy acted (no kill, no reclaim, no page-out, no kernel swap-out): the \
             columns differ by noise only; raise --apps or lower --budget"
                .to_owned(),
        );
    }
    for s in runs.iter().filter(|s| s.kernel_oom_kills > 0) {
        let label = if s.label.is_empty() {
            &s.policy
        } else {
            &s.label
        };
        let rep = if runs.iter().any(|r| r.rep > 0) {
            format!(" #{}", s.rep)
        } else {
            String::new()
        };
        out.push(format!(
            "{label}{rep}: {} kernel OOM kill{}: the System did not keep the group off the \
             kernel's OOM killer",
            s.kernel_oom_kills,
            if s.kernel_oom_kills == 1 { "" } else { "s" }
        ));
    }
    out
}
