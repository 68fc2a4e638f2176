//! A run as a sequence diagram ([`Diagram`]): one participant per host, every frame an arrow
//! from its sender to its receiver (a lost frame a crossed arrow), faults and process events as
//! notes, the verdict's witnesses red and its enabling fault amber. [`Diagram::mermaid`] and
//! [`Diagram::svg`] draw it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::Value;

use super::text::clip;
use crate::checkers::{verdict_line, Verdict};
use crate::history::{is_agent_host, op, process, History, Op};
use crate::nemesis::FaultKind;

/// How an item is highlighted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    /// Plain.
    None,
    /// The verdict's enabling fault (amber).
    Fault,
    /// One of the verdict's witness ops (red).
    Witness,
}

/// One row of a sequence diagram.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A frame from one participant to another (indices into `participants`).
    Arrow {
        /// Sender.
        from: usize,
        /// Receiver.
        to: usize,
        /// Label, without the time.
        label: String,
        /// A response (drawn dotted).
        reply: bool,
        /// Sent and never received (dropped, or in flight when a host died).
        lost: bool,
        /// Simulated ms (at receipt; at sending for a lost frame).
        time_ms: u64,
        /// History op index (the receipt, or the send of a lost frame).
        op: usize,
        /// History op index of the send (equal to `op` for a lost frame or a user action).
        sent: usize,
        /// The last op merged into this row (a run of `session/update` receipts), else `op`.
        last: usize,
        /// Highlight.
        mark: Mark,
    },
    /// A note over one participant or a span of them (`first..=last`).
    Note {
        /// First participant.
        first: usize,
        /// Last participant (same as `first` for one).
        last: usize,
        /// Text, without the time.
        text: String,
        /// Simulated ms.
        time_ms: u64,
        /// History op index ([`NO_OP`] for a note the diagram adds itself).
        op: usize,
        /// Highlight.
        mark: Mark,
        /// A nemesis event (crash, restart, partition, heal, a fault firing).
        nemesis: bool,
    },
}

/// The `op` of a note the diagram adds itself (rows left out by [`Diagram::window`]).
pub const NO_OP: usize = usize::MAX;

impl Item {
    pub(super) fn mark(&self) -> Mark {
        match self {
            Item::Arrow { mark, .. } | Item::Note { mark, .. } => *mark,
        }
    }

    /// The history op numbers this row draws, as the verdict cites them: `#27` for a note or
    /// a lost frame, `#26→27` for a frame (its send, then its receipt), with `…31` when later
    /// receipts were merged into the row; `None` for a note the diagram adds itself.
    pub fn op_tag(&self) -> Option<String> {
        match self {
            Item::Note { op, .. } if *op == NO_OP => None,
            Item::Note { op, .. } => Some(format!("#{op}")),
            Item::Arrow { op, sent, last, .. } => {
                let mut t = if sent == op {
                    format!("#{op}")
                } else {
                    format!("#{sent}→{op}")
                };
                if last != op {
                    t.push_str(&format!("…{last}"));
                }
                Some(t)
            }
        }
    }

    /// The row's label (an arrow) or text (a note), without time or op numbers.
    pub fn text(&self) -> &str {
        match self {
            Item::Arrow { label, .. } => label,
            Item::Note { text, .. } => text,
        }
    }

    /// The history ops the row draws: its send, its receipt and the last receipt merged into
    /// it (none for a note the diagram adds itself).
    pub fn ops(&self) -> Vec<usize> {
        match self {
            Item::Note { op, .. } => Some(*op).filter(|o| *o != NO_OP).into_iter().collect(),
            Item::Arrow { sent, op, last, .. } => vec![*sent, *op, *last],
        }
    }

    /// Simulated ms of the row.
    fn time_ms(&self) -> u64 {
        match self {
            Item::Arrow { time_ms, .. } | Item::Note { time_ms, .. } => *time_ms,
        }
    }

    /// Whether this row draws history op `i` (its send, its receipt, or a receipt merged
    /// into it).
    pub fn draws_op(&self, i: usize) -> bool {
        match self {
            Item::Note { op, .. } => *op == i,
            Item::Arrow { op, sent, last, .. } => i == *sent || (*op..=*last).contains(&i),
        }
    }
}

