//! The model Agent (stored-session design) and its mutants.
//!
//! A sans-IO state machine: [`AgentModel::handle`] takes one [`AgentInput`] and appends
//! [`Action`]s. The stored design keeps sessions as framed records on its disk; key and
//! message go in one record, synced before the insertion becomes visible (A10, A13, D1).

use std::collections::{BTreeSet, VecDeque};

use agent_client_protocol_schema::v2::{
    AgentCapabilities, ClientRequest, ContentBlock, Implementation, InitializeResponse,
    NewSessionResponse, PromptResponse, ReplayComplete, ResumeSessionResponse, SessionCapabilities,
    SessionUpdate, StateUpdate, StopReason, UpdateSessionNotification, UserMessage,
};
use agent_client_protocol_schema::{v2, ProtocolVersion};
use indexmap::IndexMap;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::action::{effect, Action, ConnId, Point};
use crate::rpc::{self, code, Frame};

/// What the driver feeds an Agent.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentInput {
    /// A Client connected.
    Connected(ConnId),
    /// One line arrived on a connection.
    Frame(ConnId, String),
    /// The connection ended (EOF, reset or heartbeat timeout).
    Disconnected(ConnId),
    /// A timer set with [`Action::Timer`] fired.
    Timer(u64),
    /// Nemesis: reject the next `session/prompt` with a transient `-32603`, inserting nothing.
    InjectTransientError,
}

/// A sans-IO Agent. Implement this to plug your own Agent design into the simulator.
pub trait AgentModel {
    /// Handle one input; push the actions to run, in order.
    fn handle(&mut self, input: AgentInput, out: &mut Vec<Action>);
    /// No foreground work and no held prompts (used to decide quiescence).
    fn is_idle(&self) -> bool;
}

/// What the design promises to keep (RULES.md "Retention").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Retention {
    /// Keeps every message whose insertion took effect, across restarts.
    Durable,
    /// Keeps messages while its process lives.
    Process,
}

/// O1: held prompts when their connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeldOnDisconnect {
    /// Keep the held prompt; it is inserted in turn and a retry gets its outcome.
    Keep,
    /// Drop it; a waiting retry becomes the submission (A7), otherwise a retry is new.
    Drop,
}

/// O4: prompts that arrive during a running turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DuringTurn {
    /// Hold until the running turn ends.
    Hold,
    /// Insert into the running turn (steering); no new turn starts.
    Steer,
}

/// Agent mutants: each a small named difference from the correct model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentMutant {
    /// Ignores `idempotencyKey`: every attempt inserts. Breaks A1/A4 (P1, Agent at fault).
    NoDedup,
    /// Writes message and key without `sync_all`: a crash loses an acknowledged message and the
    /// retry inserts it again. Breaks D1/A10 (P11 and P1, Agent at fault).
    RecordUnsynced,
}

/// Settings of a model Agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentConfig {
    /// O1 policy.
    pub o1: HeldOnDisconnect,
    /// O4 policy.
    pub o4: DuringTurn,
    /// Shortest simulated turn, in ms.
    pub turn_ms_min: u64,
    /// Longest simulated turn, in ms.
    pub turn_ms_max: u64,
    /// The mutant, if any.
    pub mutant: Option<AgentMutant>,
}

#[derive(Debug, Clone)]
struct Msg {
    message_id: String,
    key: Option<String>,
    text: String,
}

#[derive(Debug, Clone)]
struct Held {
    conn: ConnId,
    id: Value,
    key: Option<String>,
    text: String,
    /// Retries with the same key waiting for this prompt's outcome (A7).
    waiters: Vec<(ConnId, Value)>,
}

#[derive(Debug, Default)]
struct Session {
    messages: Vec<Msg>,
    held: VecDeque<Held>,
    /// Timer id of the running turn.
    turn: Option<u64>,
    next_msg: u64,
}

/// The stored-session Agent (`durable` retention).
///
/// Records on disk: `{"t":"session","id"}` and `{"t":"msg","session","messageId","key","text"}`.
pub struct StoredAgent {
    cfg: AgentConfig,
    boot: u32,
    rng: ChaCha8Rng,
    sessions: IndexMap<String, Session>,
    /// Sessions active on each open connection (X2).
    conns: IndexMap<ConnId, BTreeSet<String>>,
    next_session: u64,
    next_timer: u64,
    timers: IndexMap<u64, String>,
    transient_errors: u32,
}

