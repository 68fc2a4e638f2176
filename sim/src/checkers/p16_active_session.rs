//! P16 active-session (X2 C6): [`p16_active_session`].

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::{rpc::code, Party};
use serde_json::Value;

use super::facts::{malformed_request, Facts};
use super::verdict::{Status, Verdict};
use crate::history::{is_agent_host, op, process};
use crate::nemesis::logged;

/// Methods that need their session active on the connection they arrive on (X2).
const NEED_ACTIVE: [&str; 2] = ["session/prompt", "session/set_config_option"];

/// P16 active-session (X2), from the wire alone: a session becomes active on a connection when
/// the Agent answers `session/new`, `session/fork` (the new id) or `session/resume` on it with
/// a success, counted from when it read the request (a request pipelined behind it sees it
/// active); `session/close` and `session/delete` end it, and so does the connection's end
/// (on a cluster the connection is the logical one the remote transport names, which outlives
/// its TCP connections). A `session/prompt` or `session/set_config_option` for a session not
/// active on its connection must be answered `-32002` with `data.sessionId` (a request error
/// such as `-32602` for a malformed request is allowed too); a success, or any other answer,
/// is a violation, the Agent at fault. Unanswered requests are P7's; a `session/resume` the
/// Agent read and never answered may have activated its session, so requests for it on that
/// (logical) connection are not judged until a close or delete settles it; on a remote
/// transport a close read while a resume of the same session is still unanswered there may
/// come before or after it (the logical connection orders nothing), which leaves the session
/// undecided too. From the Client's side
/// (C6, a finding): no prompt for a session before the response to its `session/resume` on
/// that connection.
pub fn p16_active_session(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P16");
    // The Agent's first answer to each (connection, id): (op index, the frame).
    let mut answers: BTreeMap<(u64, String), (usize, &Value)> = BTreeMap::new();
    for (o, w) in f.ops_with_wire() {
        let val = &o.value;
        let frame = match (o.process.as_str(), o.f.as_str(), w) {
            (process::NET, op::SEND, Some(w)) if w.from_agent => w.frame,
            // An answer the network lost after the Agent wrote it.
            (process::NEMESIS, logged::LOSE_EXCHANGE | logged::LOSE_FRAME, _)
                if val["detail"]["from"].as_str().is_some_and(is_agent_host) =>
            {
                &val["detail"]["frame"]
            }
            _ => continue,
        };
        if frame.get("method").is_some() || frame.get("id").is_none() {
            continue;
        }
        // (A nemesis op has no `conn` of its own: its detail names it. A history from
        // elsewhere may do the same for a send, so both read the detail when `conn` is absent.)
        let conn = val["conn"]
            .as_u64()
            .or_else(|| val["detail"]["conn"].as_u64())
            .unwrap_or(0);
        answers
            .entry((conn, frame["id"].to_string()))
            .or_insert((o.index, frame));
    }
    // Cluster: the logical connection each TCP connection carries.
    let mut logical: BTreeMap<u64, String> = BTreeMap::new();
    // Connection (or logical connection) → sessions active on it.
    let mut active: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // Sessions a `session/resume` the Agent read and never answered may have activated
    // (its response was never written: the connection died under it, on a remote transport
    // the logical connection lives on): neither active nor inactive from the wire, so
    // requests for them are not judged.
    let mut maybe: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // Remote transport: (logical connection, session) → the op where the last resume read
    // for it was answered (`usize::MAX`: never). The Agent may apply a resume any time before
    // it answers, so a close read meanwhile, through another of the logical connection's
    // streams or nodes, may come before or after it: the session is undecided after it.
    let mut resuming: BTreeMap<(String, String), usize> = BTreeMap::new();
    let key = |logical: &BTreeMap<u64, String>, c: u64| {
        logical.get(&c).cloned().unwrap_or_else(|| c.to_string())
    };
    for (o, w) in f.ops_with_wire() {
        let val = &o.value;
        match (o.process.as_str(), o.f.as_str(), w) {
            (process::AGENT, op::LOGICAL, _) => {
                if let (Some(c), Some(l)) = (val["conn"].as_u64(), val["logical"].as_str()) {
                    logical.insert(c, format!("logical {l}"));
                }
            }
            // The Agent's own end of it (the Client may end it first and frames still in flight
            // reach the Agent, which still has the session active).
            (process::AGENT, "conn-end", _) => {
                let c = val["conn"].as_u64().unwrap_or(0);
                if !logical.contains_key(&c) {
                    active.remove(&c.to_string());
                }
            }
            (process::NET, op::RECV, Some(w)) if !w.from_agent => {
                let fr = w.frame;
                let (Some(method), Some(_)) = (w.method, w.id) else {
                    continue;
                };
                let (conn, id) = (w.conn, &w.id_key);
                let sid = fr["params"]["sessionId"].as_str().unwrap_or_default();
                let k = key(&logical, conn);
                let answered = answers.get(&(conn, id.clone())).copied();
                if method == "session/resume" && k.starts_with("logical ") {
                    let until = answered.map_or(usize::MAX, |(at, _)| at);
                    let e = resuming.entry((k.clone(), sid.to_string())).or_insert(0);
                    *e = (*e).max(until);
                }
                let Some((at, answer)) = answered else {
                    if method == "session/resume" {
                        maybe.entry(k).or_default().insert(sid.to_string());
                    }
                    continue;
                };
                let undecided = |k: &str| {
                    resuming
                        .get(&(k.to_string(), sid.to_string()))
                        .is_some_and(|until| *until > o.index)
                };
                let ok = answer.get("result").is_some();
                match method {
                    "session/new" | "session/fork" if ok => {
                        if let Some(s) = answer["result"]["sessionId"].as_str() {
                            active.entry(k).or_default().insert(s.to_string());
                        }
                    }
                    "session/resume" if ok => {
                        active.entry(k).or_default().insert(sid.to_string());
                    }
                    "session/close" => {
                        if let Some(a) = active.get_mut(&k) {
                            a.remove(sid);
                        }
                        if undecided(&k) {
                            maybe.entry(k).or_default().insert(sid.to_string());
                        } else if let Some(a) = maybe.get_mut(&k) {
                            a.remove(sid);
                        }
                    }
                    "session/delete" => {
                        for a in active.values_mut() {
                            a.remove(sid);
                        }
                        for (mk, a) in maybe.iter_mut() {
                            if !undecided(mk) {
                                a.remove(sid);
                            }
                        }
                    }
                    m if NEED_ACTIVE.contains(&m)
                        && !active.get(&k).is_some_and(|a| a.contains(sid))
                        && !maybe.get(&k).is_some_and(|a| a.contains(sid)) =>
                    {
                        let code = answer["error"]["code"].as_i64();
                        let named = answer["error"]["data"]["sessionId"] == sid;
                        let request_error =
                            code.is_some_and(|c| malformed_request(c) || c == code::INVALID_PARAMS);
                        if (code == Some(code::RESOURCE_NOT_FOUND) && named) || request_error {
                            continue;
                        }
                        v.status = Status::Invalid;
                        v.party = Some(Party::Agent);
                        v.rules = vec!["X2".into()];
                        v.witnesses = vec![o.index, at];
                        v.fault = f.fault_before(o.index);
                        v.message = match code {
                            None => format!(
                                "{m} #{id} on connection {conn} for session {sid}, not active on that connection, was served (X2: -32002 with data.sessionId)"
                            ),
                            Some(c) if c == code::RESOURCE_NOT_FOUND => format!(
                                "{m} #{id} on connection {conn} for session {sid}, not active there, got -32002 without data.sessionId naming it (X2)"
                            ),
                            Some(c) => format!(
                                "{m} #{id} on connection {conn} for session {sid}, not active on that connection, got {c} (X2: -32002 with data.sessionId)"
                            ),
                        };
                        return v;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if v.status == Status::Valid {
        client_waits_for_resume(f, &mut v);
    }
    v
}

/// C6, from the Client's log: once it has written `session/resume` for a session on a
/// connection, it writes no `session/prompt` for that session there before the resume's
/// response has arrived (such a prompt may get `-32002`). A SHOULD: a finding.
fn client_waits_for_resume(f: &Facts, v: &mut Verdict) {
    // (connection, session) → the id of the resume the Client awaits there.
    let mut resuming: BTreeMap<(u64, String), String> = BTreeMap::new();
    for (o, w) in f.ops_with_wire() {
        match (o.process.as_str(), o.f.as_str(), w) {
            (process::NET, op::SEND, Some(w)) if w.from == "client" => {
                let (conn, fr) = (w.conn, w.frame);
                let sid = fr["params"]["sessionId"].as_str().unwrap_or_default();
                match w.method {
                    Some("session/resume") => {
                        resuming.insert((conn, sid.to_string()), w.id_key.clone());
                    }
                    Some("session/prompt") if resuming.contains_key(&(conn, sid.to_string())) => {
                        v.status = Status::Finding;
                        v.party = Some(Party::Client);
                        v.rules = vec!["C6".into()];
                        v.witnesses = vec![o.index];
                        v.fault = f.fault_before(o.index);
                        v.message = format!(
                            "session/prompt #{} for session {sid} went out on connection {conn} before the response to its session/resume there (C6: resend once the resume response has arrived; before it, -32002)",
                            fr["id"]
                        );
                        return;
                    }
                    _ => {}
                }
            }
            (process::NET, op::RECV, Some(w)) if w.from_agent && !w.has_method => {
                resuming.retain(|(c, _), r| !(*c == w.conn && *r == w.id_key));
            }
            (_, op::CONN_END, _) => {
                let conn = o.value["conn"].as_u64().unwrap_or(0);
                resuming.retain(|(c, _), _| *c != conn);
            }
            _ => {}
        }
    }
}
