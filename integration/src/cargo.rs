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
    let mut cmd = nested_cargo();
    let out = cmd
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

/// A `cargo` command for use from a test. A test runs with the variables cargo sets for its
/// package (CARGO_MANIFEST_DIR, CARGO_PKG_NAME, ...). Build scripts that watch them (ring's
/// does) would see them changed and rebuild, and the next `cargo build` from a shell would
/// rebuild again: the nested cargo gets the caller's environment without them.
pub fn nested_cargo() -> Command {
    let mut cmd = Command::new(env!("CARGO"));
    for (key, _) in std::env::vars_os() {
        let Some(k) = key.to_str() else { continue };
        if k.starts_with("CARGO_PKG_")
            || k.starts_with("CARGO_BIN_EXE_")
            || matches!(
                k,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "OUT_DIR"
            )
        {
            cmd.env_remove(&key);
        }
    }
    cmd
}
