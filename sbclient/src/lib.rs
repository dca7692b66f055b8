//! OVSDB client (RFC 7047 plus the Open vSwitch extensions `monitor_cond`,
//! `monitor_cond_since`, `monitor_cond_change` and the `_Server` database).
//!
//! Layers, bottom up:
//! - [`jsonrpc`]: framing of a byte stream into messages (no I/O);
//! - [`datum`], [`schema`], [`condition`]: the OVSDB data model (no I/O);
//!
//! Nothing in this crate panics on input from the network.
#![forbid(unsafe_code)]

pub mod client;
pub mod codegen;
pub mod condition;
pub mod datum;
pub mod generated;
pub mod jsonrpc;
pub mod replica;
pub mod schema;
pub mod transaction;
pub mod wire;

pub use client::{spawn, Client, ClientConfig, ClientError, ClientStats, Event, Remote};
pub use condition::{Clause, Condition, Function};
pub use datum::{Atom, Datum};
pub use generated::{ovn_sb, vswitch};
pub use replica::{Replica, Table, TableChanges};
pub use transaction::{Columns, Transaction, TxnError, TxnOutcome};
pub use uuid::Uuid;
pub use wire::Row;