/// A run as a sequence diagram.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagram {
    /// Host names (`client`, `agent`, `node2`, ...), in drawing order.
    pub participants: Vec<String>,
    /// Rows, in history order.
    pub items: Vec<Item>,
    /// The verdict drawn, as one line (`P1 at-most-once invalid (party agent): ...`).
    pub verdict: Option<String>,
}

/// Hosts in drawing order; only those the history mentions are drawn.
pub(super) const ORDER: &[&str] = &[
    "user", "client", "watcher", "proxy", "agent", "node1", "node2", "node3", "node4", "node5",
    "store",
];

fn short_key(v: &Value) -> String {
    match v {
        Value::String(s) if s.chars().count() > 10 => {
            format!("{}…", s.chars().take(8).collect::<String>())
        }
        Value::String(s) => format!("\"{s}\""),
        Value::Null => "null".into(),
        other => {
            let t = other.to_string();
            if t.chars().count() > 12 {
                format!("{}…", t.chars().take(10).collect::<String>())
            } else {
                t
            }
        }
    }
}

/// A short label for a frame; `method_of` maps a response's id to its request's method.
pub(super) fn frame_label(
    frame: &Value,
    method_of: Option<&str>,
    submission: Option<u64>,
) -> (String, bool) {
    let Some(obj) = frame.as_object() else {
        // Not JSON (a raw probe's truncated frame): the Agent saw a line it could not parse.
        let raw = frame.as_str().unwrap_or("");
        return (format!("malformed frame {}", clip(raw, 24)), false);
    };
    let id = obj.get("id").map(|i| i.to_string());
    if let Some(m) = obj.get("method").and_then(Value::as_str) {
        let p = obj.get("params").unwrap_or(&Value::Null);
        let mut label = match m {
            "session/update" => {
                let u = &p["update"];
                let kind = u["sessionUpdate"].as_str().unwrap_or("?");
                match kind {
                    "user_message" => {
                        format!(
                            "update user_message {}",
                            u["messageId"].as_str().unwrap_or("")
                        )
                    }
                    "state_update" => format!("update state {}", u["state"].as_str().unwrap_or("")),
                    other => format!("update {other}"),
                }
            }
            "session/prompt" => {
                let mut l = "session/prompt".to_string();
                if let Some(s) = submission {
                    let _ = write!(l, " (submission {s})");
                }
                match p.get("idempotencyKey") {
                    Some(k) => {
                        let _ = write!(l, " key {}", short_key(k));
                    }
                    None => l.push_str(" no key"),
                }
                l
            }
            "$/cancel_request" => format!("$/cancel_request of id={}", p["requestId"]),
            other => other.to_string(),
        };
        if let Some(id) = &id {
            label = format!("id={id} {label}");
        }
        return (label, false);
    }
    let id = id.unwrap_or_else(|| "?".into());
    let what = method_of.map(|m| format!(" ({m})")).unwrap_or_default();
    if let Some(e) = obj.get("error") {
        let msg = e["message"].as_str().unwrap_or("");
        return (
            format!("id={id}{what} error {} {}", e["code"], clip(msg, 40)),
            true,
        );
    }
    let r = obj.get("result").unwrap_or(&Value::Null);
    let body = if let Some(m) = r.get("messageId") {
        format!("messageId {}", m.as_str().unwrap_or("?"))
    } else if let Some(s) = r.get("sessionId") {
        format!("sessionId {}", s.as_str().unwrap_or("?"))
    } else if let Some(s) = r.get("stopReason") {
        format!("stopReason {}", s.as_str().unwrap_or("?"))
    } else {
        "ok".into()
    };
    (format!("id={id}{what} {body}"), true)
}

