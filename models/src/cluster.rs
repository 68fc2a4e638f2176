//! The `cluster` design's store host: the one place a remote Agent's sessions, key records and
//! active logical connections live (A13), shared by every node.
//!
//! Sans-IO like the other models: [`ClusterStore::handle`] takes one op from a node and returns
//! the reply, the record to make durable before replying, and the effects for the history. The
//! store's `insert` is one step: with `if_absent` it inserts only when no message of the session
//! carries the key, and otherwise answers `{"exists": messageId}` (the atomic insert-if-absent
//! the design needs; a node's "read, then insert" is the `cluster-check-then-insert` mutant).
//!
//! Ops (JSON objects, field `op`):
//! - `load` → `{"sessions": {sessionId: {"messages": [{messageId, key, text}], "active": [logical...]}}}`
//! - `append` with `record` (`session`, `fork`, `delete`, `activate`, `deactivate`) → `{"ok": true}`
//!   (idempotent: a node that timed out sends it again)
//! - `insert` with `session`, `messageId`, `key`, `text`, `if_absent`, `store_key`, and the
//!   attempt's `conn`/`id`/`mode` for the history → `{"inserted": messageId}`,
//!   `{"exists": messageId}` or `{"missing": true}` (no such session)
//! - `withdraw` with `session`, `key` → `{"withdrawn": true}` (recorded: never inserted
//!   afterwards), `{"exists": messageId}` (already inserted: not withdrawn) or
//!   `{"missing": true}`

use std::collections::BTreeSet;

use indexmap::IndexMap;
use serde_json::{json, Value};

use crate::action::Effect;

#[derive(Debug, Clone)]
struct StoredMsg {
    message_id: String,
    key: Option<String>,
    text: String,
}

#[derive(Debug, Clone, Default)]
struct StoreSession {
    messages: Vec<StoredMsg>,
    /// Live-only messages' key records (A11): never replayed, kept while the store lives.
    live: Vec<StoredMsg>,
    /// Logical connections on which the session is active (X2 on the remote transport).
    active: BTreeSet<String>,
    /// Keys whose prompt was withdrawn before insertion (A5): never inserted afterwards.
    withdrawn: BTreeSet<String>,
    /// `session/cancel`s recorded (A6), by id; their count is what a held prompt is judged by.
    stops: BTreeSet<String>,
    /// The working directory it was created with (`session/list`).
    cwd: String,
}

impl StoreSession {
    /// The message (retained or live-only) whose key record is `k`.
    fn with_key(&self, k: &str) -> Option<&StoredMsg> {
        self.messages
            .iter()
            .chain(&self.live)
            .find(|m| m.key.as_deref() == Some(k))
    }
}

/// What one op does.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The reply to send back to the node.
    pub reply: Value,
    /// The record to append and sync before the reply (none for reads and no-op writes).
    pub record: Option<Value>,
    /// Effects for the history (`insert`; `durable` follows the sync, added by the driver).
    pub effects: Vec<Effect>,
}

/// The store's state: the fold of its records.
#[derive(Debug, Default)]
pub struct ClusterStore {
    sessions: IndexMap<String, StoreSession>,
}

impl ClusterStore {
    /// Rebuild from the records on the store's disk.
    pub fn recover(records: &[Value]) -> ClusterStore {
        let mut s = ClusterStore::default();
        for r in records {
            s.apply(r);
        }
        s
    }

    /// Messages per session, as `{sessionId: [messageId...]}` (for the `recover` op).
    pub fn retained(&self) -> Value {
        crate::agent::retained_ids(
            self.sessions
                .iter()
                .map(|(sid, s)| (sid, s.messages.iter().map(|m| &m.message_id))),
        )
    }

