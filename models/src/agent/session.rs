//! Sessions of [`ModelAgent`]: ids, which connection has which session active (A11, X2),
//! `session/resume` with replay (X3, X4), the cluster store's snapshot, disconnects and
//! timers.

use std::collections::VecDeque;

use agent_client_protocol_schema::v2::{
    self, ContentBlock, ReplayComplete, ResumeSessionResponse, SessionUpdate, StateUpdate,
    StopReason, UserMessage,
};
use serde_json::{json, Value};

use super::*;
use crate::action::{effect, Action, ConnId};
use crate::op;
use crate::rpc::{self, code};

impl ModelAgent {
    pub(super) fn new_session_id(&mut self) -> String {
        let sid = format!("s{}.{}", self.prefix, self.next_session);
        self.next_session += 1;
        sid
    }

    pub(super) fn is_active(&self, conn: ConnId, sid: &str) -> bool {
        self.sessions.contains_key(sid) && self.conns.get(&conn).is_some_and(|a| a.contains(sid))
    }

    pub(super) fn activate(&mut self, conn: ConnId, sid: &str, out: &mut Vec<Action>) {
        self.conns.entry(conn).or_default().insert(sid.to_string());
        out.push(effect(op::ACTIVATE, json!({"session": sid, "conn": conn})));
        self.persist_activity(conn, sid, "activate", out);
    }

    /// Cluster: which logical connection has the session active lives in the store (X2, A13).
    pub(super) fn persist_activity(&self, conn: ConnId, sid: &str, t: &str, out: &mut Vec<Action>) {
        if !self.durability().shared_store() {
            return;
        }
        if let Some(l) = self.logical.get(&conn) {
            out.push(Action::Persist {
                record: json!({"t": t, "session": sid, "logical": l}),
                sync: true,
            });
        }
    }

    /// Cluster: a withdrawn key is recorded at the store before the `-32800`s go out, so an
    /// attempt of it pending on another node is withdrawn too when it reaches the store (A5
    /// across nodes).
    pub(super) fn persist_withdrawal(&self, sid: &str, key: Option<&str>, out: &mut Vec<Action>) {
        if !self.durability().shared_store() {
            return;
        }
        if let Some(k) = key {
            out.push(Action::Persist {
                record: json!({"t": "withdraw", "session": sid, "key": k}),
                sync: true,
            });
        }
    }

    /// Cluster: take the store's view of sessions, key records and active logical connections.
    pub(super) fn merge_snapshot(&mut self, v: &Value) {
        let Some(map) = v["sessions"].as_object() else {
            return;
        };
        for (sid, sv) in map {
            let s = self.sessions.entry(sid.clone()).or_insert_with(|| Session {
                filled: true,
                ..Session::default()
            });
            s.messages = msgs_of(&sv["messages"]);
            s.ids = s.messages.iter().map(|m| m.message_id.clone()).collect();
            s.live = msgs_of(&sv["live"]);
            s.stops_seen = sv["stops"].as_u64().unwrap_or(0);
            s.cwd = sv["cwd"].as_str().unwrap_or_default().to_string();
        }
        // Deleted through another node.
        let gone: Vec<String> = self
            .sessions
            .iter()
            .filter(|(sid, s)| {
                !map.contains_key(sid.as_str())
                    && s.turn.is_none()
                    && s.held.is_empty()
                    && !s.storing
            })
            .map(|(sid, _)| sid.clone())
            .collect();
        for sid in gone {
            self.sessions.shift_remove(&sid);
        }
        for (c, active) in self.conns.iter_mut() {
            if let Some(l) = self.logical.get(c) {
                *active = map
                    .iter()
                    .filter(|(_, sv)| {
                        sv["active"]
                            .as_array()
                            .is_some_and(|a| a.iter().any(|x| x == l.as_str()))
                    })
                    .map(|(sid, _)| sid.clone())
                    .collect();
            }
        }
    }

    /// A11: live-only keys may be forgotten once the session is active on no connection.
    /// `session/close` of `sid` on `conn` (also `session/archive`'s, on each connection where
    /// the session is active): cancel its work, deactivate it; nothing if it is not active there.
    pub(super) fn close_on(&mut self, conn: ConnId, sid: &str, why: &str, out: &mut Vec<Action>) {
        if !self.is_active(conn, sid) {
            return;
        }
        self.cancel_work(sid, true, why, out);
        if let Some(a) = self.conns.get_mut(&conn) {
            a.remove(sid);
        }
        out.push(effect(
            op::DEACTIVATE,
            json!({"session": sid, "conn": conn}),
        ));
        self.persist_activity(conn, sid, "deactivate", out);
        self.forget_live_if_inactive(sid);
    }

    pub(super) fn forget_live_if_inactive(&mut self, sid: &str) {
        if !self.conns.values().any(|a| a.contains(sid)) {
            if let Some(s) = self.sessions.get_mut(sid) {
                s.live.clear();
            }
        }
    }