/// A note's text for a non-frame op, or `None` to leave it out of the diagram.
pub(super) fn note_text(op: &Op) -> Option<String> {
    let v = &op.value;
    let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
    let text = match (op.process.as_str(), op.f.as_str()) {
        ("nemesis", _) if v.get("spec").is_some() => format!("fault fires: {}", s("spec")),
        (process::NEMESIS, op::CRASH) => format!("CRASH {}", s("host")),
        (process::NEMESIS, op::RESTART) => format!("RESTART {}", s("host")),
        (process::NEMESIS, op::HEAL) => "heal: the nemesis stops, every partition ends".into(),
        ("nemesis", f) => {
            let detail = [
                ("host", "host"),
                ("between", "between"),
                ("oneway", "one-way"),
            ]
            .iter()
            .filter_map(|(k, name)| v.get(*k).map(|x| format!("{name} {}", compact(x))))
            .collect::<Vec<_>>()
            .join(" ");
            format!("{} {detail}", f.to_uppercase()).trim().to_string()
        }
        (process::WORLD, op::PHASE) => format!("{} phase", s("phase")),
        (process::CLIENT, op::ACK) => {
            format!("ack: submission {} = {}", v["submission"], s("messageId"))
        }
        (process::CLIENT, op::SURFACE) => format!(
            "shown to the user: submission {} {}",
            v["submission"],
            compact_without(v, &["submission"])
        ),
        (process::CLIENT, op::WITHDRAWN) => format!("withdrawn: submission {}", v["submission"]),
        (process::CLIENT, op::NOT_RESENT) => format!("not resent: {}", compact(v)),
        (process::CLIENT, op::SDK_RESEND) => format!("SDK resends {}", compact(v)),
        (process::CLIENT, op::BOOT) if v["boot"].as_u64().unwrap_or(0) > 0 => {
            format!("client restarted, pending {}", compact(&v["pending"]))
        }
        (process::CLIENT, op::CONN_END) => format!("conn {} ended ({})", v["conn"], s("reason")),
        (process::CLIENT, op::GIVE_UP_CONNECTION | op::APP_NEW_SESSION) => {
            format!("{} {}", op.f, compact(v))
        }
        (process::CLIENT, op::PENDING_AT_END)
            if v["submissions"].as_array().is_some_and(|a| !a.is_empty()) =>
        {
            format!("still pending at the end: {}", compact(&v["submissions"]))
        }
        (process::WATCHER, op::WATCH) => format!("watcher: {}", compact(v)),
        (p, f) if is_agent_host(p) => match f {
            "insert" => format!(
                "insert {} ({}) key {}",
                s("messageId"),
                s("mode"),
                short_key(&v["key"])
            ),
            "hold" => format!("hold id={}", v["id"]),
            "release" => format!("release id={}", v["id"]),
            "dedup-hit" => format!("dedup hit: {}", compact_without(v, &["session"])),
            "reject" => format!("reject {}", compact_without(v, &["session"])),
            "tool-effect" => format!("tool effect {}", s("toolCallId")),
            "recover" if v["boot"].as_u64().unwrap_or(0) > 0 || p == "store" => {
                format!("recovered, retained {}", compact(&v["retained"]))
            }
            "boot" if v["boot"].as_u64().unwrap_or(0) > 0 => format!("boot {}", v["boot"]),
            "cancel" | "cancelled" | "stop" | "withdraw" => {
                format!("{f} {}", compact_without(v, &["session"]))
            }
            _ => return None,
        },
        _ => return None,
    };
    Some(text)
}

pub(super) fn compact(v: &Value) -> String {
    clip(&v.to_string(), 60)
}

