//! JSON-RPC 1.0 over a byte stream: framing and message envelopes.

pub mod framer;
pub mod message;

pub use framer::{FrameError, Framer};
pub use message::{encode_error, encode_request, encode_response, Incoming, MessageError};
