//! Newline-delimited JSON-RPC 2.0 framing: parse one line into a [`Frame`], build lines.
//!
//! Our JSON-RPC layer is deliberately small (counter ids, one pending map per connection in
//! the models); typed params and results come from `agent-client-protocol-schema` v2.

use serde_json::{json, Value};

/// JSON-RPC error codes used by the models (JSON-RPC 2.0 and ACP v2).
pub mod code {
    /// Not valid JSON at all (`id: null`).
    pub const PARSE_ERROR: i64 = -32700;
    /// Valid JSON that is not a JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Malformed params, including a malformed `idempotencyKey` (K3).
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error; the models use it as the transient, retryable, nothing-inserted error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Session not found / not active on this connection (X2).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// Request cancelled (A5, A6).
    pub const REQUEST_CANCELLED: i64 = -32800;
}

/// One decoded line.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A request: has `method` and `id`.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification: `method`, no `id`.
    Notification { method: String, params: Value },
    /// A response: `id` and `result` or `error`.
    Response {
        id: Value,
        result: Result<Value, Value>,
    },
    /// Valid JSON, but not a JSON-RPC message; answered with `-32600` when it has an id.
    Invalid { id: Value },
}

/// Why a line could not be decoded at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("parse error: {0}")]
pub struct ParseError(pub String);

/// Decode one line. Errors only when the line is not JSON (answer `-32700`, `id: null`).
pub fn parse(line: &str) -> Result<Frame, ParseError> {
    let v: Value = serde_json::from_str(line).map_err(|e| ParseError(e.to_string()))?;
    Ok(decode(v))
}

/// The frame a decoded JSON value is: `decode(serde_json::from_str(line)?)` is [`parse`]`(line)`
/// for a driver that already holds the value (its parts move into the frame: no copy).
pub fn decode(v: Value) -> Frame {
    let Value::Object(mut obj) = v else {
        return Frame::Invalid { id: Value::Null };
    };
    let id = obj.remove("id");
    let mut take = |k: &str| obj.remove(k);
    match (take("method"), id) {
        (Some(Value::String(method)), Some(id)) => Frame::Request {
            id,
            method,
            params: take("params").unwrap_or(Value::Null),
        },
        (Some(Value::String(method)), None) => Frame::Notification {
            method,
            params: take("params").unwrap_or(Value::Null),
        },
        (None, Some(id)) => {
            if let Some(e) = take("error") {
                Frame::Response { id, result: Err(e) }
            } else if let Some(r) = take("result") {
                Frame::Response { id, result: Ok(r) }
            } else {
                Frame::Invalid { id }
            }
        }
        (_, id) => Frame::Invalid {
            id: id.unwrap_or(Value::Null),
        },
    }
}

/// Whether `id` may identify a JSON-RPC 2.0 request: a string, an integer number or `null`
/// (an integer beyond 64 bits reads as a float here: the stdio Agent swaps it for a string
/// before the model sees it, `probe::stdio_envelope`).
pub fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) | Value::Null => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// Decode one line an Agent reads, checking the JSON-RPC 2.0 envelope of requests and
/// notifications: `"jsonrpc": "2.0"` exactly, and an id that is a string, an integer or
/// `null` ([`valid_id`]). A message that fails either is [`Frame::Invalid`] (answered
/// `-32600`, never executed), with its id when that id is valid, else `null`. Responses (the
/// Client's answers to the Agent's own requests) are read as [`parse`] reads them. Errors only
/// when the line is not JSON (`-32700`).
pub fn parse_request(line: &str) -> Result<Frame, ParseError> {
    let v: Value = serde_json::from_str(line).map_err(|e| ParseError(e.to_string()))?;
    Ok(decode_request(v))
}

