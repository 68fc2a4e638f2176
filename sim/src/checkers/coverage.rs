//! Not properties: what a run covered. [`fault_states`] places every fault that fired in the
//! protocol state it landed in (the coverage map), and [`events`] lists the run's events (for a
//! scenario's `sometimes` guard).

use std::collections::{BTreeMap, BTreeSet};

use super::facts::{agent_view, Facts};
use super::wire::WireFrame;
use crate::history::{op, process, History, Op};

/// Protocol states a fault can land in, for the coverage map (most specific first).
pub const FAULT_STATES: [&str; 6] = [
    "filling-history",
    "resuming",
    "inserted-unanswered",
    "held",
    "answered",
    "idle",
];

/// The protocol state a fault lands in ([`FAULT_STATES`]), read from the ops before it: an
/// adapter history fill under way; a `session/resume` sent and not answered; a prompt
/// inserted and not answered; a prompt held; some prompt answered; else idle. Feed it the ops
/// of a history as the checkers see it ([`agent_view`]), in order.
#[derive(Debug, Default)]
pub struct ProtocolState {
    filling: i64,
    resuming: BTreeSet<(u64, String)>,
    unanswered: BTreeSet<(u64, String)>,
    held: i64,
    answered: bool,
}

impl ProtocolState {
    /// Take one op into the state.
    pub fn feed(&mut self, op: &Op, w: Option<&WireFrame>) {
        let v = &op.value;
        match (op.process.as_str(), op.f.as_str(), w) {
            (process::AGENT, op::HISTORY_READ_START, _) => self.filling += 1,
            (process::AGENT, op::HISTORY_READ, _) => self.filling = (self.filling - 1).max(0),
            (process::AGENT, op::HOLD, _) => self.held += 1,
            (process::AGENT, op::INSERT, _) => {
                if v["mode"] == "held" {
                    self.held = (self.held - 1).max(0);
                }
                self.unanswered
                    .insert((v["conn"].as_u64().unwrap_or(0), v["id"].to_string()));
            }
            (process::AGENT, op::WITHDRAW | op::DROP_HELD, _) => self.held = (self.held - 1).max(0),
            (process::AGENT, op::RECOVER | op::BOOT, _) => {
                self.held = 0;
                self.filling = 0;
                self.unanswered.clear();
            }
            (process::NET, op::SEND, Some(w))
                if w.from == "client" && w.method == Some("session/resume") =>
            {
                self.resuming.insert(w.key());
            }
            (process::NET, op::RECV, Some(w)) if w.from == "agent" && !w.has_method => {
                self.resuming.remove(&w.key());
            }
            (process::NET, op::SEND, Some(w)) if w.from == "agent" && !w.has_method => {
                self.answered |= self.unanswered.remove(&w.key());
            }
            (_, op::CONN_END, _) => {
                let c = v["conn"].as_u64().unwrap_or(0);
                self.resuming.retain(|k| k.0 != c);
                self.unanswered.retain(|k| k.0 != c);
            }
            _ => {}
        }
    }

    /// The state now, one of [`FAULT_STATES`] (the most specific that holds).
    pub fn state(&self) -> &'static str {
        if self.filling > 0 {
            "filling-history"
        } else if !self.resuming.is_empty() {
            "resuming"
        } else if !self.unanswered.is_empty() {
            "inserted-unanswered"
        } else if self.held > 0 {
            "held"
        } else if self.answered {
            "answered"
        } else {
            "idle"
        }
    }
}

/// For every fault the nemesis fired: (protocol state at that moment, fault kind); see
/// [`ProtocolState`].
pub fn fault_states(h: &History) -> Vec<(&'static str, String)> {
    fault_states_in_view(&Facts::of(&agent_view(h)))
}

/// [`fault_states`] given the facts of a history already as the checkers read it
/// ([`agent_view`]).
pub fn fault_states_in_view(f: &Facts) -> Vec<(&'static str, String)> {
    let kinds: BTreeSet<&str> = crate::nemesis::FaultKind::ALL
        .iter()
        .map(|k| k.as_str())
        .collect();
    let mut st = ProtocolState::default();
    let mut out = Vec::new();
    for (op, w) in f.ops_with_wire() {
        // The op the ledger logs when a fault fires (it names its fault index).
        if op.process == process::NEMESIS
            && kinds.contains(op.f.as_str())
            && op.value.get("fault").is_some()
        {
            out.push((st.state(), op.f.clone()));
        } else {
            st.feed(op, w);
        }
    }
    out
}