    pub(super) fn snapshot(s: &Session) -> StateUpdate {
        if s.turn.is_some() {
            StateUpdate::Running(v2::RunningStateUpdate::new())
        } else {
            StateUpdate::Idle(v2::IdleStateUpdate::new())
        }
    }

    pub(super) fn resume(
        &mut self,
        conn: ConnId,
        id: Value,
        r: &v2::ResumeSessionRequest,
        out: &mut Vec<Action>,
    ) {
        let sid = r.session_id.0.to_string();
        let elsewhere = self
            .conns
            .iter()
            .any(|(c, a)| *c != conn && a.contains(&sid));
        if elsewhere && self.cfg.mutant == Some(AgentMutant::ResumeActiveErrors) {
            // Mutant: one attachment per session (a resume is not a repeat it accepts).
            return self.fail(
                conn,
                &id,
                code::INTERNAL_ERROR,
                "Internal error",
                Some(json!({"reason": "session attached to another connection"})),
                out,
            );
        }
        let Some(s) = self.sessions.get(&sid) else {
            return self.fail(
                conn,
                &id,
                code::RESOURCE_NOT_FOUND,
                "Session not found",
                Some(json!({"sessionId": sid})),
                out,
            );
        };
        // X4: replay (user messages keep their messageId, never their key), replay_complete,
        // then the current state snapshot, then the response.
        let mut lines = Vec::new();
        if r.replay_from.is_some() {
            for m in &s.messages {
                let um = UserMessage::new(m.message_id.clone())
                    .content(vec![ContentBlock::from(m.text.clone())]);
                lines.push(Self::note(&sid, SessionUpdate::UserMessage(um)));
            }
            lines.push(Self::note(
                &sid,
                SessionUpdate::ReplayComplete(ReplayComplete::new()),
            ));
        }
        lines.push(Self::note(
            &sid,
            SessionUpdate::StateUpdate(Self::snapshot(s)),
        ));
        self.activate(conn, &sid, out);
        let answer = rpc::ok(&id, to_value(ResumeSessionResponse::new()));
        // Mutant: the response before what X4 orders ahead of it.
        let first = self.cfg.mutant == Some(AgentMutant::ResumeAnswersFirst);
        if first {
            self.send(conn, answer.clone(), out);
        }
        for l in lines {
            self.send(conn, l, out);
        }
        if !first {
            self.send(conn, answer, out);
        }
    }

    pub(super) fn disconnected(&mut self, conn: ConnId, out: &mut Vec<Action>) {
        let was_active = self.conns.shift_remove(&conn).unwrap_or_default();
        self.logical.shift_remove(&conn);
        self.conn_keys.remove(&conn);
        let o1 = self.cfg.o1;
        let o2 = self.cfg.o2;
        let sids: Vec<String> = self.sessions.keys().cloned().collect();
        for sid in sids {
            let s = self.sessions.get_mut(&sid).expect("listed");
            for h in s.held.iter_mut() {
                h.waiters.retain(|(c, _)| *c != conn);
            }
            for st in self.storing.values_mut() {
                st.held.waiters.retain(|(c, _)| *c != conn);
            }
            s.fill_queue.retain(|(c, _, _)| *c != conn);
            if o1 == HeldOnDisconnect::Drop {
                let mut kept = VecDeque::new();
                while let Some(mut h) = s.held.pop_front() {
                    if h.conn != conn {
                        kept.push_back(h);
                    } else if !h.waiters.is_empty()
                        // Mutant: the waiting retries are dropped with it, unanswered.
                        && self.cfg.mutant != Some(AgentMutant::DropHeldDropsRetries)
                    {
                        // A7: a waiting retry becomes the submission.
                        let (c, id) = h.waiters.remove(0);
                        h.conn = c;
                        h.id = id;
                        kept.push_back(h);
                    } else {
                        out.push(effect(
                            op::DROP_HELD,
                            json!({"session": sid, "conn": conn, "id": h.id}),
                        ));
                    }
                }
                s.held = kept;
            }
            // A connection that ends is never approval.
            let waiting = matches!(s.turn.as_ref().map(|t| &t.phase), Some(TurnPhase::AwaitPermission { conn: c, .. }) if *c == conn);
            let owned = s.turn.as_ref().is_some_and(|t| t.owner == conn);
            if waiting {
                if let Some(TurnPhase::AwaitPermission { req, .. }) =
                    s.turn.as_ref().map(|t| t.phase.clone())
                {
                    self.asks.shift_remove(&req);
                    self.reasked.remove(&req);
                }
                out.push(effect(
                    op::PERMISSION,
                    json!({"session": sid, "approved": false, "reason": "connection ended"}),
                ));
                if o2 == WorkOnDisconnect::Cancel {
                    self.end_turn(&sid, StopReason::Cancelled, out);
                    self.next_held(&sid, out);
                } else {
                    self.work(&sid, false, out);
                }
            } else if owned && o2 == WorkOnDisconnect::Cancel && was_active.contains(&sid) {
                self.end_turn(&sid, StopReason::Cancelled, out);
                self.next_held(&sid, out);
            }
            self.forget_live_if_inactive(&sid);
        }
    }