impl StoredAgent {
    /// Rebuild from the records recovered from disk. `boot` numbers the process start (ids stay
    /// unique across restarts); `seed` seeds turn durations.
    pub fn recover(cfg: AgentConfig, boot: u32, seed: u64, records: &[Value]) -> Self {
        let mut sessions: IndexMap<String, Session> = IndexMap::new();
        for r in records {
            match r["t"].as_str() {
                Some("session") => {
                    if let Some(id) = r["id"].as_str() {
                        sessions.entry(id.to_string()).or_default();
                    }
                }
                Some("msg") => {
                    let (Some(sid), Some(mid)) = (r["session"].as_str(), r["messageId"].as_str())
                    else {
                        continue;
                    };
                    sessions
                        .entry(sid.to_string())
                        .or_default()
                        .messages
                        .push(Msg {
                            message_id: mid.to_string(),
                            key: r["key"].as_str().map(str::to_string),
                            text: r["text"].as_str().unwrap_or_default().to_string(),
                        });
                }
                _ => {}
            }
        }
        StoredAgent {
            cfg,
            boot,
            rng: ChaCha8Rng::seed_from_u64(seed ^ u64::from(boot).wrapping_mul(0x9E37_79B9)),
            sessions,
            conns: IndexMap::new(),
            next_session: 0,
            next_timer: 0,
            timers: IndexMap::new(),
            transient_errors: 0,
        }
    }

    /// Retained messages per session, as `{sessionId: [messageId...]}` (for the `recover` op).
    pub fn retained(&self) -> Value {
        let mut m = serde_json::Map::new();
        for (sid, s) in &self.sessions {
            m.insert(
                sid.clone(),
                s.messages
                    .iter()
                    .map(|x| Value::from(x.message_id.clone()))
                    .collect(),
            );
        }
        Value::Object(m)
    }

    fn send(&self, conn: ConnId, line: String, out: &mut Vec<Action>) {
        if self.conns.contains_key(&conn) {
            out.push(Action::Send { conn, line });
        }
    }

    fn update_all(&self, sid: &str, update: SessionUpdate, out: &mut Vec<Action>) {
        let line = rpc::notification(
            "session/update",
            to_value(UpdateSessionNotification::new(sid.to_string(), update)),
        );
        for (conn, active) in &self.conns {
            if active.contains(sid) {
                out.push(Action::Send {
                    conn: *conn,
                    line: line.clone(),
                });
            }
        }
    }

    fn frame(&mut self, conn: ConnId, line: &str, out: &mut Vec<Action>) {
        if line.trim().is_empty() {
            return;
        }
        let frame = match rpc::parse(line) {
            Ok(f) => f,
            Err(e) => {
                let l = rpc::err(
                    &Value::Null,
                    code::PARSE_ERROR,
                    "Parse error",
                    Some(json!(e.0)),
                );
                return self.send(conn, l, out);
            }
        };
        match frame {
            Frame::Request { id, method, params } => self.request(conn, id, &method, params, out),
            Frame::Invalid { id } => self.send(
                conn,
                rpc::err(&id, code::INVALID_REQUEST, "Invalid Request", None),
                out,
            ),
            // Notifications we do not act on (session/cancel comes with issue #3) and stray
            // responses are ignored, as JSON-RPC allows.
            Frame::Notification { .. } | Frame::Response { .. } => {}
        }
    }

