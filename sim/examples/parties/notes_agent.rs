//! `NotesAgent`: an ACP Agent written from scratch against acp-chaos's sans-IO
//! [`AgentModel`] trait, the Agent under test of `examples/harness_agent.rs` and
//! `cli/tests/it/sdk_author.rs`.
//!
//! It gets connections, JSON-RPC lines and timers as [`AgentInput`]s and answers with
//! [`Action`]s (lines to send, records to write to its disk, effects for the history). It
//! speaks the part of ACP v2 the simulated Client uses: `initialize`, `session/new`,
//! `session/resume` (with the state snapshot X4 wants before its response) and
//! `session/prompt` with an `idempotencyKey`, deduplicated per session in
//! a table kept on the simulated disk; every other method gets `-32601` and a line that is not
//! JSON `-32700`. The effects it emits (`insert`, `durable`, `dedup-hit`, `reject`, `activate`) are the
//! ones the checkers read for an Agent that answers every prompt in the step it arrives (see
//! the effect contract in the [`AgentModel`] docs).
//!
//! One flag plants a classic bug: `forgets_keys` does not write the key with its message, so a
//! restarted process inserts a retry of an answered prompt again (P1, A1/A10).

use acp_chaos::models::action::effect;
use acp_chaos::models::{Action, AgentInput, AgentModel, ConnId, Point};
use acp_chaos::world::Boot;
use serde_json::{json, Value};
use std::collections::BTreeMap;

// JSON-RPC 2.0 and ACP error codes.
const PARSE_ERROR: i64 = -32700;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
const RESOURCE_NOT_FOUND: i64 = -32002;

/// A small Agent: sessions of user messages, and for each session the `idempotencyKey` →
/// `messageId` table that makes a retried `session/prompt` get the original answer (ACP v2:
/// one submission, at most one message). Every prompt is answered in the step it arrives.
pub struct NotesAgent {
    /// The bug: the key is not written with its message, so the table lives in memory only and
    /// a restarted process inserts a retry of an answered prompt again.
    forgets_keys: bool,
    /// Which start of the process this is (in minted ids, so they stay unique).
    boot: u32,
    minted: u64,
    /// Session → its messages' ids, in order.
    sessions: BTreeMap<String, Vec<String>>,
    /// (session, key) → the messageId the key was answered with.
    keys: BTreeMap<(String, String), String>,
    /// Prompts to fail with a transient `-32603` (the nemesis's `transient-error` fault).
    failures: u32,
}

impl NotesAgent {
    /// Start from the records earlier processes wrote (none at the first start).
    pub fn recover(boot: &Boot<'_>, forgets_keys: bool) -> NotesAgent {
        let mut a = NotesAgent {
            forgets_keys,
            boot: boot.boot,
            minted: 0,
            sessions: BTreeMap::new(),
            keys: BTreeMap::new(),
            failures: 0,
        };
        for r in boot.records {
            let sid = r["session"].as_str().unwrap_or_default().to_string();
            match r["t"].as_str() {
                Some("session") => {
                    a.sessions.entry(sid).or_default();
                }
                Some("message") => {
                    let mid = r["messageId"].as_str().unwrap_or_default().to_string();
                    if let Some(k) = r["key"].as_str() {
                        a.keys.insert((sid.clone(), k.to_string()), mid.clone());
                    }
                    a.sessions.entry(sid).or_default().push(mid);
                }
                _ => {}
            }
        }
        a
    }

    fn mint(&mut self, prefix: &str) -> String {
        self.minted += 1;
        format!("{prefix}{}.{}", self.boot, self.minted)
    }

    fn request(
        &mut self,
        conn: ConnId,
        id: &Value,
        method: &str,
        params: &Value,
        out: &mut Vec<Action>,
    ) {
        match method {
            "initialize" => reply(out, conn, id, Ok(json!({"protocolVersion": 2}))),
            "session/new" => {
                let sid = self.mint("s");
                // On disk before the Client hears of it, so a restart can resume it.
                out.push(Action::Persist {
                    record: json!({"t": "session", "session": sid}),
                    sync: true,
                });
                self.sessions.insert(sid.clone(), Vec::new());
                // The session is active on this connection (the effect contract: P6, P10, P17
                // judge cancels and resumes by where a session is active).
                out.push(effect("activate", json!({"session": sid, "conn": conn})));
                reply(out, conn, id, Ok(json!({"sessionId": sid})));
            }
            "session/resume" => {
                let known = params["sessionId"]
                    .as_str()
                    .is_some_and(|s| self.sessions.contains_key(s));
                let answer = if known {
                    out.push(effect(
                        "activate",
                        json!({"session": params["sessionId"], "conn": conn}),
                    ));
                    // X4: the current state before the response (it answers every prompt in
                    // the step it arrives, so it is always idle here).
                    let snapshot = json!({"jsonrpc": "2.0", "method": "session/update", "params": {
                        "sessionId": params["sessionId"],
                        "update": {"sessionUpdate": "state_update", "state": "idle"}}});
                    out.push(Action::Send {
                        conn,
                        line: snapshot.to_string(),
                    });
                    Ok(json!({}))
                } else {
                    Err((RESOURCE_NOT_FOUND, "Session not found"))
                };
                reply(out, conn, id, answer);
            }
            "session/prompt" => self.prompt(conn, id, params, out),
            _ => reply(out, conn, id, Err((METHOD_NOT_FOUND, "Method not found"))),
        }
    }

