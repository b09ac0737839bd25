//! What the experiment derives from its flags before it runs: the policy Marvin runs
//! with when no file is given ([`model_policy`], [`process_model_policy`]), a policy
//! file read ([`read_policy`]), the workload's defines ([`defines`]) and `--scale paper`
//! ([`apply_scale`]).

use std::path::Path;
use std::time::Duration;

use marvin_console::errln;
use marvin_console::{EXIT_FAILURE, EXIT_USAGE};
use marvin_swap::{PolicyConfig, PolicyError, RestoreMode};

use super::flags::{duration_arg, size_arg, PressureArgs};
use crate::published::Published;
use crate::scale::{self, DEFAULT_BUDGET};

/// Workload constants the small model sets unless `-D` says otherwise.
pub(super) const MODEL_DEFINES: &[(&str, i64)] = &[("ARRAYS", 256), ("STRIDE", 256)];

/// The small model's policy: the published settings, except that the background write
/// task runs at the foreground period. The published experiment launches an app every
/// 10 minutes, so its 30 s background period still gives about twenty saver runs between
/// launches; the model launches every 1.5 s (a 400x compression, against 10x for every
/// other period), and keeps several saver runs between launches this way. Restore is on
/// demand: it gave the better median launch in both modes (docs/experiments.md,
/// "Launches: hot, warm and cold"); `--policy marvin-eager` runs the published eager one.
pub fn model_policy() -> PolicyConfig {
    let mut p = PolicyConfig::default();
    p.saver.background_period = p.saver.foreground_period;
    p.restore.mode = RestoreMode::OnDemand;
    p.restore.page_min_bytes = PAGE_RESTORE_MIN_BYTES;
    p
}

/// The experiment's [`marvin_swap::PolicyConfig`] `restore.page_min_bytes`: arrays of 256
/// KiB and more come back a run of pages at a time, the rest whole. The mixed workload's 1
/// MiB arrays are read two bytes each by a frame, which restored whole read 10 MiB where
/// the kernel's swap read twenty pages (docs/notes/2026-12-03-paper-scale.md).
pub const PAGE_RESTORE_MIN_BYTES: u64 = 256 << 10;

/// The process mode's policy: the model's, with the background write task every second
/// (100 ms at the default time scale) in both states. In the process mode the kernel
/// charges every byte an app holds, and a background app's new objects can be reclaimed
/// only once they are saved: the published experiment's 30 s period gave about twenty
/// saver runs between two launches (one every 10 minutes), 1 s gives fourteen between the
/// model's launches (every 1.4 s), where 5 s gave three.
pub fn process_model_policy() -> PolicyConfig {
    let mut p = model_policy();
    p.saver.foreground_period = Duration::from_secs(1);
    p.saver.background_period = Duration::from_secs(1);
    p
}

/// The workload's defines: the model's defaults, the user's, and every `*_MS` constant
/// scaled by the time scale.
pub(super) fn defines(
    a: &PressureArgs,
    program: &marvin_interpreter::isa::Program,
    seed: u64,
) -> Vec<(String, i64)> {
    let mut d: Vec<(String, i64)> = Vec::new();
    if program.consts.iter().any(|c| c.name == "SEED") {
        d.push(("SEED".to_owned(), seed as i64));
    }
    for (k, v) in MODEL_DEFINES {
        if program.consts.iter().any(|c| c.name == *k) {
            d.push((k.to_string(), *v));
        }
    }
    for c in &program.consts {
        if c.name.ends_with("_MS") {
            d.push((
                c.name.clone(),
                ((c.value as f64) * a.time_scale).round() as i64,
            ));
        }
    }
    for (k, v) in &a.defines {
        d.retain(|(n, _)| n != k);
        d.push((k.clone(), *v));
    }
    d
}

