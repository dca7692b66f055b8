//! Logging in OVS vlog format on top of `tracing`.
//!
//! The rest of the agent logs with plain `tracing` macros; [`VlogLayer`] turns each event
//! into OVS-format lines (`2026-11-30T13:01:09.808Z|00005|main|INFO|...`) on the console,
//! syslog and the log file, each with its own level per module, set by `-v` specs and
//! `vlog/set` exactly as ovn-controller's. Which module an event belongs to is described
//! in [`modules`]. Repeated warnings use [`RateLimit`] through [`crate::vlog_rl!`].

pub mod commands;
pub mod layer;
pub mod level;
pub mod limits;
pub mod modules;
pub mod pattern;
pub mod ratelimit;
pub mod spec;
pub mod state;
pub mod syslog;

use std::sync::OnceLock;

pub use commands::{VlogCommand, VLOG_COMMANDS};
pub use layer::VlogLayer;
pub use level::{Destination, Level};
pub use ratelimit::{Admission, DropReport, RateLimit};
pub use state::{set_subprogram_name, Clock, Console, Vlog, VlogError, VlogOptions};
pub use syslog::SyslogMethod;

static GLOBAL: OnceLock<Vlog> = OnceLock::new();

/// Makes `vlog` the process's tracing subscriber (a registry with a [`VlogLayer`]).
pub fn install(vlog: &Vlog) -> Result<(), VlogError> {
    use tracing_subscriber::layer::SubscriberExt as _;
    let subscriber = tracing_subscriber::registry().with(VlogLayer::new(vlog.clone()));
    tracing::subscriber::set_global_default(subscriber).map_err(|_| VlogError::AlreadyInstalled)?;
    // Only the first installation can succeed, so this cannot be set twice.
    let _ = GLOBAL.set(vlog.clone());
    Ok(())
}

/// The installed logging state, if [`install`] ran.
pub fn global() -> Option<&'static Vlog> {
    GLOBAL.get()
}

/// Whether rate limits apply to events from `target` (false after
/// `vlog/disable-rate-limit MODULE`). True when vlog is not installed.
pub fn rate_limits_honored(target: &str) -> bool {
    global().is_none_or(|vlog| vlog.rate_limits_honored(modules::module_for_target(target)))
}

/// The levels a plain run starts with: info on every destination (OVS's default).
/// ovn-ctl then passes `-vconsole:emer -vsyslog:err -vfile:info`.
pub const OVN_CTL_SPECS: [&str; 3] = ["console:emer", "syslog:err", "file:info"];

#[cfg(test)]
mod tests;
