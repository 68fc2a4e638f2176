//! The matrix Client's script: setup, the op under its fault, the Client's next op.

use serde_json::{json, Value};

use super::space::*;
use super::world::note;
use super::world::*;
use super::*;
use crate::models::rpc;

impl EventWorld {
    pub(super) fn script(&mut self) {
        note!(self, "seed {}: {}", self.seed, self.var);
        note!(
            self,
            "cell: {} x {} x {}",
            self.method.as_str(),
            self.fault.as_str(),
            self.policy.as_str()
        );
        // Setup, fault-free: a session with history, maybe a running turn.
        self.open_conn();
        let _ = self.call("initialize", init_params());
        let r = self.call("session/new", json!({"cwd": "/w"}));
        self.sid = r
            .ok()
            .and_then(|v| v["sessionId"].as_str().map(String::from))
            .unwrap_or_default();
        self.s_open = true;
        for i in 0..self.var.history {
            let key = format!("k-h{i}");
            let p = text_prompt(&self.sid, &format!("h{i}"), Some(&key));
            let _ = self.call("session/prompt", p);
            self.run_until(|_| false);
        }
        if self.method == Method::Unarchive {
            let p = json!({"sessionId": self.sid});
            let _ = self.call("session/archive", p);
        }
        if self.method == Method::Resume && self.var.resume_closed {
            let p = json!({"sessionId": self.sid});
            let _ = self.call("session/close", p);
        }
        if self.var.busy {
            let p = text_prompt(&self.sid, "busy", Some("k-busy"));
            let r = self.call("session/prompt", p);
            self.busy_mid = r
                .ok()
                .and_then(|v| v["messageId"].as_str().map(String::from));
        }
        if self.method == Method::CancelRequest {
            // A held prompt for the op to withdraw (o4 is hold, a turn runs).
            let conn = self.client_conn.expect("connected in setup");
            let p = text_prompt(&self.sid, "p2", Some("k-p2"));
            let id = self.send_request("session/prompt", p, Tx::Plain);
            self.p2 = Some((conn, id));
            self.run_to(self.now + LATENCY_MS);
        }
        if self.method == Method::Initialize {
            // The op opens a new connection.
            self.close_client_conn();
            self.open_conn();
        }
        self.pre_sessions = self.sessions();
        // The op, under the fault.
        self.start_op();
        self.run_until(|w| w.op_settled() && w.fault_over());
        self.after_op = self.observe();
        // The Client's next op, then a late copy, then quiescence.
        if self.client_conn.is_some() {
            self.next_op();
        }
        if self.fault == Fault::DuplicatedLate {
            match self.late_copy.take() {
                Some((conn, line)) if self.agent_conns.contains(&conn) => {
                    note!(self, "late copy of the op's first frame on c{conn}");
                    self.fired = true;
                    self.at(
                        self.now + LATENCY_MS,
                        Ev::ToAgent {
                            conn,
                            line,
                            op: true,
                        },
                    );
                }
                _ => note!(self, "late copy: its connection is gone"),
            }
        }
        self.run_until(|_| false);
    }

