//! P6 cancel (A5 A6 A15 X1): [`p6_cancel`].

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::Party;
use serde_json::Value;

use super::facts::{is_store_op, malformed_request, track_active, Facts};
use super::verdict::{Status, Verdict};
use super::wire::{lost_answer, WireFrame};
use crate::history::{op, process, Op};
use crate::nemesis::logged;

/// P6 cancel: an attempt the Agent answered `-32800` inserted nothing (A5, A6), and a
/// `$/cancel_request` reaches the Agent naming the request its sender meant: a proxy maps it to
/// the id it rewrote that request to (X1, A5).
pub fn p6_cancel(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P6");
    let (cancelled, inserted) = match cancels_through_the_proxy(f) {
        Ok(x) => x,
        Err(bad) => return bad,
    };
    if let Some(bad) = x1_cancels_from_frames(f) {
        return bad;
    }
    if let Some(bad) = withdrawals_answered(f) {
        return bad;
    }
    if let Some(bad) = a6_earlier_held(f) {
        return bad;
    }
    for (attempt, c_op) in &cancelled {
        if let Some(i_op) = inserted.get(attempt) {
            // The clause of what withdrew it (the Agent's `withdraw` of that attempt), and A2:
            // an error answer means the attempt inserted nothing.
            let by = f.history.ops[..*c_op]
                .iter()
                .rev()
                .find(|o| {
                    o.process == process::AGENT
                        && o.f == op::WITHDRAW
                        && (
                            o.value["conn"].as_u64().unwrap_or(0),
                            o.value["id"].to_string(),
                        ) == *attempt
                })
                .and_then(|o| o.value["by"].as_str())
                .unwrap_or("$/cancel_request");
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec![withdrawal_rule(by).into(), "A2".into()];
            v.witnesses = vec![*i_op, *c_op];
            v.fault = f.fault_before(*c_op);
            let attempt_name = super::facts::attempt_name(attempt);
            v.message =
                format!("attempt {attempt_name} was answered -32800 but had inserted a message");
            return v;
        }
    }
    v
}

/// The `-32800` answers and the insertions by attempt, and X1 for `$/cancel_request`: a proxy
/// forwards it under the id it rewrote the named request to. `Err` is that violation.
#[allow(clippy::type_complexity)]
fn cancels_through_the_proxy(
    f: &Facts,
) -> Result<
    (
        BTreeMap<(u64, String), usize>,
        BTreeMap<(u64, String), usize>,
    ),
    Verdict,
> {
    let mut v = Verdict::valid("P6");
    let mut cancelled: BTreeMap<(u64, String), usize> = BTreeMap::new();
    let mut inserted: BTreeMap<(u64, String), usize> = BTreeMap::new();
    let mut rewritten: BTreeMap<(u64, String), (Value, usize)> = BTreeMap::new();
    for (op, w) in f.ops_with_wire() {
        let val = &op.value;
        match (op.process.as_str(), op.f.as_str(), w) {
            (process::NET, op::SEND, Some(w))
                if w.from == "agent" && w.frame["error"]["code"] == rpc_cancelled() =>
            {
                cancelled.insert(w.key(), op.index);
            }
            (process::AGENT, op::INSERT, _) => {
                inserted.insert(
                    (val["conn"].as_u64().unwrap_or(0), val["id"].to_string()),
                    op.index,
                );
            }
            (process::PROXY, op::FORWARD, _) if val["method"] == "$/cancel_request" => {
                let up = (
                    val["up_conn"].as_u64().unwrap_or(0),
                    val["up_request_id"].to_string(),
                );
                if let Some((down_id, fwd_op)) = rewritten.get(&up) {
                    if *down_id != val["down_request_id"] {
                        v.breach(
                            Status::Invalid,
                            Party::Intermediary,
                            vec!["X1".into()],
                            vec![*fwd_op, op.index],
                            f.fault_before(op.index),
                            format!(
                            "the proxy forwarded $/cancel_request for request {} as {}, but had rewritten that request to {down_id}",
                            val["up_request_id"], val["down_request_id"]
                        ),
                        );
                        return Err(v);
                    }
                }
            }
            (process::PROXY, op::FORWARD, _) => {
                let up = (
                    val["up_conn"].as_u64().unwrap_or(0),
                    val["up_id"].to_string(),
                );
                rewritten.insert(up, (val["down_id"].clone(), op.index));
            }
            _ => {}
        }
    }
    Ok((cancelled, inserted))
}