    fn request(
        &mut self,
        conn: ConnId,
        id: Value,
        method: &str,
        params: Value,
        out: &mut Vec<Action>,
    ) {
        if method == "session/prompt" {
            out.push(Action::Point(Point::AfterReceive));
        }
        let req = match ClientRequest::from_method_and_params(method, &params) {
            Ok(r) => r,
            Err(agent_client_protocol_schema::MethodDispatchError::UnknownMethod { .. }) => {
                let l = rpc::err(
                    &id,
                    code::METHOD_NOT_FOUND,
                    "Method not found",
                    Some(json!(method)),
                );
                return self.send(conn, l, out);
            }
            Err(e) => {
                // K3: a malformed key is never treated as omitted; nothing is inserted.
                let l = rpc::err(
                    &id,
                    code::INVALID_PARAMS,
                    "Invalid params",
                    Some(json!(e.to_string())),
                );
                if method == "session/prompt" {
                    out.push(effect(
                        "reject",
                        json!({"conn": conn, "id": id, "code": code::INVALID_PARAMS}),
                    ));
                }
                return self.send(conn, l, out);
            }
        };
        match req {
            ClientRequest::InitializeRequest(_) => {
                let resp = InitializeResponse::new(
                    ProtocolVersion::V2,
                    Implementation::new("acp-chaos-stored-agent", env!("CARGO_PKG_VERSION")),
                )
                .capabilities(AgentCapabilities::new().session(SessionCapabilities::new()));
                self.send(conn, rpc::ok(&id, to_value(resp)), out);
            }
            ClientRequest::NewSessionRequest(_) => {
                let sid = format!("s{}.{}", self.boot, self.next_session);
                self.next_session += 1;
                self.sessions.insert(sid.clone(), Session::default());
                out.push(Action::Persist {
                    record: json!({"t": "session", "id": sid}),
                    sync: true,
                });
                out.push(effect("session-new", json!({"session": sid, "conn": conn})));
                self.conns.entry(conn).or_default().insert(sid.clone());
                self.send(
                    conn,
                    rpc::ok(&id, to_value(NewSessionResponse::new(sid))),
                    out,
                );
            }
            ClientRequest::ResumeSessionRequest(r) => self.resume(conn, id, &r, out),
            ClientRequest::PromptRequest(r) => self.prompt(conn, id, &r, out),
            _ => {
                let l = rpc::err(
                    &id,
                    code::METHOD_NOT_FOUND,
                    "Method not found",
                    Some(json!(method)),
                );
                self.send(conn, l, out);
            }
        }
    }

    fn resume(
        &mut self,
        conn: ConnId,
        id: Value,
        r: &v2::ResumeSessionRequest,
        out: &mut Vec<Action>,
    ) {
        let sid = r.session_id.0.to_string();
        let Some(s) = self.sessions.get(&sid) else {
            let l = rpc::err(
                &id,
                code::RESOURCE_NOT_FOUND,
                "Session not found",
                Some(json!({"sessionId": sid})),
            );
            return self.send(conn, l, out);
        };
        // X4: replay (user messages keep their messageId, never their key), replay_complete,
        // then the current state snapshot, then the response.
        let mut lines = Vec::new();
        let note = |u: SessionUpdate| {
            rpc::notification(
                "session/update",
                to_value(UpdateSessionNotification::new(sid.clone(), u)),
            )
        };
        if r.replay_from.is_some() {
            for m in &s.messages {
                let um = UserMessage::new(m.message_id.clone())
                    .content(vec![ContentBlock::from(m.text.clone())]);
                lines.push(note(SessionUpdate::UserMessage(um)));
            }
            lines.push(note(SessionUpdate::ReplayComplete(ReplayComplete::new())));
        }
        let state = if s.turn.is_some() {
            StateUpdate::Running(v2::RunningStateUpdate::new())
        } else {
            StateUpdate::Idle(v2::IdleStateUpdate::new())
        };
        lines.push(note(SessionUpdate::StateUpdate(state)));
        self.conns.entry(conn).or_default().insert(sid.clone());
        for l in lines {
            self.send(conn, l, out);
        }
        self.send(
            conn,
            rpc::ok(&id, to_value(ResumeSessionResponse::new())),
            out,
        );
    }