/// [`parse_request`] of a value already decoded from the line:
/// `decode_request(serde_json::from_str(line)?)` is `parse_request(line)`.
pub fn decode_request(v: Value) -> Frame {
    let envelope_ok = v.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
    let frame = decode(v);
    let id = match &frame {
        Frame::Request { id, .. } => Some(id),
        Frame::Notification { .. } => None,
        Frame::Invalid { id } if !valid_id(id) => return Frame::Invalid { id: Value::Null },
        _ => return frame,
    };
    if id.is_some_and(|i| !valid_id(i)) {
        return Frame::Invalid { id: Value::Null };
    }
    if !envelope_ok {
        return Frame::Invalid {
            id: id.cloned().unwrap_or(Value::Null),
        };
    }
    frame
}

/// A request line.
pub fn request(id: u64, method: &str, params: Value) -> String {
    line(&Line::<Value, Value> {
        jsonrpc: "2.0",
        id: Some(&Value::from(id)),
        method: Some(method),
        params: Some(&params),
        result: None,
        error: None,
    })
}

/// A notification line.
pub fn notification(method: &str, params: Value) -> String {
    notification_of(method, &params)
}

/// A notification line whose params are written straight from `params` (a schema type, say),
/// as [`notification`] would write `serde_json::to_value(params)`.
pub fn notification_of<P: serde::Serialize>(method: &str, params: &P) -> String {
    line(&Line::<P, Value> {
        jsonrpc: "2.0",
        id: None,
        method: Some(method),
        params: Some(params),
        result: None,
        error: None,
    })
}

/// A success response line.
pub fn ok(id: &Value, result: Value) -> String {
    ok_of(id, &result)
}

/// A success response line whose result is written straight from `result` (a schema type,
/// say), as [`ok`] would write `serde_json::to_value(result)`.
pub fn ok_of<R: serde::Serialize>(id: &Value, result: &R) -> String {
    line(&Line::<Value, R> {
        jsonrpc: "2.0",
        id: Some(id),
        method: None,
        params: None,
        result: Some(result),
        error: None,
    })
}

/// An error response line; `data` is omitted when `None`.
pub fn err(id: &Value, code: i64, message: &str, data: Option<Value>) -> String {
    line(&Line::<Value, Value> {
        jsonrpc: "2.0",
        id: Some(id),
        method: None,
        params: None,
        result: None,
        error: Some(ErrorObject {
            code,
            message,
            data: data.as_ref(),
        }),
    })
}

/// The members of a line, in the order the lines have always been written (`jsonrpc`, `id`,
/// then `method` and `params`, `result` or `error`). Written from borrowed parts: building a
/// [`Value`] map only to print it cost a map and a hash per member, per frame.
#[derive(serde::Serialize)]
struct Line<'a, P, R> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a R>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorObject<'a>>,
}

/// A JSON-RPC error object: `code`, `message`, and `data` when there is any.
#[derive(serde::Serialize)]
struct ErrorObject<'a> {
    code: i64,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
}

fn line<P: serde::Serialize, R: serde::Serialize>(l: &Line<P, R>) -> String {
    serde_json::to_string(l).expect("a JSON-RPC line serializes")
}

/// `initialize` params of a Client called `name` at `version`, speaking ACP v2.
pub fn initialize_params(name: &str, version: &str) -> Value {
    json!({"protocolVersion": 2, "info": {"name": name, "version": version}})
}

/// `session/prompt` params: one text block, then `idempotencyKey` when `key` is given (any
/// JSON value, so malformed keys and an explicit `null` can be sent too).
pub fn prompt_params(session: &str, text: &str, key: Option<Value>) -> Value {
    let mut p = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
    if let Some(k) = key {
        p["idempotencyKey"] = k;
    }
    p
}

