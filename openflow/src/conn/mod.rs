//! Connection to a switch: a sans-IO [`session`] driven by a thin tokio task ([`client`]).

pub mod client;
pub mod session;

pub use client::{connect, BundlePart, ConnError, Connection, Handle, SessionId};
pub use session::{Config, Event, Session, SessionError};
