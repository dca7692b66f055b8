use std::path::PathBuf;
use std::time::Duration;

/// Everything the harness can fail with. Each variant carries enough context (the command, the
/// daemon's log file) to debug a failed test from its output alone.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    #[error("{program} {args:?} failed ({status}): {stderr}")]
    Command {
        program: String,
        args: Vec<String>,
        status: String,
        stderr: String,
    },
    #[error("could not run {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{daemon} exited during start-up ({status}); log {log}:\n{log_tail}")]
    DaemonDied {
        daemon: String,
        status: String,
        log: PathBuf,
        log_tail: String,
    },
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout { what: String, after: Duration },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("bad pcap file {path}: {reason}")]
    Pcap { path: PathBuf, reason: String },
    #[error("bad OVSDB dump {path}: {reason}")]
    Dump { path: PathBuf, reason: String },
    #[error("{0}")]
    Config(String),
}

pub type Result<T, E = HarnessError> = std::result::Result<T, E>;

pub(crate) fn io_error(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> HarnessError {
    let what = what.into();
    move |source| HarnessError::Io { what, source }
}
