//! `marvin bench interp` (to be written).

use clap::Args;

use super::CommonArgs;

#[derive(Debug, Args)]
pub struct InterpArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(_args: &InterpArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
