//! The abstract protocol state of a run at an op: what the Client and the Agent hold and what
//! is in flight, without the times, ids and counters that do not change what can happen next.
//! Exhaustive exploration runs a fault once per (abstract state, fault) and counts the other
//! placements that land in the same pair as pruned; `explore --audit-pruning` runs a sample of
//! those anyway and fails if a verdict differs from its representative's.
//!
//! The state, read from `ops[..at]`:
//! - the user: how many of its actions were made;
//! - per submission: the Client's side (not yet sent, attempted, acknowledged, shown as
//!   failed, withdrawn) and the Agent's (inserted, and whether a restart since lost it; held;
//!   answered from a key record);
//! - the Client's live connections and the requests it awaits, by method;
//! - the Agent's live connections, its (session, connection) activations, running turns and
//!   held prompts;
//! - frames written and not yet read, by sender and method (a response by the method it
//!   answers);
//! - the nemesis's work in force: hosts down, partitions, holds, stalled frames.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::Value;

use crate::history::{is_agent_host, op, process, History, Op};
use crate::nemesis::logged;

/// One submission as the Client and the Agent hold it.
#[derive(Debug, Clone, Default, PartialEq)]
struct Sub {
    /// `p` pending, `a` attempted, `k` acknowledged, `s` surfaced, `w` withdrawn.
    client: char,
    /// Insertions the Agent made for it.
    inserted: u32,
    /// An insertion was lost by a restart.
    lost: bool,
    /// Held behind a running turn.
    held: bool,
    /// Answered from a key record at least once.
    dedup: bool,
}

/// The state scan: feed ops in order, read [`Scan::key`] at any point.
#[derive(Debug, Default)]
pub struct Scan {
    user: u32,
    subs: BTreeMap<u64, Sub>,
    /// (conn, id) of each Client attempt → submission.
    attempts: BTreeMap<(u64, String), u64>,
    /// Connections: who is on them and whether each end still has them.
    client_conns: BTreeSet<u64>,
    agent_conns: BTreeSet<u64>,
    /// Client requests awaiting an answer: (conn, id) → method.
    awaiting: BTreeMap<(u64, String), String>,
    active: BTreeSet<(String, u64)>,
    turns: i64,
    held: i64,
    /// Frames written and not read: (conn, frame text) → (label, the times they were
    /// written, ms).
    in_flight: BTreeMap<(u64, String), (String, Vec<u64>)>,
    /// (conn, id) → method of every request written, to label responses.
    request_method: BTreeMap<(u64, String), String>,
    down: BTreeSet<String>,
    partitions: i64,
    held_links: i64,
    stalls: i64,
    /// Messages inserted, by id → submission, to date losses at a recovery.
    message_sub: BTreeMap<String, u64>,
}

impl Scan {
    /// Take one op into the state.
    pub fn feed(&mut self, o: &Op) {
        let v = &o.value;
        match (o.process.as_str(), o.f.as_str()) {
            (process::USER, f) => {
                self.user += 1;
                if f == op::SUBMIT {
                    if let Some(n) = v["submission"].as_u64() {
                        self.subs.entry(n).or_default().client = 'p';
                    }
                }
            }
            (process::CLIENT, op::ATTEMPT) => {
                if let (Some(c), Some(n)) = (v["conn"].as_u64(), v["submission"].as_u64()) {
                    self.attempts.insert((c, v["id"].to_string()), n);
                    self.sub(n).client = 'a';
                }
            }
            (process::CLIENT, op::ACK) => self.settle(v, 'k'),
            (process::CLIENT, op::SURFACE) => self.settle(v, 's'),
            (process::CLIENT, op::WITHDRAWN) => self.settle(v, 'w'),
            (process::CLIENT, op::CONN_END) => {
                if let Some(c) = v["conn"].as_u64() {
                    self.client_conns.remove(&c);
                    self.awaiting.retain(|k, _| k.0 != c);
                    self.in_flight.retain(|k, _| k.0 != c);
                }
            }
            (p, op::CONN_END) if is_agent_host(p) => {
                if let Some(c) = v["conn"].as_u64() {
                    self.agent_conns.remove(&c);
                    self.active.retain(|a| a.1 != c);
                    self.in_flight.retain(|k, _| k.0 != c);
                }
            }
            (process::NET, op::CONN_OPEN) => {
                if let Some(c) = v["conn"].as_u64() {
                    self.client_conns.insert(c);
                    self.agent_conns.insert(c);
                }
            }
            (process::NET, op::SEND) => self.sent(v, o.time_ms),
            (process::NET, op::RECV) => self.read(v),
            (process::NET, op::STALL_END) => self.stalls -= 1,
            (p, f) if is_agent_host(p) => self.agent(f, v),
            (process::NEMESIS, f) => self.nemesis(f, v),
            _ => {}
        }
    }