    pub(super) fn timer_fired(&mut self, t: u64, out: &mut Vec<Action>) {
        let Some((sid, kind)) = self.timers.shift_remove(&t) else {
            return;
        };
        match kind {
            TimerKind::TurnEnd => {
                let current = self
                    .sessions
                    .get(&sid)
                    .and_then(|s| s.turn.as_ref())
                    .map(|t| t.phase.clone());
                if matches!(current, Some(TurnPhase::Working { timer }) if timer == t) {
                    let turn = self.sessions[&sid].turn.as_ref().expect("matched above");
                    let stop = if !turn.fails {
                        StopReason::EndTurn
                    } else {
                        // A3: the prompt was answered with its messageId; the work's failure
                        // is reported on the idle state (the mutant reports success).
                        out.push(effect(
                            op::WORK_FAILED,
                            json!({"session": sid, "messageId": turn.message_id}),
                        ));
                        if self.cfg.mutant == Some(AgentMutant::FailureEndsAsEndTurn) {
                            StopReason::EndTurn
                        } else {
                            let e = v2::Error::internal_error();
                            StopReason::Error(v2::ErrorStopReason::new().error(e))
                        }
                    };
                    self.end_turn(&sid, stop, out);
                    self.next_held(&sid, out);
                }
            }
            TimerKind::AskAgain(req) => {
                let waits = self
                    .sessions
                    .get(&sid)
                    .and_then(|s| s.turn.as_ref())
                    .and_then(|t| match t.phase {
                        TurnPhase::AwaitPermission { conn, req: r } if r == req => Some(conn),
                        _ => None,
                    });
                if let Some(conn) = waits.filter(|c| self.conns.contains_key(c)) {
                    self.reasked.insert(req);
                    self.send(conn, prompt::permission_request(req, &sid), out);
                    if let Some(ms) = self.durability().asks_again_ms() {
                        self.timer(&sid, TimerKind::AskAgain(req), ms, out);
                    }
                }
            }
            TimerKind::Discard => {
                if let Some(mid) = self.discards.shift_remove(&t) {
                    self.discard(&sid, &mid, out);
                }
            }
            TimerKind::HistoryFill => {
                let Some(s) = self.sessions.get_mut(&sid) else {
                    return;
                };
                // The cache over the runtime history: every stored user message id.
                s.ids = s.messages.iter().map(|m| m.message_id.clone()).collect();
                s.filled = true;
                s.filling = false;
                let n = s.ids.len();
                let queued: Vec<_> = s.fill_queue.drain(..).collect();
                out.push(effect(
                    op::HISTORY_READ,
                    json!({"session": sid, "messages": n}),
                ));
                for (c, id, r) in queued {
                    if self.conns.contains_key(&c) {
                        self.admit(c, id, r, out);
                    }
                }
            }
        }
    }

    /// Retention window: set the timer that discards message `mid` of `sid` once the window
    /// has passed (nothing without a window, or on a cluster node: its records live in the
    /// store).
    pub(super) fn arm_discard(&mut self, sid: &str, mid: &str, out: &mut Vec<Action>) {
        if self.cfg.retention_ms == 0 || !self.durability().discards_itself() {
            return;
        }
        let t = self.timer(sid, TimerKind::Discard, self.cfg.retention_ms, out);
        self.discards.insert(t, mid.to_string());
    }

    /// Retention window: the discard timers of every message this process recovered.
    pub(super) fn arm_recovered(&mut self, out: &mut Vec<Action>) {
        let recovered: Vec<(String, String)> = self
            .sessions
            .iter()
            .flat_map(|(sid, s)| {
                s.messages
                    .iter()
                    .map(move |m| (sid.clone(), m.message_id.clone()))
            })
            .collect();
        for (sid, mid) in recovered {
            self.arm_discard(&sid, &mid, out);
        }
    }

    /// Retention window: message `mid` leaves what the Agent retains and would replay, and its
    /// key record with it (A16: a retry of the key is then a new submission). Logged as
    /// `discard`, then written (a durable design must not recover it).
    pub(super) fn discard(&mut self, sid: &str, mid: &str, out: &mut Vec<Action>) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        let Some(i) = s.messages.iter().position(|m| m.message_id == mid) else {
            return;
        };
        s.messages.remove(i);
        s.ids.remove(mid);
        out.push(effect(
            op::DISCARD,
            json!({"session": sid, "messageId": mid}),
        ));
        if self.persists() {
            out.push(Action::Persist {
                record: json!({"t": "discard", "session": sid, "messageId": mid}),
                sync: true,
            });
        }
    }
}
