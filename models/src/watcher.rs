//! A second Client on the same session (sans-IO): it never prompts; it resumes the session the
//! user's main Client created (with replay), watches its updates, lists sessions now and then,
//! and resumes again after every reconnect. Everything the Agent sends it is what A8 protects:
//! another Client must never see a key.

use agent_client_protocol_schema::v2::{
    Implementation, InitializeRequest, ReplayFrom, ReplayFromStart, ResumeSessionRequest,
};
use agent_client_protocol_schema::ProtocolVersion;
use serde_json::json;

use crate::action::{effect, Action, ConnId};
use crate::op;
use crate::rpc::{self, Frame};

/// What the driver feeds the watcher.
#[derive(Debug, Clone, PartialEq)]
pub enum WatcherInput {
    /// The process started.
    Boot,
    /// The session to watch is known (told out of band by the user).
    Watch(String),
    /// A connection asked for with `Connect` is open.
    Connected(ConnId),
    /// A connection attempt failed.
    ConnectFailed,
    /// A line arrived.
    Frame(ConnId, String),
    /// The connection ended.
    Disconnected(ConnId),
    /// A timer fired.
    Timer(u64),
}

/// The watching Client.
#[derive(Debug, Default)]
pub struct Watcher {
    session: Option<String>,
    conn: Option<ConnId>,
    next_req: u64,
    initialized: bool,
    resumed: bool,
    next_timer: u64,
}

impl Watcher {
    /// A fresh watcher.
    pub fn new() -> Watcher {
        Watcher::default()
    }

    fn send(&mut self, method: &str, params: serde_json::Value, out: &mut Vec<Action>) {
        let Some(conn) = self.conn else { return };
        self.next_req += 1;
        out.push(Action::Send {
            conn,
            line: rpc::request(self.next_req, method, params),
        });
    }

    fn resume(&mut self, out: &mut Vec<Action>) {
        if let (true, false, Some(sid)) = (self.initialized, self.resumed, self.session.clone()) {
            self.resumed = true;
            let req = ResumeSessionRequest::new(sid, "/work")
                .replay_from(ReplayFrom::Start(ReplayFromStart::new()));
            self.send(
                "session/resume",
                serde_json::to_value(req).expect("serializes"),
                out,
            );
            out.push(effect(op::WATCH, json!({"conn": self.conn})));
        }
    }

    /// Handle one input; push the actions to run, in order.
    pub fn handle(&mut self, input: WatcherInput, out: &mut Vec<Action>) {
        match input {
            WatcherInput::Boot | WatcherInput::ConnectFailed => out.push(Action::Connect {
                after_ms: 20,
                tag: 0,
            }),
            WatcherInput::Watch(sid) => {
                if self.session.is_none() {
                    self.session = Some(sid);
                    self.resume(out);
                }
            }
            WatcherInput::Connected(c) => {
                self.conn = Some(c);
                self.next_req = 0;
                self.initialized = false;
                self.resumed = false;
                let init = InitializeRequest::new(
                    ProtocolVersion::V2,
                    Implementation::new("acp-chaos-watcher", env!("CARGO_PKG_VERSION")),
                );
                self.send(
                    "initialize",
                    serde_json::to_value(init).expect("serializes"),
                    out,
                );
            }
            WatcherInput::Frame(c, line) if Some(c) == self.conn => match rpc::parse(&line) {
                Ok(Frame::Response { id, .. }) if id == 1 => {
                    self.initialized = true;
                    self.resume(out);
                    // Look at the session list now and then (A8: no keys there either).
                    self.next_timer += 1;
                    out.push(Action::Timer {
                        id: self.next_timer,
                        after_ms: 200,
                    });
                }
                Ok(Frame::Request { id, .. }) => {
                    // Only the prompting Client is asked for permission; answer anything else.
                    out.push(Action::Send {
                        conn: c,
                        line: rpc::err(&id, rpc::code::METHOD_NOT_FOUND, "Method not found", None),
                    });
                }
                _ => {}
            },
            WatcherInput::Frame(..) => {}
            WatcherInput::Timer(_) => {
                if self.conn.is_some() && self.initialized {
                    self.send("session/list", json!({}), out);
                    self.next_timer += 1;
                    out.push(Action::Timer {
                        id: self.next_timer,
                        after_ms: 200,
                    });
                }
            }
            WatcherInput::Disconnected(c) => {
                if Some(c) == self.conn {
                    self.conn = None;
                    out.push(Action::Connect {
                        after_ms: 20,
                        tag: 0,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resumes_with_replay_once_both_the_session_and_the_connection_are_ready() {
        let mut w = Watcher::new();
        let mut out = vec![];
        w.handle(WatcherInput::Connected(4), &mut out);
        w.handle(
            WatcherInput::Frame(4, rpc::ok(&json!(1), json!({}))),
            &mut out,
        );
        assert!(!out
            .iter()
            .any(|a| matches!(a, Action::Send { line, .. } if line.contains("session/resume"))));
        let mut out = vec![];
        w.handle(WatcherInput::Watch("s0.0".into()), &mut out);
        let resume = out.iter().find_map(|a| match a {
            Action::Send { line, .. } if line.contains("session/resume") => Some(line.clone()),
            _ => None,
        });
        assert!(resume
            .unwrap()
            .contains("\"replayFrom\":{\"type\":\"start\"}"));
    }
}
