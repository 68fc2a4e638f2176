//! `RelayProxy`: a proxy written from scratch against acp-chaos's sans-IO [`ProxyModel`]
//! trait, the proxy of `examples/harness_proxy.rs`.
//!
//! One downstream (Agent) connection per upstream (Client) connection; every request gets the
//! proxy's own JSON-RPC id on the way down and its answer the Client's id on the way up;
//! `$/cancel_request` is mapped to the rewritten id (X1); `idempotencyKey` passes unchanged.
//! It reports each request and cancel it forwards as a `forward` effect, the proxy's part of
//! the effect contract (see the [`ProxyModel`] docs).
//!
//! One flag plants a bug: `unmapped_cancel` forwards `$/cancel_request` under the Client's
//! id, so the Agent cancels nothing, or the wrong request (P6, X1).

use std::collections::BTreeMap;

use acp_chaos::models::action::effect;
use acp_chaos::models::proxy::{ProxyInput, ProxyModel};
use acp_chaos::models::{op, Action, ConnId};
use acp_chaos::world::Boot;
use serde_json::{json, Value};

/// The proxy under test.
#[derive(Default)]
pub struct RelayProxy {
    unmapped_cancel: bool,
    /// Report no `forward` effect: the checkers have only its frames to go by.
    silent: bool,
    /// Upstream connection → its downstream connection, once open.
    down_of: BTreeMap<ConnId, Option<ConnId>>,
    /// Downstream connection → its upstream connection.
    up_of: BTreeMap<ConnId, ConnId>,
    /// Lines from a Client waiting for its downstream connection.
    queued: BTreeMap<ConnId, Vec<String>>,
    next_id: u64,
    /// (downstream conn, our id) → (upstream conn, the Client's id): requests in flight down.
    down_reqs: BTreeMap<(ConnId, u64), (ConnId, Value)>,
    /// (upstream conn, the Client's id as text) → our id: for mapping cancels.
    our_id: BTreeMap<(ConnId, String), u64>,
    /// (upstream conn, our id) → (downstream conn, the Agent's id): Agent requests in flight up.
    up_reqs: BTreeMap<(ConnId, u64), (ConnId, Value)>,
}

impl RelayProxy {
    fn mint(&mut self) -> u64 {
        self.next_id += 1;
        1000 + self.next_id
    }

    /// A line from the Client, with the downstream connection open.
    fn client_line(&mut self, up: ConnId, down: ConnId, line: &str, out: &mut Vec<Action>) {
        let Ok(mut v) = serde_json::from_str::<Value>(line) else {
            let e = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}});
            return out.push(Action::Send {
                conn: up,
                line: e.to_string(),
            });
        };
        let method = v["method"].as_str().map(str::to_string);
        match (method, v.get("id").cloned()) {
            (Some(method), Some(id)) => {
                let ours = self.mint();
                self.down_reqs.insert((down, ours), (up, id.clone()));
                self.our_id.insert((up, id.to_string()), ours);
                if !self.silent {
                    out.push(effect(
                        op::FORWARD,
                        json!({"method": method, "up_conn": up, "up_id": id, "down_conn": down, "down_id": ours}),
                    ));
                }
                v["id"] = json!(ours);
            }
            (Some(method), None) if method == "$/cancel_request" => {
                let rid = v["params"]["requestId"].clone();
                let mapped = self.our_id.get(&(up, rid.to_string())).copied();
                let down_rid = match mapped {
                    _ if self.unmapped_cancel => rid.clone(),
                    Some(ours) => json!(ours),
                    None => return, // nothing of ours to cancel
                };
                if !self.silent {
                    out.push(effect(
                        op::FORWARD,
                        json!({"method": method, "up_conn": up, "up_request_id": rid, "down_conn": down, "down_request_id": down_rid, "mapped": mapped}),
                    ));
                }
                v["params"]["requestId"] = down_rid;
            }
            (Some(_), None) => {}
            // The Client's answer to an Agent request: back under the Agent's id.
            (None, Some(id)) => {
                let Some((d, aid)) = id.as_u64().and_then(|i| self.up_reqs.remove(&(up, i))) else {
                    return;
                };
                v["id"] = aid;
                return out.push(Action::Send {
                    conn: d,
                    line: v.to_string(),
                });
            }
            (None, None) => return,
        }
        out.push(Action::Send {
            conn: down,
            line: v.to_string(),
        });
    }

    /// A line from the Agent.
    fn agent_line(&mut self, down: ConnId, up: ConnId, line: &str, out: &mut Vec<Action>) {
        let Ok(mut v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        match (v["method"].is_string(), v.get("id").cloned()) {
            // An answer: back under the Client's id.
            (false, Some(id)) => {
                let Some((u, cid)) = id.as_u64().and_then(|i| self.down_reqs.remove(&(down, i)))
                else {
                    return;
                };
                self.our_id.remove(&(u, cid.to_string()));
                v["id"] = cid;
                out.push(Action::Send {
                    conn: u,
                    line: v.to_string(),
                });
            }
            // An Agent request (e.g. `session/request_permission`): our id on the way up.
            (true, Some(id)) => {
                let ours = self.mint();
                self.up_reqs.insert((up, ours), (down, id));
                v["id"] = json!(ours);
                out.push(Action::Send {
                    conn: up,
                    line: v.to_string(),
                });
            }
            // The Agent withdraws one of its own requests: under the id the Client knows.
            (true, None) if v["method"] == "$/cancel_request" => {
                let rid = v["params"]["requestId"].clone();
                let ours = self
                    .up_reqs
                    .iter()
                    .find(|((u, _), (d, aid))| *u == up && *d == down && *aid == rid)
                    .map(|((_, n), _)| *n);
                if let Some(n) = ours {
                    v["params"]["requestId"] = json!(n);
                    out.push(Action::Send {
                        conn: up,
                        line: v.to_string(),
                    });
                }
            }
            // Other notifications (`session/update`) pass unchanged.
            _ => out.push(Action::Send {
                conn: up,
                line: line.to_string(),
            }),
        }
    }
}

