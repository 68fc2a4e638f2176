//! Connections and frames between the matrix Client and the model Agent: sends, the fault
//! applied to the op's first frame, timeouts, reconnects, what the Client receives.

use serde_json::{json, Value};

use super::space::*;
use super::world::note;
use super::world::*;
use super::*;
use crate::models::rpc::{self, Frame};
use crate::models::{AgentInput, ConnId};

impl EventWorld {
    pub(super) fn open_conn(&mut self) {
        let conn = self.next_conn;
        self.next_conn += 1;
        self.agent_conns.insert(conn);
        self.client_conn = Some(conn);
        note!(self, "client: connects c{conn}");
        self.agent_do(AgentInput::Connected(conn), false);
    }

    pub(super) fn close_client_conn(&mut self) {
        let Some(conn) = self.client_conn.take() else {
            return;
        };
        note!(self, "client: closes c{conn}");
        if self.agent_conns.remove(&conn) {
            self.active.retain(|(_, c)| *c != conn);
            self.agent_do(AgentInput::Disconnected(conn), false);
        }
    }

    pub(super) fn send_request(&mut self, method: &str, params: Value, tx: Tx) -> u64 {
        let conn = self.client_conn.expect("connected");
        let id = self.next_id;
        self.next_id += 1;
        let line = rpc::request(id, method, params.clone());
        self.sent
            .insert((conn, id), (method.to_string(), params, self.now));
        self.transmit(conn, line, tx);
        id
    }

    pub(super) fn transmit(&mut self, conn: ConnId, line: String, tx: Tx) {
        let op = tx != Tx::Plain;
        if let Some((c, from, until)) = self.partition {
            if c == conn && self.now >= from && self.now < until {
                self.fired = true;
                note!(self, "C->A c{conn} LOST (partition) {line}");
                return;
            }
        }
        if tx == Tx::OpFirst {
            match self.fault {
                Fault::RequestLost => {
                    self.armed = false;
                    self.fired = true;
                    note!(self, "C->A c{conn} LOST (request-lost) {line}");
                    return;
                }
                Fault::Duplicated => {
                    self.armed = false;
                    self.fired = true;
                    let t = self.now + LATENCY_MS;
                    self.at(
                        t,
                        Ev::ToAgent {
                            conn,
                            line: line.clone(),
                            op,
                        },
                    );
                }
                Fault::DuplicatedLate => {
                    self.armed = false;
                    self.late_copy = Some((conn, line.clone()));
                }
                _ => {}
            }
        }
        self.at(self.now + LATENCY_MS, Ev::ToAgent { conn, line, op });
    }

