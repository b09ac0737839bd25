//! `marvin bench cputime` (to be written).

use clap::Args;

use super::CommonArgs;

#[derive(Debug, Args)]
pub struct CputimeArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(_args: &CputimeArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
