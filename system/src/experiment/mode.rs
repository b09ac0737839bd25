//! The mode a run takes, process or in-process, and why ([`choose_mode`]).

use marvin_machine::cgroup;

use super::flags::ModeArg;

/// The mode a run takes, with why.
pub(super) enum Mode {
    /// The kernel enforces the budget on a cgroup of this version.
    Processes(cgroup::Version),
    /// The model; the text says why (asked for, or why the process mode cannot run).
    InProcess(String),
}

impl Mode {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Mode::Processes(_) => "process mode",
            Mode::InProcess(_) => "in-process model",
        }
    }

    /// The first line of a run.
    pub(super) fn describe(&self, budget: usize) -> String {
        match self {
            Mode::Processes(v) => format!(
                "mode: processes: every app its own process in one memory cgroup ({}), \
                 hard limit {} MiB enforced by the kernel",
                v.name(),
                budget >> 20
            ),
            Mode::InProcess(why) => format!(
                "mode: in-process model ({why}): all apps in this process under a {} MiB \
                 budget the runtime counts itself; the kernel does not enforce it",
                budget >> 20
            ),
        }
    }

    /// The table's title.
    pub(super) fn title(&self, budget: usize) -> String {
        match self {
            Mode::Processes(v) => format!(
                "processes, kernel-enforced limit {} MiB ({})",
                budget >> 20,
                v.name()
            ),
            Mode::InProcess(_) => format!(
                "in-process model, runtime-counted budget {} MiB (not kernel-enforced)",
                budget >> 20
            ),
        }
    }
}

/// The process mode where it can run (root and a memory controller), else the model.
pub(super) fn choose_mode(asked: ModeArg) -> anyhow::Result<Mode> {
    match asked {
        ModeArg::InProcess => Ok(Mode::InProcess("--mode in-process".into())),
        ModeArg::Processes => match cgroup::Hierarchy::available() {
            Ok(h) => Ok(Mode::Processes(h.version)),
            Err(e) => anyhow::bail!("the process mode cannot run here: {e}"),
        },
        ModeArg::Auto => Ok(match cgroup::Hierarchy::available() {
            Ok(h) => Mode::Processes(h.version),
            Err(e) => Mode::InProcess(format!("the process mode cannot run here: {e}")),
        }),
    }
}