/// The protocol state ([`ProtocolState`]) before each op index of `at` (each at most
/// `h.ops.len()`).
pub fn protocol_states_at(h: &History, at: &BTreeSet<usize>) -> BTreeMap<usize, &'static str> {
    let h = agent_view(h);
    let mut st = ProtocolState::default();
    let mut out = BTreeMap::new();
    let mut want = at.iter().peekable();
    for (i, op) in h.ops.iter().enumerate() {
        while want.peek().is_some_and(|w| **w == i) {
            out.insert(i, st.state());
            want.next();
        }
        st.feed(op, WireFrame::of(op).as_ref());
    }
    for w in want {
        out.insert(*w, st.state());
    }
    out
}

/// Events that are one (process, op) each: (process, op name, event).
const PLAIN_EVENTS: &[(&str, &str, &str)] = &[
    ("agent", "dedup-hit", "dedup-hit"),
    ("agent", "wait-held", "wait-held"),
    ("agent", "hold", "held"),
    ("agent", "store-retry", "store-retry"),
    ("agent", "discard", "discarded"),
    ("user", "close", "closed"),
    ("user", "fork", "forked"),
    ("client", "not-resent", "not-resent"),
    ("client", "resend-not-accepted", "resend-not-accepted"),
    ("client", "surface", "surfaced"),
    ("watcher", "watch", "watched"),
    ("client", "withdrawn", "withdrawn"),
    ("agent", "tool-effect", "tool"),
    ("agent", "work-failed", "work-failed"),
    ("agent", "permission", "permission"),
    ("client", "raw-sent", "raw-probe"),
];

/// Events of a run, for the scenario's `sometimes` guard.
pub fn events(h: &History) -> BTreeSet<&'static str> {
    let view = agent_view(h);
    events_in_view(h, &Facts::of(&view))
}

/// [`events`] of `h`, given the facts of `h` as the checkers read it ([`agent_view`]).
pub fn events_in_view(h: &History, facts: &Facts) -> BTreeSet<&'static str> {
    let mut seen = Seen::default();
    if reached_other_node(h) {
        seen.e.insert("other-node");
    }
    for (op, w) in facts.ops_with_wire() {
        seen.asking(op, w);
        seen.plain(op, w);
        // The connection an op is on: its frame's, else its own `conn`.
        let conn = w.map_or_else(|| op.value["conn"].as_u64().unwrap_or(0), |w| w.conn);
        seen.ids(op, w, conn);
        seen.retries(op, w, conn);
    }
    if seen.attempts.values().any(|n| *n > 1) {
        seen.e.insert("retry");
    }
    if seen.client_conns > 1 {
        seen.e.insert("reconnect");
    }
    seen.e
}

/// Cluster: some submission's attempts reached more than one node (which node each connection
/// reached, then which nodes each submission's attempts reached).
fn reached_other_node(h: &History) -> bool {
    let mut node_of: BTreeMap<u64, &str> = BTreeMap::new();
    let mut nodes: BTreeMap<u64, BTreeSet<&str>> = BTreeMap::new();
    for op in &h.ops {
        if op.f == op::LOGICAL && op.process.starts_with("node") {
            if let Some(c) = op.value["conn"].as_u64() {
                node_of.insert(c, op.process.as_str());
            }
        }
        if op.process == process::CLIENT && op.f == op::ATTEMPT {
            let at = op.value["conn"].as_u64().and_then(|c| node_of.get(&c));
            if let (Some(n), Some(node)) = (op.value["submission"].as_u64(), at) {
                nodes.entry(n).or_default().insert(node);
            }
        }
    }
    nodes.values().any(|s| s.len() > 1)
}

