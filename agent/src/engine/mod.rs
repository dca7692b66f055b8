//! The engine: owns the chassis state and turns database changes into flows, claims and
//! configuration (sans-IO; the daemon's tasks feed it and carry out what it asks).

pub mod bfd;
pub mod binding;
pub mod chassis;
pub mod conditions;
pub mod config;
pub mod core;
pub mod ct_flush;
pub mod deps;
pub mod inputs;
pub mod lflow_index;
pub mod local;
pub mod mirror;
pub mod ovs_config;
pub mod sampling;
pub mod tunnels;
pub mod vif_plug;
pub mod zones;

#[cfg(test)]
mod run_split_tests;
#[cfg(test)]
mod stage_nodes_tests;

/// Milliseconds since the Unix epoch (timestamps OVN writes).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
