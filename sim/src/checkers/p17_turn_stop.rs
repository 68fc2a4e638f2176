//! P17 turn-stop (A3 A6 A15): [`p17_turn_stop`].

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::Party;
use serde_json::Value;

use super::facts::{is_store_op, malformed_request, track_active, Facts};
use super::verdict::{Status, Verdict};
use super::wire::WireFrame;
use crate::history::{op, process};
use crate::nemesis::logged;
use acp_chaos_models::rpc::code::INVALID_PARAMS;

/// P17 turn-stop:
///
/// - **A3**: work that failed (the Agent's `work-failed` effect) ends with
///   `stopReason: "error"` (the prompt's own answer stays a success: P4).
/// - **A6, the stop reason**: a `session/cancel` the Agent honours (its session active on that
///   connection) while that process runs the session's work ends the work with
///   `stopReason: "cancelled"` (never `error`), before any new work of the session starts.
///   Judged on the Agent's `turn-start` and `turn-end` effects, which it logs as it decides:
///   its frames reach the log when its writer sends them, after frames it read meanwhile.
/// - **A6, permission requests**: each `session/request_permission` for the session the Agent
///   process had sent and had no answer to when it read the cancel is withdrawn with a
///   `$/cancel_request` naming it, on the connection it was sent on.
/// - **A15**, from the frames on each connection alone (so `probe` judges a real Agent the
///   same way): no work still `running` there when the `session/close` is answered (the idle
///   `cancelled` state comes first), and after that response nothing more names the session
///   on that connection until it is activated there again (on a remote transport, on the
///   logical connection: through any of its connections). Prompt responses may follow (A15
///   says so): they carry no `sessionId`. Closing a missing or inactive session SHOULD
///   succeed: an error for it is a finding.
///
/// A connection that ended, an Agent crash, or a fault that can swallow the Agent's frames on
/// that connection unseen (a lost frame or exchange, a dead update stream) lifts what was owed
/// on it: the frame may have been written and lost. Under `probe` (no effects) only A15 is
/// judged. A cluster node that reads a cancel for work running on another node is not judged
/// here: the model's stop reaches the other nodes' held prompts through the store (P6 judges
/// those), but not work they already run, a known gap of the cluster model.
pub fn p17_turn_stop(f: &Facts) -> Verdict {
    let mut w = Wire::default();
    for (o, frame) in f.ops_with_wire() {
        if let Some(breach) = w.step(o, frame) {
            return verdict(f, Status::Invalid, breach);
        }
    }
    if let Some(breach) = w.owed_at_end() {
        return verdict(f, Status::Invalid, breach);
    }
    match w.refused_close {
        Some(breach) => verdict(f, Status::Finding, breach),
        None => Verdict::valid("P17"),
    }
}

/// The verdict for a breach: the Agent is at fault; the fault is the last before its witnesses.
fn verdict(f: &Facts, status: Status, (rule, witnesses, message): Breach) -> Verdict {
    let last = witnesses.iter().copied().max().unwrap_or(0);
    Verdict {
        property: "P17".into(),
        status,
        rules: vec![rule.into()],
        witnesses,
        fault: f.fault_before(last),
        party: Some(Party::Agent),
        message,
    }
}

/// (connection, sessionId).
type Slot = (u64, String);