    fn apply(&mut self, r: &Value) {
        let sid = r["id"]
            .as_str()
            .or(r["session"].as_str())
            .unwrap_or_default()
            .to_string();
        match r["t"].as_str() {
            Some("session") => {
                let cwd = r["cwd"].as_str().unwrap_or_default().to_string();
                self.sessions.entry(sid).or_default().cwd = cwd;
            }
            Some("fork") => {
                if self.sessions.contains_key(&sid) {
                    return;
                }
                let from = r["from"].as_str().unwrap_or_default();
                // A9: the fork copies the history, never the keys.
                let messages = self
                    .sessions
                    .get(from)
                    .map(|s| {
                        s.messages
                            .iter()
                            .map(|m| StoredMsg {
                                key: None,
                                ..m.clone()
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                self.sessions.insert(
                    sid,
                    StoreSession {
                        messages,
                        cwd: r["cwd"].as_str().unwrap_or_default().to_string(),
                        ..StoreSession::default()
                    },
                );
            }
            Some("delete") => {
                self.sessions.shift_remove(&sid);
            }
            Some("withdraw") => {
                if let (Some(s), Some(k)) = (self.sessions.get_mut(&sid), r["key"].as_str()) {
                    s.withdrawn.insert(k.to_string());
                }
            }
            Some("stop") => {
                if let (Some(s), Some(id)) = (self.sessions.get_mut(&sid), r["stop"].as_str()) {
                    s.stops.insert(id.to_string());
                }
            }
            Some("activate") | Some("deactivate") => {
                let (Some(s), Some(l)) = (self.sessions.get_mut(&sid), r["logical"].as_str())
                else {
                    return;
                };
                if r["t"] == "activate" {
                    s.active.insert(l.to_string());
                } else {
                    s.active.remove(l);
                }
            }
            Some(t @ ("msg" | "live")) => {
                let (Some(s), Some(mid)) = (self.sessions.get_mut(&sid), r["messageId"].as_str())
                else {
                    return;
                };
                let list = if t == "live" {
                    &mut s.live
                } else {
                    &mut s.messages
                };
                list.push(StoredMsg {
                    message_id: mid.to_string(),
                    key: r["key"].as_str().map(str::to_string),
                    text: r["text"].as_str().unwrap_or_default().to_string(),
                });
            }
            _ => {}
        }
    }

    /// Apply `record` (made durable by the driver before `reply` goes out).
    fn write(&mut self, record: Value, reply: Value, effects: Vec<Effect>) -> Applied {
        self.apply(&record);
        Applied {
            reply,
            record: Some(record),
            effects,
        }
    }

    /// Handle one op from a node. Unknown ops get `{"error": ...}`.
    ///
    /// Long on purpose: the store's dispatch, one arm per op.
    pub fn handle(&mut self, op: &Value) -> Applied {
        let read = |reply| Applied {
            reply,
            record: None,
            effects: Vec::new(),
        };
        match op["op"].as_str() {
            Some("load") => {
                let mut m = serde_json::Map::new();
                for (sid, s) in &self.sessions {
                    let list = |v: &[StoredMsg]| -> Vec<Value> {
                        v.iter()
                            .map(|x| json!({"messageId": x.message_id, "key": x.key, "text": x.text}))
                            .collect()
                    };
                    m.insert(
                        sid.clone(),
                        json!({"messages": list(&s.messages), "live": list(&s.live), "active": s.active.iter().collect::<Vec<_>>(), "stops": s.stops.len(), "cwd": s.cwd}),
                    );
                }
                read(json!({ "sessions": m }))
            }
            Some("append") => self.write(op["record"].clone(), json!({"ok": true}), Vec::new()),
            Some("insert") => {
                let sid = op["session"].as_str().unwrap_or_default().to_string();
                let key = op["key"].as_str();
                let Some(s) = self.sessions.get(&sid) else {
                    return read(json!({"missing": true}));
                };
                let mid = op["messageId"].as_str().unwrap_or_default();
                // The same op sent again after a timeout (a node's messageIds are unique): the
                // write is idempotent whatever the key, so a resend never inserts twice.
                if s.messages
                    .iter()
                    .chain(&s.live)
                    .any(|m| m.message_id == mid)
                {
                    return read(json!({ "exists": mid }));
                }
                if op["if_absent"] == true && key.is_some_and(|k| s.withdrawn.contains(k)) {
                    return read(json!({"withdrawn": true}));
                }
                // A6 across nodes: a session/cancel reached the store after this prompt was
                // held; it is withdrawn, and so is its key (as on the node that read the stop).
                if op["stops_seen"]
                    .as_u64()
                    .is_some_and(|n| (s.stops.len() as u64) > n)
                {
                    let stopped = json!({"stopped": true});
                    return match key {
                        Some(k) => {
                            let record = json!({"t": "withdraw", "session": sid, "key": k});
                            self.write(record, stopped, Vec::new())
                        }
                        None => read(stopped),
                    };
                }
                if op["if_absent"] == true {
                    if let Some(m) = key.and_then(|k| s.with_key(k)) {
                        return read(json!({"exists": m.message_id}));
                    }
                }
                let mid = op["messageId"].as_str().unwrap_or_default().to_string();
                let stored_key = if op["store_key"] == true { key } else { None };
                let live = op["live"] == true;
                let t = if live { "live" } else { "msg" };
                let record = json!({"t": t, "session": sid, "messageId": mid, "key": stored_key, "text": op["text"]});
                let insert = Effect {
                    f: "insert",
                    value: json!({"session": sid, "messageId": mid, "key": key, "conn": op["conn"], "id": op["id"], "mode": op["mode"], "live_only": live, "node": op["node"]}),
                };
                self.write(record, json!({ "inserted": mid }), vec![insert])
            }
            // A5 across nodes, in one step: a key already inserted (through any node) is not
            // withdrawn, and the node answers its attempts with that messageId instead.
            Some("withdraw") => {
                let sid = op["session"].as_str().unwrap_or_default().to_string();
                let key = op["key"].as_str();
                let Some(s) = self.sessions.get(&sid) else {
                    return read(json!({"missing": true}));
                };
                if let Some(m) = key.and_then(|k| s.with_key(k)) {
                    return read(json!({"exists": m.message_id}));
                }
                let record = json!({"t": "withdraw", "session": sid, "key": key});
                self.write(record, json!({"withdrawn": true}), Vec::new())
            }
            Some("stop") => {
                let sid = op["session"].as_str().unwrap_or_default().to_string();
                let id = op["stop"].as_str().unwrap_or_default().to_string();
                let Some(s) = self.sessions.get(&sid) else {
                    return read(json!({"missing": true}));
                };
                if s.stops.contains(&id) {
                    return read(json!({"stops": s.stops.len()}));
                }
                // The count this record makes (recorded once per id: not yet among them).
                let n = s.stops.len() + 1;
                let recorded = Effect {
                    f: "stop-recorded",
                    value: json!({"session": sid, "stops": n, "stop": id}),
                };
                let record = json!({"t": "stop", "session": sid, "stop": id});
                self.write(record, json!({ "stops": n }), vec![recorded])
            }
            _ => read(json!({"error": "unknown op"})),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert(key: &str, mid: &str, if_absent: bool) -> Value {
        json!({"op": "insert", "session": "s", "messageId": mid, "key": key, "text": "t",
               "if_absent": if_absent, "store_key": true, "conn": 1, "id": 1, "mode": "direct"})
    }

    fn with_session() -> ClusterStore {
        let mut st = ClusterStore::default();
        st.handle(&json!({"op": "append", "record": {"t": "session", "id": "s"}}));
        st
    }

    #[test]
    fn insert_if_absent_is_one_step() {
        let mut st = with_session();
        let a = st.handle(&insert("k", "m1", true));
        assert_eq!(a.reply, json!({"inserted": "m1"}));
        assert_eq!(a.effects.len(), 1);
        let b = st.handle(&insert("k", "m2", true));
        assert_eq!(b.reply, json!({"exists": "m1"}));
        assert!(b.record.is_none() && b.effects.is_empty());
        // A plain insert (the check-then-insert mutant's second step) inserts again.
        let c = st.handle(&insert("k", "m3", false));
        assert_eq!(c.reply, json!({"inserted": "m3"}));
    }

    #[test]
    fn records_replay_to_the_same_state() {
        let mut st = with_session();
        let mut records = vec![json!({"t": "session", "id": "s"})];
        for op in [
            insert("k", "m1", true),
            json!({"op": "append", "record": {"t": "activate", "session": "s", "logical": "L1"}}),
            json!({"op": "append", "record": {"t": "fork", "id": "f", "from": "s"}}),
        ] {
            records.extend(st.handle(&op).record);
        }
        let again = ClusterStore::recover(&records);
        assert_eq!(
            again.handle_load(),
            st.handle_load(),
            "recovery folds the same records to the same state"
        );
        let load = st.handle_load();
        assert_eq!(load["sessions"]["s"]["active"], json!(["L1"]));
        // A9: the fork has the messages, never the keys.
        assert_eq!(load["sessions"]["f"]["messages"][0]["key"], Value::Null);
        assert_eq!(load["sessions"]["f"]["messages"][0]["messageId"], "m1");
    }

    #[test]
    fn a_withdrawal_is_one_step_against_an_insertion_through_another_node() {
        let mut st = with_session();
        let withdraw = |k: &str| json!({"op": "withdraw", "session": "s", "key": k});
        // Inserted first (another node): not withdrawn, its messageId is the answer.
        st.handle(&insert("k1", "m1", true));
        let a = st.handle(&withdraw("k1"));
        assert_eq!(a.reply, json!({"exists": "m1"}));
        assert!(a.record.is_none());
        // Withdrawn first: recorded, and never inserted afterwards.
        let w = st.handle(&withdraw("k2"));
        assert_eq!(w.reply, json!({"withdrawn": true}));
        assert!(w.record.is_some());
        assert_eq!(
            st.handle(&insert("k2", "m2", true)).reply,
            json!({"withdrawn": true})
        );
        assert_eq!(
            st.handle(&json!({"op": "withdraw", "session": "x", "key": "k"}))
                .reply,
            json!({"missing": true})
        );
    }

    #[test]
    fn the_same_insert_sent_again_never_inserts_twice_even_without_a_key() {
        let mut st = with_session();
        let op = json!({"op": "insert", "session": "s", "messageId": "m1", "key": null, "text": "t",
                        "if_absent": true, "store_key": true, "conn": 1, "id": 1, "mode": "direct"});
        assert_eq!(st.handle(&op).reply, json!({"inserted": "m1"}));
        let again = st.handle(&op);
        assert_eq!(again.reply, json!({"exists": "m1"}));
        assert!(again.record.is_none() && again.effects.is_empty());
    }

    #[test]
    fn a_withdrawn_key_is_never_inserted_afterwards() {
        let mut st = with_session();
        st.handle(
            &json!({"op": "append", "record": {"t": "withdraw", "session": "s", "key": "k"}}),
        );
        let a = st.handle(&insert("k", "m1", true));
        assert_eq!(a.reply, json!({"withdrawn": true}));
        assert!(a.record.is_none());
        // Another key is unaffected.
        assert_eq!(
            st.handle(&insert("k2", "m2", true)).reply,
            json!({"inserted": "m2"})
        );
    }

    #[test]
    fn a_stop_withdraws_prompts_held_before_it_on_any_node_and_counts_once() {
        let mut st = with_session();
        let stop = json!({"op": "stop", "session": "s", "stop": "n1b0.1"});
        let a = st.handle(&stop);
        assert_eq!(a.reply, json!({"stops": 1}));
        assert_eq!(a.effects.len(), 1);
        // Sent again after a timeout: the same stop, counted once.
        let again = st.handle(&stop);
        assert_eq!(again.reply, json!({"stops": 1}));
        assert!(again.record.is_none() && again.effects.is_empty());
        assert_eq!(st.handle_load()["sessions"]["s"]["stops"], 1);
        let held = |k: &str, mid: &str, seen: u64| {
            let mut op = insert(k, mid, true);
            op["stops_seen"] = json!(seen);
            op
        };
        // Held before the stop (it saw 0 stops): withdrawn, its key with it.
        let w = st.handle(&held("k1", "m1", 0));
        assert_eq!(w.reply, json!({"stopped": true}));
        assert!(w.effects.is_empty());
        assert_eq!(
            st.handle(&insert("k1", "m9", true)).reply,
            json!({"withdrawn": true})
        );
        // Held after it (it saw the stop): inserted.
        assert_eq!(
            st.handle(&held("k2", "m2", 1)).reply,
            json!({"inserted": "m2"})
        );
        // The count survives the store's restart.
        let again = ClusterStore::recover(&[
            json!({"t": "session", "id": "s"}),
            a.record.expect("recorded"),
        ]);
        assert_eq!(again.handle_load()["sessions"]["s"]["stops"], 1);
    }

    #[test]
    fn insert_into_a_missing_session_is_refused() {
        let mut st = ClusterStore::default();
        let a = st.handle(&insert("k", "m1", true));
        assert_eq!(a.reply, json!({"missing": true}));
        assert!(a.record.is_none());
    }

    impl ClusterStore {
        fn handle_load(&self) -> Value {
            let mut c = ClusterStore {
                sessions: self.sessions.clone(),
            };
            c.handle(&json!({"op": "load"})).reply
        }
    }
}