    pub(super) fn call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let Some(conn) = self.client_conn else {
            return Err(Value::Null);
        };
        let id = self.send_request(method, params, Tx::Plain);
        self.run_until(|w| w.answers.contains_key(&(conn, id)) || w.client_conn != Some(conn));
        self.answers
            .get(&(conn, id))
            .map(|(_, r)| r.clone())
            .unwrap_or(Err(Value::Null))
    }

    pub(super) fn op_request(&self) -> (&'static str, Value) {
        let sid = self.sid.as_str();
        let params = match self.method {
            Method::Initialize => init_params(),
            Method::New => json!({"cwd": "/w"}),
            Method::Fork | Method::Resume => {
                let mut p = json!({"sessionId": sid, "cwd": "/w"});
                if self.method == Method::Resume {
                    p["replayFrom"] = json!({"type": "start"});
                }
                p
            }
            Method::Prompt => {
                let key = (self.policy == Policy::ResendWithKey).then_some("k-op");
                text_prompt(sid, OP_TEXT, key)
            }
            Method::Close
            | Method::Delete
            | Method::Status
            | Method::Cancel
            | Method::Archive
            | Method::Unarchive => {
                json!({"sessionId": sid})
            }
            Method::Options => json!({"sessionId": sid, "cwd": "/w"}),
            Method::SetTitle => json!({"sessionId": sid, "title": OP_TEXT}),
            Method::List => json!({}),
            Method::SetConfigOption => {
                json!({"sessionId": sid, "configId": "autosave", "type": "boolean", "value": true})
            }
            Method::CancelRequest => json!({"requestId": self.p2.map(|p| p.1)}),
        };
        (self.method.as_str(), params)
    }

    pub(super) fn start_op(&mut self) {
        self.armed = self.fault != Fault::None;
        self.op_at = self.now;
        if self.fault == Fault::OneWayPartition {
            let conn = self.client_conn.expect("connected");
            let from = self.now + u64::from(self.var.partition_after_request);
            let until = from + self.var.partition_ms;
            self.partition = Some((conn, from, until));
            note!(
                self,
                "partition: Client->Agent frames on c{conn} lost from {from} ms, connection drops at {until} ms"
            );
            self.at(until, Ev::PartitionDrop { conn });
        }
        self.state = OpState::Pending;
        self.send_op(Tx::OpFirst);
    }

    pub(super) fn send_op(&mut self, tx: Tx) {
        let Some(conn) = self.client_conn else { return };
        let (m, p) = self.op_request();
        if self.method.is_notification() {
            self.transmit(conn, rpc::notification(m, p), tx);
            self.notif_sends += 1;
            if self.policy == Policy::ResendAsIs {
                let sent = self.notif_sends;
                self.at(self.now + TIMEOUT_MS, Ev::NotifyTimeout { sent });
            }
        } else {
            let id = self.send_request(m, p, tx);
            self.attempts.push((conn, id));
            let attempt = self.attempts.len();
            self.at(self.now + TIMEOUT_MS, Ev::OpTimeout { attempt });
        }
    }

    pub(super) fn next_op(&mut self) {
        let sid = self.sid.clone();
        let (m, p) = match self.method {
            Method::Initialize => ("session/resume", json!({"sessionId": sid, "cwd": "/w"})),
            Method::New | Method::Fork | Method::Delete | Method::Status | Method::Options => {
                ("session/list", json!({}))
            }
            Method::SetTitle => (
                "session/set_title",
                json!({"sessionId": sid, "title": "next"}),
            ),
            Method::Archive => ("session/unarchive", json!({"sessionId": sid})),
            Method::Unarchive => ("session/archive", json!({"sessionId": sid})),
            Method::List => ("session/status", json!({"sessionId": sid})),
            Method::Prompt | Method::Cancel | Method::CancelRequest => {
                ("session/prompt", text_prompt(&sid, "next", Some("k-next")))
            }
            Method::Resume => ("session/close", json!({"sessionId": sid})),
            Method::Close => ("session/resume", json!({"sessionId": sid, "cwd": "/w"})),
            Method::SetConfigOption => (
                "session/set_config_option",
                json!({"sessionId": sid, "configId": "autosave", "type": "boolean", "value": false}),
            ),
        };
        let conn = self.client_conn.expect("connected");
        note!(self, "client: next op {m}");
        let id = self.send_request(m, p, Tx::Plain);
        self.next = Some((conn, id));
        self.run_until(|w| w.answers.contains_key(&(conn, id)) || w.client_conn != Some(conn));
    }

    /// The op is over from the Client's side: answered or given up (requests); its session
    /// seen idle or lost (`session/cancel`); the named prompt answered or gone
    /// (`$/cancel_request`).
    pub(super) fn op_settled(&self) -> bool {
        match self.method {
            Method::Cancel => self.session_lost || self.idle_seen(),
            Method::CancelRequest => {
                self.session_lost
                    || self.p2.is_some_and(|p| {
                        self.answers.contains_key(&p) || self.client_conn != Some(p.0)
                    })
            }
            _ => !matches!(self.state, OpState::Pending),
        }
    }

    /// The fault has played out: no partition, no armed crash, the Client connected and done
    /// reconnecting.
    pub(super) fn fault_over(&self) -> bool {
        self.client_conn.is_some()
            && self.recon.is_none()
            && self.partition.is_none()
            && !(self.armed && self.fault.is_crash())
    }

    pub(super) fn idle_seen(&self) -> bool {
        self.updates.iter().any(|(t, _, p)| {
            *t >= self.op_at
                && p["sessionId"] == self.sid.as_str()
                && p["update"]["sessionUpdate"] == "state_update"
                && p["update"]["state"] == "idle"
        })
    }

    pub(super) fn cancelled_seen(&self) -> bool {
        self.updates.iter().any(|(t, _, p)| {
            *t >= self.op_at
                && p["sessionId"] == self.sid.as_str()
                && p["update"]["sessionUpdate"] == "state_update"
                && p["update"]["state"] == "idle"
                && p["update"]["stopReason"] == "cancelled"
        })
    }
}
