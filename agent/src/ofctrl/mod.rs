//! ofctrl: the flows, groups and meters the chassis wants (desired, keyed by owner) and the
//! sans-IO diff against what the switch has.

pub mod conn;
pub mod desired;
mod entry;
pub mod features;
mod pages;

pub use desired::{DesiredFlows, FlowBatch, FlowTable, ForeignFlow};
pub use entry::{EffectiveFlow, FlowOp};