impl ProxyModel for RelayProxy {
    fn handle(&mut self, input: ProxyInput, out: &mut Vec<Action>) {
        match input {
            ProxyInput::Accepted(up) => {
                self.down_of.insert(up, None);
                out.push(Action::Connect {
                    after_ms: 0,
                    tag: up,
                });
            }
            ProxyInput::DownConnected {
                tag: up,
                conn: down,
            } => {
                if !self.down_of.contains_key(&up) {
                    return out.push(Action::Close { conn: down }); // the Client left
                }
                self.down_of.insert(up, Some(down));
                self.up_of.insert(down, up);
                for line in self.queued.remove(&up).unwrap_or_default() {
                    self.client_line(up, down, &line, out);
                }
            }
            ProxyInput::DownFailed { tag } => {
                if self.down_of.contains_key(&tag) {
                    out.push(Action::Connect { after_ms: 20, tag });
                }
            }
            ProxyInput::Frame(conn, line) => match (self.down_of.get(&conn), self.up_of.get(&conn))
            {
                (Some(Some(down)), _) => {
                    let down = *down;
                    self.client_line(conn, down, &line, out)
                }
                (Some(None), _) => self.queued.entry(conn).or_default().push(line),
                (None, Some(&up)) => self.agent_line(conn, up, &line, out),
                (None, None) => {}
            },
            // One side gone: end the other.
            ProxyInput::Disconnected(conn) => {
                if let Some(down) = self.down_of.remove(&conn) {
                    self.queued.remove(&conn);
                    if let Some(d) = down {
                        self.up_of.remove(&d);
                        out.push(Action::Close { conn: d });
                    }
                } else if let Some(up) = self.up_of.remove(&conn) {
                    self.down_of.remove(&up);
                    out.push(Action::Close { conn: up });
                }
            }
        }
    }
}

/// What the simulator calls at every start of the proxy process.
#[allow(dead_code)] // A test that includes this file may use `silent_relay_proxy` only.
pub fn relay_proxy(unmapped_cancel: bool) -> impl Fn(Boot<'_>) -> Box<dyn ProxyModel> {
    move |_: Boot<'_>| -> Box<dyn ProxyModel> {
        Box::new(RelayProxy {
            unmapped_cancel,
            ..RelayProxy::default()
        })
    }
}

/// The same proxy reporting no `forward` effect: only the frames it wrote show what it did.
#[allow(dead_code)] // The harness example uses `relay_proxy` only.
pub fn silent_relay_proxy(unmapped_cancel: bool) -> impl Fn(Boot<'_>) -> Box<dyn ProxyModel> {
    move |_: Boot<'_>| -> Box<dyn ProxyModel> {
        Box::new(RelayProxy {
            unmapped_cancel,
            silent: true,
            ..RelayProxy::default()
        })
    }
}
