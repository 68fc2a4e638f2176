//! Counterexamples people can read: a run drawn as a sequence diagram, and the report pages.
//!
//! - [`Diagram::of`] turns a [`History`] and the [`Verdict`] it broke into a sequence diagram:
//!   one participant per host (user, client, watcher, proxy, agent or cluster nodes, store);
//!   every frame an arrow from its sender to its receiver (a frame sent and never received is a
//!   lost arrow, `-x`); crashes, restarts, partitions, heals and every fault that fired as
//!   notes; the verdict's witness ops highlighted red and its enabling fault amber.
//! - [`Diagram::mermaid`] writes it as a Mermaid `sequenceDiagram` (GitHub and most Markdown
//!   viewers draw it); [`Diagram::svg`] draws the same diagram as a self-contained SVG.
//! - [`counterexample_md`] and [`counterexample_html`] are a counterexample folder's
//!   `report.md` and `report.html` (no network: the SVG is inline). [`summary_md`] and
//!   [`junit_xml`] are a campaign's `summary.md` and `junit.xml`.
//!
//! Rule text is quoted from `spec/RULES.md`, compiled in ([`rule_text`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::Value;

use crate::checkers::{Status, Verdict, CHECKERS};
use crate::history::{is_agent_host, History, Op};

/// `spec/RULES.md`, compiled in so a report can quote any rule.
pub const RULES_MD: &str = include_str!("../../spec/RULES.md");

/// The text of rule `id` (`A7`, `K3`, `P1`, ...) from RULES.md: a `- **ID** ...` item with its
/// continuation lines, or a row of the properties table. `None` for ids it does not define
/// (P13 and P14 are ours and live in the README).
pub fn rule_text(id: &str) -> Option<String> {
    let item = format!("- **{id}**");
    let row = format!("| {id} ");
    let mut lines = RULES_MD.lines();
    while let Some(l) = lines.next() {
        if let Some(rest) = l.strip_prefix(&item) {
            let mut text = rest.trim().to_string();
            for more in lines.by_ref() {
                if !more.starts_with("  ") {
                    break;
                }
                text.push(' ');
                text.push_str(more.trim());
            }
            return Some(text);
        }
        if let Some(rest) = l.strip_prefix(&row) {
            let cells: Vec<&str> = rest.split('|').map(str::trim).collect();
            return Some(format!(
                "{}: {}",
                cells.first().copied().unwrap_or(""),
                cells.get(1).copied().unwrap_or("")
            ));
        }
    }
    None
}

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
        /// History op index.
        op: usize,
        /// Highlight.
        mark: Mark,
        /// A nemesis event (crash, restart, partition, heal, a fault firing).
        nemesis: bool,
    },
}

