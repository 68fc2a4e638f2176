//! What a run did that its history does not hold: every protocol point a host passed and
//! every submission the Client accepted, each placed among the history's ops. Exploration
//! ([`crate::explore`]) reads it to place faults at points and submissions; the history, and so
//! its hash, stays as it was.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::models::Point;

/// One pass of a host through a protocol point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointPass {
    /// The point.
    pub point: Point,
    /// The host that passed it (`agent`, `node2`, `store`).
    pub host: &'static str,
    /// How many ops the history held at that moment (the pass comes after `ops[..ops_before]`).
    pub ops_before: usize,
    /// Simulated time, ms.
    pub time_ms: u64,
    /// The world's state then ([`super::snapshot`]; `None` unless the run took snapshots).
    pub state: Option<u64>,
}

/// A submission the Client accepted (where a `submission` trigger fires).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accepted {
    /// The submission number.
    pub submission: u64,
    /// How many ops the history held at that moment.
    pub ops_before: usize,
    /// Simulated time, ms.
    pub time_ms: u64,
    /// The world's state then ([`super::snapshot`]; `None` unless the run took snapshots).
    pub state: Option<u64>,
}

/// A run's trace beside its history.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Trace {
    /// Protocol points passed, in order (the `nth` pass of a point, over every host, is what a
    /// `point` trigger with that `nth` counts).
    pub points: Vec<PointPass>,
    /// Submissions accepted, in order.
    pub accepted: Vec<Accepted>,
    /// In a snapshotting run: the world's state ([`super::snapshot`]) when each frame was
    /// handed to its writer, by the index of the op that logged it (its `send`, or the
    /// `nemesis` op that lost it).
    pub frame_states: BTreeMap<usize, Option<u64>>,
    /// The host that read each frame, by the index of its `recv` op (the op names the peer's
    /// role, not the host: a cluster's Client reads from `node1` and `node2` alike).
    pub received: Vec<(usize, &'static str)>,
    /// A cluster's store traffic, which the history does not hold (it is the nodes' and the
    /// store's own datagrams): each op a node sent, the store applied and the node got an
    /// answer to, in order. Order exploration ([`crate::explore::orders`]) reads it.
    pub store: Vec<StoreStep>,
}

/// What happened to one store op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StoreStepKind {
    /// The node sent it.
    Sent,
    /// The store read and applied it.
    Applied,
    /// The node read the store's answer to it.
    Answered,
}

/// One step of one store op ([`Trace::store`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoreStep {
    /// Sent, applied or answered.
    pub kind: StoreStepKind,
    /// The node whose op it is.
    pub node: &'static str,
    /// The node's number for the op (its `req`).
    pub req: u64,
    /// The op (`load`, `append`, `insert`, `withdraw`, ...; `other` for a name not known).
    pub op: &'static str,
    /// The session it touches (`None`: every session, a `load`).
    pub session: Option<String>,
    /// How many ops the history held at that moment.
    pub ops_before: usize,
    /// Simulated time, ms.
    pub time_ms: u64,
}

/// The static name of a store op ([`StoreStep::op`]).
pub fn store_op_name(op: &serde_json::Value) -> &'static str {
    const NAMES: [&str; 6] = ["load", "append", "insert", "withdraw", "stop", "deactivate"];
    let name = op["op"].as_str().unwrap_or("");
    NAMES.into_iter().find(|n| *n == name).unwrap_or("other")
}

/// The session a store op touches: its `session`, or its record's (`session`, or `id` for a
/// session's creation); `None` for a `load` (it reads them all).
pub fn store_op_session(op: &serde_json::Value) -> Option<String> {
    let r = &op["record"];
    [&op["session"], &r["session"], &r["id"]]
        .into_iter()
        .find_map(|v| v.as_str())
        .map(str::to_string)
}
