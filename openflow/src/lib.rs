//! OpenFlow 1.5 with the Nicira/ONF extensions OVN needs. Knows nothing of OVN.
//!
//! Layers (each usable alone):
//! - [`wire`]: messages as owned structs, one decode/encode pair each, no I/O. The
//!   `messages!` table in `wire/mod.rs` is the single list of supported messages.
//!   Decoders return [`wire::DecodeError`] on any malformed input and never panic.
//!   Unknown messages, match fields, actions, instructions and properties are kept
//!   verbatim, so decode -> encode reproduces the bytes (see `tests/golden.rs`).
//! - [`oxm`]: the one declarative field table (`oxm/registry.rs`: ovs-ofctl name, NXM/OXM
//!   name and headers, width, maskability, value format, prerequisites) and `Match`, an
//!   ordered list of OXM entries. Encoding keeps the caller's order when prerequisites
//!   already precede their users, else moves them first (switches check prerequisites
//!   against the fields read so far).
//! - [`action`]: actions and their wire numbers; field headers inside actions are kept
//!   exactly (NXM or OXM) for lossless re-encoding.
//! - [`text`]: `Display`/`FromStr` in exact `ovs-ofctl -O OpenFlow15` syntax for flows
//!   (`dump-flows` lines, also `add-flow` input), matches, actions and groups.
//! - [`conn`]: a sans-IO session core (hello/OF1.5, echo, inactivity probe, xid and
//!   barrier tracking; time is a parameter) driven by a thin tokio task with a cloneable
//!   handle, bounded channels, an asynchronous-message stream, reconnect and bundles.
//!
//! Verified against the real Open vSwitch 3.1 tools (tests):
//! - every flow of `tests/data/of_final.txt` and every group of `groups_final.txt`
//!   round-trips through text, and through our bytes decoded by `ovs-ofctl ofp-parse`;
//! - golden vectors captured from `ovs-ofctl add-flow` talking to a fake switch
//!   (`examples/capture_golden.rs`) decode and re-encode byte for byte;
//! - every row of the field table, extra actions and every message kind are decoded
//!   by `ovs-ofctl` as we print them.
//!
//! Notes for users:
//! - A service connection (e.g. `br-int.mgmt`) receives no packet-ins until it sends
//!   `SET_CONFIG` with a nonzero `miss_send_len`; then `NXT_SET_PACKET_IN_FORMAT` 2 for
//!   packet-in2 (see `examples/ofpacketin.rs`).
//! - Compare flows by their text (`Display` of `Flow`/`Match` is canonical: OVS order,
//!   registers merged), not by `Match` structure: a switch reports register matches as
//!   `xreg` entries and orders fields its own way.
//! - `tun_metadataN` written as text gets a 4-byte value (OVN maps its Geneve option with
//!   `len=4`); build the `MatchField` directly for other lengths.
#![forbid(unsafe_code)]

pub mod action;
pub mod conn;
pub mod flow;
pub mod oxm;
pub mod text;
pub mod wire;