    fn prompt(&mut self, conn: ConnId, id: Value, r: &v2::PromptRequest, out: &mut Vec<Action>) {
        let sid = r.session_id.0.to_string();
        let active = self.conns.get(&conn).is_some_and(|a| a.contains(&sid));
        if !active || !self.sessions.contains_key(&sid) {
            // X2: the session must be active on this connection.
            out.push(effect(
                "reject",
                json!({"conn": conn, "id": id, "code": code::RESOURCE_NOT_FOUND}),
            ));
            let l = rpc::err(
                &id,
                code::RESOURCE_NOT_FOUND,
                "Session not active on this connection",
                Some(json!({"sessionId": sid})),
            );
            return self.send(conn, l, out);
        }
        if r.prompt.is_empty() {
            // A17: may reject `prompt: []` without inserting.
            out.push(effect(
                "reject",
                json!({"conn": conn, "id": id, "code": code::INVALID_PARAMS}),
            ));
            return self.send(
                conn,
                rpc::err(
                    &id,
                    code::INVALID_PARAMS,
                    "Invalid params",
                    Some(json!("empty prompt")),
                ),
                out,
            );
        }
        if self.transient_errors > 0 {
            // A2: an error means this attempt inserted nothing and recorded nothing.
            self.transient_errors -= 1;
            out.push(effect(
                "reject",
                json!({"conn": conn, "id": id, "code": code::INTERNAL_ERROR, "transient": true}),
            ));
            return self.send(
                conn,
                rpc::err(
                    &id,
                    code::INTERNAL_ERROR,
                    "Internal error",
                    Some(json!({"transient": true})),
                ),
                out,
            );
        }
        let key = r.idempotency_key.as_ref().map(|k| k.as_str().to_string());
        let text = r
            .prompt
            .iter()
            .find_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let dedup = self.cfg.mutant != Some(AgentMutant::NoDedup);
        let s = self.sessions.get_mut(&sid).expect("checked above");
        if let (Some(k), true) = (&key, dedup) {
            // A1/A4: a recorded key gets the original messageId and nothing else.
            if let Some(m) = s.messages.iter().find(|m| m.key.as_deref() == Some(k)) {
                let mid = m.message_id.clone();
                out.push(effect(
                    "dedup-hit",
                    json!({"session": sid, "key": k, "messageId": mid, "conn": conn, "id": id}),
                ));
                return self.send(conn, rpc::ok(&id, to_value(PromptResponse::new(mid))), out);
            }
            // A7: a retry of a held prompt waits for the original's outcome.
            if let Some(h) = s.held.iter_mut().find(|h| h.key.as_deref() == Some(k)) {
                h.waiters.push((conn, id.clone()));
                out.push(effect(
                    "wait-held",
                    json!({"session": sid, "key": k, "conn": conn, "id": id}),
                ));
                return;
            }
        }
        let held = Held {
            conn,
            id,
            key,
            text,
            waiters: Vec::new(),
        };
        if s.turn.is_none() {
            self.insert(&sid, held, "direct", out);
            self.start_turn(&sid, out);
        } else if self.cfg.o4 == DuringTurn::Steer {
            self.insert(&sid, held, "steer", out);
        } else {
            out.push(effect(
                "hold",
                json!({"session": sid, "conn": held.conn, "id": held.id}),
            ));
            s.held.push_back(held);
        }
    }

    /// Insert one prompt: record (key + message in one write), sync, then make it visible.
    fn insert(&mut self, sid: &str, p: Held, mode: &str, out: &mut Vec<Action>) {
        let index = self.sessions.get_index_of(sid).unwrap_or(0);
        let s = self.sessions.get_mut(sid).expect("session exists");
        let mid = format!("m{}.{}.{}", self.boot, index, s.next_msg);
        s.next_msg += 1;
        s.messages.push(Msg {
            message_id: mid.clone(),
            key: p.key.clone(),
            text: p.text.clone(),
        });
        out.push(effect("insert", json!({"session": sid, "messageId": mid, "key": p.key, "conn": p.conn, "id": p.id, "mode": mode})));
        out.push(Action::Point(Point::AfterInsertBeforeSync));
        let sync = self.cfg.mutant != Some(AgentMutant::RecordUnsynced);
        out.push(Action::Persist {
            record: json!({"t": "msg", "session": sid, "messageId": mid, "key": p.key, "text": p.text}),
            sync,
        });
        if sync {
            out.push(effect("durable", json!({"session": sid, "messageId": mid})));
        }
        out.push(Action::Point(Point::AfterSyncBeforeResponse));
        out.push(effect("visible", json!({"session": sid, "messageId": mid})));
        // A14: the echo carries the messageId and never precedes insertion. A8: no key.
        let um = UserMessage::new(mid.clone()).content(vec![ContentBlock::from(p.text.clone())]);
        self.update_all(sid, SessionUpdate::UserMessage(um), out);
        let ok = to_value(PromptResponse::new(mid));
        self.send(p.conn, rpc::ok(&p.id, ok.clone()), out);
        for (c, id) in &p.waiters {
            self.send(*c, rpc::ok(id, ok.clone()), out);
        }
    }

    fn start_turn(&mut self, sid: &str, out: &mut Vec<Action>) {
        let t = self.next_timer;
        self.next_timer += 1;
        let ms = self
            .rng
            .gen_range(self.cfg.turn_ms_min..=self.cfg.turn_ms_max.max(self.cfg.turn_ms_min));
        let s = self.sessions.get_mut(sid).expect("session exists");
        s.turn = Some(t);
        let mid = s.messages.last().map(|m| m.message_id.clone());
        self.timers.insert(t, sid.to_string());
        out.push(effect(
            "turn-start",
            json!({"session": sid, "messageId": mid, "ms": ms}),
        ));
        self.update_all(
            sid,
            SessionUpdate::StateUpdate(StateUpdate::Running(v2::RunningStateUpdate::new())),
            out,
        );
        out.push(Action::Timer {
            id: t,
            after_ms: ms,
        });
    }

