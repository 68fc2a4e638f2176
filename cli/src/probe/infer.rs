//! From what the probe saw to a history the simulator's checkers read.
//!
//! The probe records the Client's side and every frame directly (`user`, `client`, `net`,
//! `nemesis`, `world` ops, times in wall ms since the run started). A real Agent is a black
//! box, so the Agent-side ops the checkers read ([`acp_chaos::checkers::Facts::of`]) are inferred
//! from observations and marked `"inferred": true`:
//!
//! - `insert` + `visible` for every user message the Agent showed (a `user_message` or
//!   `user_message_chunk` update, live or replayed, or a `{messageId}` answer), placed at its
//!   first sighting. Its submission comes from the marker in its text (every input carries a
//!   unique one), else from the attempt answered with it. Its attempt is the one answered
//!   with its messageId, else the latest attempt of that input still unanswered when it was
//!   first seen, else the latest one answered with an error (an Agent that inserts and then
//!   answers an error breaks A2: P4).
//! - `recover` at each start: boot 1 holds nothing (a fresh `HOME`); after a restart,
//!   `retained` is what the first `session/resume` with replay on that process replayed
//!   (`null`, "not reported", if none did). P1 tells a retained message from a lost one by
//!   it, P11 finds an acknowledged message a restart lost.
//! - `activate` at each successful `session/new` or `session/resume`.
//! - `withdraw` at each `-32800` answer to a keyed prompt: the Agent withdrew that prompt, so
//!   every other pending attempt of its key must get `-32800` too (A5, P6).
//!
//! [`acp_chaos::checkers::x4_resume_order()`] is the probe's own checker of X4's order.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde_json::{json, Value};

use super::driver::RawOp;
use acp_chaos::history::{op, process, History, Op, OpType};
use acp_chaos::models::rpc::code;

/// Which input a marker names.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Owner {
    Sub(u64),
    Raw(u64),
}

#[derive(Debug, Default)]
struct Msg {
    first: usize,
    session: Option<String>,
    text: String,
    how: &'static str,
}

/// The first resume with replay of a session on a connection: its id, the user messages it
/// replayed, and whether it was answered with success (`None` while unanswered).
type FirstReplay = (u64, Vec<String>, Option<bool>);

