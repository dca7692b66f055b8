//! The canonical flow: a match kept in fixed slots as OVS stores it (sorted, one value and
//! mask per slot), the typed actions of [`crate::action`], and the encoder that writes a
//! flow straight into an OpenFlow 1.5 `flow_mod` body.
//!
//! [`FlowMatch`] is the one match model of the project: the logical-flow compiler and the
//! physical stage build it with [`FlowMatch::add`] (conflicts are detected, `xreg`/`xxreg`
//! writes are split into their 32-bit registers), the desired-flow table uses it as its
//! key, [`FlowMatch::from_match`] turns what a switch dumps into the same form, and it
//! prints through the one `match_format` printer of [`crate::text`]. No I/O, no panics on
//! input.

mod flowmod;
mod slots;
mod wire;

pub use flowmod::{encode_flow_mod_body, Flow, FlowEncodeError, FlowModCommand};
pub use slots::{FlowMatch, Slot};
pub use wire::{MatchForm, UnsupportedMatch};
