//! `ovn-agent compile` (placeholder until the SB reader lands).

/// Command line.
#[derive(clap::Parser, Debug)]
pub struct Cli {}

pub fn run(_cli: Cli) -> anyhow::Result<i32> {
    Ok(0)
}