/// The history of one run: the recorded ops with the inferred Agent ops placed among them.
///
/// Long on purpose: one pass over what the probe saw, keeping a dozen indexes (markers, attempts,
/// boots, replays) in step; split, each part would take them all as arguments.
pub fn build(header: Value, raw: &[RawOp]) -> History {
    let mut extra: BTreeMap<usize, Vec<(&'static str, Value)>> = BTreeMap::new();
    let mut add = |at: usize, f: &'static str, mut v: Value| {
        v["inferred"] = true.into();
        extra.entry(at).or_default().push((f, v));
    };
    let mut markers: Vec<(String, Owner)> = Vec::new();
    // (conn, id) → (owner, key, raw index) for every prompt attempt and raw probe.
    let mut attempts: BTreeMap<(u64, u64), (Owner, Value, usize)> = BTreeMap::new();
    let mut by_owner: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    let mut requests: BTreeMap<(u64, u64), (String, Value, usize)> = BTreeMap::new();
    let mut ok: BTreeMap<(u64, u64), (String, usize)> = BTreeMap::new();
    let mut err: BTreeMap<(u64, u64), (i64, usize)> = BTreeMap::new();
    let mut msgs: IndexMap<String, Msg> = IndexMap::new();
    let mut opens: BTreeMap<u64, usize> = BTreeMap::new();
    // The first resume with replay of each session on each connection (one connection per
    // process start): (conn, session) → (its id, user messages replayed, answered with success).
    let mut replays: BTreeMap<(u64, String), FirstReplay> = BTreeMap::new();
    // Cancels the Client sent: (conn, request id) by `$/cancel_request`; (conn, session) by
    // `session/cancel`.
    let mut cancel_requests: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    let mut stops: BTreeMap<(u64, String), usize> = BTreeMap::new();
    for (i, op) in raw.iter().enumerate() {
        let v = &op.value;
        match (op.process, op.f.as_str()) {
            (process::USER, op::SUBMIT) => {
                if let (Some(m), Some(n)) = (v["marker"].as_str(), v["submission"].as_u64()) {
                    markers.push((m.to_string(), Owner::Sub(n)));
                }
            }
            (process::CLIENT, op::ATTEMPT) => {
                if let (Some(c), Some(id), Some(n)) = (
                    v["conn"].as_u64(),
                    v["id"].as_u64(),
                    v["submission"].as_u64(),
                ) {
                    attempts.insert((c, id), (Owner::Sub(n), v["key"].clone(), i));
                    by_owner.entry(n).or_default().push((c, id));
                }
            }
            (process::CLIENT, op::RAW_SENT) => {
                if let (Some(c), Some(id), Some(n)) =
                    (v["conn"].as_u64(), v["id"].as_u64(), v["n"].as_u64())
                {
                    let key = serde_json::from_str::<Value>(v["line"].as_str().unwrap_or(""))
                        .map(|f| f["params"]["idempotencyKey"].clone())
                        .unwrap_or(Value::Null);
                    attempts.insert((c, id), (Owner::Raw(n), key, i));
                    if let Some(m) = v["marker"].as_str() {
                        markers.push((m.to_string(), Owner::Raw(n)));
                    }
                }
            }
            (process::NET, op::CONN_OPEN) => {
                if let Some(c) = v["conn"].as_u64() {
                    opens.insert(c, i);
                }
            }
            (process::NET, op::SEND) if v["from"] == "client" => {
                let fr = &v["frame"];
                let conn = v["conn"].as_u64().unwrap_or(0);
                if let Some(rid) = fr["params"]["requestId"].as_u64() {
                    if fr["method"] == "$/cancel_request" {
                        cancel_requests.entry((conn, rid)).or_insert(i);
                    }
                }
                if fr["method"] == "session/cancel" {
                    let sid = fr["params"]["sessionId"].as_str().unwrap_or("").to_string();
                    stops.entry((conn, sid)).or_insert(i);
                }
                if let (Some(m), Some(id)) = (fr["method"].as_str(), fr["id"].as_u64()) {
                    requests.insert((conn, id), (m.to_string(), fr["params"].clone(), i));
                    if m == "session/resume" && fr["params"]["replayFrom"].is_object() {
                        let sid = fr["params"]["sessionId"].as_str().unwrap_or("").to_string();
                        replays.entry((conn, sid)).or_insert((id, Vec::new(), None));
                    }
                }
            }
            (process::NET, op::SEND) if v["from"] == "agent" => {
                let fr = &v["frame"];
                let conn = v["conn"].as_u64().unwrap_or(0);
                if fr.get("method").is_none() {
                    let Some(id) = fr["id"].as_u64() else {
                        continue;
                    };
                    let Some((method, params, _)) = requests.get(&(conn, id)).cloned() else {
                        continue;
                    };
                    let success = fr.get("result").is_some() && fr.get("error").is_none();
                    match method.as_str() {
                        "session/prompt" => {
                            let sid = params["sessionId"].as_str().map(str::to_string);
                            if let Some(m) = fr["result"]["messageId"].as_str() {
                                ok.entry((conn, id)).or_insert((m.to_string(), i));
                                let e = msgs.entry(m.to_string()).or_insert_with(|| Msg {
                                    first: i,
                                    how: "answer",
                                    ..Msg::default()
                                });
                                if e.session.is_none() {
                                    e.session = sid;
                                }
                            } else if let Some(c) = fr["error"]["code"].as_i64() {
                                err.entry((conn, id)).or_insert((c, i));
                                let key = attempts.get(&(conn, id)).map(|a| a.1.clone());
                                if let (code::REQUEST_CANCELLED, Some(Value::String(k))) = (c, key)
                                {
                                    // Which cancel withdrew it: one naming this request, else
                                    // a stop the Client sent for its session on this
                                    // connection (the inference P6's A6 clause reads).
                                    let stop =
                                        sid.as_ref().and_then(|s| stops.get(&(conn, s.clone())));
                                    let by = if cancel_requests.contains_key(&(conn, id)) {
                                        "$/cancel_request"
                                    } else if stop.is_some() {
                                        "session/cancel"
                                    } else {
                                        "-32800 answer"
                                    };
                                    add(
                                        i,
                                        "withdraw",
                                        json!({"session": sid, "conn": conn, "id": id, "key": k, "by": by}),
                                    );
                                }
                            }
                        }
                        "session/new" if success => {
                            if let Some(s) = fr["result"]["sessionId"].as_str() {
                                add(i, "activate", json!({"session": s, "conn": conn}));
                            }
                        }
                        "session/resume" => {
                            let s = params["sessionId"].as_str().unwrap_or("").to_string();
                            if success {
                                add(i, "activate", json!({"session": s, "conn": conn}));
                            }
                            if let Some(r) = replays.get_mut(&(conn, s)) {
                                if r.0 == id && r.2.is_none() {
                                    r.2 = Some(success);
                                }
                            }
                        }
                        _ => {}
                    }
                } else if fr["method"] == "session/update" {
                    let u = &fr["params"]["update"];
                    let kind = u["sessionUpdate"].as_str().unwrap_or("");
                    if kind != "user_message" && kind != "user_message_chunk" {
                        continue;
                    }
                    let Some(m) = u["messageId"].as_str() else {
                        continue;
                    };
                    let sid = fr["params"]["sessionId"].as_str().map(str::to_string);
                    let k = (conn, sid.clone().unwrap_or_default());
                    if let Some(r) = replays.get_mut(&k) {
                        if r.2.is_none() && !r.1.iter().any(|x| x == m) {
                            r.1.push(m.to_string());
                        }
                    }
                    let e = msgs.entry(m.to_string()).or_insert_with(|| Msg {
                        first: i,
                        how: "update",
                        ..Msg::default()
                    });
                    if e.session.is_none() {
                        e.session = sid;
                    }
                    text_of(&u["content"], &mut e.text);
                }
            }
            _ => {}
        }
    }
    // Starts: boot 1 had a fresh HOME; later boots kept what their first replay showed.
    for (conn, at) in &opens {
        // Every session's first replay on this process, once each was answered (a session
        // whose resume failed is gone); not known while one is unanswered or none was sent.
        let mine: Vec<(&String, &FirstReplay)> = replays
            .range((*conn, String::new())..)
            .take_while(|((c, _), _)| c == conn)
            .map(|((_, s), r)| (s, r))
            .collect();
        let retained = if *conn == 1 {
            json!({})
        } else if mine.is_empty() || mine.iter().any(|(_, r)| r.2.is_none()) {
            Value::Null
        } else {
            let kept: serde_json::Map<String, Value> = mine
                .iter()
                .filter(|(_, r)| r.2 == Some(true))
                .map(|(s, r)| ((*s).clone(), json!(r.1)))
                .collect();
            Value::Object(kept)
        };
        add(
            *at,
            "recover",
            json!({"boot": conn, "retained": retained, "from": if *conn == 1 { "a fresh HOME" } else { "the first session/resume with replay of each session on this process" }}),
        );
    }
    // Insertions, at first sighting.
    for (mid, m) in &msgs {
        let owner = markers
            .iter()
            .find(|(mk, _)| m.text.contains(mk.as_str()))
            .map(|(_, o)| *o)
            .or_else(|| {
                ok.iter()
                    .find(|(_, (x, _))| x == mid)
                    .and_then(|(a, _)| attempts.get(a))
                    .map(|a| a.0)
            });
        let attempt = match owner {
            None => continue,
            Some(Owner::Raw(n)) => attempts
                .iter()
                .find(|(_, a)| a.0 == Owner::Raw(n))
                .map(|(k, _)| *k),
            Some(Owner::Sub(n)) => {
                let all = by_owner.get(&n).cloned().unwrap_or_default();
                let before: Vec<(u64, u64)> = all
                    .iter()
                    .copied()
                    .filter(|a| attempts[a].2 < m.first)
                    .collect();
                let answered_with = |a: &(u64, u64)| ok.get(a).is_some_and(|(x, _)| x == mid);
                let open_then = |a: &(u64, u64)| {
                    ok.get(a).is_none_or(|(_, at)| *at >= m.first)
                        && err.get(a).is_none_or(|(_, at)| *at >= m.first)
                };
                before
                    .iter()
                    .find(|a| answered_with(a))
                    .or_else(|| before.iter().rev().find(|a| open_then(a)))
                    .or_else(|| before.iter().rev().find(|a| err.contains_key(a)))
                    .or_else(|| all.iter().find(|a| answered_with(a)))
                    .copied()
            }
        };
        let Some(a) = attempt else { continue };
        let key = attempts.get(&a).map(|x| x.1.clone()).unwrap_or(Value::Null);
        let key = if key.is_string() { key } else { Value::Null };
        let session = m.session.clone().or_else(|| {
            requests
                .get(&a)
                .and_then(|r| r.1["sessionId"].as_str().map(str::to_string))
        });
        // A prompt that starts with `/` is taken for a locally handled command, kept only while
        // its session is active (A11), as the model Agent takes it: the wire does not say.
        let live_only = requests.get(&a).is_some_and(|r| {
            r.1["prompt"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with('/'))
        });
        add(
            m.first,
            "insert",
            json!({"session": session, "messageId": mid, "key": key, "conn": a.0, "id": a.1,
                   "mode": "direct", "live_only": live_only, "seen_in": m.how}),
        );
        add(
            m.first,
            "visible",
            json!({"session": session, "messageId": mid}),
        );
    }
    let mut ops = Vec::with_capacity(raw.len() + extra.len() * 2);
    let mut push = |time_ms: u64, process: &str, kind: OpType, f: &str, value: Value| {
        let index = ops.len();
        ops.push(Op {
            index,
            time_ms,
            process: process.to_string(),
            kind,
            f: f.to_string(),
            value,
        });
    };
    for (i, op) in raw.iter().enumerate() {
        push(op.time_ms, op.process, op.kind, &op.f, op.value.clone());
        for (f, v) in extra.remove(&i).unwrap_or_default() {
            push(op.time_ms, "agent", OpType::Info, f, v);
        }
    }
    History { header, ops }
}

/// Append every text in a content block or array of blocks.
fn text_of(content: &Value, out: &mut String) {
    match content {
        Value::Array(a) => a.iter().for_each(|b| text_of(b, out)),
        Value::Object(o) => {
            if let Some(t) = o.get("text").and_then(Value::as_str) {
                out.push_str(t);
                out.push('\n');
            }
        }
        _ => {}
    }
}