/// X1 for `$/cancel_request` from the frames a proxy read and wrote, whatever it reports
/// (a user's proxy may report no `forward` effect at all): each request it read from a Client
/// and wrote on toward the Agent is paired by method and params (an intermediary passes them
/// unchanged), oldest first, which gives the id it rewrote it to; a cancel it then writes
/// toward the Agent for a Client's cancel of that request must name that id, not the Client's.
/// A cancel of a request not yet written on (held, queued) is not judged.
fn x1_cancels_from_frames(f: &Facts) -> Option<Verdict> {
    // Connections a proxy accepted (its Clients'); the others it writes on are toward the Agent.
    let mut upstream: BTreeSet<u64> = BTreeSet::new();
    // Requests a proxy read from a Client, not yet seen written on: (conn, id, method, params).
    let mut unforwarded: Vec<(u64, String, String, String)> = Vec::new();
    // (upstream conn, Client's id) → (downstream conn, the id written there, that op).
    let mut rewritten: BTreeMap<(u64, String), (u64, String, usize)> = BTreeMap::new();
    let mut up_of: BTreeMap<u64, u64> = BTreeMap::new();
    // Client cancels a proxy read and has not written on: (upstream conn, requestId, op).
    let mut cancels: Vec<(u64, String, usize)> = Vec::new();
    for (o, w) in f.ops_with_wire() {
        if o.process == process::NET && o.f == op::CONN_OPEN {
            if o.value["seen_by"] == "proxy" {
                upstream.insert(o.value["conn"].as_u64().unwrap_or(0));
            }
            continue;
        }
        let Some(w) = w else { continue };
        let up = upstream.contains(&w.conn);
        // A proxy's reads are from its `peer`; what it writes is `from: proxy`.
        let read_by_proxy = !w.sent && up && w.from == "peer";
        let written_down = w.sent && !up && w.from == "proxy";
        let (Some(method), true) = (w.method, read_by_proxy || written_down) else {
            continue;
        };
        let params = || w.frame["params"].to_string();
        match (method, w.id, read_by_proxy) {
            ("$/cancel_request", None, true) => {
                cancels.push((w.conn, w.frame["params"]["requestId"].to_string(), o.index));
            }
            (_, Some(_), true) => {
                unforwarded.push((w.conn, w.id_key.clone(), method.to_string(), params()))
            }
            (_, Some(_), false) => {
                let p = params();
                if let Some(i) = unforwarded
                    .iter()
                    .position(|(_, _, m, q)| m == method && *q == p)
                {
                    let (u, id, _, _) = unforwarded.remove(i);
                    up_of.entry(w.conn).or_insert(u);
                    rewritten.insert((u, id), (w.conn, w.id_key.clone(), o.index));
                }
            }
            ("$/cancel_request", None, false) => {
                let Some(&u) = up_of.get(&w.conn) else {
                    continue;
                };
                let named = w.frame["params"]["requestId"].to_string();
                let target = |(c, r, _): &(u64, String, usize)| {
                    (*c == u).then(|| rewritten.get(&(u, r.clone()))).flatten()
                };
                // The Client's cancel this one forwards: the one whose request it names.
                if let Some(i) = cancels
                    .iter()
                    .position(|c| target(c).is_some_and(|(d, id, _)| *d == w.conn && *id == named))
                {
                    cancels.remove(i);
                    continue;
                }
                // Otherwise: wrong if it names, unmapped, the Client's id of a pending cancel
                // whose request was written on under another id. (A cancel of a request the
                // proxy never forwarded may pass through as it came: not judged.)
                if let Some(c) = cancels.iter().find(|c| c.1 == named && target(c).is_some()) {
                    let (_, id, fwd) = target(c).expect("found");
                    let mut v = Verdict::valid("P6");
                    v.breach(
                        Status::Invalid,
                        Party::Intermediary,
                        vec!["X1".into()],
                        vec![*fwd, c.2, o.index],
                        f.fault_before(o.index),
                        format!(
                        "the proxy wrote request {} of connection {} on as {id} (op {fwd}); the Client cancelled it (op {}), and the proxy's $/cancel_request toward the Agent named {named} (op {})",
                        c.1, c.0, c.2, o.index
                    ),
                    );
                    return Some(v);
                }
            }
            _ => {}
        }
    }
    None
}

