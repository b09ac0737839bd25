//! The machine side of the real pressure experiment: what a run creates on the machine
//! and reads back from the kernel. Each app runs as an OS process in one memory cgroup
//! whose hard limit is the budget ([`cgroup`]); real Linux swap for the run ([`swapdev`]);
//! a low-memory killer in the manner of Android's lmkd ([`lmk`], its pure policy in
//! [`lmk_policy`], its pressure signals in `psi.rs`: [`PsiEvents`]); cgroup counters
//! ([`MemStat`]); the real-time UI thread of the app in front ([`uithread`]); the disks
//! brought to rest before each policy ([`settle`]). Per-process counters come from the
//! runtime's `/proc` reader ([`marvin_runtime::procfs`]). Apart from the experiment,
//! `marvin bench queue` places threads in cpu groups as Android places an app's threads
//! in `top-app` and `background` ([`CpuGroups`]). What phones do, for the baselines:
//! compressed swap charged to the budget ([`zram_charge`], [`zswap_charge`]), cached apps
//! paged out from outside ([`compaction`]) and frozen ([`freezer`]).
//!
//! [`Machine`] is the front door: it sets all of that up for one run, in order, and
//! takes it down in reverse, holding the [`MachineLock`] throughout: one real-mode run
//! on the machine at a time, since swap and the kernel's OOM killer are machine-wide.
//!
//! Everything machine-wide is announced on stderr when it is created and when it is
//! removed. Guards remove it on drop (also while a panic unwinds), [`signals`] turns
//! Ctrl-C, SIGTERM and SIGHUP into an unwind of the run, and the start-up sweeps
//! ([`freezer::sweep`], [`cgroup::Hierarchy::sweep`], [`swapdev::sweep`],
//! [`zswap_charge::sweep_zswap`]) remove what a run killed with SIGKILL left behind;
//! names carry the owner's pid and start time ([`Owner`]).
//! All `unsafe` of this layer is in [`sys`].
//!
//! # Surface
//!
//! Public modules: `cgroup`, `lmk`, `settle`, `signals`, `swapdev`, `sys`, `uithread`
//! (each a namespace of what it sets up or reads, called as `signals::stop_requested()`,
//! `swapdev::active_swaps()`, `sys::fs_room(..)`), `lmk_policy` (the one victim chooser
//! both hosts use), `compaction`, `freezer`, `zram_charge`, `zswap_charge` (the phones'
//! mechanisms of the baselines, called as `freezer::sweep()`). Re-exported here: the run's machine ([`Machine`], [`MachineConfig`],
//! [`SwapChoice`], [`SwapTraffic`], [`MachineLock`], [`machine_lock_path`],
//! [`LockHolds`]), the memory cgroup ([`Group`], [`Hierarchy`], [`Limits`],
//! [`Version`]), its counters ([`MemStat`], [`parse_keyed`], [`machine_swap_pages`]),
//! pressure stalls ([`PsiEvents`], [`PsiLevel`], [`StallSource`], [`MACHINE_PSI`],
//! [`wait_any`]), cpu groups ([`CpuGroups`], [`CpuController`], [`nice_weight`],
//! [`weight_of_shares`], [`MAX_SHARES`]), owners of what a run
//! leaves ([`Owner`], [`dead_entries`]) and errors ([`HostError`], [`Result`]).

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its
// error handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod cgroup;
mod cgroup_version;
pub mod compaction;
mod cpugroup;
mod error;
pub mod freezer;
pub mod lmk;
pub mod lmk_policy;
mod machine;
mod machine_lock;
mod memstat;
mod owner;
mod psi;
pub mod settle;
pub mod signals;
mod swap_header;
pub mod swapdev;
pub mod sys;
pub mod uithread;
pub mod zram_charge;
pub mod zswap_charge;

pub use cgroup::{Group, Hierarchy, Limits, Version};
pub use cpugroup::{nice_weight, weight_of_shares, CpuController, CpuGroups, MAX_SHARES};
pub use error::{HostError, Result};
pub use machine::SwapTraffic;
pub use machine::{Machine, MachineConfig, SwapChoice};
pub use machine_lock::{lock_path as machine_lock_path, Holds as LockHolds, MachineLock};
pub use memstat::{machine_swap_pages, parse_keyed, MemStat};
pub use owner::{dead_entries, Owner};
pub use psi::{wait_any, Level as PsiLevel, PsiEvents, StallSource, MACHINE_PSI};

/// Says on stderr what the run does to the machine.
pub fn announce(msg: &str) {
    #[cfg(not(test))]
    marvin_console::errln!("marvin: {msg}");
    // In unit tests through the harness's captured stderr, so a passing test prints
    // nothing.
    #[cfg(test)]
    #[allow(clippy::print_stderr)]
    {
        eprintln!("marvin: {msg}");
    }
}

/// Bytes as whole MiB, for announcements.
pub fn mib(bytes: u64) -> u64 {
    bytes >> 20
}