    pub(super) fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::ToAgent { conn, line, op } => {
                if !self.agent_conns.contains(&conn) {
                    note!(self, "C->A c{conn} dropped (connection gone) {line}");
                    return;
                }
                note!(self, "C->A c{conn} {line}");
                self.agent_do(AgentInput::Frame(conn, line), op);
            }
            Ev::ToClient { conn, line } => {
                if self.client_conn != Some(conn) {
                    note!(self, "A->C c{conn} dropped (connection gone) {line}");
                    return;
                }
                note!(self, "A->C c{conn} {line}");
                self.client_recv(conn, &line);
            }
            Ev::AgentTimer { boot, id } => {
                if boot == self.boot {
                    self.agent_do(AgentInput::Timer(id), false);
                }
            }
            Ev::Eof { conn } => self.client_lost(conn),
            Ev::PartitionDrop { conn } => {
                self.partition = None;
                self.armed = false;
                self.fired = true;
                note!(self, "partition: c{conn} ends at both ends (healed after)");
                if self.agent_conns.remove(&conn) {
                    self.active.retain(|(_, c)| *c != conn);
                    self.agent_do(AgentInput::Disconnected(conn), false);
                }
                self.client_lost(conn);
            }
            Ev::OpTimeout { attempt } => {
                if self.state != OpState::Pending || self.attempts.len() != attempt {
                    return;
                }
                match self.policy {
                    Policy::DoNotResend => self.give_up("no answer within the timeout"),
                    _ if attempt >= MAX_ATTEMPTS => {
                        self.give_up("no answer after the last attempt")
                    }
                    _ if self.client_conn.is_none() || self.recon.is_some() => {
                        // Reconnecting: the reconnect resends (C6).
                    }
                    _ => {
                        note!(self, "client: timeout of attempt {attempt}, resends");
                        self.send_op(Tx::OpAgain);
                    }
                }
            }
            Ev::NotifyTimeout { sent } => self.notify_timeout(sent),
            Ev::Reconnect => self.reconnect(),
        }
    }

    pub(super) fn notify_timeout(&mut self, sent: usize) {
        if sent != self.notif_sends || self.notif_sends >= MAX_ATTEMPTS {
            return;
        }
        let confirmed = match self.method {
            Method::Cancel => self.cancelled_seen(),
            _ => self
                .p2
                .is_none_or(|p| self.answers.contains_key(&p) || self.client_conn != Some(p.0)),
        };
        if confirmed {
            return;
        }
        if self.client_conn.is_none() || self.recon.is_some() {
            // Not connected now: look again later.
            self.at(self.now + TIMEOUT_MS, Ev::NotifyTimeout { sent });
            return;
        }
        note!(
            self,
            "client: no sign of the {} taking effect, resends it",
            self.method.as_str()
        );
        self.send_op(Tx::OpAgain);
    }

    pub(super) fn give_up(&mut self, why: &'static str) {
        note!(self, "client: gives up ({why}), shows the user an error");
        self.state = OpState::GaveUp(why);
    }

    pub(super) fn client_lost(&mut self, conn: ConnId) {
        if self.client_conn != Some(conn) {
            return;
        }
        note!(self, "client: c{conn} ended");
        self.client_conn = None;
        self.recon = None;
        if self.state == OpState::Pending
            && !self.method.is_notification()
            && self.policy == Policy::DoNotResend
        {
            self.give_up("connection lost");
        }
        self.at(self.now + RECONNECT_MS, Ev::Reconnect);
    }

    pub(super) fn reconnect(&mut self) {
        if self.client_conn.is_some() {
            return;
        }
        self.open_conn();
        let id = if self.method == Method::Initialize
            && self.state == OpState::Pending
            && self.policy != Policy::DoNotResend
        {
            // The reconnect's initialize is the op's resend.
            self.send_op(Tx::OpAgain);
            self.attempts.last().expect("just sent").1
        } else {
            self.send_request("initialize", init_params(), Tx::Plain)
        };
        self.recon = Some(Recon::Init(id));
    }

    pub(super) fn finish_reconnect(&mut self) {
        self.recon = None;
        if self.state == OpState::Pending
            && self.policy != Policy::DoNotResend
            && !self.method.is_notification()
        {
            note!(self, "client: reconnected, resends the op (C6)");
            self.send_op(Tx::OpAgain);
        }
    }

    pub(super) fn client_recv(&mut self, conn: ConnId, line: &str) {
        match rpc::parse(line) {
            Ok(Frame::Response { id, result }) => {
                let Some(id) = id.as_u64() else { return };
                let key = (conn, id);
                if self.answers.contains_key(&key) {
                    // A second answer to one id (a duplicated request): the first one counts.
                    return;
                }
                self.answers.insert(key, (self.now, result.clone()));
                if self.state == OpState::Pending && self.attempts.contains(&key) {
                    self.state = OpState::Answered(result.clone());
                }
                if let Some((m, p, _)) = self.sent.get(&key) {
                    if p["sessionId"] == self.sid.as_str() && result.is_ok() {
                        match m.as_str() {
                            "session/resume" => self.s_open = true,
                            "session/close" | "session/delete" | "session/archive" => {
                                self.s_open = false
                            }
                            _ => {}
                        }
                    }
                }
                match self.recon {
                    Some(Recon::Init(i)) if i == id => {
                        if self.s_open {
                            let p = json!({"sessionId": self.sid, "cwd": "/w"});
                            let rid = self.send_request("session/resume", p, Tx::Plain);
                            self.recon = Some(Recon::Resume(rid));
                        } else {
                            self.finish_reconnect();
                        }
                    }
                    Some(Recon::Resume(i)) if i == id => {
                        if result.is_err() {
                            note!(self, "client: its session is lost");
                            self.session_lost = true;
                        }
                        self.finish_reconnect();
                    }
                    _ => {}
                }
            }
            Ok(Frame::Notification { method, params }) if method == "session/update" => {
                self.updates.push((self.now, conn, params));
            }
            _ => {}
        }
    }
}
