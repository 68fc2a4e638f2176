//! P16 active-session (X2 C6): [`p16_active_session`].

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::{rpc::code, Party};
use serde_json::Value;

use super::facts::{malformed_request, Facts};
use super::verdict::{Status, Verdict};
use super::wire::WireFrame;
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
    let answers = first_answers(f);
    let mut sessions = Sessions::default();
    for (o, w) in f.ops_with_wire() {
        let val = &o.value;
        match (o.process.as_str(), o.f.as_str(), w) {
            (process::AGENT, op::LOGICAL, _) => {
                if let (Some(c), Some(l)) = (val["conn"].as_u64(), val["logical"].as_str()) {
                    sessions.logical.insert(c, format!("logical {l}"));
                }
            }
            // The Agent's own end of it (the Client may end it first and frames still in flight
            // reach the Agent, which still has the session active).
            (process::AGENT, "conn-end", _) => {
                let c = val["conn"].as_u64().unwrap_or(0);
                if !sessions.logical.contains_key(&c) {
                    sessions.active.remove(&c.to_string());
                }
            }
            (process::NET, op::RECV, Some(w)) if !w.from_agent => {
                if let Some((at, message)) = sessions.read(o.index, w, &answers) {
                    v.breach(
                        Status::Invalid,
                        Party::Agent,
                        vec!["X2".into()],
                        vec![o.index, at],
                        f.fault_before(o.index),
                        message,
                    );
                    return v;
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

/// The Agent's first answer to each (connection, id): (op index, the frame), including an
/// answer the network lost after the Agent wrote it.
fn first_answers<'a>(f: &Facts<'a>) -> BTreeMap<(u64, String), (usize, &'a Value)> {
    let mut answers = BTreeMap::new();
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
    answers
}

/// The sessions active on each connection, as [`p16_active_session`] reads the wire.
#[derive(Default)]
struct Sessions {
    /// Cluster: the logical connection each TCP connection carries.
    logical: BTreeMap<u64, String>,
    /// Connection (or logical connection) → sessions active on it.
    active: BTreeMap<String, BTreeSet<String>>,
    /// Sessions a `session/resume` the Agent read and never answered may have activated
    /// (its response was never written: the connection died under it, on a remote transport
    /// the logical connection lives on): neither active nor inactive from the wire, so
    /// requests for them are not judged.
    maybe: BTreeMap<String, BTreeSet<String>>,
    /// Remote transport: (logical connection, session) → the op where the last resume read
    /// for it was answered (`usize::MAX`: never). The Agent may apply a resume any time before
    /// it answers, so a close read meanwhile, through another of the logical connection's
    /// streams or nodes, may come before or after it: the session is undecided after it.
    resuming: BTreeMap<(String, String), usize>,
}

impl Sessions {
    fn key(&self, c: u64) -> String {
        self.logical
            .get(&c)
            .cloned()
            .unwrap_or_else(|| c.to_string())
    }

    /// The Agent read a request (op `at_read`): it changes which sessions are active, or is
    /// judged. A violation: (the answer's op, the message).
    fn read(
        &mut self,
        at_read: usize,
        w: &WireFrame,
        answers: &BTreeMap<(u64, String), (usize, &Value)>,
    ) -> Option<(usize, String)> {
        let (Some(method), Some(_)) = (w.method, w.id) else {
            return None;
        };
        let (conn, id) = (w.conn, &w.id_key);
        let sid = w.frame["params"]["sessionId"].as_str().unwrap_or_default();
        let k = self.key(conn);
        let answered = answers.get(&(conn, id.clone())).copied();
        if method == "session/resume" && k.starts_with("logical ") {
            let until = answered.map_or(usize::MAX, |(at, _)| at);
            let e = self
                .resuming
                .entry((k.clone(), sid.to_string()))
                .or_insert(0);
            *e = (*e).max(until);
        }
        let Some((at, answer)) = answered else {
            if method == "session/resume" {
                self.maybe.entry(k).or_default().insert(sid.to_string());
            }
            return None;
        };
        let ok = answer.get("result").is_some();
        match method {
            "session/new" | "session/fork" if ok => {
                if let Some(s) = answer["result"]["sessionId"].as_str() {
                    self.active.entry(k).or_default().insert(s.to_string());
                }
            }
            "session/resume" if ok => {
                self.active.entry(k).or_default().insert(sid.to_string());
            }
            "session/close" => self.closed(k, sid, at_read),
            "session/delete" => self.deleted(sid, at_read),
            m if NEED_ACTIVE.contains(&m)
                && !self.active.get(&k).is_some_and(|a| a.contains(sid))
                && !self.maybe.get(&k).is_some_and(|a| a.contains(sid)) =>
            {
                return served_inactive(m, id, conn, sid, answer).map(|m| (at, m));
            }
            _ => {}
        }
        None
    }

    /// A resume of `sid` on `k` still unanswered when the close or delete at `at_read` was read.
    fn undecided(
        resuming: &BTreeMap<(String, String), usize>,
        k: &str,
        sid: &str,
        at_read: usize,
    ) -> bool {
        resuming
            .get(&(k.to_string(), sid.to_string()))
            .is_some_and(|until| *until > at_read)
    }

    /// `session/close` of `sid` on `k`, answered.
    fn closed(&mut self, k: String, sid: &str, at_read: usize) {
        if let Some(a) = self.active.get_mut(&k) {
            a.remove(sid);
        }
        if Sessions::undecided(&self.resuming, &k, sid, at_read) {
            self.maybe.entry(k).or_default().insert(sid.to_string());
        } else if let Some(a) = self.maybe.get_mut(&k) {
            a.remove(sid);
        }
    }

    /// `session/delete` of `sid`, answered: inactive everywhere.
    fn deleted(&mut self, sid: &str, at_read: usize) {
        for a in self.active.values_mut() {
            a.remove(sid);
        }
        for (mk, a) in self.maybe.iter_mut() {
            if !Sessions::undecided(&self.resuming, mk, sid, at_read) {
                a.remove(sid);
            }
        }
    }
}

/// The message of a violation when `answer` to a request `m` for `sid`, not active on its
/// connection, is not `-32002` naming it (nor a request error); `None` when it is.
fn served_inactive(m: &str, id: &str, conn: u64, sid: &str, answer: &Value) -> Option<String> {
    let code = answer["error"]["code"].as_i64();
    let named = answer["error"]["data"]["sessionId"] == sid;
    let request_error = code.is_some_and(|c| malformed_request(c) || c == code::INVALID_PARAMS);
    if (code == Some(code::RESOURCE_NOT_FOUND) && named) || request_error {
        return None;
    }
    Some(match code {
        None => format!(
            "{m} #{id} on connection {conn} for session {sid}, not active on that connection, was served (X2: -32002 with data.sessionId)"
        ),
        Some(c) if c == code::RESOURCE_NOT_FOUND => format!(
            "{m} #{id} on connection {conn} for session {sid}, not active there, got -32002 without data.sessionId naming it (X2)"
        ),
        Some(c) => format!(
            "{m} #{id} on connection {conn} for session {sid}, not active on that connection, got {c} (X2: -32002 with data.sessionId)"
        ),
    })
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
                        v.breach(
                            Status::Finding,
                            Party::Client,
                            vec!["C6".into()],
                            vec![o.index],
                            f.fault_before(o.index),
                            format!(
                            "session/prompt #{} for session {sid} went out on connection {conn} before the response to its session/resume there (C6: resend once the resume response has arrived; before it, -32002)",
                            fr["id"]
                        ),
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