impl Item {
    fn mark(&self) -> Mark {
        match self {
            Item::Arrow { mark, .. } | Item::Note { mark, .. } => *mark,
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
const ORDER: &[&str] = &[
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

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() > n {
        format!(
            "{}…",
            s.chars().take(n.saturating_sub(1)).collect::<String>()
        )
    } else {
        s.to_string()
    }
}

/// A short label for a frame; `method_of` maps a response's id to its request's method.
fn frame_label(frame: &Value, method_of: Option<&str>, submission: Option<u64>) -> (String, bool) {
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
fn note_text(op: &Op) -> Option<String> {
    let v = &op.value;
    let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
    let text = match (op.process.as_str(), op.f.as_str()) {
        ("nemesis", _) if v.get("spec").is_some() => format!("fault fires: {}", s("spec")),
        ("nemesis", "crash") => format!("CRASH {}", s("host")),
        ("nemesis", "restart") => format!("RESTART {}", s("host")),
        ("nemesis", "heal") => "heal: the nemesis stops, every partition ends".into(),
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
        ("world", "phase") => format!("{} phase", s("phase")),
        ("client", "ack") => format!("ack: submission {} = {}", v["submission"], s("messageId")),
        ("client", "surface") => format!(
            "shown to the user: submission {} {}",
            v["submission"],
            compact_without(v, &["submission"])
        ),
        ("client", "withdrawn") => format!("withdrawn: submission {}", v["submission"]),
        ("client", "not-resent") => format!("not resent: {}", compact(v)),
        ("client", "sdk-resend") => format!("SDK resends {}", compact(v)),
        ("client", "boot") if v["boot"].as_u64().unwrap_or(0) > 0 => {
            format!("client restarted, pending {}", compact(&v["pending"]))
        }
        ("client", "conn-end") => format!("conn {} ended ({})", v["conn"], s("reason")),
        ("client", "give-up-connection" | "app-new-session") => {
            format!("{} {}", op.f, compact(v))
        }
        ("client", "pending-at-end")
            if v["submissions"].as_array().is_some_and(|a| !a.is_empty()) =>
        {
            format!("still pending at the end: {}", compact(&v["submissions"]))
        }
        ("watcher", "watch") => format!("watcher: {}", compact(v)),
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

fn compact(v: &Value) -> String {
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
        // Who is on each connection: the host that accepted it and the host that sends on it.
        let mut ends: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
        let mut hosts: BTreeSet<String> = BTreeSet::new();
        for op in &h.ops {
            let v = &op.value;
            if op.process == "net" && op.f == "conn-open" {
                if let (Some(c), Some(by)) = (v["conn"].as_u64(), v["seen_by"].as_str()) {
                    ends.entry(c).or_default().insert(by.to_string());
                }
            }
            if op.process == "net" && op.f == "send" {
                if let (Some(c), Some(by)) = (v["conn"].as_u64(), v["from"].as_str()) {
                    ends.entry(c).or_default().insert(by.to_string());
                }
            }
            if op.process == "user" || note_text(op).is_some() || op.process == "client" {
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
        let pos = |name: &str| participants.iter().position(|p| p == name);
        let other_end = |conn: u64, from: &str| {
            ends.get(&conn)
                .and_then(|e| e.iter().find(|x| x.as_str() != from).cloned())
        };
        // Match every receipt to the earliest unmatched send of the same frame on its
        // connection; sends left over were lost.
        let mut sent: BTreeMap<(u64, String), Vec<usize>> = BTreeMap::new();
        let mut recv_of: BTreeMap<usize, usize> = BTreeMap::new(); // recv op → send op
        let mut delivered: BTreeSet<usize> = BTreeSet::new();
        for op in &h.ops {
            if op.process != "net" {
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
        // Requests by (conn, sender, id) → method, to name what a response answers; client
        // attempts by (conn, id) → submission.
        let mut method_of: BTreeMap<(u64, String, String), String> = BTreeMap::new();
        let mut submission_of: BTreeMap<(u64, String), u64> = BTreeMap::new();
        let by_index: BTreeMap<usize, &Op> = h.ops.iter().map(|o| (o.index, o)).collect();
        let mut items: Vec<Item> = Vec::new();
        for op in &h.ops {
            let v = &op.value;
            if op.process == "client" && op.f == "attempt" {
                if let (Some(c), Some(s)) = (v["conn"].as_u64(), v["submission"].as_u64()) {
                    submission_of.insert((c, v["id"].to_string()), s);
                }
            }
            // The frame an op draws: a receipt (its send), a send never received, or a frame
            // the nemesis lost before it was sent (`detail` holds it).
            let frame_op: Option<&Value> = match (op.process.as_str(), op.f.as_str()) {
                ("net", "recv") => recv_of
                    .get(&op.index)
                    .and_then(|s| by_index.get(s))
                    .map(|o| &o.value),
                ("net", "send") if !delivered.contains(&op.index) => Some(v),
                ("nemesis", _) if v["detail"]["frame"].is_object() => Some(&v["detail"]),
                _ => None,
            };
            if let Some(sent) = frame_op {
                let by_nemesis = op.process == "nemesis";
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
                let lost = op.f == "send" || by_nemesis;
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
                    mark,
                });
                continue;
            }
            if op.process == "net" {
                continue;
            }
            if op.process == "user" {
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
            let nemesis = op.process == "nemesis" || op.process == "world";
            let (first, last) =
                if op.process == "world" || (op.process == "nemesis" && op.f == "heal") {
                    (0, participants.len().saturating_sub(1))
                } else if op.process == "nemesis" {
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
                        None => continue,
                    }
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

    /// The diagram as Mermaid `sequenceDiagram` source (no fences). Highlighted rows sit in a
    /// `rect` block: red for witnesses, amber for the enabling fault.
    pub fn mermaid(&self) -> String {
        let mut out = String::from("sequenceDiagram\n");
        for p in &self.participants {
            let _ = writeln!(out, "    participant {p} as {}", title(p));
        }
        let id = |i: usize| self.participants[i].as_str();
        // Consecutive rows with the same highlight share one `rect` block.
        let mut open = Mark::None;
        for it in &self.items {
            if it.mark() != open {
                if open != Mark::None {
                    out.push_str("    end\n");
                }
                match it.mark() {
                    Mark::Witness => out.push_str("    rect rgb(255, 205, 210)\n"),
                    Mark::Fault => out.push_str("    rect rgb(255, 236, 179)\n"),
                    Mark::None => {}
                }
                open = it.mark();
            }
            match it {
                Item::Arrow {
                    from,
                    to,
                    label,
                    reply,
                    lost,
                    time_ms,
                    mark,
                    ..
                } => {
                    let arrow = match (reply, lost) {
                        (false, false) => "->>",
                        (true, false) => "-->>",
                        (false, true) => "-x",
                        (true, true) => "--x",
                    };
                    let lost_tag = if *lost { " LOST" } else { "" };
                    let star = if *mark == Mark::Witness { "⚠ " } else { "" };
                    let _ = writeln!(
                        out,
                        "    {}{arrow}{}: {star}{time_ms}ms {}{lost_tag}",
                        id(*from),
                        id(*to),
                        mermaid_escape(label)
                    );
                }
                Item::Note {
                    first,
                    last,
                    text,
                    time_ms,
                    mark,
                    ..
                } => {
                    let over = if first == last {
                        id(*first).to_string()
                    } else {
                        format!("{},{}", id(*first), id(*last))
                    };
                    let star = if *mark == Mark::Witness { "⚠ " } else { "" };
                    let _ = writeln!(
                        out,
                        "    Note over {over}: {}{star}{time_ms}ms {}",
                        wrap_tag(text),
                        mermaid_escape(text)
                    );
                }
            }
        }
        if open != Mark::None {
            out.push_str("    end\n");
        }
        if let Some(v) = &self.verdict {
            let last = self.participants.len().saturating_sub(1);
            let _ = writeln!(
                out,
                "    rect rgb(255, 205, 210)\n    Note over {},{}: {}{}\n    end",
                id(0),
                id(last),
                wrap_tag(v),
                mermaid_escape(v)
            );
        }
        out
    }

    /// The diagram as a standalone SVG document (inline styles, no fonts or scripts fetched).
    pub fn svg(&self) -> String {
        const COL: f64 = 290.0;
        const LEFT: f64 = 150.0;
        const TOP: f64 = 56.0;
        const LINE: f64 = 14.0;
        let n = self.participants.len().max(1);
        let width = LEFT * 2.0 + COL * (n as f64 - 1.0);
        let x = |i: usize| LEFT + COL * i as f64;
        // Lay out rows first: a row is as tall as its wrapped text.
        let mut rows: Vec<(f64, f64, Vec<String>)> = Vec::new(); // (y, height, lines)
        let mut y = TOP + 16.0;
        for it in &self.items {
            let (text, chars) = match it {
                Item::Arrow {
                    from,
                    to,
                    label,
                    time_ms,
                    lost,
                    ..
                } => {
                    let span = (*from as f64 - *to as f64).abs().max(1.0);
                    let lost = if *lost { " LOST" } else { "" };
                    (
                        format!("{time_ms}ms {label}{lost}"),
                        (span * COL / 6.6) as usize,
                    )
                }
                Item::Note {
                    first,
                    last,
                    text,
                    time_ms,
                    ..
                } => {
                    let span = (*last - *first) as f64 + 1.0;
                    (
                        format!("{time_ms}ms {text}"),
                        ((span * COL - 40.0) / 6.6) as usize,
                    )
                }
            };
            let lines = wrap(&text, chars.max(16));
            let h = LINE * lines.len() as f64 + 18.0;
            rows.push((y, h, lines));
            y += h;
        }
        let verdict_lines = self
            .verdict
            .as_deref()
            .map(|v| wrap(v, ((width - 40.0) / 6.6) as usize))
            .unwrap_or_default();
        let height = y + 24.0 + LINE * verdict_lines.len() as f64 + 20.0;
        let mut s = String::new();
        let _ = write!(
            s,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="ui-monospace, Menlo, Consolas, monospace" font-size="11">
<defs><marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#333"/></marker></defs>
<rect width="100%" height="100%" fill="#fff"/>
"##
        );
        for (i, p) in self.participants.iter().enumerate() {
            let _ = write!(
                s,
                r##"<line x1="{0:.0}" y1="{1:.0}" x2="{0:.0}" y2="{2:.0}" stroke="#999" stroke-dasharray="4 3"/>
<rect x="{3:.0}" y="12" width="180" height="28" rx="4" fill="#eef3fb" stroke="#5b7db1"/><text x="{0:.0}" y="30" text-anchor="middle" font-weight="bold">{4}</text>
"##,
                x(i),
                TOP - 16.0,
                y + 8.0,
                x(i) - 90.0,
                xml_escape(&title(p))
            );
        }
        for (it, (ry, rh, lines)) in self.items.iter().zip(&rows) {
            let fill = match it.mark() {
                Mark::Witness => Some("#ffcdd2"),
                Mark::Fault => Some("#ffecb3"),
                Mark::None => None,
            };
            if let Some(f) = fill {
                let _ = writeln!(
                    s,
                    r#"<rect x="4" y="{:.0}" width="{:.0}" height="{rh:.0}" fill="{f}"/>"#,
                    ry,
                    width - 8.0
                );
            }
            match it {
                Item::Arrow {
                    from,
                    to,
                    reply,
                    lost,
                    ..
                } => {
                    let (x1, x2) = (x(*from), x(*to));
                    let ly = ry + rh - 6.0;
                    let mid = (x1 + x2) / 2.0;
                    for (k, l) in lines.iter().enumerate() {
                        let _ = writeln!(
                            s,
                            // A white outline keeps a label readable over a lifeline it crosses.
                            r##"<text x="{mid:.0}" y="{:.0}" text-anchor="middle" paint-order="stroke" stroke="#fff" stroke-width="3">{}</text>"##,
                            ry + 15.0 + LINE * k as f64,
                            xml_escape(l)
                        );
                    }
                    let dash = if *reply {
                        r#" stroke-dasharray="5 3""#
                    } else {
                        ""
                    };
                    if *lost {
                        // Drawn two thirds of the way, ending in a cross.
                        let xe = x1 + (x2 - x1) * 0.66;
                        let _ = writeln!(
                            s,
                            r##"<line x1="{x1:.0}" y1="{ly:.0}" x2="{xe:.0}" y2="{ly:.0}" stroke="#c62828" stroke-width="1.5"{dash}/><path d="M{:.0},{:.0} l10,10 M{:.0},{:.0} l10,-10" stroke="#c62828" stroke-width="2"/>"##,
                            xe - 5.0,
                            ly - 5.0,
                            xe - 5.0,
                            ly + 5.0
                        );
                    } else {
                        let _ = writeln!(
                            s,
                            r##"<line x1="{x1:.0}" y1="{ly:.0}" x2="{x2:.0}" y2="{ly:.0}" stroke="#333" stroke-width="1.2" marker-end="url(#head)"{dash}/>"##
                        );
                    }
                }
                Item::Note {
                    first,
                    last,
                    nemesis,
                    ..
                } => {
                    let (x1, x2) = (x(*first) - COL / 2.0 + 8.0, x(*last) + COL / 2.0 - 8.0);
                    let (bg, border) = if *nemesis {
                        ("#fff3e0", "#e65100")
                    } else {
                        ("#fffde7", "#b8a200")
                    };
                    let _ = writeln!(
                        s,
                        r#"<rect x="{x1:.0}" y="{:.0}" width="{:.0}" height="{:.0}" rx="3" fill="{bg}" stroke="{border}"/>"#,
                        ry + 3.0,
                        x2 - x1,
                        rh - 6.0
                    );
                    for (k, l) in lines.iter().enumerate() {
                        let _ = writeln!(
                            s,
                            r#"<text x="{:.0}" y="{:.0}" text-anchor="middle">{}</text>"#,
                            (x1 + x2) / 2.0,
                            ry + 17.0 + LINE * k as f64,
                            xml_escape(l)
                        );
                    }
                }
            }
        }
        if !verdict_lines.is_empty() {
            let vy = y + 16.0;
            let _ = writeln!(
                s,
                r##"<rect x="8" y="{vy:.0}" width="{:.0}" height="{:.0}" rx="4" fill="#ffcdd2" stroke="#c62828"/>"##,
                width - 16.0,
                LINE * verdict_lines.len() as f64 + 12.0
            );
            for (k, l) in verdict_lines.iter().enumerate() {
                let _ = writeln!(
                    s,
                    r#"<text x="20" y="{:.0}" font-weight="bold">{}</text>"#,
                    vy + 18.0 + LINE * k as f64,
                    xml_escape(l)
                );
            }
        }
        s.push_str("</svg>\n");
        s
    }
}

/// The host a fault's spec line names (`crash-agent ...` → `agent`), if any.
fn fault_target(spec: &str) -> Option<String> {
    let kind = spec.split_whitespace().next()?;
    let host = match kind {
        "crash-agent" | "transient-error" => "agent",
        "crash-store" | "partition-store" => "store",
        "crash-proxy" => "proxy",
        "restart-client" | "crash-client" => "client",
        _ => return None,
    };
    Some(host.to_string())
}

fn title(p: &str) -> String {
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

/// One line naming a verdict: `P1 at-most-once invalid (party agent, rules A1 A4): ...`.
pub fn verdict_line(v: &Verdict) -> String {
    let title = CHECKERS
        .iter()
        .find(|c| c.property == v.property)
        .map(|c| c.title)
        .unwrap_or("");
    let party = v
        .party
        .map(|p| format!("party {}, ", format!("{p:?}").to_lowercase()))
        .unwrap_or_default();
    format!(
        "{} {title} {} ({party}rules {}): {}",
        v.property,
        Status::as_str(v.status),
        v.rules.join(" "),
        v.message
    )
}

/// Mermaid draws a note as wide as the participants it spans and lets longer text spill over
/// the edge; `wrap:` makes it wrap instead (short notes stay on one line).
fn wrap_tag(text: &str) -> &'static str {
    if text.chars().count() >= 60 {
        "wrap: "
    } else {
        ""
    }
}

/// Mermaid message text: `#` starts an entity code and `;` may end a statement, so both are
/// written as entity codes; newlines become spaces.
fn mermaid_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Text for XML and HTML bodies and attributes.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even escaped.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let wl = word.chars().count();
        let cl = cur.chars().count();
        if cl > 0 && cl + 1 + wl > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        // A word longer than the line is cut, after a `,` `:` or `-` where one is near the end
        // (JSON and UUIDs break there), else at the width.
        let mut w = word.to_string();
        while w.chars().count() > width {
            let chars: Vec<char> = w.chars().collect();
            let cut = (width / 2..width)
                .rev()
                .find(|&i| matches!(chars[i - 1], ',' | ':' | '-'))
                .unwrap_or(width);
            let head: String = chars[..cut].iter().collect();
            let tail: String = chars[cut..].iter().collect();
            if !cur.is_empty() {
                lines.push(std::mem::take(&mut cur));
            }
            lines.push(head);
            w = tail;
        }
        cur.push_str(&w);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// What a counterexample page says about the run it draws.
#[derive(Debug, Clone)]
pub struct Counterexample<'a> {
    /// Scenario name.
    pub scenario: &'a str,
    /// The verdict kept (of the drawn run).
    pub verdict: &'a Verdict,
    /// The original run's repro line.
    pub repro: &'a str,
    /// The shrunk schedule's replay line and its size line, if it was shrunk.
    pub shrunk: Option<(String, String)>,
    /// The schedule file's text, if any (shown in full).
    pub schedule: Option<&'a str>,
    /// The drawn run.
    pub history: &'a History,
}

fn rules_quoted(v: &Verdict) -> Vec<(String, String)> {
    let mut ids: Vec<String> = vec![v.property.clone()];
    ids.extend(v.rules.iter().filter(|r| **r != v.property).cloned());
    ids.iter()
        .map(|id| {
            let text = rule_text(id).unwrap_or_else(|| {
                CHECKERS
                    .iter()
                    .find(|c| c.property == id)
                    .map(|c| format!("{} (ours; see the README's Properties)", c.title))
                    .unwrap_or_else(|| "(not in RULES.md)".into())
            });
            (id.clone(), text)
        })
        .collect()
}

/// `report.md`: the verdict, the rules it breaks quoted from RULES.md, how to rerun it, and the
/// Mermaid sequence diagram of the drawn run.
pub fn counterexample_md(c: &Counterexample<'_>) -> String {
    let d = Diagram::of(c.history, Some(c.verdict)).window(DIAGRAM_ROWS_MAX, 60);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {} {}: {}\n",
        c.verdict.property,
        Status::as_str(c.verdict.status),
        c.scenario
    );
    let _ = writeln!(s, "**{}**\n", verdict_line(c.verdict));
    s.push_str("## The rules\n\n");
    for (id, text) in rules_quoted(c.verdict) {
        let _ = writeln!(s, "> **{id}** {text}\n");
    }
    s.push_str("## Reproduce\n\n```sh\n");
    let _ = writeln!(s, "{}", c.repro);
    if let Some((replay, size)) = &c.shrunk {
        let _ = writeln!(s, "{replay}   # shrunk: {size}");
    }
    s.push_str("```\n\n");
    let drawn = if c.shrunk.is_some() {
        "the shrunk run"
    } else {
        "the run"
    };
    let _ = writeln!(
        s,
        "## Sequence diagram ({drawn}, {} ops, hash {})\n",
        c.history.ops.len(),
        c.history.hash()
    );
    s.push_str(
        "Red rows are the verdict's witnesses, amber its enabling fault; `-x` arrows are frames \
         sent and never received. Times are simulated ms.\n\n```mermaid\n",
    );
    s.push_str(&d.mermaid());
    s.push_str("```\n");
    if let Some(sched) = c.schedule {
        s.push_str("\n## Schedule\n\n```toml\n");
        s.push_str(sched);
        if !sched.ends_with('\n') {
            s.push('\n');
        }
        s.push_str("```\n");
    }
    s
}

/// `report.html`: the same page, self-contained (inline SVG, inline CSS, nothing fetched).
pub fn counterexample_html(c: &Counterexample<'_>) -> String {
    let d = Diagram::of(c.history, Some(c.verdict)).window(DIAGRAM_ROWS_MAX, 60);
    let mut s = String::new();
    let _ = write!(
        s,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} {} {}</title>\n<style>body{{font-family:system-ui,sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;color:#222}}blockquote{{border-left:4px solid #c62828;margin:.5em 0;padding:.2em 1em;background:#fafafa}}pre{{background:#f4f4f4;padding:.8em;overflow:auto}}.verdict{{background:#ffcdd2;padding:.6em 1em;border-radius:4px}}.diagram{{overflow:auto;border:1px solid #ddd}}</style></head><body>\n",
        xml_escape(&c.verdict.property),
        Status::as_str(c.verdict.status),
        xml_escape(c.scenario)
    );
    let _ = writeln!(
        s,
        "<h1>{} {}: {}</h1>\n<p class=\"verdict\"><b>{}</b></p>\n<h2>The rules</h2>",
        xml_escape(&c.verdict.property),
        Status::as_str(c.verdict.status),
        xml_escape(c.scenario),
        xml_escape(&verdict_line(c.verdict))
    );
    for (id, text) in rules_quoted(c.verdict) {
        let _ = writeln!(
            s,
            "<blockquote><b>{}</b> {}</blockquote>",
            xml_escape(&id),
            xml_escape(&text)
        );
    }
    let _ = writeln!(s, "<h2>Reproduce</h2>\n<pre>{}", xml_escape(c.repro));
    if let Some((replay, size)) = &c.shrunk {
        let _ = write!(
            s,
            "\n{}   # shrunk: {}",
            xml_escape(replay),
            xml_escape(size)
        );
    }
    s.push_str("</pre>\n");
    let drawn = if c.shrunk.is_some() {
        "the shrunk run"
    } else {
        "the run"
    };
    let _ = writeln!(
        s,
        "<h2>Sequence diagram ({drawn}, {} ops, hash {})</h2>\n<p>Red rows are the verdict's witnesses, amber its enabling fault; a line ending in a cross is a frame sent and never received. Times are simulated ms.</p>\n<div class=\"diagram\">",
        c.history.ops.len(),
        c.history.hash()
    );
    s.push_str(&d.svg());
    s.push_str("</div>\n");
    if let Some(sched) = c.schedule {
        let _ = writeln!(s, "<h2>Schedule</h2>\n<pre>{}</pre>", xml_escape(sched));
    }
    s.push_str("</body></html>\n");
    s
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
            time_ms: match at {
                Item::Arrow { time_ms, .. } | Item::Note { time_ms, .. } => *time_ms,
            },
            op: 0,
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

/// Rows a counterexample diagram keeps (see [`Diagram::window`]).
pub const DIAGRAM_ROWS_MAX: usize = 300;

fn cell_text(c: &crate::campaign::Cell) -> String {
    let mut parts = Vec::new();
    if c.violations > 0 {
        parts.push(format!("✗{}", c.violations));
    }
    if c.unknown > 0 {
        parts.push(format!("?{}", c.unknown));
    }
    if c.findings > 0 {
        parts.push(format!("f{}", c.findings));
    }
    if parts.is_empty() {
        "·".into()
    } else {
        parts.join(" ")
    }
}

/// `summary.md`: a campaign as a page: its verdict, the scenario × property table, how the
/// submissions ended, the coverage map, the mutant scoreboard if one was run, and links to
/// every counterexample folder.
pub fn summary_md(s: &crate::campaign::Summary) -> String {
    let mut o = String::new();
    let verdict = match s.exit_code {
        0 => "valid (exit 0)",
        1 => "INVALID (exit 1)",
        3 => "NONDETERMINISTIC (exit 3)",
        4 => "UNKNOWN or vacuous (exit 4)",
        130 => "INTERRUPTED by Ctrl-C (exit 130): this page covers only the runs done",
        _ => "error",
    };
    let _ = writeln!(o, "# acp-chaos campaign `{}`\n", s.name);
    let _ = writeln!(
        o,
        "- verdict: **{verdict}**\n- seeds: {}..{} ({} per scenario@design){}\n- mutant: {}\n- runs: {}\n- machine-readable: [`summary.json`](summary.json) (format {}), [`junit.xml`](junit.xml)\n",
        s.seed_start,
        s.seed_start.saturating_add(s.seeds),
        s.seeds,
        s.shard
            .as_ref()
            .map(|(k, n)| format!(", shard {k}/{n}"))
            .unwrap_or_default(),
        s.mutant.as_deref().unwrap_or("none"),
        s.hashes.len(),
        s.format
    );
    if let Some(board) = &s.scoreboard {
        o.push_str("## Mutant scoreboard\n\nThe rest of this page is the correct models' baseline on the same swarm seeds.\n\n```\n");
        o.push_str(board);
        if !board.ends_with('\n') {
            o.push('\n');
        }
        o.push_str("```\n\n");
    }
    if !s.failures.is_empty() {
        o.push_str("## Counterexamples\n\n");
        let mut seen = BTreeSet::new();
        for f in &s.failures {
            let text = |k: &str| f[k].as_str().unwrap_or("-").to_string();
            let key = (text("scenario"), text("design"), text("property"));
            let first = seen.insert(key);
            let link = match (f["folder"].as_str(), f["report"].as_str()) {
                (Some(d), Some(r)) => format!("[{d}]({r})"),
                (Some(d), None) => format!("[{d}]({d}/report.md)"),
                _ => "(folder not kept)".into(),
            };
            if first {
                let _ = writeln!(
                    o,
                    "- **{} {}** {}@{} seed {} (party {}): {}  \n  {link} · `{}`{}",
                    text("property"),
                    text("status"),
                    text("scenario"),
                    text("design"),
                    f["seed"],
                    text("party"),
                    text("message"),
                    text("repro"),
                    f["shrunk"]["replay"]
                        .as_str()
                        .map(|r| format!(
                            "  \n  shrunk to {} faults, {} ops, {} raw probes: `{r}`",
                            f["shrunk"]["faults"], f["shrunk"]["ops"], f["shrunk"]["raw"]
                        ))
                        .unwrap_or_default()
                );
            }
        }
        let more = s.failures.len() - seen.len();
        if more > 0 {
            let _ = writeln!(
                o,
                "\n{more} more failing runs of the same rows and properties are listed in `summary.json`."
            );
        }
        o.push('\n');
    }
    for l in &s.nondeterministic {
        let _ = writeln!(o, "- **nondeterministic**: `{l}`");
    }
    for k in &s.expectations_unmet {
        let _ = writeln!(o, "- **expected a violation, found none**: {k}");
    }
    for (scen, missing) in &s.vacuous {
        let _ = writeln!(
            o,
            "- **vacuous** {scen}: never happened: {}",
            missing.join(", ")
        );
    }
    if !s.regressions.is_empty() {
        let held = s.regressions.iter().filter(|r| r.ok).count();
        let _ = writeln!(
            o,
            "## Regression corpus\n\n{held} of {} shrunk schedules keep their verdict (replayed first).\n",
            s.regressions.len()
        );
        for r in s.regressions.iter().filter(|r| !r.ok) {
            let _ = writeln!(
                o,
                "- **REGRESSION** `{}`: expected {}, got {}  \n  `{}`",
                r.file, r.expect, r.got, r.replay
            );
        }
        o.push('\n');
    }
    o.push_str("## Table\n\n`·` valid on every seed, `✗N` N violations, `?N` N unknown, `fN` N findings.\n\n");
    let props: Vec<&str> = CHECKERS.iter().map(|c| c.property).collect();
    let _ = writeln!(o, "| scenario@design | {} |", props.join(" | "));
    let _ = writeln!(o, "|---|{}", "---|".repeat(props.len()));
    for (row, cells) in &s.table {
        let cols: Vec<String> = props
            .iter()
            .map(|p| cells.get(*p).map(cell_text).unwrap_or_default())
            .collect();
        let _ = writeln!(o, "| {row} | {} |", cols.join(" | "));
    }
    if !s.findings.is_empty() {
        o.push_str("\n## Findings (a SHOULD broken, or an allowed outcome worth a look)\n\n");
        for f in &s.findings {
            let text = |k: &str| f[k].as_str().unwrap_or("-").to_string();
            let _ = writeln!(
                o,
                "- {} {}@{}: {}  \n  `{}`",
                text("property"),
                text("scenario"),
                text("design"),
                text("message"),
                text("repro")
            );
        }
    }
    o.push_str("\n## How the submissions ended\n\n| scenario@design | classes |\n|---|---|\n");
    for (row, counts) in &s.classes {
        let parts: Vec<String> = counts
            .iter()
            .map(|(c, n)| format!("{c:?}={n}").to_lowercase())
            .collect();
        let _ = writeln!(o, "| {row} | {} |", parts.join(" "));
    }
    if !s.coverage_map.is_empty() {
        o.push_str("\n## Coverage map\n\nFaults fired, by the protocol state at that moment (over the whole campaign).\n\n");
        let states = crate::checkers::FAULT_STATES;
        let _ = writeln!(o, "| fault | {} |", states.join(" | "));
        let _ = writeln!(o, "|---|{}", "---:|".repeat(states.len()));
        for (kind, cells) in &s.coverage_map {
            let cols: Vec<String> = states
                .iter()
                .map(|st| cells.get(*st).copied().unwrap_or(0).to_string())
                .collect();
            let _ = writeln!(o, "| {kind} | {} |", cols.join(" | "));
        }
    }
    o
}

/// `junit.xml`: one testsuite per scenario@design, one testcase per property. A violation or
/// unknown verdict is a `<failure>` carrying the first failing seed's message and repro line
/// (and the shrunk schedule's replay line); a row that expects a violation (`expect =
/// "invalid"`) passes when it has one and fails when it has none. Findings go to
/// `<system-out>`.
pub fn junit_xml(s: &crate::campaign::Summary) -> String {
    // The failure a testcase quotes: its first invalid one, else its first unknown one (the
    // cell's `first_failing_seed` follows the same rule).
    let mut first: BTreeMap<(String, String), &Value> = BTreeMap::new();
    for f in &s.failures {
        let row = format!(
            "{}@{}",
            f["scenario"].as_str().unwrap_or(""),
            f["design"].as_str().unwrap_or("")
        );
        let key = (row, f["property"].as_str().unwrap_or("").to_string());
        let invalid = f["status"] == "invalid";
        match first.get(&key) {
            Some(old) if old["status"] == "invalid" || !invalid => {}
            _ => {
                first.insert(key, f);
            }
        }
    }
    let mut finding: BTreeMap<(String, String), &Value> = BTreeMap::new();
    for f in &s.findings {
        let row = format!(
            "{}@{}",
            f["scenario"].as_str().unwrap_or(""),
            f["design"].as_str().unwrap_or("")
        );
        finding
            .entry((row, f["property"].as_str().unwrap_or("").to_string()))
            .or_insert(f);
    }
    let mut suites = String::new();
    let (mut tests, mut failures) = (0usize, 0usize);
    for (row, cells) in &s.table {
        let expects_invalid = s.expected_invalid.contains(row);
        let unmet = s.expectations_unmet.contains(row);
        let (mut t, mut fl) = (0usize, 0usize);
        let mut cases = String::new();
        for c in CHECKERS {
            let Some(cell) = cells.get(c.property) else {
                continue;
            };
            t += 1;
            let name = format!("{} {}", c.property, c.title);
            let _ = writeln!(
                cases,
                "    <testcase classname=\"{}\" name=\"{}\">",
                xml_escape(row),
                xml_escape(&name)
            );
            let key = (row.clone(), c.property.to_string());
            let failing = cell.violations > 0 || cell.unknown > 0;
            if failing && !(expects_invalid && cell.unknown == 0) {
                fl += 1;
                let f = first.get(&key);
                let msg = f
                    .and_then(|f| f["message"].as_str())
                    .unwrap_or("failed")
                    .to_string();
                let kind = if cell.violations > 0 {
                    "invalid"
                } else {
                    "unknown"
                };
                let mut body = format!(
                    "{} of {} seeds invalid, {} unknown\nseed {}: {msg}\nrepro: {}",
                    cell.violations,
                    cell.seeds,
                    cell.unknown,
                    cell.first_failing_seed
                        .map(|x| x.to_string())
                        .unwrap_or_default(),
                    f.and_then(|f| f["repro"].as_str()).unwrap_or("-")
                );
                if let Some(r) = f.and_then(|f| f["shrunk"]["replay"].as_str()) {
                    let _ = write!(body, "\nshrunk: {r}");
                }
                let _ = writeln!(
                    cases,
                    "      <failure type=\"{kind}\" message=\"{}\">{}</failure>",
                    xml_escape(&msg),
                    xml_escape(&body)
                );
            } else if failing {
                let _ = writeln!(
                    cases,
                    "      <system-out>expected: {} of {} seeds invalid (the scenario shows a spec gap)</system-out>",
                    cell.violations, cell.seeds
                );
            }
            if let Some(f) = finding.get(&key) {
                let _ = writeln!(
                    cases,
                    "      <system-out>{} findings; first: {} repro: {}</system-out>",
                    cell.findings,
                    xml_escape(f["message"].as_str().unwrap_or("")),
                    xml_escape(f["repro"].as_str().unwrap_or(""))
                );
            }
            cases.push_str("    </testcase>\n");
        }
        if unmet {
            t += 1;
            fl += 1;
            let _ = write!(
                cases,
                "    <testcase classname=\"{0}\" name=\"expect invalid\">\n      <failure type=\"expectation\" message=\"the scenario expects a violation on {0}; none was found\"/>\n    </testcase>\n",
                xml_escape(row)
            );
        }
        tests += t;
        failures += fl;
        let _ = write!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{t}\" failures=\"{fl}\" errors=\"0\">\n{cases}  </testsuite>\n",
            xml_escape(row)
        );
    }
    // Campaign-wide verdicts that are not one row's: vacuous scenarios (exit 4) and
    // nondeterministic runs (exit 3), so a CI test view is never green when the exit is not 0.
    let mut whole = String::new();
    for (scen, missing) in &s.vacuous {
        tests += 1;
        failures += 1;
        let _ = writeln!(
            whole,
            "    <testcase classname=\"campaign\" name=\"sometimes {}\">\n      <failure type=\"vacuous\" message=\"never happened: {}\"/>\n    </testcase>",
            xml_escape(scen),
            xml_escape(&missing.join(", "))
        );
    }
    for l in &s.nondeterministic {
        tests += 1;
        failures += 1;
        let _ = writeln!(
            whole,
            "    <testcase classname=\"campaign\" name=\"determinism\">\n      <failure type=\"nondeterminism\" message=\"{}\"/>\n    </testcase>",
            xml_escape(l)
        );
    }
    if s.interrupted {
        tests += 1;
        failures += 1;
        let _ = writeln!(
            whole,
            "    <testcase classname=\"campaign\" name=\"complete\">\n      <failure type=\"interrupted\" message=\"stopped by Ctrl-C: only the runs done are reported\"/>\n    </testcase>"
        );
    }
    if !whole.is_empty() {
        let _ = write!(
            suites,
            "  <testsuite name=\"campaign\" tests=\"{}\" failures=\"{}\" errors=\"0\">\n{whole}  </testsuite>\n",
            s.vacuous.len() + s.nondeterministic.len() + usize::from(s.interrupted),
            s.vacuous.len() + s.nondeterministic.len() + usize::from(s.interrupted)
        );
    }
    if !s.regressions.is_empty() {
        let bad = s.regressions.iter().filter(|r| !r.ok).count();
        tests += s.regressions.len();
        failures += bad;
        let _ = writeln!(
            suites,
            "  <testsuite name=\"regressions\" tests=\"{}\" failures=\"{bad}\" errors=\"0\">",
            s.regressions.len()
        );
        for r in &s.regressions {
            let _ = writeln!(
                suites,
                "    <testcase classname=\"regressions\" name=\"{}\">",
                xml_escape(&r.file)
            );
            if !r.ok {
                let _ = writeln!(
                    suites,
                    "      <failure type=\"regression\" message=\"expected {}, got {}\">repro: {}</failure>",
                    xml_escape(&r.expect),
                    xml_escape(&r.got),
                    xml_escape(&r.replay)
                );
            }
            suites.push_str("    </testcase>\n");
        }
        suites.push_str("  </testsuite>\n");
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"acp-chaos {}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">\n{suites}</testsuites>\n",
        xml_escape(&s.name)
    )
}