    fn sub(&mut self, n: u64) -> &mut Sub {
        self.subs.entry(n).or_insert_with(|| Sub {
            client: 'p',
            ..Sub::default()
        })
    }

    fn settle(&mut self, v: &Value, stage: char) {
        if let Some(n) = v["submission"].as_u64() {
            self.sub(n).client = stage;
        }
    }

    fn attempt_sub(&self, v: &Value) -> Option<u64> {
        let k = (v["conn"].as_u64()?, v["id"].to_string());
        self.attempts.get(&k).copied()
    }

    fn agent(&mut self, f: &str, v: &Value) {
        match f {
            op::INSERT => {
                let sub = self.attempt_sub(v);
                if let Some(n) = sub {
                    let s = self.sub(n);
                    s.inserted += 1;
                    s.held = false;
                    if let Some(m) = v["messageId"].as_str() {
                        self.message_sub.insert(m.to_string(), n);
                    }
                }
                if v["mode"] == "held" {
                    self.held -= 1;
                }
            }
            op::HOLD => {
                self.held += 1;
                if let Some(n) = self.attempt_sub(v) {
                    self.sub(n).held = true;
                }
            }
            op::RELEASE | op::WITHDRAW | op::DROP_HELD => {
                self.held -= 1;
                if let Some(n) = self.attempt_sub(v) {
                    self.sub(n).held = false;
                }
            }
            op::DEDUP_HIT => {
                if let Some(n) = self.attempt_sub(v) {
                    self.sub(n).dedup = true;
                }
            }
            op::TURN_START => self.turns += 1,
            op::TURN_END => self.turns -= 1,
            op::ACTIVATE | op::DEACTIVATE => {
                if let (Some(s), Some(c)) = (v["session"].as_str(), v["conn"].as_u64()) {
                    if f == op::ACTIVATE {
                        self.active.insert((s.to_string(), c));
                    } else {
                        self.active.remove(&(s.to_string(), c));
                    }
                }
            }
            op::RECOVER | op::BOOT => {
                self.turns = 0;
                self.held = 0;
                self.active.clear();
                if let Some(kept) = v["retained"].as_object() {
                    let kept: BTreeSet<&str> = kept
                        .values()
                        .filter_map(Value::as_array)
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    for (m, n) in &self.message_sub {
                        if !kept.contains(m.as_str()) {
                            if let Some(s) = self.subs.get_mut(n) {
                                s.lost = true;
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn nemesis(&mut self, f: &str, v: &Value) {
        match f {
            op::CRASH => {
                if let Some(h) = v["host"].as_str() {
                    self.down.insert(h.to_string());
                }
            }
            op::RESTART => {
                if let Some(h) = v["host"].as_str() {
                    self.down.remove(h);
                }
            }
            op::PARTITION => self.partitions += 1,
            op::HEAL_PARTITION => self.partitions -= 1,
            op::HOLD => self.held_links += 1,
            op::RELEASE => self.held_links -= 1,
            logged::STALL_FRAME if v.get("fault").is_some() => self.stalls += 1,
            op::HEAL => {
                self.partitions = 0;
                self.held_links = 0;
                self.down.clear();
            }
            _ => {}
        }
    }

    fn label(&self, v: &Value) -> String {
        let from = v["from"].as_str().unwrap_or("");
        let who = if from == "client" {
            "c"
        } else if is_agent_host(from) {
            "a"
        } else {
            "x"
        };
        let fr = &v["frame"];
        match fr["method"].as_str() {
            Some(m) => format!("{who}:{m}"),
            None => {
                let k = (v["conn"].as_u64().unwrap_or(0), fr["id"].to_string());
                let m = self
                    .request_method
                    .get(&k)
                    .map(String::as_str)
                    .unwrap_or("?");
                format!("{who}:re:{m}")
            }
        }
    }

    fn sent(&mut self, v: &Value, time_ms: u64) {
        let conn = v["conn"].as_u64().unwrap_or(0);
        let fr = &v["frame"];
        if let (Some(m), Some(id)) = (fr["method"].as_str(), fr.get("id")) {
            self.request_method
                .insert((conn, id.to_string()), m.to_string());
            if v["from"] == "client" {
                self.awaiting.insert((conn, id.to_string()), m.to_string());
            }
        }
        let label = self.label(v);
        let e = self
            .in_flight
            .entry((conn, fr.to_string()))
            .or_insert((label, Vec::new()));
        e.1.push(time_ms);
    }

    fn read(&mut self, v: &Value) {
        let conn = v["conn"].as_u64().unwrap_or(0);
        let fr = &v["frame"];
        let k = (conn, fr.to_string());
        if let Some(e) = self.in_flight.get_mut(&k) {
            // One connection is FIFO: the earliest copy is read first.
            e.1.remove(0);
            if e.1.is_empty() {
                self.in_flight.remove(&k);
            }
        }
        if v["from"] != "client" && fr.get("method").is_none() {
            if let Some(id) = fr.get("id") {
                self.awaiting.remove(&(conn, id.to_string()));
            }
        }
    }

    /// The abstract state as a key (equal keys: the same abstract state).
    pub fn key(&self) -> String {
        let mut k = format!("u{}", self.user);
        for (n, s) in &self.subs {
            let _ = write!(
                k,
                "|s{n}:{}{}{}{}{}",
                s.client,
                s.inserted.min(2),
                if s.lost { "L" } else { "" },
                if s.held { "H" } else { "" },
                if s.dedup { "D" } else { "" }
            );
        }
        let mut awaiting: BTreeMap<&str, u32> = BTreeMap::new();
        for m in self.awaiting.values() {
            *awaiting.entry(m.as_str()).or_default() += 1;
        }
        let _ = write!(
            k,
            "|cc{}|ac{}|act{}|t{}|h{}|aw{awaiting:?}",
            self.client_conns.len(),
            self.agent_conns.len(),
            self.active.len(),
            self.turns,
            self.held
        );
        // Each frame on its way with the time it was written: with a fixed latency, when it
        // arrives.
        let mut flight: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for (label, times) in self.in_flight.values() {
            flight.entry(label.as_str()).or_default().extend(times);
        }
        for times in flight.values_mut() {
            times.sort_unstable();
        }
        let _ = write!(
            k,
            "|f{flight:?}|down{:?}|p{}|hl{}|st{}",
            self.down, self.partitions, self.held_links, self.stalls
        );
        k
    }
}

/// The abstract state before each of the op indices `at` (each `<= h.ops.len()`), keyed by
/// index.
pub fn states_at(h: &History, at: &BTreeSet<usize>) -> BTreeMap<usize, String> {
    let mut out = BTreeMap::new();
    let mut scan = Scan::default();
    let mut want = at.iter().peekable();
    for (i, o) in h.ops.iter().enumerate() {
        while want.peek().is_some_and(|w| **w == i) {
            out.insert(i, scan.key());
            want.next();
        }
        scan.feed(o);
    }
    for w in want {
        out.insert(*w, scan.key());
    }
    out
}

/// The equivalence class of a placement: a fault of shape `shape` (the fault without its
/// occurrence number, and what it lands on) at a place whose abstract protocol state is
/// `protocol` ([`states_at`]) and whose world snapshot is `snapshot`
/// ([`crate::world::snapshot`]: time, timers, every party's memory, the nemesis's work in
/// force). `None` when the place has no snapshot: such a placement is never merged, it runs.
pub fn placement_class(protocol: &str, snapshot: Option<u64>, shape: &str) -> Option<String> {
    Some(format!("{protocol}#{:016x}#{shape}", snapshot?))
}