/// The numeric `code` of a JSON-RPC error object, if it has one.
pub fn error_code(error: &Value) -> Option<i64> {
    error.get("code").and_then(Value::as_i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_byte_for_byte_the_json_maps_they_were_built_as() {
        let params = json!({"sessionId": "s\"1", "prompt": [{"type": "text", "text": "héllo\n"}]});
        for id in [json!(7), json!("a/b"), Value::Null] {
            assert_eq!(
                ok(&id, params.clone()),
                json!({"jsonrpc": "2.0", "id": id, "result": params}).to_string()
            );
            for data in [None, Some(Value::Null), Some(json!({"sessionId": "s"}))] {
                let mut e = json!({"code": -32002, "message": "not \"found\""});
                if let Some(d) = data.clone() {
                    e["data"] = d;
                }
                assert_eq!(
                    err(&id, -32002, "not \"found\"", data),
                    json!({"jsonrpc": "2.0", "id": id, "error": e}).to_string()
                );
            }
        }
        assert_eq!(
            request(u64::MAX, "session/prompt", params.clone()),
            json!({"jsonrpc": "2.0", "id": u64::MAX, "method": "session/prompt", "params": params})
                .to_string()
        );
        assert_eq!(
            notification("session/update", Value::Null),
            json!({"jsonrpc": "2.0", "method": "session/update", "params": null}).to_string()
        );
        // Written straight from a type, as through its Value.
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Update {
            session_id: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            stop_reason: Option<&'static str>,
            #[serde(flatten)]
            rest: std::collections::BTreeMap<&'static str, u8>,
        }
        for u in [
            Update {
                session_id: "s",
                stop_reason: None,
                rest: [("z", 1), ("a", 2)].into(),
            },
            Update {
                session_id: "s",
                stop_reason: Some("end_turn"),
                rest: Default::default(),
            },
        ] {
            let v = serde_json::to_value(&u).expect("serializes");
            assert_eq!(
                notification_of("session/update", &u),
                notification("session/update", v.clone())
            );
            assert_eq!(ok_of(&json!(3), &u), ok(&json!(3), v));
        }
    }

    #[test]
    fn parses_each_kind() {
        assert!(matches!(
            parse(&request(1, "x", json!({}))),
            Ok(Frame::Request { .. })
        ));
        assert!(matches!(
            parse(&notification("x", json!({}))),
            Ok(Frame::Notification { .. })
        ));
        assert!(matches!(
            parse(&ok(&json!(1), json!({}))),
            Ok(Frame::Response { result: Ok(_), .. })
        ));
        assert!(matches!(
            parse(&err(&json!(1), -1, "m", None)),
            Ok(Frame::Response { result: Err(_), .. })
        ));
        assert!(matches!(parse("[1]"), Ok(Frame::Invalid { .. })));
        assert!(parse("{not json").is_err());
        // A lone surrogate escape is not valid JSON text for serde_json (K3's note).
        assert!(parse(r#"{"id":1,"method":"m","params":"\ud800"}"#).is_err());
    }

    #[test]
    fn an_agent_refuses_a_bad_envelope() {
        let invalid = |line: &str| parse_request(line).unwrap();
        for id in ["[]", "{}", "true", "[1]", "1.5", "1e3"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/new"}}"#);
            assert_eq!(invalid(&line), Frame::Invalid { id: Value::Null }, "{line}");
        }
        for v in [r#""1.0""#, "2", "null"] {
            let line = format!(r#"{{"jsonrpc":{v},"id":7,"method":"session/new"}}"#);
            assert_eq!(invalid(&line), Frame::Invalid { id: json!(7) }, "{line}");
        }
        assert_eq!(
            invalid(r#"{"id":7,"method":"session/new"}"#),
            Frame::Invalid { id: json!(7) }
        );
        assert_eq!(
            invalid(r#"{"method":"session/cancel"}"#),
            Frame::Invalid { id: Value::Null }
        );
        assert_eq!(
            invalid(r#"{"jsonrpc":"2.0","id":[1]}"#),
            Frame::Invalid { id: Value::Null }
        );
        for id in [r#""a""#, "null", "-3", "18446744073709551615"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/new"}}"#);
            assert!(matches!(invalid(&line), Frame::Request { .. }), "{line}");
        }
        assert!(matches!(
            invalid(&notification("session/cancel", json!({}))),
            Frame::Notification { .. }
        ));
    }
}
