//! JSON-RPC 1.0 messages as OVSDB uses them (RFC 7047 section 4).
//!
//! Incoming messages are decoded into [`Incoming`], which borrows `params`/`result`
//! as raw JSON so that a large monitor reply is parsed only once, straight into
//! typed rows, by whoever consumes it.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use thiserror::Error;

/// A message that cannot be understood as JSON-RPC.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MessageError {
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("not a JSON-RPC 1.0 message: {0}")]
    Shape(&'static str),
}

/// The three kinds of message, with borrowed payloads.
#[derive(Debug)]
#[non_exhaustive]
pub enum Incoming<'a> {
    Request {
        id: Value,
        method: String,
        params: &'a RawValue,
    },
    Notification {
        method: String,
        params: &'a RawValue,
    },
    Response {
        id: Value,
        /// `Ok(result)` or `Err(error)` (the error object is small; keep it as a value).
        outcome: Result<&'a RawValue, Value>,
    },
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<Value>,
}

impl<'a> Incoming<'a> {
    /// Decodes one frame.
    pub fn decode(frame: &'a [u8]) -> Result<Self, MessageError> {
        let env: Envelope<'a> = serde_json::from_slice(frame)?;
        let id = env.id.unwrap_or(Value::Null);
        if let Some(method) = env.method {
            let params = env
                .params
                .ok_or(MessageError::Shape("request without params"))?;
            return Ok(if id.is_null() {
                Incoming::Notification { method, params }
            } else {
                Incoming::Request { id, method, params }
            });
        }
        if id.is_null() {
            return Err(MessageError::Shape("response without id"));
        }
        let error = env.error.unwrap_or(Value::Null);
        let outcome = if error.is_null() {
            Ok(env.result.unwrap_or(RawValue::NULL))
        } else {
            Err(error)
        };
        Ok(Incoming::Response { id, outcome })
    }
}

/// An outgoing request (`id` non-null) or notification (`id` null).
#[derive(Debug, Serialize)]
pub struct OutRequest<'a, P: Serialize> {
    pub method: &'a str,
    pub params: P,
    pub id: Value,
}

/// An outgoing response.
#[derive(Debug, Serialize)]
pub struct OutResponse<R: Serialize, E: Serialize = Value> {
    pub result: R,
    pub error: E,
    pub id: Value,
}

/// Encodes a request.
pub fn encode_request<P: Serialize>(
    method: &str,
    params: P,
    id: Value,
) -> Result<Vec<u8>, MessageError> {
    Ok(serde_json::to_vec(&OutRequest { method, params, id })?)
}

/// Encodes a successful response.
pub fn encode_response<R: Serialize>(result: R, id: Value) -> Result<Vec<u8>, MessageError> {
    Ok(serde_json::to_vec(&OutResponse {
        result,
        error: Value::Null,
        id,
    })?)
}

/// Encodes an error response (`result` null), e.g. for a unixctl command that failed.
pub fn encode_error<E: Serialize>(error: E, id: Value) -> Result<Vec<u8>, MessageError> {
    Ok(serde_json::to_vec(&OutResponse {
        result: Value::Null,
        error,
        id,
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_the_three_kinds() {
        let req = br#"{"id":"echo","method":"echo","params":[]}"#;
        match Incoming::decode(req).unwrap() {
            Incoming::Request { id, method, params } => {
                assert_eq!(id, json!("echo"));
                assert_eq!(method, "echo");
                assert_eq!(params.get(), "[]");
            }
            other => panic!("{other:?}"),
        }
        let note = br#"{"id":null,"method":"update2","params":[null,{}]}"#;
        assert!(matches!(
            Incoming::decode(note).unwrap(),
            Incoming::Notification { ref method, .. } if method == "update2"
        ));
        let ok = br#"{"id":3,"result":{"a":1},"error":null}"#;
        match Incoming::decode(ok).unwrap() {
            Incoming::Response { id, outcome } => {
                assert_eq!(id, json!(3));
                assert_eq!(outcome.unwrap().get(), r#"{"a":1}"#);
            }
            other => panic!("{other:?}"),
        }
        let err = br#"{"id":4,"result":null,"error":{"error":"unknown database"}}"#;
        match Incoming::decode(err).unwrap() {
            Incoming::Response { outcome, .. } => {
                assert_eq!(outcome.unwrap_err(), json!({"error":"unknown database"}));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rejects_bad_shapes() {
        assert!(Incoming::decode(br#"{"result":1}"#).is_err());
        assert!(Incoming::decode(br#"{"method":"x"}"#).is_err());
        assert!(Incoming::decode(b"{").is_err());
        assert!(matches!(
            Incoming::decode(br#"{"id":1,"error":null}"#),
            Ok(Incoming::Response { outcome: Ok(raw), .. }) if raw.get() == "null"
        ));
    }

    #[test]
    fn encodes_requests_and_responses() {
        let bytes = encode_request("echo", json!([]), json!(5)).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&bytes).unwrap(),
            json!({"method":"echo","params":[],"id":5})
        );
        let bytes = encode_response(json!(["x"]), json!("echo")).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&bytes).unwrap(),
            json!({"result":["x"],"error":null,"id":"echo"})
        );
        let bytes = encode_error("unknown command", json!(0)).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&bytes).unwrap(),
            json!({"result":null,"error":"unknown command","id":0})
        );
    }
}
