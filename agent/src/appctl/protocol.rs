//! unixctl messages: JSON-RPC 1.0 requests in, replies out, shaped byte for byte as
//! OVS 3.1 sends them (`{"id":0,"result":"...","error":null}` and `{"id":0,"error":"..."}`).
//! Framing (objects back to back, no delimiter) is `sbclient::jsonrpc::Framer`'s.

use sbclient::jsonrpc::Incoming;
use serde::Serialize;
use serde_json::Value;

/// A request as a client sent it; `params` are checked against the registry later.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub id: Value,
    pub method: String,
    pub params: Vec<Value>,
}

impl Request {
    /// The parameters as strings, if they all are strings.
    pub fn string_params(&self) -> Option<Vec<String>> {
        self.params
            .iter()
            .map(|param| param.as_str().map(str::to_string))
            .collect()
    }
}

/// A message a unixctl server does not accept; OVS drops the connection for these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    #[error("{0}")]
    Message(#[from] sbclient::jsonrpc::MessageError),
    #[error("received unexpected {0} message")]
    Unexpected(&'static str),
    #[error("request params are not an array: {0}")]
    Params(serde_json::Error),
}

/// Decodes one frame into a request.
pub fn decode_request(frame: &[u8]) -> Result<Request, ProtocolError> {
    match Incoming::decode(frame)? {
        Incoming::Request { id, method, params } => {
            let params: Vec<Value> =
                serde_json::from_str(params.get()).map_err(ProtocolError::Params)?;
            Ok(Request { id, method, params })
        }
        Incoming::Notification { .. } => Err(ProtocolError::Unexpected("notify")),
        Incoming::Response { outcome, .. } => Err(ProtocolError::Unexpected(if outcome.is_ok() {
            "reply"
        } else {
            "error"
        })),
        _ => Err(ProtocolError::Unexpected("unknown")),
    }
}

#[derive(Serialize)]
struct Success<'a> {
    id: &'a Value,
    result: &'a str,
    error: Option<()>,
}

#[derive(Serialize)]
struct Failure<'a> {
    id: &'a Value,
    error: &'a str,
}

/// The OVS library of 23.03's builds (3.1) ends every non-empty reply body with a newline
/// (`unixctl_command_reply__`); later ones (25.03's 3.5) send the body as it is.
fn body_text(body: &str, newline: bool) -> std::borrow::Cow<'_, str> {
    if !newline || body.is_empty() || body.ends_with('\n') {
        body.into()
    } else {
        format!("{body}\n").into()
    }
}

/// Encodes a successful reply to request `id` whose result is a JSON document (under
/// `set-options --format json`).
pub fn encode_json_reply(id: &Value, result: &Value) -> Vec<u8> {
    #[derive(Serialize)]
    struct JsonSuccess<'a> {
        id: &'a Value,
        result: &'a Value,
        error: Option<()>,
    }
    serde_json::to_vec(&JsonSuccess {
        id,
        result,
        error: None,
    })
    .unwrap_or_default()
}

/// Encodes the reply to request `id`: `Ok` is a result, `Err` an error; `newline`: a body
/// gets a final newline ([`body_text`]).
pub fn encode_reply(id: &Value, outcome: &Result<String, String>, newline: bool) -> Vec<u8> {
    let encoded = match outcome {
        Ok(body) => serde_json::to_vec(&Success {
            id,
            result: &body_text(body, newline),
            error: None,
        }),
        Err(body) => serde_json::to_vec(&Failure {
            id,
            error: &body_text(body, newline),
        }),
    };
    // Serializing strings and an already parsed JSON value cannot fail.
    encoded.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replies_are_ovs_bytes() {
        assert_eq!(
            encode_reply(&json!(0), &Ok(String::new()), true),
            br#"{"id":0,"result":"","error":null}"#
        );
        assert_eq!(
            encode_reply(&json!(0), &Ok("ovn-controller 23.03.1".into()), true),
            br#"{"id":0,"result":"ovn-controller 23.03.1\n","error":null}"#
        );
        assert_eq!(
            encode_reply(
                &json!("x"),
                &Err("\"bogus\" is not a valid command".into()),
                true
            ),
            br#"{"id":"x","error":"\"bogus\" is not a valid command\n"}"#
        );
        // OVS 3.5's library: as it is.
        assert_eq!(
            encode_reply(&json!(0), &Ok("running".into()), false),
            br#"{"id":0,"result":"running","error":null}"#
        );
    }

    #[test]
    fn decodes_requests_and_rejects_the_rest() {
        let request =
            decode_request(br#"{"id":0,"method":"vlog/set","params":["dbg",1]}"#).unwrap();
        assert_eq!(request.method, "vlog/set");
        assert_eq!(request.params, vec![json!("dbg"), json!(1)]);
        assert_eq!(request.string_params(), None);
        let request = decode_request(br#"{"id":0,"method":"version","params":[]}"#).unwrap();
        assert_eq!(request.string_params(), Some(vec![]));
        assert!(matches!(
            decode_request(br#"{"id":null,"method":"exit","params":[]}"#),
            Err(ProtocolError::Unexpected("notify"))
        ));
        assert!(matches!(
            decode_request(br#"{"id":0,"method":"exit","params":{"a":1}}"#),
            Err(ProtocolError::Params(_))
        ));
        assert!(matches!(
            decode_request(br#"{"id":0,"result":"","error":null}"#),
            Err(ProtocolError::Unexpected("reply"))
        ));
        assert!(decode_request(b"{nope}").is_err());
    }
}