/// A5 and A6 from the Agent's own log: after it withdraws a keyed prompt, every attempt of
/// that key it had received and not answered gets -32800 (unless its connection ended);
/// and `session/cancel` withdraws only prompts received before it.
fn withdrawals_answered(f: &Facts) -> Option<Verdict> {
    let x = Withdrawals::read(f);
    x.withdrawals
        .iter()
        .find_map(|&(w, stop_at)| judge_withdrawal(f, &x, w, stop_at))
}

/// What one pass over a run tells [`withdrawals_answered`]: the prompts and cancels the Agent
/// read, its answers, its withdrawals and decisions, the connections' ends, its boots and
/// crashes, and the stops the store recorded.
#[derive(Default)]
struct Withdrawals<'a> {
    recv: BTreeMap<(u64, String), (usize, Option<String>, String)>,
    answered: BTreeMap<(u64, String), (usize, Option<i64>)>,
    ended: BTreeMap<u64, usize>,
    last_cancel: BTreeMap<String, usize>,
    /// Cluster: the last stop the store recorded per session.
    last_stop: BTreeMap<String, usize>,
    withdrawals: Vec<(&'a Op, Option<usize>)>,
    decided: BTreeMap<(u64, String), usize>,
    boots: Vec<usize>,
    crashes: Vec<usize>,
    /// Cluster: every stop the store recorded, per session, in order.
    stops: BTreeMap<String, Vec<usize>>,
}

