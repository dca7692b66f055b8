//! `ovn-agent` command line: parses arguments and calls into the library.

use clap::Parser;

/// Command line of `ovn-agent`.
#[derive(clap::Parser, Debug)]
#[command(name = "ovn-agent", about = "Rust replacement for ovn-controller")]
struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Print the OpenFlow flows this chassis would install for the SB logical flows.
    Compile(agent::compile_cmd::CompileArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let Command::Compile(args) = cli.cmd;
    std::process::exit(agent::compile_cmd::run(&args)?)
}