    fn end_turn(&mut self, t: u64, out: &mut Vec<Action>) {
        let Some(sid) = self.timers.shift_remove(&t) else {
            return;
        };
        let Some(s) = self.sessions.get_mut(&sid) else {
            return;
        };
        if s.turn != Some(t) {
            return;
        }
        s.turn = None;
        let n = s.next_msg;
        out.push(effect(
            "turn-end",
            json!({"session": sid, "stopReason": "end_turn"}),
        ));
        let chunk =
            v2::ContentChunk::new(ContentBlock::from("done"), format!("a{}.{}", self.boot, n));
        self.update_all(&sid, SessionUpdate::AgentMessageChunk(chunk), out);
        let idle = v2::IdleStateUpdate::new().stop_reason(StopReason::EndTurn);
        self.update_all(
            &sid,
            SessionUpdate::StateUpdate(StateUpdate::Idle(idle)),
            out,
        );
        let next = self.sessions.get_mut(&sid).and_then(|s| s.held.pop_front());
        if let Some(h) = next {
            self.insert(&sid, h, "held", out);
            self.start_turn(&sid, out);
        }
    }

    fn disconnected(&mut self, conn: ConnId, out: &mut Vec<Action>) {
        self.conns.shift_remove(&conn);
        let o1 = self.cfg.o1;
        for (sid, s) in self.sessions.iter_mut() {
            for h in s.held.iter_mut() {
                h.waiters.retain(|(c, _)| *c != conn);
            }
            if o1 == HeldOnDisconnect::Drop {
                let mut kept = VecDeque::new();
                while let Some(mut h) = s.held.pop_front() {
                    if h.conn != conn {
                        kept.push_back(h);
                    } else if !h.waiters.is_empty() {
                        // A7: a waiting retry becomes the submission.
                        let (c, id) = h.waiters.remove(0);
                        h.conn = c;
                        h.id = id;
                        kept.push_back(h);
                    } else {
                        out.push(effect(
                            "drop-held",
                            json!({"session": sid, "conn": conn, "id": h.id}),
                        ));
                    }
                }
                s.held = kept;
            }
        }
    }
}

impl AgentModel for StoredAgent {
    fn handle(&mut self, input: AgentInput, out: &mut Vec<Action>) {
        match input {
            AgentInput::Connected(c) => {
                self.conns.insert(c, BTreeSet::new());
            }
            AgentInput::Frame(c, line) => self.frame(c, &line, out),
            AgentInput::Disconnected(c) => self.disconnected(c, out),
            AgentInput::Timer(t) => self.end_turn(t, out),
            AgentInput::InjectTransientError => self.transient_errors += 1,
        }
    }

    fn is_idle(&self) -> bool {
        self.sessions
            .values()
            .all(|s| s.turn.is_none() && s.held.is_empty())
    }
}

