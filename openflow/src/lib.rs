//! OpenFlow 1.5 with the Nicira/ONF extensions OVN needs.
//!
//! Layers (each usable alone):
//! - [`wire`]: messages as owned structs, one decode/encode pair each, no I/O. Decoders
//!   return [`wire::DecodeError`] on any malformed input and never panic. Unknown
//!   messages, match fields, actions and properties are kept verbatim.
//! - [`oxm`]: the field table and `Match` (ordered OXM/NXM entries).
//! - [`action`]: actions, from one table of wire numbers.
//! - [`text`]: `Display`/`FromStr` in exact `ovs-ofctl -O OpenFlow15` syntax.
//! - [`conn`]: a sans-IO session core and a thin tokio connection.
#![forbid(unsafe_code)]

pub mod action;
pub mod conn;
pub mod oxm;
pub mod text;
pub mod wire;
