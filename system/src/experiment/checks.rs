//! The checks made before anything runs: every flag's range ([`check_args`]) and room
//! on the file systems the run writes to ([`check_room`]).

use std::time::Duration;

use marvin_machine::swapdev;

use super::flags::{PressureArgs, SwapDeviceArg};
use crate::paths;
use crate::plan::{self, Column};
use crate::PressurePolicy;

/// The smallest `--budget`: below it not even one app's heap fits.
pub const MIN_BUDGET: usize = 1 << 20;

/// Checks every flag's range and every output path before anything runs; the message
/// names the flag.
pub(super) fn check_args(a: &PressureArgs) -> Result<(), String> {
    if a.apps == 0 {
        return Err("--apps must be at least 1 (found 0)".into());
    }
    if !(a.time_scale > 0.0 && a.time_scale.is_finite()) {
        return Err(format!(
            "--time-scale must be a positive, finite number (found {})",
            a.time_scale
        ));
    }
    if let Some(b) = a.budget {
        if b < MIN_BUDGET {
            return Err(format!(
                "--budget must be at least 1m (found {b} bytes): no app fits in less"
            ));
        }
    }
    for (flag, d) in [
        ("--duration", Some(a.duration)),
        ("--sample-every", Some(a.sample_every)),
        ("--switch-every", a.switch_every),
    ] {
        if d == Some(Duration::ZERO) {
            return Err(format!("{flag} must be longer than zero"));
        }
    }
    if a.gc_max_free == 0 {
        return Err("--gc-max-free must be more than zero bytes".into());
    }
    if a.swap_size < MIN_BUDGET {
        return Err(format!(
            "--swap-size must be at least 1m (found {} bytes)",
            a.swap_size
        ));
    }
    if let Some(d) = &a.out {
        paths::check_output_dir("--out", d).map_err(|e| e.to_string())?;
    }
    if let Some(f) = &a.trace {
        paths::check_output_file("--trace", f).map_err(|e| e.to_string())?;
    }
    if let Some(d) = &a.swap_dir {
        paths::check_swap_dir("--swap-dir", d).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Room a run needs in the temporary root (or `--swap-dir`) beside its swap: the
/// workload written out, the apps' directories, reclaim tables and logs.
pub(super) const RUN_DIR_ROOM: u64 = 16 << 20;

/// About what the results of `runs` runs take in `--out`: the figures, and per run its
/// summary, samples and app records (several times what the shipped workloads write:
/// a default experiment's directory holds about 0.7 MiB).
pub(super) fn out_room(a: &PressureArgs, runs: usize) -> u64 {
    let phase = a.launches as f64 * (a.launch_gap.as_secs_f64() + 1.0);
    // The System samples at most once per loop tick (20 ms).
    let every = a.sample_every.as_secs_f64().max(0.02);
    let samples = ((a.duration.as_secs_f64() + phase) / every).ceil() as u64;
    let per_run = (256 << 10) + samples * 1024 + a.apps as u64 * (2 << 10);
    (4 << 20) + runs as u64 * per_run
}

/// Checks that the file systems the run writes to have room for it before anything is
/// set up: the temporary root (or `--swap-dir`) for the policies' directories and their
/// swap (each swapping policy's files at most `--swap-size`, the policies one after the
/// other; kernel-swap's swap file exactly that, never on a tmpfs, where the kernel does
/// not swap to a file), and `--out` for the results. The message names the flag (or
/// TMPDIR) and the path.
pub(super) fn check_room(
    a: &PressureArgs,
    processes: bool,
    columns: &[Column],
    runs: &[plan::Run],
) -> Result<(), paths::PathError> {
    let temp = std::env::temp_dir();
    paths::check_output_dir("TMPDIR", &temp)?;
    let (name, root) = match &a.swap_dir {
        Some(d) => ("--swap-dir", d.clone()),
        None => ("TMPDIR", temp),
    };
    let mut swapping: Vec<&str> = Vec::new();
    let mut swap_file = false;
    for r in runs {
        let p = columns[r.column].pressure;
        let files = match p {
            PressurePolicy::Kill | PressurePolicy::Zram => false,
            PressurePolicy::KernelSwap => a.swap_device == SwapDeviceArg::File,
            PressurePolicy::PageSwap | PressurePolicy::Marvin => true,
        };
        swap_file |= processes && p == PressurePolicy::KernelSwap && files;
        if files && !swapping.contains(&p.name()) {
            swapping.push(p.name());
        }
    }
    let zram = processes
        && runs.iter().any(|r| {
            let p = columns[r.column].pressure;
            p.charged_zram()
                || (p == PressurePolicy::KernelSwap && a.swap_device == SwapDeviceArg::Zram)
        });
    if zram {
        if let Err(e) = swapdev::zram_free() {
            return Err(paths::PathError {
                flag: "--swap-device".to_owned(),
                path: "zram".to_owned(),
                reason: e.to_string(),
            });
        }
    }
    if swap_file && paths::on_tmpfs(&root) {
        return Err(paths::PathError {
            flag: name.to_owned(),
            path: root.display().to_string(),
            reason: "is on a tmpfs, where the kernel cannot swap to kernel-swap's swap file; \
                     give --swap-dir on a disk (or --swap-device zram)"
                .to_owned(),
        });
    }
    let mut need = RUN_DIR_ROOM;
    let mut what = "the run's directories".to_owned();
    if !swapping.is_empty() {
        need += a.swap_size as u64;
        what = format!(
            "{}'s swap (--swap-size {} MiB) and the run's directories",
            swapping.join(", "),
            a.swap_size >> 20
        );
    }
    paths::check_room(name, &root, need, &what)?;
    if let Some(out) = &a.out {
        paths::check_room(
            "--out",
            out,
            out_room(a, runs.len()),
            "the results and figures",
        )?;
    }
    Ok(())
}