fn compact_without(v: &Value, skip: &[&str]) -> String {
    match v.as_object() {
        Some(o) => {
            let rest: serde_json::Map<String, Value> = o
                .iter()
                .filter(|(k, _)| !skip.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            compact(&Value::Object(rest))
        }
        None => compact(v),
    }
}

impl Diagram {
    /// Draw history `h`, highlighting `verdict`'s witnesses (red) and its enabling fault
    /// (amber). Frames become arrows (sent → received, matched by connection and content);
    /// `session/update` notifications in a row between the same two hosts merge into one.
    ///
    /// Long on purpose: one pass over the ops, each becoming an arrow (a frame, a run of updates
    /// merged) or a note, in history order.
    pub fn of(h: &History, verdict: Option<&Verdict>) -> Diagram {
        let witnesses: BTreeSet<usize> = verdict
            .map(|v| v.witnesses.iter().copied().collect())
            .unwrap_or_default();
        let fault = verdict.and_then(|v| v.fault);
        let mark_of = |i: usize| {
            if witnesses.contains(&i) {
                Mark::Witness
            } else if fault == Some(i) {
                Mark::Fault
            } else {
                Mark::None
            }
        };
        let (ends, participants) = connections(h);
        let pos = |name: &str| participants.iter().position(|p| p == name);
        let other_end = |conn: u64, from: &str| {
            ends.get(&conn)
                .and_then(|e| e.iter().find(|x| x.as_str() != from).cloned())
        };
        let (recv_of, delivered) = match_frames(h);
        // Requests by (conn, sender, id) → method, to name what a response answers; client
        // attempts by (conn, id) → submission.
        let mut method_of: BTreeMap<(u64, String, String), String> = BTreeMap::new();
        let mut submission_of: BTreeMap<(u64, String), u64> = BTreeMap::new();
        let by_index: BTreeMap<usize, &Op> = h.ops.iter().map(|o| (o.index, o)).collect();
        let mut items: Vec<Item> = Vec::new();
        for op in &h.ops {
            let v = &op.value;
            if op.process == process::CLIENT && op.f == op::ATTEMPT {
                if let (Some(c), Some(s)) = (v["conn"].as_u64(), v["submission"].as_u64()) {
                    submission_of.insert((c, v["id"].to_string()), s);
                }
            }
            // The frame an op draws: a receipt (its send), a send never received, or a frame
            // the nemesis lost before it was sent (`detail` holds it).
            let frame_op: Option<&Value> = match (op.process.as_str(), op.f.as_str()) {
                (process::NET, op::RECV) => recv_of
                    .get(&op.index)
                    .and_then(|s| by_index.get(s))
                    .map(|o| &o.value),
                (process::NET, op::SEND) if !delivered.contains(&op.index) => Some(v),
                ("nemesis", _) if v["detail"]["frame"].is_object() => Some(&v["detail"]),
                _ => None,
            };
            if let Some(sent) = frame_op {
                let by_nemesis = op.process == process::NEMESIS;
                let c = sent["conn"].as_u64().unwrap_or(0);
                let from = sent["from"].as_str().unwrap_or("?").to_string();
                let Some(to) = other_end(c, &from) else {
                    continue;
                };
                let (Some(fi), Some(ti)) = (pos(&from), pos(&to)) else {
                    continue;
                };
                let frame = &sent["frame"];
                let id = frame.get("id").map(|i| i.to_string()).unwrap_or_default();
                if let Some(m) = frame["method"].as_str() {
                    if frame.get("id").is_some() {
                        method_of.insert((c, from.clone(), id.clone()), m.to_string());
                    }
                }
                let asked = method_of
                    .get(&(c, to.clone(), id.clone()))
                    .map(String::as_str);
                let sub = (from == "client")
                    .then(|| submission_of.get(&(c, id.clone())).copied())
                    .flatten();
                let (mut label, reply) = frame_label(frame, asked, sub);
                let lost = op.f == op::SEND || by_nemesis;
                if by_nemesis {
                    let spec = v["spec"].as_str().unwrap_or(&op.f);
                    let how = spec.rsplit_once(" (").map(|(_, h)| h.trim_end_matches(')'));
                    let _ = write!(
                        label,
                        " [{}{}]",
                        op.f,
                        how.map(|h| format!(", {h}")).unwrap_or_default()
                    );
                }
                let send_index = recv_of.get(&op.index).copied().unwrap_or(op.index);
                let mark = mark_of(op.index).max(mark_of(send_index));
                // Merge a run of session/update notifications between the same two hosts.
                if let Some(Item::Arrow {
                    from: f0,
                    to: t0,
                    label: l0,
                    lost: lost0,
                    mark: m0,
                    last: last0,
                    ..
                }) = items.last_mut()
                {
                    if *f0 == fi
                        && *t0 == ti
                        && *lost0 == lost
                        && l0.contains("update ")
                        && label.starts_with("update ")
                    {
                        let more = label.trim_start_matches("update ").to_string();
                        if let Some(n) = l0.find(" +") {
                            let count: usize = l0[n + 2..]
                                .split(' ')
                                .next()
                                .and_then(|x| x.parse().ok())
                                .unwrap_or(1);
                            l0.truncate(n);
                            let _ = write!(l0, " +{} more", count + 1);
                        } else if l0.chars().count() < 48 {
                            let _ = write!(l0, ", {more}");
                        } else {
                            l0.push_str(" +1 more");
                        }
                        *m0 = (*m0).max(mark);
                        *last0 = op.index;
                        continue;
                    }
                }
                items.push(Item::Arrow {
                    from: fi,
                    to: ti,
                    label,
                    reply,
                    lost,
                    time_ms: op.time_ms,
                    op: op.index,
                    sent: send_index,
                    last: op.index,
                    mark,
                });
                continue;
            }
            if op.process == process::NET {
                continue;
            }
            if op.process == process::USER {
                let (Some(u), Some(c)) = (pos("user"), pos("client")) else {
                    continue;
                };
                let label = match op.f.as_str() {
                    "submit" => format!(
                        "submit {}: \"{}\"",
                        v["submission"],
                        clip(v["text"].as_str().unwrap_or(""), 24)
                    ),
                    f => format!("{f} {}", compact_without(v, &[])),
                };
                items.push(Item::Arrow {
                    from: u,
                    to: c,
                    label,
                    reply: false,
                    lost: false,
                    time_ms: op.time_ms,
                    op: op.index,
                    sent: op.index,
                    last: op.index,
                    mark: mark_of(op.index),
                });
                continue;
            }
            let text = match note_text(op) {
                Some(t) => t,
                // A witness is always drawn, whatever it is.
                None if mark_of(op.index) != Mark::None => match v["messageId"].as_str() {
                    Some(m) => format!("{} {m}", op.f),
                    None => format!("{} {}", op.f, compact_without(v, &["session"])),
                },
                None => continue,
            };
            let nemesis = op.process == process::NEMESIS || op.process == process::WORLD;
            let Some((first, last)) = note_span(op, &participants) else {
                continue;
            };
            items.push(Item::Note {
                first,
                last,
                text,
                time_ms: op.time_ms,
                op: op.index,
                mark: mark_of(op.index),
                nemesis,
            });
        }
        let verdict = verdict.map(verdict_line);
        Diagram {
            participants,
            items,
            verdict,
        }
    }
}

/// The participants a note spans (`first..=last`): the whole diagram for the world and a heal,
/// the host a fault hit (else the network from the Client on), the op's own host otherwise;
/// `None` for a host not drawn.
fn note_span(op: &Op, participants: &[String]) -> Option<(usize, usize)> {
    let v = &op.value;
    let pos = |name: &str| participants.iter().position(|p| p == name);
    let span =
        if op.process == process::WORLD || (op.process == process::NEMESIS && op.f == op::HEAL) {
            (0, participants.len().saturating_sub(1))
        } else if op.process == process::NEMESIS {
            // Over the host it hit, else over the whole network.
            let target = v["host"]
                .as_str()
                .map(str::to_string)
                .or_else(|| v["spec"].as_str().and_then(fault_target));
            match target.as_deref().and_then(pos) {
                Some(i) => (i, i),
                None => (
                    pos("client").unwrap_or(0),
                    participants.len().saturating_sub(1),
                ),
            }
        } else {
            match pos(&op.process) {
                Some(i) => (i, i),
                None => return None,
            }
        };
    Some(span)
}

/// Who is on each connection (the host that accepted it and the host that sends on it), and
/// the participants to draw, in drawing order: the hosts the history mentions.
pub(super) fn connections(h: &History) -> (BTreeMap<u64, BTreeSet<String>>, Vec<String>) {
    let mut ends: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    let mut hosts: BTreeSet<String> = BTreeSet::new();
    for op in &h.ops {
        let v = &op.value;
        if op.process == process::NET && op.f == op::CONN_OPEN {
            if let (Some(c), Some(by)) = (v["conn"].as_u64(), v["seen_by"].as_str()) {
                ends.entry(c).or_default().insert(by.to_string());
            }
        }
        if op.process == process::NET && op.f == op::SEND {
            if let (Some(c), Some(by)) = (v["conn"].as_u64(), v["from"].as_str()) {
                ends.entry(c).or_default().insert(by.to_string());
            }
        }
        if op.process == process::USER || note_text(op).is_some() || op.process == process::CLIENT {
            hosts.insert(op.process.clone());
        }
        for k in ["host", "seen_by"] {
            if let Some(x) = v[k].as_str() {
                hosts.insert(x.to_string());
            }
        }
    }
    for e in ends.values() {
        hosts.extend(e.iter().cloned());
    }
    let participants: Vec<String> = ORDER
        .iter()
        .filter(|p| hosts.contains(**p))
        .map(|p| p.to_string())
        .collect();
    (ends, participants)
}

/// Match every receipt to the earliest unmatched send of the same frame on its
/// connection; sends left over were lost.
/// Returns each receipt's send (recv op → send op) and the sends that were received.
fn match_frames(h: &History) -> (BTreeMap<usize, usize>, BTreeSet<usize>) {
    let mut sent: BTreeMap<(u64, String), Vec<usize>> = BTreeMap::new();
    let mut recv_of: BTreeMap<usize, usize> = BTreeMap::new(); // recv op → send op
    let mut delivered: BTreeSet<usize> = BTreeSet::new();
    for op in &h.ops {
        if op.process != process::NET {
            continue;
        }
        let Some(c) = op.value["conn"].as_u64() else {
            continue;
        };
        let body = op.value["frame"].to_string();
        match op.f.as_str() {
            "send" => sent.entry((c, body)).or_default().push(op.index),
            "recv" => {
                if let Some(q) = sent.get_mut(&(c, body)) {
                    if !q.is_empty() {
                        let s = q.remove(0);
                        recv_of.insert(op.index, s);
                        delivered.insert(s);
                    }
                }
            }
            _ => {}
        }
    }
    (recv_of, delivered)
}

/// The host a fault's spec line names (`crash-agent ...` → `agent`), if any.
fn fault_target(spec: &str) -> Option<String> {
    let host = FaultKind::named(spec.split_whitespace().next()?)?.host()?;
    Some(host.to_string())
}

pub(super) fn title(p: &str) -> String {
    match p {
        "user" => "User".into(),
        "client" => "Client".into(),
        "watcher" => "Watcher (2nd Client)".into(),
        "proxy" => "Proxy".into(),
        "agent" => "Agent".into(),
        "store" => "Store".into(),
        n => n.replacen("node", "Node ", 1),
    }
}

impl Diagram {
    /// Keep at most `max` rows around the highlighted ones (from `before` rows ahead of the
    /// first highlight), so a long unshrunk run still draws (Mermaid refuses very large
    /// diagrams). Cut rows are counted in a note at each end.
    pub fn window(mut self, max: usize, before: usize) -> Diagram {
        if self.items.len() <= max {
            return self;
        }
        let first = self
            .items
            .iter()
            .position(|i| i.mark() != Mark::None)
            .unwrap_or(0);
        let start = first.saturating_sub(before).min(self.items.len() - max);
        let end = start + max;
        let (head, tail) = (start, self.items.len() - end);
        let last = self.participants.len().saturating_sub(1);
        let note = |n: usize, at: &Item, what: &str| Item::Note {
            first: 0,
            last,
            text: format!("… {n} {what} rows not drawn (see history.jsonl)"),
            time_ms: at.time_ms(),
            op: NO_OP,
            mark: Mark::None,
            nemesis: false,
        };
        let mut items = Vec::with_capacity(max + 2);
        if head > 0 {
            items.push(note(head, &self.items[start], "earlier"));
        }
        items.extend(self.items[start..end].iter().cloned());
        if tail > 0 {
            items.push(note(tail, &self.items[end - 1], "later"));
        }
        self.items = items;
        self
    }
}

impl Diagram {
    /// Keep only the rows that draw one of the ops `named` (highlighted as witnesses), each gap
    /// between them one note counting the rows left out: the diagram of a statement that
    /// names its ops (a findings witness), however long its run.
    pub fn only(mut self, named: &std::collections::BTreeSet<usize>) -> Diagram {
        let last = self.participants.len().saturating_sub(1);
        let note = |n: usize, time_ms: u64| Item::Note {
            first: 0,
            last,
            text: format!("… {n} {} not drawn", if n == 1 { "row" } else { "rows" }),
            time_ms,
            op: NO_OP,
            mark: Mark::None,
            nemesis: false,
        };
        let mut items = Vec::new();
        let mut skipped = 0;
        let mut skipped_at = 0;
        for it in std::mem::take(&mut self.items) {
            let keep = named.iter().any(|i| it.draws_op(*i));
            let time_ms = it.time_ms();
            if !keep {
                if skipped == 0 {
                    skipped_at = time_ms;
                }
                skipped += 1;
                continue;
            }
            if skipped > 0 {
                items.push(note(skipped, skipped_at));
                skipped = 0;
            }
            let mut it = it;
            match &mut it {
                Item::Arrow { mark, .. } | Item::Note { mark, .. } => *mark = Mark::Witness,
            }
            items.push(it);
        }
        if skipped > 0 {
            items.push(note(skipped, skipped_at));
        }
        self.items = items;
        self
    }
}

impl Diagram {
    /// Fold what the verdict does not touch: in a diagram of more than [`FOLD_ROWS_MIN`] rows,
    /// keep the first `context` rows (the set-up), every highlighted row (a witness, the
    /// enabling fault), every nemesis note (a crash, a partition, a heal), and `context` rows
    /// on each side of each of them; each run of other rows becomes one note counting them
    /// and naming their op range. A shorter diagram is returned as it is.
    pub fn fold(mut self, context: usize) -> Diagram {
        let n = self.items.len();
        if n <= FOLD_ROWS_MIN {
            return self;
        }
        let mut keep = vec![false; n];
        for (i, it) in self.items.iter().enumerate() {
            keep[i] |= i < context;
            let anchor = it.mark() != Mark::None || matches!(it, Item::Note { nemesis: true, .. });
            if anchor {
                let (from, to) = (i.saturating_sub(context), (i + context).min(n - 1));
                keep[from..=to].iter_mut().for_each(|k| *k = true);
            }
        }
        let last = self.participants.len().saturating_sub(1);
        let mut items = Vec::with_capacity(n);
        let mut folded: Vec<Item> = Vec::new();
        let flush = |folded: &mut Vec<Item>, items: &mut Vec<Item>| {
            // One row is drawn as it is: a note in its place would save nothing.
            if folded.len() < 2 {
                items.append(folded);
                return;
            }
            let ops: Vec<usize> = folded.iter().flat_map(Item::ops).collect();
            let range = match (ops.iter().min(), ops.iter().max()) {
                (Some(a), Some(b)) => format!("; their ops lie between {a} and {b}"),
                _ => String::new(),
            };
            let count = folded.len();
            items.push(Item::Note {
                first: 0,
                last,
                text: format!(
                    "… {count} rows folded, none a witness or a fault{range} (see history.jsonl)"
                ),
                time_ms: folded[0].time_ms(),
                op: NO_OP,
                mark: Mark::None,
                nemesis: false,
            });
            folded.clear();
        };
        for (it, k) in std::mem::take(&mut self.items).into_iter().zip(keep) {
            if k {
                flush(&mut folded, &mut items);
                items.push(it);
            } else {
                folded.push(it);
            }
        }
        flush(&mut folded, &mut items);
        self.items = items;
        self
    }
}

/// Rows above which a counterexample diagram folds what its verdict does not touch
/// ([`Diagram::fold`]).
pub const FOLD_ROWS_MIN: usize = 80;

/// Rows a counterexample diagram keeps (see [`Diagram::window`]).
pub const DIAGRAM_ROWS_MAX: usize = 300;