impl<'a> Withdrawals<'a> {
    /// Read `f`'s ops once.
    fn read(f: &'a Facts) -> Withdrawals<'a> {
        let mut x = Withdrawals::default();
        for (op, w) in f.ops_with_wire() {
            let val = &op.value;
            match (op.process.as_str(), op.f.as_str(), w) {
                // What the Agent read (its peer is the Client or a proxy).
                (process::NET, op::RECV, Some(w)) if w.from == "client" => {
                    let fr = w.frame;
                    if w.method == Some("session/prompt") {
                        let session = fr["params"]["sessionId"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string();
                        let key = fr["params"]["idempotencyKey"].as_str().map(str::to_string);
                        x.recv.insert(w.key(), (op.index, key, session));
                    } else if w.method == Some("session/cancel") {
                        x.last_cancel.insert(
                            fr["params"]["sessionId"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string(),
                            op.index,
                        );
                    }
                }
                (process::NET, op::SEND, Some(w)) if w.from == "agent" && !w.has_method => {
                    x.answered
                        .entry(w.key())
                        .or_insert((op.index, w.frame["error"]["code"].as_i64()));
                }
                // An answer the network lost after the Agent wrote it (the remote transport's
                // lost exchange, or the break at that very frame; not a request of the Agent's own).
                (process::NEMESIS, logged::LOSE_EXCHANGE | logged::LOSE_FRAME, _) => {
                    if let Some((k, frame)) = lost_answer(op) {
                        let code = frame["error"]["code"].as_i64();
                        x.answered.entry(k).or_insert((op.index, code));
                    }
                }
                // Either end (the later one), a proxy's too: a crashed process logs no end of its
                // own, its peer does; an end may read a last frame before it notices the close; and
                // a node busy awaiting its store reads frames a proxy wrote before it closed.
                (_, op::CONN_END, _) => {
                    x.ended.insert(val["conn"].as_u64().unwrap_or(0), op.index);
                }
                (process::AGENT, op::WITHDRAW, _) => {
                    let stop_at = val["session"]
                        .as_str()
                        .and_then(|s| x.last_stop.get(s))
                        .copied();
                    x.withdrawals.push((op, stop_at));
                }
                (process::AGENT, op::STOP_RECORDED, _) if is_store_op(op) => {
                    let s = val["session"].as_str().unwrap_or_default().to_string();
                    x.last_stop.insert(s.clone(), op.index);
                    x.stops.entry(s).or_default().push(op.index);
                }
                // The Agent's own decisions, logged before the writer sends the answer: a
                // request already rejected or inserted was not pending any more.
                // A held prompt the Agent dropped (O1, or a close) was not pending either: what
                // it owed that one is P7's to judge, under the clause that dropped it.
                (process::AGENT, op::REJECT | op::INSERT | op::DEDUP_HIT | op::DROP_HELD, _) => {
                    let k = (val["conn"].as_u64().unwrap_or(0), val["id"].to_string());
                    x.decided.entry(k).or_insert(op.index);
                }
                (process::AGENT, op::RECOVER, _) => x.boots.push(op.index),
                (process::NEMESIS, op::CRASH, _) if val["host"] == "agent" => {
                    x.crashes.push(op.index)
                }
                _ => {}
            }
        }
        x
    }
}

/// The withdrawal at op `w` (`stop_at`: the stop the store had recorded for its session by
/// then): A6 if it withdrew a prompt received after its stop or cancel, A5 (or A6) if an
/// attempt of its key was pending then and did not get `-32800`.
fn judge_withdrawal(f: &Facts, x: &Withdrawals, w: &Op, stop_at: Option<usize>) -> Option<Verdict> {
    let mut v = Verdict::valid("P6");
    let val = &w.value;
    let session = val["session"].as_str().unwrap_or_default();
    let named = (val["conn"].as_u64().unwrap_or(0), val["id"].to_string());
    if val["by"] == "stop" {
        // Cluster: withdrawn by a stop another node read, once the store recorded it.
        let stop_at = stop_at.unwrap_or(0);
        if x.recv.get(&named).is_some_and(|(r, _, _)| *r > stop_at) {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec!["A6".into()];
            v.witnesses = vec![stop_at, w.index];
            v.message = format!(
                "a session/cancel recorded at the store (op {stop_at}) withdrew prompt {}, received after it",
                super::facts::attempt_name(&named)
            );
            return Some(v);
        }
    }
    if val["by"] == "session/cancel" {
        let cancel_at = x.last_cancel.get(session).copied().unwrap_or(0);
        if x.recv.get(&named).is_some_and(|(r, _, _)| *r > cancel_at) {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec!["A6".into()];
            v.witnesses = vec![cancel_at, w.index];
            v.message = format!(
                "session/cancel withdrew prompt {}, received after the cancel",
                super::facts::attempt_name(&named)
            );
            return Some(v);
        }
    }
    let key = val["key"].as_str()?;
    // Only what this Agent process read: a crash ended everything before it.
    let boot = x
        .boots
        .iter()
        .rev()
        .find(|b| **b < w.index)
        .copied()
        .unwrap_or(0);
    for (attempt, (r, k, s)) in &x.recv {
        if k.as_deref() != Some(key) || s != session || *r > w.index || *r < boot {
            continue;
        }
        let pending_then = x.answered.get(attempt).is_none_or(|(a, _)| *a > w.index)
            && x.decided.get(attempt).is_none_or(|d| *d > w.index);
        if !pending_then {
            continue;
        }
        let ok = match x.answered.get(attempt) {
            // -32800, or an error about the request itself (its session not active on that
            // connection, X2; malformed): never pending as a prompt, so A5 does not cover it
            // (a cluster node that rejects it cannot know another node just withdrew its key).
            Some((_, Some(code))) => {
                use acp_chaos_models::rpc::code as c;
                malformed_request(*code)
                    || [
                        c::REQUEST_CANCELLED,
                        c::RESOURCE_NOT_FOUND,
                        c::INVALID_PARAMS,
                    ]
                    .contains(code)
            }
            // Cluster: a stop one node read reaches the prompts on the other nodes through
            // the store; until the store records it, an insertion there is concurrent with
            // it and its attempts rightly get the messageId (as in the A6 clause below).
            Some((a, None)) => {
                val["by"] == "session/cancel"
                    && attempt.0 != named.0
                    && x.stops.contains_key(session)
                    && x.stops[session]
                        .iter()
                        .find(|s| **s > w.index)
                        .is_none_or(|s| a < s)
            }
            // Unanswered is fine only if the connection or the process ended (a -32800
            // still queued behind a stall dies with it), or the Client had already ended
            // the connection when the Agent read the attempt (a stale frame: no answer can
            // reach anyone).
            None => x.ended.contains_key(&attempt.0) || x.crashes.iter().any(|c| *c > *r),
        };
        if !ok {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec![withdrawal_rule(val["by"].as_str().unwrap_or_default()).into()];
            v.witnesses = vec![*r, w.index];
            v.fault = f.fault_before(w.index);
            let attempt_name = super::facts::attempt_name(attempt);
            v.message = format!(
                "the prompt with key {key:?} was withdrawn (op {}), but its pending attempt {attempt_name} did not get -32800",
                w.index
            );
            return Some(v);
        }
    }
    None
}

/// A6 from the Agent's own log: a `session/cancel` the Agent honoured (its session active on
/// that connection) withdraws every prompt of the session it had held and not yet inserted;
/// none of them is inserted later (from the queue, `mode: held`).
///
/// A cluster's stop is read by one node and reaches the prompts held on the others through the
/// store: from the node's read until the store records a stop for the session
/// (`stop-recorded`) the two are concurrent, and an insertion in between is allowed. One never
/// recorded (no stop reached the store, and the reading node did not crash first) leaves every
/// such insertion a violation.
fn a6_earlier_held(f: &Facts) -> Option<Verdict> {
    let mut s = HeldStops::default();
    for (op, w) in f.ops_with_wire() {
        let val = &op.value;
        match (op.process.as_str(), op.f.as_str(), w) {
            (process::NET, op::CONN_OPEN, _) => {
                if let (Some(c), Some(n)) = (val["conn"].as_u64(), val["seen_by"].as_str()) {
                    s.node_of.insert(c, n.to_string());
                }
            }
            // (No arm below reads the ops `track_active` consumes.)
            _ if track_active(&mut s.active, op) && op.f == op::RECOVER && !is_store_op(op) => {
                s.held.clear();
                s.covered.clear();
            }
            (process::AGENT, op::HOLD, _) => {
                s.held.insert(
                    attempt(val),
                    val["session"].as_str().unwrap_or_default().to_string(),
                );
            }
            (process::AGENT, op::WITHDRAW | op::RELEASE | op::DROP_HELD, _) => {
                s.held.remove(&attempt(val));
            }
            (process::NET, op::RECV, Some(w))
                if matches!(w.from, "client" | "proxy") && w.method == Some("session/cancel") =>
            {
                s.stop_read(op.index, w);
            }
            // The stop reached the store: every stop on its way for this session arrived.
            (process::AGENT, op::STOP_RECORDED, _) if is_store_op(op) => {
                s.stop_recorded(val["session"].as_str().unwrap_or_default());
            }
            // The reading node crashed before its stop reached the store: the stop died with it.
            (process::NEMESIS, op::CRASH, _) => {
                s.node_crashed(val["host_was"].as_str().unwrap_or_default());
            }
            (process::AGENT, op::INSERT, _) if val["mode"] == "held" => {
                let a = attempt(val);
                s.held.remove(&a);
                match s.covered.get(&a) {
                    Some((c, None, _)) => return Some(held_violation(f, &a, *c, op.index, "")),
                    Some((c, Some(_), _)) => s.in_flight.push((a, *c, op.index)),
                    None => {}
                }
            }
            _ => {}
        }
    }
    s.in_flight.first().map(|(a, c, i)| {
        held_violation(
            f,
            a,
            *c,
            *i,
            " on another cluster node, and no stop for the session ever reached the store",
        )
    })
}

fn attempt(v: &Value) -> (u64, String) {
    (v["conn"].as_u64().unwrap_or(0), v["id"].to_string())
}

/// A6 broken: prompt `a`, held when the stop at op `c` arrived, inserted at op `i`.
fn held_violation(f: &Facts, a: &(u64, String), c: usize, i: usize, how: &str) -> Verdict {
    let mut v = Verdict::valid("P6");
    v.breach(
        Status::Invalid,
        Party::Agent,
        vec!["A6".into()],
        vec![c, i],
        f.fault_before(i),
        format!(
            "prompt {} was held when session/cancel arrived (op {c}) and was inserted afterwards{how} (A6: a stop withdraws earlier prompts not yet inserted)",
            super::facts::attempt_name(a)
        ),
    );
    v
}

/// The held prompts and the stops that cover them, as [`a6_earlier_held`] walks the ops.
#[derive(Default)]
struct HeldStops {
    /// Session → the connections it is active on.
    active: BTreeMap<String, BTreeSet<u64>>,
    /// Held prompt → its session.
    held: BTreeMap<(u64, String), String>,
    /// Held prompt → the stop's op, and the reading node while the stop is on its way to the
    /// store (a prompt held on another cluster node), and the session.
    covered: BTreeMap<(u64, String), (usize, Option<String>, String)>,
    /// Inserted while their stop was on its way: (attempt, stop op, insert op).
    in_flight: Vec<((u64, String), usize, usize)>,
    /// Cluster: which node each connection reached.
    node_of: BTreeMap<u64, String>,
}

impl HeldStops {
    /// The Agent read a `session/cancel` at op `at`: on a connection where its session is
    /// active, it covers every prompt of the session held then.
    fn stop_read(&mut self, at: usize, w: &WireFrame) {
        let sid = w.frame["params"]["sessionId"].as_str().unwrap_or_default();
        let conn = w.conn;
        if !self.active.get(sid).is_some_and(|c| c.contains(&conn)) {
            return;
        }
        let reader = self.node_of.get(&conn).filter(|n| n.starts_with("node"));
        for (a, s) in &self.held {
            if s == sid {
                let other = reader.filter(|r| self.node_of.get(&a.0) != Some(*r));
                self.covered
                    .entry(a.clone())
                    .or_insert((at, other.cloned(), sid.to_string()));
            }
        }
    }

    /// The store recorded a stop for `sid`.
    fn stop_recorded(&mut self, sid: &str) {
        for (_, on_way, s) in self.covered.values_mut() {
            if s == sid {
                *on_way = None;
            }
        }
        let covered = &self.covered;
        self.in_flight
            .retain(|(a, _, _)| covered.get(a).is_some_and(|c| c.1.is_some()));
    }

    /// `host` crashed: the stops it read and had not yet passed to the store died with it.
    fn node_crashed(&mut self, host: &str) {
        let dead: Vec<(u64, String)> = self
            .covered
            .iter()
            .filter(|(_, (_, r, _))| r.as_deref() == Some(host))
            .map(|(a, _)| a.clone())
            .collect();
        for a in dead {
            self.covered.remove(&a);
            self.in_flight.retain(|(x, _, _)| *x != a);
        }
    }
}

fn rpc_cancelled() -> Value {
    Value::from(acp_chaos_models::rpc::code::REQUEST_CANCELLED)
}

/// The clause that governs a withdrawal by `by` (the Agent's `withdraw` effect): a
/// `$/cancel_request` (A5: every pending attempt of the key gets `-32800`), a user stop
/// (`session/cancel`, or one recorded at a cluster's store: A6), or the end of the session
/// (`session/close`, delete, archive: A15).
pub(crate) fn withdrawal_rule(by: &str) -> &'static str {
    match by {
        "$/cancel_request" => "A5",
        "session/cancel" | "stop" => "A6",
        _ => "A15",
    }
}
