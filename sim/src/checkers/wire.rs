//! The frames on the wire, read once per run: [`WireFrame`], one per `net` `send` or `recv` op.
//!
//! Most checkers key what the Agent read and wrote by (connection, JSON-RPC id). Reading
//! `conn`, `from`, `frame`, `method` and `id` out of an op's JSON in every checker cost more
//! than the checks themselves (each field a hashed map lookup, each key a new string), so
//! [`Facts`](super::Facts) reads them once here and the checkers share the result.

use serde_json::Value;

use crate::history::{is_agent_host, op, process, Op};

/// A frame a host wrote (`send`) or read (`recv`), as its `net` op logged it. Every field is
/// what the op's JSON says, with the same defaults the checkers used on it (`conn` 0 when
/// absent, `from` empty, `id_key` `"null"` when the frame has no id).
#[derive(Debug, Clone)]
pub struct WireFrame<'h> {
    /// A `send` op (the writer's side); `false`: a `recv` op.
    pub sent: bool,
    /// The connection (`value.conn`), 0 when absent.
    pub conn: u64,
    /// Who wrote it (`value.from`: `client`, `proxy`, `agent`, a cluster node, …), empty when
    /// absent.
    pub from: &'h str,
    /// `from` is an Agent host (the Agent, a cluster node or the store).
    pub from_agent: bool,
    /// The frame (`value.frame`): a JSON-RPC object, or the string of a line that was not JSON.
    pub frame: &'h Value,
    /// `frame.method` when it is a string.
    pub method: Option<&'h str>,
    /// The frame has a `method` member (of any type): a request or a notification.
    pub has_method: bool,
    /// `frame.id`, when the frame has one (it may be `null`).
    pub id: Option<&'h Value>,
    /// `frame.id` as JSON text (`"null"` when absent): the id half of a (connection, id) key.
    pub id_key: String,
}

impl<'h> WireFrame<'h> {
    /// The frame of `op`, if it is a `net` `send` or `recv` op.
    pub fn of(op: &'h Op) -> Option<WireFrame<'h>> {
        if op.process != process::NET {
            return None;
        }
        let sent = match op.f.as_str() {
            op::SEND => true,
            op::RECV => false,
            _ => return None,
        };
        // One pass over the op's few members, then over the frame's: the same values as
        // `op.value["conn"]` and the rest, without hashing each key (this runs on every frame
        // of every run).
        let (mut conn, mut from, mut frame) = (&Value::Null, &Value::Null, &Value::Null);
        for (k, v) in op.value.as_object().into_iter().flatten() {
            match k.as_str() {
                "conn" => conn = v,
                "from" => from = v,
                "frame" => frame = v,
                _ => {}
            }
        }
        let (mut method, mut id) = (None, None);
        for (k, v) in frame.as_object().into_iter().flatten() {
            match k.as_str() {
                "method" => method = Some(v),
                "id" => id = Some(v),
                _ => {}
            }
        }
        let from = from.as_str().unwrap_or_default();
        Some(WireFrame {
            sent,
            conn: conn.as_u64().unwrap_or(0),
            from,
            from_agent: is_agent_host(from),
            frame,
            method: method.and_then(Value::as_str),
            has_method: method.is_some(),
            id,
            id_key: id.map_or_else(|| "null".to_string(), Value::to_string),
        })
    }

    /// (connection, id): how the checkers key a request and its answers.
    pub fn key(&self) -> (u64, String) {
        (self.conn, self.id_key.clone())
    }

    /// The frame has a non-null id.
    pub fn has_id(&self) -> bool {
        self.id.is_some_and(|i| !i.is_null())
    }
}

/// The answer a frame fault lost after the Agent wrote it: `o` is the `nemesis` op of a fault
/// that lost a frame (`lose-exchange`, `lose-frame`), and its detail holds a response an Agent
/// host wrote (not a request of the Agent's own). Its (connection, id) and the frame.
pub fn lost_answer(o: &Op) -> Option<((u64, String), &Value)> {
    let d = &o.value["detail"];
    let by_agent = d["from"].as_str().is_some_and(is_agent_host);
    if !by_agent || d["frame"].get("method").is_some() {
        return None;
    }
    let key = (
        d["conn"].as_u64().unwrap_or(0),
        d["frame"]["id"].to_string(),
    );
    Some((key, &d["frame"]))
}

/// The frame of each op of `ops`, in order (`None` for an op that is not a `send` or `recv`).
pub fn wire_of(ops: &[Op]) -> Vec<Option<WireFrame<'_>>> {
    ops.iter().map(WireFrame::of).collect()
}
