//! `marvin bench queue` (to be written).

use clap::Args;

use super::CommonArgs;

#[derive(Debug, Args)]
pub struct QueueArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(_args: &QueueArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
