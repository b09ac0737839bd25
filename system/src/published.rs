//! The published results of the experiment (Marvin, USENIX ATC 2020, figure 7): apps
//! active at the peak on the phone, per policy, shown beside a `--scale paper` run's own
//! (reference marks on the active-apps figure, a row of the table).

/// Which of the published workloads a run compares with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Published {
    /// The 4 KB/1 MB mix (`builtin:mixed`); else 4 KB arrays (`builtin:buckets`).
    pub mixed: bool,
}

/// Android's low-memory killer kept about 10 apps active in both workloads.
pub const KILL: u32 = 10;
/// Android with Linux swap: 13 with 4 KB arrays, 20 with the mix.
pub const SWAP: (u32, u32) = (13, 20);
/// Marvin: 27 with 4 KB arrays, 30 with the mix.
pub const MARVIN: (u32, u32) = (27, 30);

impl Published {
    fn pick(&self, (small, mix): (u32, u32)) -> u32 {
        if self.mixed {
            mix
        } else {
            small
        }
    }

    /// The workload the figures are for.
    pub fn workload(&self) -> &'static str {
        if self.mixed {
            "the 4 KB/1 MB mix"
        } else {
            "4 KB arrays"
        }
    }

    /// The published peak of active apps for a policy (`kill`, `kernel-swap`,
    /// `page-swap`, `marvin` and its restore modes); `None` for another.
    pub fn peak_active(&self, policy: &str) -> Option<u32> {
        match policy {
            "kill" => Some(KILL),
            "kernel-swap" | "page-swap" => Some(self.pick(SWAP)),
            p if p == "marvin" || p.starts_with("marvin-") || p.starts_with("marvin:") => {
                Some(self.pick(MARVIN))
            }
            _ => None,
        }
    }

    /// The reference marks of the active-apps figure: value and label.
    pub fn marks(&self) -> Vec<(u32, String)> {
        let mix = if self.mixed { " (mix)" } else { "" };
        vec![
            (KILL, "paper: kill 10".to_owned()),
            (
                self.pick(SWAP),
                format!("paper: swap {}{mix}", self.pick(SWAP)),
            ),
            (
                self.pick(MARVIN),
                format!("paper: marvin {}{mix}", self.pick(MARVIN)),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_counts_by_policy_and_workload() {
        let small = Published { mixed: false };
        let mix = Published { mixed: true };
        assert_eq!(small.peak_active("kill"), Some(10));
        assert_eq!(mix.peak_active("kill"), Some(10));
        assert_eq!(small.peak_active("kernel-swap"), Some(13));
        assert_eq!(mix.peak_active("page-swap"), Some(20));
        assert_eq!(small.peak_active("marvin-eager"), Some(27));
        assert_eq!(mix.peak_active("marvin"), Some(30));
        assert_eq!(small.peak_active("other"), None);
        let labels: Vec<String> = small.marks().into_iter().map(|m| m.1).collect();
        assert_eq!(
            labels,
            ["paper: kill 10", "paper: swap 13", "paper: marvin 27"]
        );
    }
}
