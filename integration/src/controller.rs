//! Which per-chassis controller a test runs: the real `ovn-controller` (the oracle) or our
//! `ovn-agent`. Chosen per test, or for a whole run with `OVNRS_SUBJECT=c|rust`.

use std::path::PathBuf;

use crate::error::{HarnessError, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Controller {
    /// The installed OVN 23.03 `ovn-controller`.
    OvnController,
    /// Our `ovn-agent` binary at this path.
    OvnAgent(PathBuf),
}

impl Controller {
    /// `OVNRS_SUBJECT=c` (the default) selects `ovn-controller`; `OVNRS_SUBJECT=rust` selects
    /// `ovn-agent`, taken from `OVN_AGENT_BIN` or else from this workspace's target directory.
    pub fn from_env() -> Result<Self> {
        match std::env::var("OVNRS_SUBJECT").as_deref() {
            Err(_) | Ok("" | "c") => Ok(Self::OvnController),
            Ok("rust") => Self::ovn_agent(),
            Ok(other) => Err(HarnessError::Config(format!(
                "OVNRS_SUBJECT={other}: expected \"c\" (ovn-controller) or \"rust\" (ovn-agent)"
            ))),
        }
    }

    /// Our agent, from `OVN_AGENT_BIN`, or else built from this workspace (`cargo build -p agent`;
    /// a no-op when it is up to date, so a stale binary is never used).
    pub fn ovn_agent() -> Result<Self> {
        if let Some(path) = std::env::var_os("OVN_AGENT_BIN") {
            return Ok(Self::OvnAgent(PathBuf::from(path)));
        }
        crate::cargo::build("agent", crate::cargo::Artifact::Bin("ovn-agent")).map(Self::OvnAgent)
    }

    pub fn program(&self) -> String {
        match self {
            Self::OvnController => "ovn-controller".to_owned(),
            Self::OvnAgent(path) => path.display().to_string(),
        }
    }

    /// The base name of its control socket, `<rundir>/<name>.<pid>.ctl`.
    pub fn ctl_name(&self) -> &'static str {
        match self {
            Self::OvnController => "ovn-controller",
            Self::OvnAgent(_) => "ovn-agent",
        }
    }
}
