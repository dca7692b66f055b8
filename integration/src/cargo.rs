//! Builds workspace binaries on demand (a no-op when they are up to date), so that a test or
//! the lab always runs the current code, whatever was built before.

use std::path::PathBuf;
use std::process::Command;

use crate::error::{HarnessError, Result};

/// What to build: `--bin NAME` or `--example NAME`.
#[derive(Debug, Clone, Copy)]
pub enum Artifact<'a> {
    Bin(&'a str),
    Example(&'a str),
}

/// Runs `cargo build -p PACKAGE --bin|--example NAME` (dev profile, the caller's
/// `CARGO_TARGET_DIR`) and returns the executable's path.
pub fn build(package: &str, artifact: Artifact<'_>) -> Result<PathBuf> {
    let (flag, name) = match artifact {
        Artifact::Bin(name) => ("--bin", name),
        Artifact::Example(name) => ("--example", name),
    };
    let args = [
        "build",
        "-q",
        "-p",
        package,
        flag,
        name,
        "--message-format=json",
    ];
    let out = Command::new(env!("CARGO"))
        .args(args)
        .output()
        .map_err(|source| HarnessError::Spawn {
            program: "cargo".into(),
            source,
        })?;
    if !out.status.success() {
        return Err(HarnessError::Command {
            program: "cargo".into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["target"]["name"] == name)
        .find_map(|v| v["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| HarnessError::Config(format!("cargo built no executable named {name}")))
}
