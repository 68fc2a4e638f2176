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
    let Some(obj) = v.as_object() else {
        return Ok(Frame::Invalid { id: Value::Null });
    };
    let id = obj.get("id").cloned();
    match (obj.get("method"), id) {
        (Some(Value::String(m)), Some(id)) => Ok(Frame::Request {
            id,
            method: m.clone(),
            params: obj.get("params").cloned().unwrap_or(Value::Null),
        }),
        (Some(Value::String(m)), None) => Ok(Frame::Notification {
            method: m.clone(),
            params: obj.get("params").cloned().unwrap_or(Value::Null),
        }),
        (None, Some(id)) => {
            if let Some(e) = obj.get("error") {
                Ok(Frame::Response {
                    id,
                    result: Err(e.clone()),
                })
            } else if let Some(r) = obj.get("result") {
                Ok(Frame::Response {
                    id,
                    result: Ok(r.clone()),
                })
            } else {
                Ok(Frame::Invalid { id })
            }
        }
        (_, id) => Ok(Frame::Invalid {
            id: id.unwrap_or(Value::Null),
        }),
    }
}

/// A request line.
pub fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A notification line.
pub fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// A success response line.
pub fn ok(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An error response line; `data` is omitted when `None`.
pub fn err(id: &Value, code: i64, message: &str, data: Option<Value>) -> String {
    let mut e = json!({"code": code, "message": message});
    if let Some(d) = data {
        e["data"] = d;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": e}).to_string()
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
}