fn to_value<T: Serialize>(v: T) -> Value {
    serde_json::to_value(v).expect("schema types serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(mutant: Option<AgentMutant>) -> AgentConfig {
        AgentConfig {
            o1: HeldOnDisconnect::Keep,
            o4: DuringTurn::Hold,
            turn_ms_min: 10,
            turn_ms_max: 10,
            mutant,
        }
    }

    fn sends(out: &[Action]) -> Vec<Value> {
        out.iter()
            .filter_map(|a| match a {
                Action::Send { line, .. } => Some(serde_json::from_str(line).unwrap()),
                _ => None,
            })
            .collect()
    }

    fn inserts(out: &[Action]) -> usize {
        out.iter()
            .filter(|a| matches!(a, Action::Effect(e) if e.f == "insert"))
            .count()
    }

    fn session(a: &mut StoredAgent) -> String {
        let mut out = vec![];
        a.handle(AgentInput::Connected(1), &mut out);
        a.handle(
            AgentInput::Frame(1, rpc::request(1, "session/new", json!({"cwd": "/w"}))),
            &mut out,
        );
        sends(&out)[0]["result"]["sessionId"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn prompt(sid: &str, id: u64, key: Value) -> String {
        rpc::request(
            id,
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}], "idempotencyKey": key}),
        )
    }

    #[test]
    fn keyed_retry_gets_the_original_message_id() {
        let mut a = StoredAgent::recover(cfg(None), 0, 1, &[]);
        let sid = session(&mut a);
        let mut out = vec![];
        a.handle(AgentInput::Frame(1, prompt(&sid, 2, json!("k"))), &mut out);
        a.handle(AgentInput::Frame(1, prompt(&sid, 3, json!("k"))), &mut out);
        assert_eq!(inserts(&out), 1);
        let ids: Vec<_> = sends(&out)
            .into_iter()
            .filter_map(|v| v["result"]["messageId"].as_str().map(String::from))
            .collect();
        assert_eq!(ids.len(), 2);
        assert_eq!(ids[0], ids[1]);
    }

    #[test]
    fn no_dedup_mutant_inserts_twice() {
        let mut a = StoredAgent::recover(cfg(Some(AgentMutant::NoDedup)), 0, 1, &[]);
        let sid = session(&mut a);
        let mut out = vec![];
        a.handle(AgentInput::Frame(1, prompt(&sid, 2, json!("k"))), &mut out);
        a.handle(AgentInput::Timer(0), &mut out);
        a.handle(AgentInput::Frame(1, prompt(&sid, 3, json!("k"))), &mut out);
        assert_eq!(inserts(&out), 2);
    }

    #[test]
    fn malformed_keys_get_invalid_params_and_insert_nothing() {
        let mut a = StoredAgent::recover(cfg(None), 0, 1, &[]);
        let sid = session(&mut a);
        for k in [
            json!(""),
            json!("x".repeat(256)),
            json!(7),
            json!(true),
            json!({}),
            json!([]),
        ] {
            let mut out = vec![];
            a.handle(AgentInput::Frame(1, prompt(&sid, 9, k.clone())), &mut out);
            assert_eq!(inserts(&out), 0, "{k}");
            assert_eq!(sends(&out)[0]["error"]["code"], code::INVALID_PARAMS, "{k}");
        }
        for k in [json!("é".repeat(255)), json!("a b"), Value::Null] {
            let mut out = vec![];
            a.handle(AgentInput::Frame(1, prompt(&sid, 9, k.clone())), &mut out);
            a.handle(AgentInput::Timer(a.next_timer.saturating_sub(1)), &mut out);
            assert_eq!(inserts(&out), 1, "{k}");
        }
    }

    #[test]
    fn retry_while_held_waits_for_the_original() {
        let mut a = StoredAgent::recover(cfg(None), 0, 1, &[]);
        let sid = session(&mut a);
        let mut out = vec![];
        a.handle(AgentInput::Frame(1, prompt(&sid, 2, json!("a"))), &mut out);
        a.handle(AgentInput::Frame(1, prompt(&sid, 3, json!("b"))), &mut out);
        a.handle(AgentInput::Frame(1, prompt(&sid, 4, json!("b"))), &mut out);
        let answered = |out: &[Action], id: u64| sends(out).iter().any(|v| v["id"] == id);
        assert!(!answered(&out, 3) && !answered(&out, 4));
        a.handle(AgentInput::Timer(0), &mut out);
        assert!(answered(&out, 3) && answered(&out, 4));
        assert_eq!(inserts(&out), 2);
    }

    #[test]
    fn garbage_gets_json_rpc_errors() {
        let mut a = StoredAgent::recover(cfg(None), 0, 1, &[]);
        let mut out = vec![];
        a.handle(AgentInput::Connected(1), &mut out);
        a.handle(AgentInput::Frame(1, "{oops".into()), &mut out);
        a.handle(
            AgentInput::Frame(1, rpc::request(5, "nope", json!({}))),
            &mut out,
        );
        a.handle(
            AgentInput::Frame(
                1,
                rpc::request(
                    6,
                    "session/prompt",
                    json!({"sessionId": "zz", "prompt": [{"type":"text","text":"x"}]}),
                ),
            ),
            &mut out,
        );
        let codes: Vec<_> = sends(&out)
            .iter()
            .map(|v| v["error"]["code"].as_i64().unwrap())
            .collect();
        assert_eq!(
            codes,
            vec![
                code::PARSE_ERROR,
                code::METHOD_NOT_FOUND,
                code::RESOURCE_NOT_FOUND
            ]
        );
    }
}
