//! The `session/prompt` path of [`ModelAgent`]: key validation, deduplication by key (A1, A4),
//! holding during a turn (O4), insertion (one synced record for a durable design, A13; one
//! insert-if-absent at the store for a cluster node), the turn and its tool calls, cancels
//! (A5, A6).

use agent_client_protocol_schema::v2::{
    self, ContentBlock, PromptResponse, SessionUpdate, StateUpdate, StopReason,
    UpdateSessionNotification, UserMessage,
};
use rand::Rng;
use serde_json::{json, Value};

use super::*;
use crate::action::{effect, Action, ConnId, Point};
use crate::op;
use crate::rpc::{self, code};

impl ModelAgent {
    pub(super) fn prompt(
        &mut self,
        conn: ConnId,
        id: Value,
        r: v2::PromptRequest,
        out: &mut Vec<Action>,
    ) {
        let sid = r.session_id.0.to_string();
        // Mutant: any session this Agent has will do (breaks X2).
        let served_anyway = self.cfg.mutant == Some(AgentMutant::ServesInactiveSession)
            && self.sessions.contains_key(&sid);
        if !self.is_active(conn, &sid) && !served_anyway {
            // X2: the session must be active on this connection.
            out.push(effect(
                op::REJECT,
                json!({"conn": conn, "id": id, "code": code::RESOURCE_NOT_FOUND}),
            ));
            return self.fail(
                conn,
                &id,
                code::RESOURCE_NOT_FOUND,
                "Session not active on this connection",
                Some(json!({"sessionId": sid})),
                out,
            );
        }
        if r.prompt.is_empty() {
            // A17: may reject `prompt: []` without inserting.
            out.push(effect(
                op::REJECT,
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
        if self.transient_errors > 0 && self.cfg.mutant == Some(AgentMutant::ErrorAfterInsert) {
            // The mutant's failure comes after the insertion (see `insert`).
            self.transient_errors -= 1;
            self.fail_next_insert = true;
        } else if self.transient_errors > 0 {
            // A2: an error means this attempt inserted nothing and recorded nothing.
            self.transient_errors -= 1;
            if let (Some(k), Some(AgentMutant::ErrorRecordsKey)) =
                (&r.idempotency_key, self.cfg.mutant)
            {
                // Mutant: the key record was written before the failure, and stays.
                let mid = format!("failed-{}-{}", self.boot, self.arrivals.len());
                self.arrivals
                    .insert((sid.clone(), k.as_str().to_string()), (mid, self.boot));
            }
            return self.reject_internal(conn, &id, "transient", json!({"transient": true}), out);
        }
        let keyed = r.idempotency_key.is_some();
        if keyed && self.durability().fills_from_history() {
            let s = self.sessions.get_mut(&sid).expect("active sessions exist");
            if !s.filled && self.cfg.mutant != Some(AgentMutant::AdapterNoHistoryFill) {
                // The first keyed prompt after a restart reads the runtime history once; prompts
                // arriving meanwhile wait for the fill.
                s.fill_queue.push((conn, id, r));
                if !s.filling {
                    s.filling = true;
                    out.push(effect(op::HISTORY_READ_START, json!({"session": sid})));
                    self.timer(&sid, TimerKind::HistoryFill, 5, out);
                    out.push(Action::Point(Point::DuringHistoryFill));
                }
                return;
            }
        }
        self.admit(conn, id, r, out);
    }

    /// Answer a prompt attempt `-32603` before inserting it, logging the rejection with `why`
    /// set (checkers read `transient` to excuse the nemesis's errors).
    pub(super) fn reject_internal(
        &mut self,
        conn: ConnId,
        id: &Value,
        why: &str,
        data: Value,
        out: &mut Vec<Action>,
    ) {
        let mut log = json!({"conn": conn, "id": id, "code": code::INTERNAL_ERROR});
        log[why] = true.into();
        out.push(effect(op::REJECT, log));
        self.send(
            conn,
            rpc::err(id, code::INTERNAL_ERROR, "Internal error", Some(data)),
            out,
        );
    }

    /// Dedup, then insert, hold or steer (the prompt passed validation and any history fill).
    ///
    /// Long on purpose: the decisions on an arriving prompt in the order the rules give them (K1-K3
    /// key validation, A9 scope, A1/A4 deduplication, A7 a held attempt, O4 hold or insert); split,
    /// the order that is the point would be scattered.
    pub(super) fn admit(
        &mut self,
        conn: ConnId,
        id: Value,
        r: v2::PromptRequest,
        out: &mut Vec<Action>,
    ) {
        let sid = r.session_id.0.to_string();
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
        if let (Some(k), Some(AgentMutant::ErrorRecordsKey)) = (&key, self.cfg.mutant) {
            // Mutant: the key a failed attempt left behind answers its retry.
            if let Some((mid, _)) = self.arrivals.get(&(sid.clone(), k.clone())).cloned() {
                out.push(effect(
                    op::DEDUP_HIT,
                    json!({"session": sid, "key": k, "messageId": mid, "conn": conn, "id": id}),
                ));
                return self.send(conn, rpc::ok_of(&id, &PromptResponse::new(mid)), out);
            }
        }
        if let (Some(k), Some(AgentMutant::KeyRecordedOnArrival)) = (&key, self.cfg.mutant) {
            if self.persists() {
                // Mutant: a key recorded by an earlier process "counts as inserted", message
                // or not (this process's own prompts are held or inserting: the usual paths).
                if let Some((mid, boot)) = self.arrivals.get(&(sid.clone(), k.clone())).cloned() {
                    let earlier = boot < self.boot;
                    let inserted = self.sessions.get(&sid).is_some_and(|s| {
                        s.messages
                            .iter()
                            .any(|m| m.key.as_deref() == Some(k.as_str()))
                    });
                    if earlier && !inserted {
                        out.push(effect(op::DEDUP_HIT,
                            json!({"session": sid, "key": k, "messageId": mid, "conn": conn, "id": id}),
                        ));
                        return self.send(conn, rpc::ok_of(&id, &PromptResponse::new(mid)), out);
                    }
                } else {
                    let mid = format!("arrival-{}-{}", self.boot, self.arrivals.len());
                    self.arrivals
                        .insert((sid.clone(), k.clone()), (mid.clone(), self.boot));
                    out.push(Action::Persist {
                        record: json!({"t": "arrival", "session": sid, "key": k, "messageId": mid, "boot": self.boot}),
                        sync: true,
                    });
                }
            }
        }
        // Mutant: a key recorded in any other session counts too (breaks A9).
        let elsewhere = match (&key, self.cfg.mutant) {
            (Some(k), Some(AgentMutant::KeysAcrossSessions)) => self
                .sessions
                .iter()
                .filter(|(other, _)| **other != sid)
                .find_map(|(_, s)| {
                    s.messages
                        .iter()
                        .find(|m| m.key.as_deref() == Some(k))
                        .map(|m| m.message_id.clone())
                }),
            _ => None,
        };
        if self.cfg.mutant == Some(AgentMutant::DedupById) {
            // Mutant: the JSON-RPC id, not the key, names the submission.
            if let Some(mid) = self.id_records.get(&(sid.clone(), id.to_string())).cloned() {
                out.push(effect(
                    op::DEDUP_HIT,
                    json!({"session": sid, "key": key, "messageId": mid, "conn": conn, "id": id}),
                ));
                return self.send(conn, rpc::ok_of(&id, &PromptResponse::new(mid)), out);
            }
        }
        if self.cfg.mutant == Some(AgentMutant::StopCancelsLater) && self.cancel_later.remove(&sid)
        {
            // Mutant: the stop pressed before this prompt arrived withdraws it too.
            out.push(effect(
                op::WITHDRAW,
                json!({"session": sid, "conn": conn, "id": id, "key": key, "by": "session/cancel"}),
            ));
            return self.send(
                conn,
                rpc::err(&id, code::REQUEST_CANCELLED, CANCELLED, None),
                out,
            );
        }
        let dur = self.durability();
        let local_keys = self.cfg.mutant == Some(AgentMutant::ClusterNodeLocalKeys);
        // Mutant `keys-per-connection`: only keys inserted on this connection are known.
        let conn_known = |k: &str| {
            self.cfg.mutant != Some(AgentMutant::KeysPerConnection)
                || self
                    .conn_keys
                    .get(&conn)
                    .is_some_and(|ks| ks.contains(&(sid.clone(), k.to_string())))
        };
        let known_here = key.as_deref().is_some_and(conn_known);
        let other_prompt_is_new = self.cfg.mutant == Some(AgentMutant::InsertsOtherPrompt);
        let Some(s) = self.sessions.get_mut(&sid) else {
            return;
        };
        if let (Some(k), true) = (&key, dedup) {
            // A1/A4: a recorded key gets the original messageId and nothing else. Live-only
            // keys are known while the session is active (A11); retained ones per design.
            let live = s
                .live
                .iter()
                .find(|m| m.key.as_deref() == Some(k))
                .map(|m| m.message_id.clone());
            let found = live.or_else(|| {
                if let Some(derived) = dur.derived_id(&sid, k) {
                    // The design keeps no key: a retry is found by the id it derives.
                    s.ids.contains(&derived).then_some(derived)
                } else if local_keys {
                    // Mutant: the record lives in this node's memory only.
                    self.local_keys.get(&(sid.clone(), k.clone())).cloned()
                } else {
                    s.messages
                        .iter()
                        .find(|m| m.key.as_deref() == Some(k))
                        // Mutant: a different prompt under the key counts as new (A4).
                        .filter(|m| !other_prompt_is_new || m.text == text)
                        .map(|m| m.message_id.clone())
                }
            });
            let found = found.filter(|_| known_here).or(elsewhere);
            if let Some(mid) = found {
                out.push(effect(
                    op::DEDUP_HIT,
                    json!({"session": sid, "key": k, "messageId": mid, "conn": conn, "id": id}),
                ));
                return self.send(conn, rpc::ok_of(&id, &PromptResponse::new(mid)), out);
            }
            // A7: a retry of a held prompt waits for the original's outcome.
            let storing = self
                .storing
                .values_mut()
                .find(|x| x.sid == sid && x.held.key.as_deref() == Some(k))
                .map(|x| &mut x.held);
            if let Some(h) = s
                .held
                .iter_mut()
                .find(|h| h.key.as_deref() == Some(k))
                .or(storing)
            {
                if self.cfg.mutant == Some(AgentMutant::HeldRetryErrors) {
                    // Mutant: "still in progress" instead of the original's outcome.
                    let data =
                        json!({"reason": "a request with this idempotencyKey is in progress"});
                    return self.reject_internal(conn, &id, "in_progress", data, out);
                }
                h.waiters.push((conn, id.clone()));
                out.push(effect(
                    op::WAIT_HELD,
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
            stops_seen: s.stops_seen,
        };
        if held.text.starts_with('/') {
            // A locally handled command: answered and echoed, not retained, no turn (A11).
            return self.insert_turn(&sid, held, "live", None, out);
        }
        if s.turn.is_none() && !s.storing {
            self.insert_turn(&sid, held, "direct", Some(conn), out);
        } else if self.cfg.o4 == DuringTurn::Steer && !s.storing {
            self.insert_turn(&sid, held, "steer", None, out);
        } else {
            out.push(effect(
                op::HOLD,
                json!({"session": sid, "conn": held.conn, "id": held.id}),
            ));
            let echoed =
                (self.cfg.mutant == Some(AgentMutant::EchoBeforeInsert)).then(|| held.clone());
            s.held.push_back(held);
            if let Some(h) = echoed {
                // Mutant: a held prompt is echoed as it arrives, before any insertion (A14).
                let mid = self.new_message_id(&sid, &h);
                let um = UserMessage::new(mid).content(vec![ContentBlock::from(h.text)]);
                self.update_all(&sid, SessionUpdate::UserMessage(um), out);
            }
            out.push(Action::Point(Point::WhileHeld));
        }
    }

    /// Insert one prompt and, with `turn`, start a turn for it on behalf of that connection.
    /// A cluster node first inserts at the store (the rest follows its answer).
    pub(super) fn insert_turn(
        &mut self,
        sid: &str,
        p: Held,
        mode: &'static str,
        turn: Option<ConnId>,
        out: &mut Vec<Action>,
    ) {
        let mid = self.new_message_id(sid, &p);
        if self.durability().shared_store() {
            // Live-only keys too: A11 holds while the session is active on any logical
            // connection, through any node (A13).
            return self.store_insert(sid, p, mode, mid, turn, out);
        }
        self.insert(sid, p, mode, mid, out);
        if let Some(owner) = turn {
            self.start_turn(sid, owner, out);
        }
    }

    /// The messageId of a new insertion of `p` in `sid`: the design's own
    /// ([`Durability::message_id`]), or else the process's next number.
    pub(super) fn new_message_id(&mut self, sid: &str, p: &Held) -> String {
        let dur = self.durability();
        if let Some(mid) = dur.message_id(sid, p.key.as_deref(), &mut self.rng) {
            return mid;
        }
        // Unique per Agent process (boot) across sessions, and across restarts.
        self.next_message += 1;
        format!("m{}.{}", self.prefix, self.next_message)
    }

    /// Cluster: one insert-if-absent at the store (A13); the session is busy until it answers.
    pub(super) fn store_insert(
        &mut self,
        sid: &str,
        p: Held,
        mode: &'static str,
        mid: String,
        turn: Option<ConnId>,
        out: &mut Vec<Action>,
    ) {
        if let Some(s) = self.sessions.get_mut(sid) {
            s.storing = true;
        }
        let m = self.cfg.mutant;
        let mut op = json!({
            "op": "insert", "session": sid, "messageId": mid, "key": p.key, "text": p.text,
            "conn": p.conn, "id": p.id, "mode": mode, "node": self.prefix, "live": mode == "live",
            // The mutants: a plain insert after the node's own check, and no key at the store.
            "if_absent": !matches!(m, Some(AgentMutant::ClusterCheckThenInsert | AgentMutant::ClusterNodeLocalKeys | AgentMutant::NoDedup)),
            "store_key": m != Some(AgentMutant::ClusterNodeLocalKeys),
        });
        if mode == "held" {
            // A6: the store withdraws it if a stop reached the store after it was held.
            op["stops_seen"] = p.stops_seen.into();
        }
        out.push(Action::Point(Point::AfterInsertBeforeSync));
        self.store_op(
            Storing {
                sid: sid.to_string(),
                held: p,
                mode,
                message_id: mid,
                turn,
                op,
            },
            out,
        );
    }

    pub(super) fn store_op(&mut self, st: Storing, out: &mut Vec<Action>) {
        self.next_store += 1;
        let req = self.next_store;
        out.push(Action::Store {
            req,
            op: st.op.clone(),
        });
        self.storing.insert(req, st);
    }

    /// Cluster: the store answered an insertion (or did not, in time).
    pub(super) fn store_reply(&mut self, req: u64, reply: Option<Value>, out: &mut Vec<Action>) {
        let Some(st) = self.storing.shift_remove(&req) else {
            return;
        };
        if st.mode == "withdraw" {
            return self.withdraw_reply(st, reply, out);
        }
        if st.mode == "stop" {
            if reply.is_none() {
                // Recorded once per id at the store: safe to send again.
                out.push(effect(
                    op::STORE_RETRY,
                    json!({"session": st.sid, "stop": st.op["stop"]}),
                ));
                self.store_op(st, out);
            }
            return;
        }
        let sid = st.sid.clone();
        let attempts: Vec<(ConnId, Value)> = std::iter::once((st.held.conn, st.held.id.clone()))
            .chain(st.held.waiters.iter().cloned())
            .collect();
        let Some(r) = reply else {
            return self.store_unanswered(st, &attempts, out);
        };
        if r["withdrawn"] == true || r["stopped"] == true {
            return self.withdrawn_at_store(&st, &r, &attempts, out);
        }
        if r["missing"] == true {
            for (c, id) in &attempts {
                out.push(effect(
                    op::REJECT,
                    json!({"conn": c, "id": id, "code": code::RESOURCE_NOT_FOUND}),
                ));
                self.fail(
                    *c,
                    id,
                    code::RESOURCE_NOT_FOUND,
                    "Session not found",
                    Some(json!({"sessionId": sid})),
                    out,
                );
            }
            return self.store_done(&sid, out);
        }
        let got = r["inserted"]
            .as_str()
            .or(r["exists"].as_str())
            .unwrap_or_default()
            .to_string();
        if got == st.message_id {
            // Ours (also an earlier send of ours that applied while its answer was lost).
            if let Some(s) = self.sessions.get_mut(&sid) {
                s.storing = false;
            }
            self.insert(&sid, st.held, st.mode, got, out);
            match st.turn {
                Some(owner) => self.start_turn(&sid, owner, out),
                None => self.store_done(&sid, out),
            }
        } else {
            // Another attempt of this key was inserted first, through another node: A1.
            self.answer_inserted(&sid, &st.held, &got, out);
            self.store_done(&sid, out);
        }
    }

    /// Cluster: no answer came in time to insertion `st` (its attempts `attempts`): it may have
    /// applied, so it is sent again (A2; the mutant answers them with an error).
    fn store_unanswered(
        &mut self,
        st: Storing,
        attempts: &[(ConnId, Value)],
        out: &mut Vec<Action>,
    ) {
        let sid = st.sid.clone();
        if self.cfg.mutant == Some(AgentMutant::ClusterErrorOnStoreTimeout) {
            // Mutant: an error although the store may have inserted it (breaks A2).
            out.push(effect(
                op::STORE_TIMEOUT,
                json!({"session": sid, "conn": st.held.conn, "id": st.held.id, "answer": "error"}),
            ));
            for (c, id) in attempts {
                self.fail(
                    *c,
                    id,
                    code::INTERNAL_ERROR,
                    "Internal error",
                    Some(json!({"store": "timeout"})),
                    out,
                );
            }
            return self.store_done(&sid, out);
        }
        // A2: it may have applied, so no error; insert-if-absent is safe to send again.
        out.push(effect(
            op::STORE_RETRY,
            json!({"session": sid, "messageId": st.message_id}),
        ));
        self.store_op(st, out);
    }

    /// Cluster: the store withdrew insertion `st` instead (reply `r`): A5, the key was
    /// withdrawn through another node; A6, a session/cancel read by another node reached the
    /// store after this prompt was held. Every attempt gets `-32800`.
    fn withdrawn_at_store(
        &mut self,
        st: &Storing,
        r: &Value,
        attempts: &[(ConnId, Value)],
        out: &mut Vec<Action>,
    ) {
        let sid = &st.sid;
        let by = if r["stopped"] == true {
            "stop"
        } else {
            "store"
        };
        out.push(effect(op::WITHDRAW,
            json!({"session": sid, "conn": st.held.conn, "id": st.held.id, "key": st.held.key, "by": by}),
        ));
        for (c, id) in attempts {
            self.send(
                *c,
                rpc::err(id, code::REQUEST_CANCELLED, CANCELLED, None),
                out,
            );
        }
        self.store_done(sid, out);
    }

    /// Cluster: the session's store insertion is settled; held prompts may go on.
    pub(super) fn store_done(&mut self, sid: &str, out: &mut Vec<Action>) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        s.storing = false;
        if s.turn.is_none() {
            self.next_held(sid, out);
        }
    }

    /// Insert one prompt as `mid`: record (key + message in one write, as the design writes it,
    /// A13), sync, then make it visible. A cluster node calls it once the store has inserted it.
    pub(super) fn insert(
        &mut self,
        sid: &str,
        p: Held,
        mode: &str,
        mid: String,
        out: &mut Vec<Action>,
    ) {
        let live = mode == "live";
        let dur = self.durability();
        self.note_mutant_records(sid, &p, &mid);
        self.keep_message(sid, &p, &mid, live);
        if !dur.shared_store() {
            // A cluster's store reports its own insertions.
            out.push(effect(op::INSERT,
                json!({"session": sid, "messageId": mid, "key": p.key, "conn": p.conn, "id": p.id, "mode": mode, "live_only": live}),
            ));
            out.push(Action::Point(Point::AfterInsertBeforeSync));
        }
        let w = Insertion {
            sid,
            message_id: &mid,
            key: p.key.as_deref(),
            text: &p.text,
            mutant: self.cfg.mutant,
        };
        let synced_point = !live && dur.write_insertion(&w, out);
        if !live {
            self.arm_discard(sid, &mid, out);
        }
        if !synced_point {
            out.push(Action::Point(Point::AfterSyncBeforeResponse));
        }
        out.push(effect(
            op::VISIBLE,
            json!({"session": sid, "messageId": mid}),
        ));
        self.answer_and_echo(sid, p, mid, out);
    }

    /// The records the mutants keep of an insertion beside the design's own: a cluster node's
    /// own key memory, the keys per connection, the JSON-RPC id's messageId.
    fn note_mutant_records(&mut self, sid: &str, p: &Held, mid: &str) {
        if let (Some(AgentMutant::ClusterNodeLocalKeys), Some(k)) = (self.cfg.mutant, &p.key) {
            self.local_keys
                .insert((sid.to_string(), k.clone()), mid.to_string());
        }
        if let (Some(AgentMutant::KeysPerConnection), Some(k)) = (self.cfg.mutant, &p.key) {
            for c in std::iter::once(p.conn).chain(p.waiters.iter().map(|(c, _)| *c)) {
                self.conn_keys
                    .entry(c)
                    .or_default()
                    .insert((sid.to_string(), k.clone()));
            }
        }
        if self.cfg.mutant == Some(AgentMutant::DedupById) {
            self.id_records
                .insert((sid.to_string(), p.id.to_string()), mid.to_string());
        }
    }

    /// Keep prompt `p` as message `mid` of `sid` (created if a cluster node learns of it only
    /// now): retained, or live-only while the session is active (A11).
    fn keep_message(&mut self, sid: &str, p: &Held, mid: &str, live: bool) {
        let s = self
            .sessions
            .entry(sid.to_string())
            .or_insert_with(|| Session {
                filled: true,
                ..Session::default()
            });
        s.next_msg += 1;
        let msg = Msg {
            message_id: mid.to_string(),
            key: p.key.clone(),
            text: p.text.clone(),
        };
        if live {
            if self.cfg.mutant != Some(AgentMutant::ForgetsLiveWhileActive) {
                s.live.push(msg);
            }
        } else {
            s.messages.push(msg);
            s.ids.insert(mid.to_string());
        }
    }

    /// Answer every attempt of inserted prompt `p` with `mid` (A1 A7), then echo it (A14).
    fn answer_and_echo(&mut self, sid: &str, p: Held, mid: String, out: &mut Vec<Action>) {
        let ok = PromptResponse::new(mid.clone());
        if std::mem::take(&mut self.fail_next_insert) {
            // Mutant: a failure after insertion answered as an error (breaks A3).
            let e = rpc::err(
                &p.id,
                code::INTERNAL_ERROR,
                "Internal error",
                Some(json!({"transient": true})),
            );
            self.send(p.conn, e, out);
        } else {
            self.send(p.conn, rpc::ok_of(&p.id, &ok), out);
        }
        for (c, id) in &p.waiters {
            self.send(*c, rpc::ok_of(id, &ok), out);
        }
        // A14 lets the echo come before or after the response: after, so a crash can land
        // between them.
        out.push(Action::Point(Point::AfterResponseBeforeUpdate));
        // A14: the echo carries the messageId and never precedes insertion. A8: no key.
        let um = UserMessage::new(mid).content(vec![ContentBlock::from(p.text.clone())]);
        if let (Some(AgentMutant::KeyInUpdates), Some(k)) = (self.cfg.mutant, &p.key) {
            // Mutant: the echo carries the key in `_meta` (breaks A8).
            let mut n = to_value(UpdateSessionNotification::new(
                sid.to_string(),
                SessionUpdate::UserMessage(um),
            ));
            n["update"]["_meta"] = json!({"idempotencyKey": k});
            let line = rpc::notification("session/update", n);
            for (conn, active) in &self.conns {
                if active.contains(sid) {
                    out.push(Action::Send {
                        conn: *conn,
                        line: line.clone(),
                    });
                }
            }
        } else {
            self.update_all(sid, SessionUpdate::UserMessage(um), out);
        }
    }

    pub(super) fn start_turn(&mut self, sid: &str, owner: ConnId, out: &mut Vec<Action>) {
        let ms = self
            .rng
            .gen_range(self.cfg.turn_ms_min..=self.cfg.turn_ms_max.max(self.cfg.turn_ms_min));
        let tool = self.rng.gen_bool(self.cfg.tool_rate.clamp(0.0, 1.0));
        let ask = tool && self.rng.gen_bool(self.cfg.permission_rate.clamp(0.0, 1.0));
        // Drawn only when set, so runs without failures keep their draws.
        let fails = self.cfg.fail_rate > 0.0 && self.rng.gen_bool(self.cfg.fail_rate.min(1.0));
        let Some(mid) = self.sessions[sid]
            .messages
            .last()
            .map(|m| m.message_id.clone())
        else {
            return;
        };
        out.push(effect(
            op::TURN_START,
            json!({"session": sid, "messageId": mid, "ms": ms, "tool": tool}),
        ));
        self.update_all(
            sid,
            SessionUpdate::StateUpdate(StateUpdate::Running(v2::RunningStateUpdate::new())),
            out,
        );
        let placeholder = TurnPhase::Working { timer: u64::MAX };
        self.sessions[sid].turn = Some(Turn {
            message_id: mid,
            owner,
            phase: placeholder,
            ms,
            tool,
            fails,
        });
        // Ask on the prompt's connection, or another one where the session is active; with
        // none, nobody can approve (a connection that ended is never approval).
        let asker = Some(owner)
            .filter(|c| self.conns.contains_key(c))
            .or_else(|| {
                self.conns
                    .iter()
                    .find(|(_, a)| a.contains(sid))
                    .map(|(c, _)| *c)
            });
        if !self.conns.contains_key(&owner) && self.cfg.o2 == WorkOnDisconnect::Cancel {
            // O2 cancel: work whose connection already ended is cancelled at once.
            out.push(effect(
                op::PERMISSION,
                json!({"session": sid, "approved": false, "reason": "connection ended"}),
            ));
            self.end_turn(sid, StopReason::Cancelled, out);
            return self.next_held(sid, out);
        }
        if let (true, None) = (ask, asker) {
            out.push(effect(
                op::PERMISSION,
                json!({"session": sid, "approved": false, "reason": "no connection to ask"}),
            ));
            return self.work(sid, false, out);
        }
        if let (true, Some(owner)) = (ask, asker) {
            self.next_req += 1;
            let req = self.next_req;
            self.asks.insert(req, sid.to_string());
            self.sessions[sid].turn.as_mut().expect("set above").phase =
                TurnPhase::AwaitPermission { conn: owner, req };
            self.send(owner, permission_request(req, sid), out);
            if let Some(ms) = self.durability().asks_again_ms() {
                self.timer(sid, TimerKind::AskAgain(req), ms, out);
            }
        } else {
            self.work(sid, tool, out);
        }
    }

    /// Run the turn's tool (if any and approved) and set the timer for the rest of the work.
    pub(super) fn work(&mut self, sid: &str, run_tool: bool, out: &mut Vec<Action>) {
        let Some(turn) = self.sessions.get(sid).and_then(|s| s.turn.clone()) else {
            return;
        };
        if run_tool && turn.tool {
            // The side effect the user cares about: counted in the ledger (A1: never twice).
            self.tool_effects += 1;
            let tc = format!("tool-{}", turn.message_id);
            out.push(effect(
                op::TOOL_EFFECT,
                json!({"session": sid, "messageId": turn.message_id, "toolCallId": tc}),
            ));
            let upd = v2::ToolCallUpdate::new(tc)
                .title("write a file")
                .status(v2::ToolCallStatus::Completed);
            self.update_all(sid, SessionUpdate::ToolCallUpdate(upd), out);
        }
        let timer = self.timer(sid, TimerKind::TurnEnd, turn.ms, out);
        if let Some(t) = self.sessions[sid].turn.as_mut() {
            t.phase = TurnPhase::Working { timer };
        }
    }

    pub(super) fn end_turn(&mut self, sid: &str, stop: StopReason, out: &mut Vec<Action>) {
        let Some(turn) = self.sessions.get_mut(sid).and_then(|s| s.turn.take()) else {
            return;
        };
        // The idle update's own field, as a plain string.
        let reason =
            to_value(v2::IdleStateUpdate::new().stop_reason(stop.clone()))["stopReason"].clone();
        out.push(effect(
            op::TURN_END,
            json!({"session": sid, "messageId": turn.message_id, "stopReason": reason}),
        ));
        let chunk =
            v2::ContentChunk::new(ContentBlock::from("done"), format!("a-{}", turn.message_id));
        self.update_all(sid, SessionUpdate::AgentMessageChunk(chunk), out);
        let idle = v2::IdleStateUpdate::new().stop_reason(stop);
        self.update_all(
            sid,
            SessionUpdate::StateUpdate(StateUpdate::Idle(idle)),
            out,
        );
        if let Some(record) = self.durability().turn_end_sync(sid) {
            // The design syncs at the end of a turn: everything written so far is durable.
            out.push(Action::Persist { record, sync: true });
            let s = &self.sessions[sid];
            for m in &s.messages {
                out.push(effect(
                    op::DURABLE,
                    json!({"session": sid, "messageId": m.message_id}),
                ));
            }
        }
    }

    pub(super) fn next_held(&mut self, sid: &str, out: &mut Vec<Action>) {
        let next = self
            .sessions
            .get_mut(sid)
            .filter(|s| !s.storing)
            .and_then(|s| s.held.pop_front());
        if let Some(h) = next {
            let owner = h.conn;
            if self.durability().shared_store() {
                // Its insertion completes at the store, later: the log shows it left the queue.
                out.push(effect(
                    op::RELEASE,
                    json!({"session": sid, "conn": h.conn, "id": h.id}),
                ));
            }
            self.insert_turn(sid, h, "held", Some(owner), out);
        }
    }

    /// `session/cancel` (A6) or close/delete (A15): cancel the foreground work and every
    /// prompt not yet inserted (all were received earlier), answering each `-32800`.
    pub(super) fn cancel_work(
        &mut self,
        sid: &str,
        closing: bool,
        why: &str,
        out: &mut Vec<Action>,
    ) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        // Mutant `cancel-skips-held`: a stop leaves the held prompts queued (breaks A6).
        let skip = !closing && self.cfg.mutant == Some(AgentMutant::CancelSkipsHeld);
        let held: Vec<Held> = if skip {
            Vec::new()
        } else {
            s.held.drain(..).collect()
        };
        let queued: Vec<(ConnId, Value, v2::PromptRequest)> = s.fill_queue.drain(..).collect();
        let turn = s.turn.clone();
        let forget = closing && self.cfg.mutant == Some(AgentMutant::CloseForgetsHeld);
        for h in held {
            self.cancel_held(sid, h, forget, why, out);
        }
        for q in queued {
            self.cancel_queued(sid, q, forget, why, out);
        }
        if let Some(t) = turn {
            self.cancel_turn(sid, t, out);
        }
        if skip {
            // Mutant: the prompts left in the queue go on as if nothing was cancelled.
            self.next_held(sid, out);
        }
        if self.durability().shared_store()
            && self.cfg.mutant != Some(AgentMutant::ClusterStopNodeLocal)
        {
            // A6 across nodes: prompts held on other nodes are withdrawn by the store when they
            // would be released (their `stops_seen` is below the count this stop raises).
            self.next_stop += 1;
            let stop = format!("{}.{}", self.prefix, self.next_stop);
            let op = json!({"op": "stop", "session": sid, "stop": stop});
            self.store_op(
                Storing::without_insertion(sid, Held::default(), "stop", op),
                out,
            );
        }
    }

    /// A stop or close (`why`) meets held prompt `h`: answered with its messageId if its key is
    /// inserted already, withdrawn at the store if the design shares one, else withdrawn here
    /// and answered `-32800` (A6 A15; `forget`: the mutant `close-forgets-held` drops it).
    fn cancel_held(&mut self, sid: &str, h: Held, forget: bool, why: &str, out: &mut Vec<Action>) {
        if let Some(mid) = (!forget).then(|| self.recorded_id(sid, &h)).flatten() {
            // A15: an inserted prompt succeeds with its messageId. A retry held while the
            // adapter reads its runtime history after a restart may be of a message that
            // survived the crash: the close answers it as that read would have (the
            // model's shortcut for waiting for the read), never -32800.
            return self.answer_inserted(sid, &h, &mid, out);
        }
        if forget {
            // Mutant: gone without an answer.
            out.push(effect(
                op::DROP_HELD,
                json!({"session": sid, "conn": h.conn, "id": h.id, "by": why}),
            ));
            return;
        }
        let at_store = self.durability().shared_store();
        if let Some(k) = h.key.clone().filter(|_| at_store) {
            // Another node may have inserted the key meanwhile: the store decides in one
            // step, as for `$/cancel_request` (A5 A6 across nodes, A7: an inserted key's
            // attempts get its messageId, never -32800); `withdraw_reply` answers.
            let op = json!({"op": "withdraw", "session": sid, "key": k, "by": why});
            return self.store_op(Storing::without_insertion(sid, h, "withdraw", op), out);
        }
        out.push(effect(
            op::WITHDRAW,
            json!({"session": sid, "conn": h.conn, "id": h.id, "key": h.key, "by": why}),
        ));
        self.persist_withdrawal(sid, h.key.as_deref(), out);
        self.send(
            h.conn,
            rpc::err(&h.id, code::REQUEST_CANCELLED, CANCELLED, None),
            out,
        );
        for (c, id) in h.waiters {
            self.send(
                c,
                rpc::err(&id, code::REQUEST_CANCELLED, CANCELLED, None),
                out,
            );
        }
    }

    /// A stop or close meets prompt `r` (`conn`, `id`), queued behind the history read: one
    /// whose key the session already holds is answered as the read would have (A15), never
    /// -32800; any other is withdrawn.
    fn cancel_queued(
        &mut self,
        sid: &str,
        (conn, id, r): (ConnId, Value, v2::PromptRequest),
        forget: bool,
        why: &str,
        out: &mut Vec<Action>,
    ) {
        let h = Held {
            conn,
            id: id.clone(),
            key: r.idempotency_key.as_ref().map(|k| k.as_str().to_string()),
            ..Held::default()
        };
        if let Some(mid) = (!forget).then(|| self.recorded_id(sid, &h)).flatten() {
            return self.answer_inserted(sid, &h, &mid, out);
        }
        out.push(effect(
            op::WITHDRAW,
            json!({"session": sid, "conn": conn, "id": id, "by": why}),
        ));
        self.send(
            conn,
            rpc::err(&id, code::REQUEST_CANCELLED, CANCELLED, None),
            out,
        );
    }

    /// A stop or close ends the running turn `t`: `cancelled` (A6), and a permission request it
    /// waits on is withdrawn.
    fn cancel_turn(&mut self, sid: &str, t: Turn, out: &mut Vec<Action>) {
        if let TurnPhase::AwaitPermission { conn, req } = t.phase {
            // Stop waiting: not approved, and withdraw the request itself (the mutant
            // `cancel-keeps-asking` leaves it out there).
            if self.cfg.mutant != Some(AgentMutant::CancelKeepsAsking) {
                self.asks.shift_remove(&req);
                self.reasked.remove(&req);
                self.send(
                    conn,
                    rpc::notification("$/cancel_request", json!({"requestId": req})),
                    out,
                );
            }
        }
        // A6: `cancelled`, never `error`, whatever the abort threw (the mutant leaks it).
        let stop = if self.cfg.mutant == Some(AgentMutant::CancelEndsAsError) {
            StopReason::Error(v2::ErrorStopReason::new())
        } else {
            StopReason::Cancelled
        };
        self.end_turn(sid, stop, out);
    }

    /// `$/cancel_request` for a prompt attempt: withdraw the un-inserted prompt and answer every
    /// pending attempt for its key `-32800` (A5). Inserted or unknown: ignored.
    pub(super) fn cancel_request(&mut self, conn: ConnId, rid: &Value, out: &mut Vec<Action>) {
        // A5: the receiver MAY cancel. Under `ignore` it does not: the held prompt goes on as
        // if no cancel had come, and is answered once, with its messageId, when inserted.
        if self.cfg.cancel_request == CancelRequest::Ignore {
            return;
        }
        for sid in self.sessions.keys().cloned().collect::<Vec<_>>() {
            let s = self.sessions.get_mut(&sid).expect("listed");
            let pos = s.held.iter().position(|h| {
                (h.conn == conn && &h.id == rid)
                    || h.waiters.iter().any(|(c, i)| *c == conn && i == rid)
            });
            if let Some(pos) = pos {
                let h = s.held.remove(pos).expect("position is valid");
                let at_store = self.durability().shared_store();
                if let Some(k) = h.key.clone().filter(|_| at_store) {
                    // Another node may have inserted the key meanwhile: the store decides in
                    // one step (A5 across nodes, A13); `withdraw_reply` answers.
                    let op = json!({"op": "withdraw", "session": sid, "key": k,
                                    "named_conn": conn, "named_id": rid});
                    let st = Storing::without_insertion(&sid, h, "withdraw", op);
                    return self.store_op(st, out);
                }
                self.withdrawn(&sid, h, (conn, rid), out);
                return;
            }
        }
        if self.cfg.mutant == Some(AgentMutant::AnswersUnknownCancel) {
            // Mutant: a cancel it cannot match is answered, under the id it named.
            let data = json!({"reason": "no such pending request"});
            self.send(
                conn,
                rpc::err(rid, code::INVALID_PARAMS, "Invalid params", Some(data)),
                out,
            );
        }
    }

    /// Withdraw a held prompt the cancel (`conn`, `rid`) named: every pending attempt of its
    /// key gets -32800 (A5; the mutants answer only the named one, or none). Nothing to
    /// record: one process keeps no withdrawal, and a cluster's store recorded it when it
    /// answered (`withdraw_reply`).
    fn withdrawn(
        &mut self,
        sid: &str,
        h: Held,
        (conn, rid): (ConnId, &Value),
        out: &mut Vec<Action>,
    ) {
        out.push(effect(op::WITHDRAW, json!({"session": sid, "conn": h.conn, "id": h.id, "key": h.key, "by": "$/cancel_request"})));
        let only_named = self.cfg.mutant == Some(AgentMutant::CancelAnswersOne);
        let none = self.cfg.mutant == Some(AgentMutant::CancelAnswersNone);
        self.answer_cancelled(h, (conn, rid), only_named, none, out);
    }

    /// Answer `-32800` to the attempts of withdrawn prompt `h` (all, only the one named
    /// `(conn, rid)`, or none).
    fn answer_cancelled(
        &mut self,
        h: Held,
        (conn, rid): (ConnId, &Value),
        only_named: bool,
        none: bool,
        out: &mut Vec<Action>,
    ) {
        let attempts = std::iter::once((h.conn, h.id)).chain(h.waiters);
        for (c, id) in attempts.filter(|_| !none) {
            if !only_named || (c == conn && &id == rid) {
                self.send(
                    c,
                    rpc::err(&id, code::REQUEST_CANCELLED, CANCELLED, None),
                    out,
                );
            }
        }
    }

    /// The messageId the session already holds for held prompt `h`'s key, if any (by key; the
    /// adapter by the id it derives from session and key).
    fn recorded_id(&self, sid: &str, h: &Held) -> Option<String> {
        let k = h.key.as_deref().filter(|k| !k.is_empty())?;
        let s = self.sessions.get(sid)?;
        let derived = self.durability().derived_id(sid, k);
        s.messages
            .iter()
            .find(|m| m.key.as_deref() == Some(k) || Some(&m.message_id) == derived.as_ref())
            .map(|m| m.message_id.clone())
    }

    /// Cluster: the key of held prompt `h` was inserted through another node as `mid`: every
    /// attempt of it gets that messageId (A1).
    fn answer_inserted(&mut self, sid: &str, h: &Held, mid: &str, out: &mut Vec<Action>) {
        let attempts = std::iter::once((h.conn, h.id.clone())).chain(h.waiters.iter().cloned());
        for (c, id) in attempts {
            out.push(effect(
                op::DEDUP_HIT,
                json!({"session": sid, "key": h.key, "messageId": mid, "conn": c, "id": id}),
            ));
            self.send(
                c,
                rpc::ok_of(&id, &PromptResponse::new(mid.to_string())),
                out,
            );
        }
    }

    /// Cluster: the store answered a withdrawal. Already inserted through another node: every
    /// attempt gets that messageId (the cancellation result of an inserted prompt, A5);
    /// otherwise withdrawn as on one node. Never settles the session's own store insertion.
    fn withdraw_reply(&mut self, st: Storing, reply: Option<Value>, out: &mut Vec<Action>) {
        let Some(r) = reply else {
            out.push(effect(
                op::STORE_RETRY,
                json!({"session": st.sid, "withdraw": st.held.key}),
            ));
            return self.store_op(st, out);
        };
        if let Some(mid) = r["exists"].as_str() {
            return self.answer_inserted(&st.sid, &st.held, mid, out);
        }
        if let Some(why) = st.op["by"].as_str() {
            // A stop or close (`cancel_work`): every attempt is answered.
            let h = st.held;
            out.push(effect(
                op::WITHDRAW,
                json!({"session": st.sid, "conn": h.conn, "id": h.id, "key": h.key, "by": why}),
            ));
            let named = (h.conn, h.id.clone());
            return self.answer_cancelled(h, (named.0, &named.1), false, false, out);
        }
        let named = (
            st.op["named_conn"].as_u64().unwrap_or(0),
            st.op["named_id"].clone(),
        );
        self.withdrawn(&st.sid, st.held, (named.0, &named.1), out);
    }
}

/// The turn's `session/request_permission` request line, id `req`.
pub(super) fn permission_request(req: u64, sid: &str) -> String {
    let opts = vec![
        v2::PermissionOption::new("allow", "Allow", v2::PermissionOptionKind::AllowOnce),
        v2::PermissionOption::new("reject", "Reject", v2::PermissionOptionKind::RejectOnce),
    ];
    let params = to_value(v2::RequestPermissionRequest::new(
        sid.to_string(),
        "write a file",
        opts,
    ));
    rpc::request(req, "session/request_permission", params)
}