/// What [`events_in_view`] has seen so far in its one pass over the ops.
#[derive(Default)]
struct Seen<'h> {
    e: BTreeSet<&'static str>,
    /// Attempts per submission.
    attempts: BTreeMap<u64, u32>,
    /// JSON-RPC id → the connections on which a Client request with it awaits the Agent.
    open_ids: BTreeMap<String, BTreeSet<u64>>,
    client_conns: u32,
    /// Attempts that waited for a held original (A7): (connection, JSON-RPC id).
    waited: BTreeSet<(u64, String)>,
    /// The Agent's `session/request_permission` requests still unanswered: (connection, id) →
    /// the session each asked about.
    asking: BTreeMap<(u64, String), &'h serde_json::Value>,
}

impl<'h> Seen<'h> {
    /// A6: the user stops the session while the Agent waits on the user's permission.
    fn asking(&mut self, op: &Op, w: Option<&WireFrame<'h>>) {
        let method = w.and_then(|w| w.method);
        match (op.process.as_str(), op.f.as_str(), w) {
            (process::NET, op::SEND, Some(w))
                if method == Some("session/request_permission") && w.from == "agent" =>
            {
                self.asking.insert(w.key(), &w.frame["params"]["sessionId"]);
            }
            (process::NET, op::RECV, Some(w)) if method.is_none() && w.from == "client" => {
                self.asking.remove(&w.key());
            }
            // Withdrawn by the Agent: no longer asked.
            (process::NET, op::SEND, Some(w))
                if method == Some("$/cancel_request") && w.from == "agent" =>
            {
                self.asking
                    .remove(&(w.conn, w.frame["params"]["requestId"].to_string()));
            }
            (process::NET, op::RECV, Some(w))
                if method == Some("session/cancel") && w.from == "client" =>
            {
                let sid = &w.frame["params"]["sessionId"];
                if self.asking.values().any(|s| *s == sid) {
                    self.e.insert("stop-while-asking");
                }
            }
            // Gone with its connection, or with the Agent process that asked.
            (_, op::CONN_END, _) => {
                let c = op.value["conn"].as_u64().unwrap_or(0);
                self.asking.retain(|(x, _), _| *x != c);
            }
            (process::AGENT, op::RECOVER, _) if op.value["renamed_from"] != "store" => {
                self.asking.clear();
            }
            _ => {}
        }
    }

    /// Events one op shows by itself.
    fn plain(&mut self, op: &Op, w: Option<&WireFrame>) {
        let has = |p: &str, f: &str| op.process == p && op.f == f;
        let e = &mut self.e;
        // (No plain event is a frame: most ops are.)
        if let Some((_, _, ev)) = PLAIN_EVENTS
            .iter()
            .find(|(p, f, _)| w.is_none() && op.process == *p && op.f == *f)
        {
            e.insert(ev);
        }
        if op.process == process::NEMESIS
            && !matches!(op.f.as_str(), "heal" | "restart" | "heal-partition")
        {
            e.insert("fault");
        }
        if op.process == process::AGENT && op.f == op::WITHDRAW && op.value["by"] == "stop" {
            e.insert("stop-elsewhere");
        }
        if op.process == process::NET
            && op.f == op::REORDER_END
            && !op.value["overtaken_by"].is_null()
        {
            e.insert("reordered");
        }
        if has("agent", "insert") && op.value["mode"] == "steer" {
            e.insert("steer");
        }
        if (has("agent", "recover") || has("agent", "boot")) && op.value["boot"].as_u64() > Some(0)
        {
            e.insert("agent-restart");
        }
        if op.f == op::TRUNCATE_TORN_TAIL {
            e.insert("torn-tail");
        }
        if op.f == op::STORE_CORRUPT {
            e.insert("store-corrupt");
        }
        if has("client", "boot") && op.value["boot"].as_u64() > Some(0) {
            e.insert("client-restart");
        }
        if has("agent", "reject") && op.value["transient"] == true {
            e.insert("transient-error");
        }
        if has("agent", "insert") && op.value["live_only"] == true {
            e.insert("live-only");
        }
    }

    /// The same JSON-RPC id awaiting the Agent's answer on two connections at once (legal:
    /// ids are per connection, and dedup must go by key, never by id).
    fn ids(&mut self, op: &Op, w: Option<&WireFrame>, conn: u64) {
        if let Some(w) = w.filter(|w| w.has_id()) {
            match (w.sent, w.from, w.has_method) {
                (false, "client", true) => {
                    let conns = self.open_ids.entry(w.id_key.clone()).or_default();
                    if conns.iter().any(|c| *c != conn) {
                        self.e.insert("id-shared");
                    }
                    conns.insert(conn);
                }
                (true, "agent", false) => {
                    if let Some(c) = self.open_ids.get_mut(&w.id_key) {
                        c.remove(&conn);
                    }
                }
                _ => {}
            }
        }
        if op.f == op::CONN_END {
            for c in self.open_ids.values_mut() {
                c.remove(&conn);
            }
        }
    }

