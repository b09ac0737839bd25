//! The registry of pressure policies: every way of handling memory pressure the System
//! knows ([`PressurePolicy`]) is one row of [`REGISTRY`], which says its name, what its
//! apps do ([`Handling`], their swap mode), which hosts run it and whether a mode runs it
//! by default. The hosts and the experiment ask the registry, never a policy's name: a
//! new policy is its own variant and file plus one row here, and both hosts and the
//! entry point ([`crate::run`]) pick it up.

use marvin_app::SwapMode;

/// How memory pressure is handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PressurePolicy {
    /// Android's low-memory killer.
    Kill,
    /// A model of a Linux swap file inside the runtime: page-granular, synchronous, on
    /// demand (the in-process mode's swap baseline).
    PageSwap,
    /// Real Linux swap for the apps' cgroup (the process mode's swap baseline).
    KernelSwap,
    /// Marvin's ahead-of-time object swap.
    Marvin,
    /// Kernel swap on zram, its compressed pool charged to the budget (what phones ship).
    Zram,
}

/// What a policy does when memory runs short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handling {
    /// The killer takes the least recently used background app.
    Kill,
    /// Page runs are written out to the app's swap file and dropped (in the runtime).
    PageOut,
    /// The kernel swaps the group's pages; the killer acts on complete stalls.
    KernelSwap,
    /// Saved, clean, cold objects are reclaimed from background apps; the killer
    /// stands behind.
    ReclaimObjects,
}

/// The hosts a policy runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    /// The in-process model: apps as threads (`engine`).
    InProcess,
    /// The process mode: apps as processes ([`crate::processes`]).
    Processes,
}

/// One policy's row of the registry.
#[derive(Clone, Copy, Debug)]
pub struct PolicySpec {
    pub policy: PressurePolicy,
    /// Its name on the command line and in results.
    pub name: &'static str,
    /// Other names `--policy` takes for it.
    pub aliases: &'static [&'static str],
    pub handling: Handling,
    /// The hosts that run it.
    pub hosts: &'static [Host],
    /// The hosts whose default experiment runs it (`--policy` not given).
    pub default_in: &'static [Host],
    /// The first digit of its apps' numbers in a trace (one process track per app).
    pub trace_index: usize,
    /// Its kernel swap is zram whatever `--swap-device` says, and zram's pool is charged
    /// to the budget (`marvin_machine::zram_charge`).
    pub charged_zram: bool,
}

/// Every policy, in the order a mode's default experiment runs them.
pub const REGISTRY: &[PolicySpec] = &[
    PolicySpec {
        policy: PressurePolicy::Kill,
        name: "kill",
        aliases: &[],
        handling: Handling::Kill,
        hosts: &[Host::InProcess, Host::Processes],
        default_in: &[Host::InProcess, Host::Processes],
        trace_index: 1,
        charged_zram: false,
    },
    PolicySpec {
        policy: PressurePolicy::PageSwap,
        name: "page-swap",
        aliases: &["pageswap"],
        handling: Handling::PageOut,
        hosts: &[Host::InProcess],
        default_in: &[Host::InProcess],
        trace_index: 2,
        charged_zram: false,
    },
    PolicySpec {
        policy: PressurePolicy::KernelSwap,
        name: "kernel-swap",
        aliases: &[],
        handling: Handling::KernelSwap,
        hosts: &[Host::Processes],
        default_in: &[Host::Processes],
        trace_index: 4,
        charged_zram: false,
    },
    PolicySpec {
        policy: PressurePolicy::Marvin,
        name: "marvin",
        aliases: &[],
        handling: Handling::ReclaimObjects,
        hosts: &[Host::InProcess, Host::Processes],
        default_in: &[Host::InProcess, Host::Processes],
        trace_index: 3,
        charged_zram: false,
    },
    PolicySpec {
        policy: PressurePolicy::Zram,
        name: "zram",
        aliases: &[],
        handling: Handling::KernelSwap,
        hosts: &[Host::Processes],
        default_in: &[],
        trace_index: 5,
        charged_zram: true,
    },
];

