//! `ovn-agent` command line: parses arguments and calls into the library.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let cli = agent::compile::Cli::parse();
    std::process::exit(agent::compile::run(cli)?)
}