/// Applies `--scale paper` to `a`: every setting no flag gave is set to the scale's
/// choice, derived from the app size of the workload `program` (with `-D ARRAYS=2560`
/// unless given). Returns one choice per setting, with its reason (a given or recorded
/// setting says so), and the published results to show beside the run's. An error when
/// the workload is not of the shipped shape (its app size unknown).
pub(super) fn apply_scale(
    a: &mut PressureArgs,
    program: &marvin_interpreter::isa::Program,
    recorded: bool,
) -> Result<(Vec<scale::Choice>, Option<Published>), String> {
    let given_ids = a.given.clone();
    let given = |id: &str| given_ids.iter().any(|g| g == id);
    // A bucket workload's size is its ARRAYS, any other's that declares one its SCALE.
    let declares = |n: &str| program.consts.iter().any(|c| c.name == n);
    let by_scale = declares("SCALE") && !declares("ARRAYS");
    let (size_name, paper_size) = if by_scale {
        ("SCALE", scale::PAPER_SCALE)
    } else {
        ("ARRAYS", scale::PAPER_ARRAYS)
    };
    let size_given = a.defines.iter().any(|(k, _)| k == size_name);
    let kept = |flag: &str| {
        if recorded {
            "as recorded in the --config file".to_owned()
        } else {
            format!("given ({flag}), not the scale's choice")
        }
    };
    let choice = |setting: &str, value: String, reason: String| scale::Choice {
        setting: setting.to_owned(),
        value,
        reason,
    };
    let mut out = Vec::new();
    let early = scale::early(&given, size_given, paper_size);
    if let Some(n) = early.size {
        a.defines.push((size_name.to_owned(), n));
    }
    if let Some(n) = early.apps {
        a.apps = n;
    }
    if let Some(n) = early.gc_max_free {
        a.gc_max_free = n;
    }
    let defs = defines(a, program, a.seed);
    let value = |name: &str| {
        defs.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
            .or_else(|| {
                program
                    .consts
                    .iter()
                    .find(|c| c.name == name)
                    .map(|c| c.value)
            })
    };
    let Some(app) = scale::app_bytes(value) else {
        return Err(format!(
            "the workload {} declares no size (BUCKETS, ARRAYS and ARRAY_BYTES, or APP_BYTES \
             and SCALE), so its app size is unknown; declare one, or use --scale default with \
             every setting given",
            a.workload.display()
        ));
    };
    let mixed = value("MIXED").unwrap_or(0) != 0;
    if by_scale {
        out.push(choice(
            "-D SCALE",
            value("SCALE").unwrap_or(1).to_string(),
            match early.size {
                Some(_) => format!(
                    "ten times the workload's model app (its APP_BYTES at SCALE=1): {} per \
                     app, about the published 230 MB",
                    scale::mib(app)
                ),
                None => format!("{}: {} per app", kept("-D SCALE"), scale::mib(app)),
            },
        ));
    }
    let arrays = value("ARRAYS").unwrap_or(0);
    out.extend((!by_scale).then(|| {
        choice(
            "-D ARRAYS",
            arrays.to_string(),
            match early.size {
                Some(_) => format!(
                    "the published bucket (the model's is {}): {} per app{}",
                    scale::MODEL_ARRAYS,
                    scale::mib(app),
                    if mixed {
                        " with the 4 KB/1 MB mix"
                    } else {
                        ", about 230 MB"
                    }
                ),
                None => format!("{}: {} per app", kept("-D ARRAYS"), scale::mib(app)),
            },
        )
    }));
    out.push(choice(
        "apps",
        a.apps.to_string(),
        match early.apps {
            Some(_) => "the published experiment's 30 apps".to_owned(),
            None => kept("--apps"),
        },
    ));
    out.push(choice(
        "gc-max-free",
        size_arg(a.gc_max_free),
        match early.gc_max_free {
            Some(_) => "ART's 8 MiB largest gap between collections, the published heap's \
                        (the model scales it down with its app to 1 MiB)"
                .to_owned(),
            None => kept("--gc-max-free"),
        },
    ));
    let late = scale::late(
        &given,
        app,
        a.apps,
        a.gc_max_free,
        a.budget.map(|b| b as u64),
    );
    let ratio = app as f64 / scale::model_app_bytes() as f64;
    if let Some(x) = late.time_scale {
        a.time_scale = x;
    }
    out.push(choice(
        "time-scale",
        a.time_scale.to_string(),
        match late.time_scale {
            Some(_) => format!(
                "the default 0.1 stretched {ratio:.1}x with the app size, at most the \
                 published periods (1.0): each round deletes and re-creates {ratio:.1}x the \
                 bytes, so the group churns the default run's bytes per second, not \
                 {ratio:.1}x them (docs/notes/2026-12-03-paper-scale.md)"
            ),
            None => kept("--time-scale"),
        },
    ));
    let app_gap = format!(
        "{} of arrays and a {} gap",
        scale::mib(app),
        scale::mib(a.gc_max_free as u64)
    );
    if let Some(b) = late.budget {
        a.budget = Some(b as usize);
    }
    let budget = a.budget.unwrap_or(DEFAULT_BUDGET) as u64;
    out.push(choice(
        "budget",
        size_arg(budget as usize),
        match late.budget {
            Some(_) => format!(
                "about {} apps of {app_gap}, rounded up to 16 MiB (as the default 240 MiB \
                 holds ten of the model's apps), as the published phone held about ten under \
                 the killer",
                scale::APPS_HELD
            ),
            None => kept("--budget"),
        },
    ));
    if let Some(s) = late.swap_size {
        a.swap_size = s as usize;
    }
    out.push(choice(
        "swap-size",
        size_arg(a.swap_size),
        match late.swap_size {
            Some(_) => format!(
                "what kernel swap must hold with every app alive ({} x {app_gap} less the \
                 limit), plus one app, rounded up to a GiB",
                a.apps
            ),
            None => kept("--swap-size"),
        },
    ));
    if let Some(d) = late.launch_every {
        a.launch_every = d;
    }
    out.push(choice(
        "launch-every",
        duration_arg(a.launch_every),
        match late.launch_every {
            Some(_) => format!(
                "the default 1400ms stretched {ratio:.1}x with the app size, so each app is \
                 built and older ones paged out before the next"
            ),
            None => kept("--launch-every"),
        },
    ));
    if let Some(d) = late.duration {
        a.duration = d;
    }
    out.push(choice(
        "duration",
        duration_arg(a.duration),
        match late.duration {
            Some(_) => format!(
                "the default 50s stretched {ratio:.1}x as the launches are, so all {} apps are \
                 launched within it",
                a.apps
            ),
            None => kept("--duration"),
        },
    ));
    // The published figures are of the paper's array heaps, not of app-shaped ones.
    Ok((out, (!by_scale).then_some(Published { mixed })))
}

/// Reads a policy file: unreadable is status 1 (as every unreadable file), a bad policy
/// status 2.
pub fn read_policy(path: &Path) -> Result<PolicyConfig, i32> {
    PolicyConfig::from_file(path).map_err(|e| match e {
        PolicyError::Io { path, source } => {
            errln!("error: cannot read {}: {source}", path.display());
            EXIT_FAILURE
        }
        e => {
            errln!("error: {e}");
            EXIT_USAGE
        }
    })
}