impl Host {
    /// How the experiment names the mode of this host.
    pub fn mode_name(self) -> &'static str {
        match self {
            Host::InProcess => "in-process model",
            Host::Processes => "process mode",
        }
    }
}

/// The policies a mode's default experiment runs, in order.
pub fn defaults(host: Host) -> Vec<PressurePolicy> {
    REGISTRY
        .iter()
        .filter(|s| s.default_in.contains(&host))
        .map(|s| s.policy)
        .collect()
}

impl PressurePolicy {
    /// Its row of the registry.
    pub fn spec(self) -> &'static PolicySpec {
        REGISTRY
            .iter()
            .find(|s| s.policy == self)
            .expect("every policy has its row in the registry")
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// What it does when memory runs short.
    pub fn handling(self) -> Handling {
        self.spec().handling
    }

    /// Whether `host` runs it.
    pub fn runs_in(self, host: Host) -> bool {
        self.spec().hosts.contains(&host)
    }

    /// Whether its apps run Marvin's runtime (object swap, the reclaimer's table).
    pub fn swaps_objects(self) -> bool {
        self.handling() == Handling::ReclaimObjects
    }

    /// Whether its process-mode run gets a swap device: kernel swap's, and Marvin's for
    /// the background apps' native buffers the System pages out (`native_out`); Marvin's
    /// group stays at swappiness 0, so nothing else of it swaps.
    pub fn wants_swap_device(self) -> bool {
        self.kernel_swap() || self.swaps_objects()
    }

    /// Whether it runs on the kernel's swap.
    pub fn kernel_swap(self) -> bool {
        self.handling() == Handling::KernelSwap
    }

    /// Whether its swap is zram with the pool charged to the budget.
    pub fn charged_zram(self) -> bool {
        self.spec().charged_zram
    }

    /// How an app swaps under this policy (not at all when killed; kernel swap is the
    /// kernel's business: the app runs a plain heap).
    pub fn swap_mode(self) -> Option<SwapMode> {
        match self.handling() {
            Handling::Kill | Handling::KernelSwap => None,
            Handling::PageOut => Some(SwapMode::PageSwap),
            Handling::ReclaimObjects => Some(SwapMode::Objects),
        }
    }

    pub fn parse(s: &str) -> Result<PressurePolicy, String> {
        let s = s.trim();
        REGISTRY
            .iter()
            .find(|p| p.name == s || p.aliases.contains(&s))
            .map(|p| p.policy)
            .ok_or_else(|| {
                let names: Vec<&str> = REGISTRY.iter().map(|p| p.name).collect();
                let (last, rest) = names.split_last().expect("a policy");
                format!(
                    "unknown policy '{s}' (expected {} or {last})",
                    rest.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_has_one_row_and_its_name_parses_back() {
        for p in [
            PressurePolicy::Kill,
            PressurePolicy::PageSwap,
            PressurePolicy::KernelSwap,
            PressurePolicy::Marvin,
            PressurePolicy::Zram,
        ] {
            assert_eq!(REGISTRY.iter().filter(|s| s.policy == p).count(), 1);
            assert_eq!(PressurePolicy::parse(p.name()), Ok(p));
            assert!(!p.spec().hosts.is_empty(), "{p:?} runs nowhere");
        }
        assert_eq!(
            PressurePolicy::parse("pageswap"),
            Ok(PressurePolicy::PageSwap)
        );
        assert_eq!(
            PressurePolicy::parse("zswap").unwrap_err(),
            "unknown policy 'zswap' (expected kill, page-swap, kernel-swap, marvin or zram)"
        );
    }

    #[test]
    fn each_mode_runs_its_three_by_default() {
        use PressurePolicy::*;
        assert_eq!(defaults(Host::InProcess), [Kill, PageSwap, Marvin]);
        assert_eq!(defaults(Host::Processes), [Kill, KernelSwap, Marvin]);
        assert!(!KernelSwap.runs_in(Host::InProcess));
        assert!(!PageSwap.runs_in(Host::Processes));
        assert!(!Zram.runs_in(Host::InProcess) && Zram.runs_in(Host::Processes));
        assert!(Zram.kernel_swap() && Zram.charged_zram() && !KernelSwap.charged_zram());
    }
}