    /// Retries, reconnects, and O1's drop: the held original's connection ended and a retry
    /// that waited for it was inserted in its place (A7: it becomes the submission).
    fn retries(&mut self, op: &Op, w: Option<&WireFrame>, conn: u64) {
        let has = |p: &str, f: &str| op.process == p && op.f == f;
        if has("client", "attempt") {
            if let Some(s) = op.value["submission"].as_u64() {
                *self.attempts.entry(s).or_default() += 1;
            }
        }
        let attempt = || (conn, op.value["id"].to_string());
        if has("agent", "wait-held") {
            self.waited.insert(attempt());
        }
        if has("agent", "insert") && op.value["mode"] == "held" && self.waited.contains(&attempt())
        {
            self.e.insert("retry-promoted");
        }
        if w.is_some_and(|w| w.sent && w.from == "client" && w.method == Some("initialize")) {
            self.client_conns += 1;
        }
    }
}

/// Events a scenario may list under `sometimes`.
pub const EVENTS: &[(&str, &str)] = &[
    ("fault", "the nemesis applied a fault"),
    ("retry", "some submission had more than one attempt"),
    (
        "dedup-hit",
        "the Agent answered a retry from a recorded key",
    ),
    ("wait-held", "a retry waited for its held original (A7)"),
    (
        "retry-promoted",
        "the held original's connection ended and a retry waiting for it on another connection became the submission (A7, O1 drop)",
    ),
    ("held", "a prompt was held behind a running turn"),
    (
        "steer",
        "a prompt was inserted into a running turn (O4 steer)",
    ),
    ("agent-restart", "the Agent process restarted"),
    ("client-restart", "the Client process restarted"),
    ("reconnect", "the Client opened a second connection"),
    (
        "transient-error",
        "the Agent rejected an attempt with a transient error",
    ),
    ("surfaced", "an input was shown to the user as failed"),
    (
        "withdrawn",
        "an input was withdrawn by its own user's cancel",
    ),
    ("tool", "a turn ran a tool call with a side effect"),
    ("watched", "a second Client resumed the session to watch it"),
    (
        "raw-probe",
        "the Client sent a raw session/prompt probe ([[raw]])",
    ),
    (
        "id-shared",
        "one JSON-RPC id awaited the Agent's answer on two connections at once (legal)",
    ),
    (
        "reordered",
        "a frame on another connection overtook a held-back frame (reorder-frame)",
    ),
    ("permission", "the Agent asked the Client for permission"),
    ("work-failed", "a turn's work failed after insertion (A3)"),
    (
        "stop-while-asking",
        "the Agent read a session/cancel while its session/request_permission was unanswered (A6)",
    ),
    ("live-only", "a locally handled command was answered (A11)"),
    (
        "other-node",
        "cluster: attempts of one submission reached different nodes",
    ),
    ("closed", "the user closed a session (session/close, A15)"),
    (
        "torn-tail",
        "a restart found a torn record at the end of a store and cut it",
    ),
    (
        "store-corrupt",
        "a restart found its store damaged below its synced watermark and refused to start (flip-bit, zero-sector, lose-synced-record)",
    ),
    (
        "forked",
        "the user forked a session and prompted in the fork (A9)",
    ),
    (
        "resend-not-accepted",
        "the Client resent a request that failed before acceptance without reconnecting (X5)",
    ),
    (
        "not-resent",
        "the sdk-auto-retry Client did not resend a request its retry class forbids (C9)",
    ),
    (
        "store-retry",
        "cluster: a node sent a store write again after its answer timed out",
    ),
    (
        "stop-elsewhere",
        "cluster: a stop one node read withdrew a prompt held on another (A6)",
    ),
    (
        "discarded",
        "the Agent's retention window discarded a message with its key (A16)",
    ),
];
