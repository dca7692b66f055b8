//! ovn-agent: a Rust replacement for ovn-controller.
#![forbid(unsafe_code)]

pub mod compile;
pub mod hairpin;
pub mod lflow;
pub mod neighbor;
pub mod portsec;
pub mod sbdata;
pub mod sbfetch;
pub mod view;