type Breach = (&'static str, Vec<usize>, String);

/// What each Agent connection has been told and still owes.
#[derive(Default)]
struct Wire {
    /// Sessions active on each connection (from the Agent's effects).
    active: BTreeMap<String, BTreeSet<u64>>,
    /// Cluster: the node each connection reached.
    node_of: BTreeMap<u64, String>,
    /// Remote transport: the logical connection each connection carries (A15's "that
    /// connection" is the logical one there, as X2's is).
    logical: BTreeMap<u64, String>,
    /// Work running, by (host, session): its `messageId`.
    turns: BTreeMap<(String, String), String>,
    /// Work a cancel ended, by (host, session): (its `messageId`, the cancel's op).
    stop_owed: BTreeMap<(String, String), (String, usize)>,
    /// Work that failed, by (host, session): (its `messageId`, the `work-failed` op).
    failed: BTreeMap<(String, String), (String, usize)>,
    /// Slots whose last `state_update` said `running` (the op that said so).
    running: BTreeMap<Slot, usize>,
    /// `session/request_permission` the Agent sent and has no answer to: (conn, id) →
    /// (host, session).
    asking: BTreeMap<(u64, String), (String, String)>,
    /// Permission requests a cancel left owed a `$/cancel_request`: (conn, id) → cancel op.
    withdraw_owed: BTreeMap<(u64, String), usize>,
    /// `session/close` requests read: (conn, id) → (session, op, the slot's activations then,
    /// whether the session was inactive there).
    closing: BTreeMap<(u64, String), (String, usize, u64, bool)>,
    /// The first close of a missing or inactive session answered with an error (A15's
    /// SHOULD: a finding).
    refused_close: Option<Breach>,
    /// How often each slot was activated (the Agent logs it as it decides, ahead of the
    /// frames it queued before: a resume read right after a close activates the session
    /// before the close's response is sent).
    activations: BTreeMap<Slot, u64>,
    /// Slots whose close was answered: the response's op.
    closed: BTreeMap<Slot, usize>,
    /// Connections on which the Agent's frames may have vanished unseen, or that ended
    /// (either end): what the Agent reads there later is stale, what it writes may be lost.
    lifted: BTreeSet<u64>,
    /// The connections each Agent host has read or written on.
    conns_of: BTreeMap<String, BTreeSet<u64>>,
}

/// The (Agent host, session) an Agent op is about: the host it was renamed from, else `agent`.
fn host_session(o: &crate::history::Op) -> (String, String) {
    let val = &o.value;
    (
        val["renamed_from"].as_str().unwrap_or("agent").to_string(),
        val["session"].as_str().unwrap_or_default().to_string(),
    )
}

impl Wire {
    fn step(&mut self, o: &crate::history::Op, w: Option<&WireFrame>) -> Option<Breach> {
        let val = &o.value;
        let conn = w.map_or_else(|| val["conn"].as_u64().unwrap_or(0), |w| w.conn);
        // (No arm below reads the ops `track_active` consumes.)
        if track_active(&mut self.active, o) {
            self.tracked(o, conn);
            return None;
        }
        match (o.process.as_str(), o.f.as_str(), w) {
            (process::NET, op::SEND, Some(w)) if w.from_agent => {
                let h = self.host_of(conn);
                self.conns_of.entry(h).or_default().insert(conn);
                return self.agent_wrote(conn, w.frame, o.index);
            }
            (process::NET, op::RECV, Some(w)) if w.from == "client" => {
                let h = self.host_of(conn);
                self.conns_of.entry(h).or_default().insert(conn);
                if !self.lifted.contains(&conn) {
                    self.agent_read(conn, w.frame, o.index);
                }
            }
            (process::AGENT, op::LOGICAL, _) => {
                if let (Some(c), Some(l)) = (val["conn"].as_u64(), val["logical"].as_str()) {
                    self.logical.insert(c, l.to_string());
                }
            }
            (process::NET, op::CONN_OPEN, _) => {
                if let Some(n) = val["seen_by"].as_str().filter(|n| n.starts_with("node")) {
                    self.node_of.insert(conn, n.to_string());
                }
            }
            (process::NET, op::DROPPED, _) => self.lift(conn),
            (
                process::NEMESIS,
                logged::LOSE_FRAME | logged::LOSE_EXCHANGE | logged::DROP_UPDATES,
                _,
            ) => {
                self.lift(val["detail"]["conn"].as_u64().unwrap_or(0));
            }
            // An Agent host crashed (not the Client or a proxy): what it owed died with it,
            // and so did its connections (only the peer logs their end, if it notices).
            (process::NEMESIS, op::CRASH, _) if val["host"] == "agent" => {
                let dead = val["host_was"].as_str().unwrap_or("agent").to_string();
                self.forget_host(&dead);
                let conns = self.conns_of.remove(&dead).unwrap_or_default();
                for c in conns {
                    self.lift(c);
                }
            }
            (_, op::CONN_END, _) => self.lift(conn),
            (process::AGENT, op::TURN_START, _) => return self.turn_started(o),
            (process::AGENT, op::WORK_FAILED, _) => {
                let mid = val["messageId"].as_str().unwrap_or_default().to_string();
                self.failed.insert(host_session(o), (mid, o.index));
            }
            (process::AGENT, op::TURN_END, _) => return self.turn_ended(o),
            _ => {}
        }
        None
    }

    /// An op `track_active` consumed (on `conn`).
    fn tracked(&mut self, o: &crate::history::Op, conn: u64) {
        match o.f.as_str() {
            // The session is active there again: updates may name it.
            op::ACTIVATE => {
                let sid = host_session(o).1;
                // On a remote transport, on every connection of its logical connection
                // (a late resume read on one the Client left reactivates it on them all).
                for c in self.same_logical(conn) {
                    self.closed.remove(&(c, sid.clone()));
                    *self.activations.entry((c, sid.clone())).or_default() += 1;
                }
            }
            op::CONN_END => self.lift(conn),
            // A restarted process (also one a broken stdio pipe ended) runs nothing yet.
            op::RECOVER if !is_store_op(o) => self.forget_host(&host_session(o).0),
            _ => {}
        }
    }

    /// A `turn-start`: new work may not start while a stop is owed on the session (A6).
    fn turn_started(&mut self, o: &crate::history::Op) -> Option<Breach> {
        let val = &o.value;
        let at = host_session(o);
        if let Some((mid, c)) = self.stop_owed.get(&at) {
            return Some((
                "A6",
                vec![*c, o.index],
                format!(
                    "session/cancel of {} (op {c}) should have ended the work on {mid}, but new work (on {}) started first",
                    at.1, val["messageId"].as_str().unwrap_or_default()
                ),
            ));
        }
        let mid = val["messageId"].as_str().unwrap_or_default().to_string();
        self.turns.insert(at, mid);
        None
    }

    /// A `turn-end`: failed work ends `error` (A3), stopped work `cancelled` (A6).
    fn turn_ended(&mut self, o: &crate::history::Op) -> Option<Breach> {
        let val = &o.value;
        let at = host_session(o);
        self.turns.remove(&at);
        let reason = &val["stopReason"];
        if let Some((mid, w)) = self.failed.remove(&at) {
            if val["messageId"] == mid.as_str() && reason != "error" {
                return Some((
                    "A3",
                    vec![w, o.index],
                    format!(
                        "the work on {mid} failed (op {w}) and ended with stopReason {reason}, not \"error\""
                    ),
                ));
            }
        }
        match self.stop_owed.remove(&at) {
            Some((mid, c)) if val["messageId"] == mid.as_str() && reason != "cancelled" => {
                Some((
                    "A6",
                    vec![c, o.index],
                    format!(
                        "session/cancel of {} (op {c}) ended the work on {mid} with stopReason {reason}, not \"cancelled\"",
                        at.1
                    ),
                ))
            }
            Some(owed) if val["messageId"] != owed.0.as_str() => {
                self.stop_owed.insert(at, owed);
                None
            }
            _ => None,
        }
    }

    /// `conn` and, on a remote transport, every other connection of its logical connection.
    fn same_logical(&self, conn: u64) -> Vec<u64> {
        let l = self.logical.get(&conn);
        let mut same: BTreeSet<u64> = self
            .logical
            .iter()
            .filter(|(_, x)| l.is_some() && Some(*x) == l)
            .map(|(c, _)| *c)
            .collect();
        same.insert(conn);
        same.into_iter().collect()
    }

    /// A host that crashed or restarted runs nothing and owes nothing.
    fn forget_host(&mut self, h: &str) {
        self.turns.retain(|(x, _), _| x != h);
        self.stop_owed.retain(|(x, _), _| x != h);
        self.failed.retain(|(x, _), _| x != h);
    }

    /// The Agent host at the end of `conn`: its cluster node, or the one Agent.
    fn host_of(&self, conn: u64) -> String {
        self.node_of
            .get(&conn)
            .map_or("agent", String::as_str)
            .to_string()
    }

    fn lift(&mut self, conn: u64) {
        self.lifted.insert(conn);
        self.running.retain(|(c, _), _| *c != conn);
        self.asking.retain(|(c, _), _| *c != conn);
        self.withdraw_owed.retain(|(c, _), _| *c != conn);
        self.closed.retain(|(c, _), _| *c != conn);
    }

    /// A frame the Agent read on `conn`.
    fn agent_read(&mut self, conn: u64, fr: &Value, at: usize) {
        let sid = fr["params"]["sessionId"].as_str().unwrap_or_default();
        match fr["method"].as_str() {
            // Honoured: the session is active on that connection.
            Some("session/cancel") if self.active.get(sid).is_some_and(|c| c.contains(&conn)) => {
                let at_host = (self.host_of(conn), sid.to_string());
                if let Some(mid) = self.turns.get(&at_host) {
                    self.stop_owed
                        .entry(at_host.clone())
                        .or_insert((mid.clone(), at));
                }
                for (ask, asker) in &self.asking {
                    if *asker == at_host {
                        self.withdraw_owed.entry(ask.clone()).or_insert(at);
                    }
                }
            }
            Some("session/close") => {
                let n = self.activations.get(&(conn, sid.to_string()));
                let n = n.copied().unwrap_or(0);
                // Known only from the Agent's effects (not under `probe`).
                let inactive = !self.activations.is_empty()
                    && !self.active.get(sid).is_some_and(|c| c.contains(&conn));
                self.closing.insert(
                    (conn, fr["id"].to_string()),
                    (sid.to_string(), at, n, inactive),
                );
            }
            // The Client's answer to a permission request.
            None => {
                let ask = (conn, fr["id"].to_string());
                self.asking.remove(&ask);
            }
            _ => {}
        }
    }

    /// A frame the Agent wrote on `conn` (it reached the network).
    fn agent_wrote(&mut self, conn: u64, fr: &Value, at: usize) -> Option<Breach> {
        if self.lifted.contains(&conn) {
            return None;
        }
        let params = &fr["params"];
        let sid = params["sessionId"].as_str().unwrap_or_default().to_string();
        let slot = (conn, sid.clone());
        match fr["method"].as_str() {
            None => return self.answered(conn, fr, at),
            Some(_) if self.closed.contains_key(&slot) => {
                let closed = self.closed[&slot];
                return Some((
                    "A15",
                    vec![closed, at],
                    format!(
                        "after answering session/close of {sid} on connection {conn} (op {closed}), the Agent still sent {} for that session there (op {at})",
                        describe(fr)
                    ),
                ));
            }
            Some("session/request_permission") => {
                let host = self.host_of(conn);
                self.asking
                    .insert((conn, fr["id"].to_string()), (host, sid));
            }
            Some("$/cancel_request") => {
                let ask = (conn, params["requestId"].to_string());
                self.asking.remove(&ask);
                self.withdraw_owed.remove(&ask);
            }
            Some("session/update") if params["update"]["sessionUpdate"] == "state_update" => {
                if params["update"]["state"] == "running" {
                    self.running.insert(slot, at);
                } else {
                    self.running.remove(&slot);
                }
            }
            Some(_) => {}
        }
        None
    }

    /// A response the Agent wrote: the one to a `session/close` closes the slot (A15).
    fn answered(&mut self, conn: u64, fr: &Value, at: usize) -> Option<Breach> {
        let (sid, read, n, inactive) = self.closing.remove(&(conn, fr["id"].to_string()))?;
        if let Some(code) = fr["error"]["code"].as_i64() {
            let about_the_request = malformed_request(code) || code == INVALID_PARAMS;
            if inactive && !about_the_request && self.refused_close.is_none() {
                self.refused_close = Some((
                    "A15",
                    vec![read, at],
                    format!(
                        "session/close of {sid}, not active on connection {conn} (op {read}), was answered with error {code} (op {at}): closing a missing or inactive session SHOULD succeed"
                    ),
                ));
            }
            return None;
        }
        let slot = (conn, sid.clone());
        if let Some(run) = self.running.get(&slot) {
            return Some((
                "A15",
                vec![read, *run, at],
                format!(
                    "session/close of {sid} on connection {conn} (op {read}) was answered (op {at}) while the session's work was still running there (op {run}): the idle \"cancelled\" state must come first"
                ),
            ));
        }
        // Activated again since the close was read: what follows is the new activation's.
        if self.activations.get(&slot).copied().unwrap_or(0) == n {
            // Only on the connection the response went out on, though on a remote transport
            // the close closes it on every connection of the logical one (RULES.md, the X
            // section): a node may still flush frames decided before it read the close on
            // another stream, which the wire cannot tell apart (a known gap, docs/properties.md).
            self.closed.insert(slot, at);
        }
        None
    }

    /// What was still owed at the end of the run (nothing lifted it).
    fn owed_at_end(&self) -> Option<Breach> {
        if let Some(((_, sid), (mid, c))) = self.stop_owed.iter().next() {
            return Some((
                "A6",
                vec![*c],
                format!(
                    "session/cancel of {sid} (op {c}) arrived while the Agent ran the work on {mid}, and that work never ended"
                ),
            ));
        }
        self.withdraw_owed.iter().next().map(|((conn, id), c)| {
            (
                "A6",
                vec![*c],
                format!(
                    "session/cancel (op {c}) arrived while the Agent's session/request_permission #{id} on connection {conn} was unanswered, and the Agent never withdrew it with $/cancel_request"
                ),
            )
        })
    }
}

/// A short name for what an Agent frame is: `session/update (agent_message_chunk)`.
fn describe(fr: &Value) -> String {
    let method = fr["method"].as_str().unwrap_or("a response");
    match fr["params"]["update"]["sessionUpdate"].as_str() {
        Some(kind) => format!("{method} ({kind})"),
        None => method.to_string(),
    }
}
