//! Not properties: what a run covered. [`fault_states`] places every fault that fired in the
//! protocol state it landed in (the coverage map), and [`events`] lists the run's events (for a
//! scenario's `sometimes` guard).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::facts::agent_view;
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

/// For every fault the nemesis fired: (protocol state at that moment, fault kind). The state is
/// read from the history: an adapter history fill under way; a `session/resume` sent and not
/// answered; a prompt inserted and not answered; a prompt held; some prompt answered; else idle.
pub fn fault_states(h: &History) -> Vec<(&'static str, String)> {
    let h = agent_view(h);
    let kinds: BTreeSet<&str> = crate::nemesis::FaultKind::ALL
        .iter()
        .map(|k| k.as_str())
        .collect();
    let mut filling = 0i64;
    let mut resuming: BTreeSet<(u64, String)> = BTreeSet::new();
    let mut unanswered: BTreeSet<(u64, String)> = BTreeSet::new();
    let mut held = 0i64;
    let mut answered = false;
    let mut out = Vec::new();
    for op in &h.ops {
        let v = &op.value;
        let id = |fr: &Value| (v["conn"].as_u64().unwrap_or(0), fr["id"].to_string());
        match (op.process.as_str(), op.f.as_str()) {
            (process::AGENT, op::HISTORY_READ_START) => filling += 1,
            (process::AGENT, op::HISTORY_READ) => filling = (filling - 1).max(0),
            (process::AGENT, op::HOLD) => held += 1,
            (process::AGENT, op::INSERT) => {
                if v["mode"] == "held" {
                    held = (held - 1).max(0);
                }
                unanswered.insert((v["conn"].as_u64().unwrap_or(0), v["id"].to_string()));
            }
            (process::AGENT, op::WITHDRAW | op::DROP_HELD) => held = (held - 1).max(0),
            (process::AGENT, op::RECOVER | op::BOOT) => {
                held = 0;
                filling = 0;
                unanswered.clear();
            }
            (process::NET, op::SEND)
                if v["from"] == "client" && v["frame"]["method"] == "session/resume" =>
            {
                resuming.insert(id(&v["frame"]));
            }
            (process::NET, op::RECV)
                if v["from"] == "agent" && v["frame"].get("method").is_none() =>
            {
                resuming.remove(&id(&v["frame"]));
            }
            (process::NET, op::SEND)
                if v["from"] == "agent" && v["frame"].get("method").is_none() =>
            {
                answered |= unanswered.remove(&id(&v["frame"]));
            }
            (_, op::CONN_END) => {
                let c = v["conn"].as_u64().unwrap_or(0);
                resuming.retain(|k| k.0 != c);
                unanswered.retain(|k| k.0 != c);
            }
            // The op the ledger logs when a fault fires (it names its fault index).
            ("nemesis", f) if kinds.contains(f) && v.get("fault").is_some() => {
                let state = if filling > 0 {
                    "filling-history"
                } else if !resuming.is_empty() {
                    "resuming"
                } else if !unanswered.is_empty() {
                    "inserted-unanswered"
                } else if held > 0 {
                    "held"
                } else if answered {
                    "answered"
                } else {
                    "idle"
                };
                out.push((state, f.to_string()));
            }
            _ => {}
        }
    }
    out
}

/// Events that are one (process, op) each: (process, op name, event).
const PLAIN_EVENTS: &[(&str, &str, &str)] = &[
    ("agent", "dedup-hit", "dedup-hit"),
    ("agent", "wait-held", "wait-held"),
    ("agent", "hold", "held"),
    ("agent", "store-retry", "store-retry"),
    ("user", "close", "closed"),
    ("user", "fork", "forked"),
    ("client", "not-resent", "not-resent"),
    ("client", "resend-not-accepted", "resend-not-accepted"),
    ("client", "surface", "surfaced"),
    ("watcher", "watch", "watched"),
    ("client", "withdrawn", "withdrawn"),
    ("agent", "tool-effect", "tool"),
    ("agent", "permission", "permission"),
    ("client", "raw-sent", "raw-probe"),
];

/// Events of a run, for the scenario's `sometimes` guard.
pub fn events(h: &History) -> BTreeSet<&'static str> {
    let mut e = BTreeSet::new();
    // Cluster: which node each connection reached, then which nodes each submission's
    // attempts reached.
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
    if nodes.values().any(|s| s.len() > 1) {
        e.insert("other-node");
    }
    let h = agent_view(h);
    let mut attempts: BTreeMap<u64, u32> = BTreeMap::new();
    let mut open_ids: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    let mut client_conns = 0;
    for op in &h.ops {
        let has = |o: &Op, p: &str, f: &str| o.process == p && o.f == f;
        if let Some((_, _, ev)) = PLAIN_EVENTS
            .iter()
            .find(|(p, f, _)| op.process == *p && op.f == *f)
        {
            e.insert(ev);
        }
        if op.process == process::NEMESIS
            && !matches!(op.f.as_str(), "heal" | "restart" | "heal-partition")
        {
            e.insert("fault");
        }
        if op.process == process::NET
            && op.f == op::REORDER_END
            && !op.value["overtaken_by"].is_null()
        {
            e.insert("reordered");
        }
        // The same JSON-RPC id awaiting the Agent's answer on two connections at once (legal:
        // ids are per connection, and dedup must go by key, never by id).
        let fr = &op.value["frame"];
        let conn = op.value["conn"].as_u64().unwrap_or(0);
        if op.process == process::NET && fr.get("id").is_some_and(|i| !i.is_null()) {
            let id = fr["id"].to_string();
            match (op.f.as_str(), op.value["from"].as_str(), fr.get("method")) {
                ("recv", Some("client"), Some(_)) => {
                    let conns = open_ids.entry(id).or_default();
                    if conns.iter().any(|c| *c != conn) {
                        e.insert("id-shared");
                    }
                    conns.insert(conn);
                }
                ("send", Some("agent"), None) => {
                    if let Some(c) = open_ids.get_mut(&id) {
                        c.remove(&conn);
                    }
                }
                _ => {}
            }
        }
        if op.f == op::CONN_END {
            for c in open_ids.values_mut() {
                c.remove(&conn);
            }
        }
        if has(op, "client", "attempt") {
            if let Some(s) = op.value["submission"].as_u64() {
                *attempts.entry(s).or_default() += 1;
            }
        }
        if has(op, "agent", "insert") && op.value["mode"] == "steer" {
            e.insert("steer");
        }
        if (has(op, "agent", "recover") || has(op, "agent", "boot"))
            && op.value["boot"].as_u64() > Some(0)
        {
            e.insert("agent-restart");
        }
        if op.f == op::TRUNCATE_TORN_TAIL {
            e.insert("torn-tail");
        }
        if has(op, "client", "boot") && op.value["boot"].as_u64() > Some(0) {
            e.insert("client-restart");
        }
        if has(op, "agent", "reject") && op.value["transient"] == true {
            e.insert("transient-error");
        }
        if has(op, "agent", "insert") && op.value["live_only"] == true {
            e.insert("live-only");
        }
        if has(op, "net", "send")
            && op.value["from"] == "client"
            && op.value["frame"]["method"] == "initialize"
        {
            client_conns += 1;
        }
    }
    if attempts.values().any(|n| *n > 1) {
        e.insert("retry");
    }
    if client_conns > 1 {
        e.insert("reconnect");
    }
    e
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
];
