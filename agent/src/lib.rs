//! ovn-agent: a Rust replacement for ovn-controller.
#![forbid(unsafe_code)]

pub mod appctl;
pub mod compile;
pub mod compile_cmd;
pub mod coverage;
pub mod daemon;
pub mod engine;
pub mod hairpin;
pub mod ids;
pub mod lflow;
pub mod metrics;
pub mod neighbor;
pub mod northd_options;
pub mod ofctrl;
pub mod owner;
pub mod physical;
pub mod pinctrl;
pub mod portsec;
pub mod runtime;
pub mod southbound;
pub mod ssl_options;
pub mod stable_hash;
pub mod stopwatch;
pub mod view;
pub mod vlog;