    fn prompt(&mut self, conn: ConnId, id: &Value, params: &Value, out: &mut Vec<Action>) {
        out.push(Action::Point(Point::AfterReceive));
        let sid = params["sessionId"].as_str().unwrap_or_default().to_string();
        // A key is a string of 1 to 255 characters; anything else is refused, never ignored.
        let key = match params.get("idempotencyKey") {
            None | Some(Value::Null) => None,
            Some(Value::String(k)) if (1..=255).contains(&k.chars().count()) => Some(k.clone()),
            Some(_) => return reject(out, conn, id, INVALID_PARAMS, "Invalid idempotencyKey"),
        };
        if !self.sessions.contains_key(&sid) {
            return reject(out, conn, id, RESOURCE_NOT_FOUND, "Session not found");
        }
        if self.failures > 0 {
            // A failure before insertion: nothing is inserted, so the Client may send it again.
            self.failures -= 1;
            out.push(effect(
                "reject",
                json!({"conn": conn, "id": id, "code": INTERNAL_ERROR, "transient": true}),
            ));
            return reply(out, conn, id, Err((INTERNAL_ERROR, "Try again")));
        }
        if let Some(k) = &key {
            if let Some(mid) = self.keys.get(&(sid.clone(), k.clone())) {
                // A retry: the original answer, nothing inserted.
                out.push(effect(
                    "dedup-hit",
                    json!({"session": sid, "key": k, "messageId": mid, "conn": conn, "id": id}),
                ));
                return reply(out, conn, id, Ok(json!({"messageId": mid})));
            }
        }
        let mid = self.mint("m");
        let text = params["prompt"][0]["text"].as_str().unwrap_or_default();
        out.push(effect(
            "insert",
            json!({"session": sid, "messageId": mid, "key": key, "conn": conn, "id": id,
                   "mode": "direct", "live_only": false}),
        ));
        out.push(Action::Point(Point::AfterInsertBeforeSync));
        // Message and key in one synced record, before the Client hears of the message.
        let stored_key = if self.forgets_keys {
            Value::Null
        } else {
            json!(key)
        };
        out.push(Action::Persist {
            record: json!({"t": "message", "session": sid, "messageId": mid, "key": stored_key, "text": text}),
            sync: true,
        });
        out.push(effect("durable", json!({"session": sid, "messageId": mid})));
        out.push(Action::Point(Point::AfterSyncBeforeResponse));
        if let Some(k) = key {
            self.keys.insert((sid.clone(), k), mid.clone());
        }
        self.sessions.entry(sid).or_default().push(mid.clone());
        reply(out, conn, id, Ok(json!({"messageId": mid})));
    }
}

impl AgentModel for NotesAgent {
    fn handle(&mut self, input: AgentInput, out: &mut Vec<Action>) {
        match input {
            AgentInput::Frame(conn, line) => match serde_json::from_str::<Value>(&line) {
                Err(_) => reply(out, conn, &Value::Null, Err((PARSE_ERROR, "Parse error"))),
                // Requests have an id. Notifications (`session/cancel`, `$/cancel_request`)
                // find nothing to cancel: every prompt is answered at once.
                Ok(msg) => {
                    if let (Some(method), Some(id)) = (msg["method"].as_str(), msg.get("id")) {
                        self.request(conn, id, method, &msg["params"], out);
                    }
                }
            },
            AgentInput::InjectTransientError => self.failures += 1,
            // Connections, timers and cluster inputs need nothing here.
            _ => {}
        }
    }

    fn is_idle(&self) -> bool {
        true // nothing runs in the background
    }

    fn retained(&self) -> Value {
        json!(self.sessions) // {sessionId: [messageId, ...]}
    }
}

fn reply(out: &mut Vec<Action>, conn: ConnId, id: &Value, answer: Result<Value, (i64, &str)>) {
    let frame = match answer {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    };
    out.push(Action::Send {
        conn,
        line: frame.to_string(),
    });
}

/// Refuse a prompt before inserting anything (the checkers read the `reject` effect).
fn reject(out: &mut Vec<Action>, conn: ConnId, id: &Value, code: i64, message: &str) {
    out.push(effect(
        "reject",
        json!({"conn": conn, "id": id, "code": code}),
    ));
    reply(out, conn, id, Err((code, message)));
}

/// What the simulator calls at every start of the Agent process.
pub fn notes_agent(forgets_keys: bool) -> impl Fn(Boot<'_>) -> Box<dyn AgentModel> {
    move |boot: Boot<'_>| -> Box<dyn AgentModel> {
        Box::new(NotesAgent::recover(&boot, forgets_keys))
    }
}
