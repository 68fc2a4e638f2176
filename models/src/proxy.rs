//! A conductor/proxy between Client and Agent (sans-IO): one downstream connection per
//! upstream connection, JSON-RPC ids rewritten on the way (its own counter), `idempotencyKey`
//! forwarded unchanged and `$/cancel_request` mapped to the rewritten id (X1).
//!
//! It reports every forwarded request and cancel as a `forward` effect, so the ledger can link
//! the Agent's view of an attempt back to the Client's.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::action::{effect, Action, ConnId};
use crate::op;
use crate::rpc::{self, Frame};

/// What the driver feeds the proxy.
#[derive(Debug, Clone, PartialEq)]
pub enum ProxyInput {
    /// A Client connected upstream.
    Accepted(ConnId),
    /// The downstream connection asked for with `Connect { tag }` is open (`tag` = upstream).
    DownConnected {
        /// The upstream connection it serves.
        tag: u64,
        /// The new downstream connection.
        conn: ConnId,
    },
    /// That connection attempt failed.
    DownFailed {
        /// The upstream connection it serves.
        tag: u64,
    },
    /// A line arrived on either side.
    Frame(ConnId, String),
    /// A connection on either side ended.
    Disconnected(ConnId),
}

/// Proxy mutants: each a small named difference from the correct proxy. What each breaks (its
/// rules, property and party) is its row in [`crate::mutant::MUTANTS`], and only there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProxyMutant {
    /// Strips `idempotencyKey` from `session/prompt`.
    DropsKey,
    /// Forwards `$/cancel_request` with the Client's id, not the rewritten one.
    UnmappedCancel,
    /// Writes every `session/prompt` downstream twice under one rewritten id (a retrying
    /// forwarder).
    DuplicatesPrompt,
    /// Holds a `session/prompt` and forwards it after the Client's next request on that connection
    /// (a forwarder with two queues).
    ReordersPrompt,
}

#[derive(Debug, Default)]
struct Up {
    down: Option<ConnId>,
    /// Lines from the Client waiting for the downstream connection.
    queue: Vec<String>,
    /// `ReordersPrompt`: the prompt held back until the next request.
    held: Option<String>,
}

/// A sans-IO proxy (conductor) between a Client and an Agent. Implement this to plug your own
/// proxy into the simulator (`acp_chaos::world::Parties::proxy`); [`Proxy`] is the project's.
///
/// The driver feeds [`ProxyInput`]s and runs the [`Action`]s pushed to `out`, in order:
/// [`Action::Connect`] `{tag}` opens the downstream connection for upstream connection `tag`
/// (answered with [`ProxyInput::DownConnected`] or [`ProxyInput::DownFailed`]),
/// [`Action::Send`] writes a line, [`Action::Close`] ends a connection.
///
/// **Effect contract.** For every request and every `$/cancel_request` it passes downstream, a
/// proxy emits a `forward` effect ([`op::FORWARD`]) *before* the [`Action::Send`]:
/// `{method, up_conn, up_id, down_conn, down_id}` for a request,
/// `{method: "$/cancel_request", up_conn, up_request_id, down_conn, down_request_id}` for a
/// cancel. The ledger links the Agent's view of an attempt (connection, id) back to the
/// Client's through these: a proxy that emits none leaves every attempt unlinked, and the
/// properties that follow an attempt across the proxy (P1's "same attempt", P6, P13) judge
/// the Agent's side only.
pub trait ProxyModel {
    /// Handle one input; push the actions to run, in order.
    fn handle(&mut self, input: ProxyInput, out: &mut Vec<Action>);
    /// [`ProxyInput::Frame`]`(conn, line)` from a driver that has already decoded the line:
    /// `decoded` is exactly `serde_json::from_str(&line)` (given only when that succeeded), so
    /// a proxy may read it instead of parsing the same text again. The default hands the line
    /// to [`ProxyModel::handle`] as is.
    fn handle_decoded(
        &mut self,
        conn: ConnId,
        line: String,
        decoded: Value,
        out: &mut Vec<Action>,
    ) {
        let _ = decoded;
        self.handle(ProxyInput::Frame(conn, line), out);
    }
    /// Everything this model holds that what it does next can depend on, as one number
    /// ([`crate::digest::of`]): exploration merges two placements of a fault only when every
    /// party's digest (and the rest of the world's state) is equal. Default `None`: unknown,
    /// so exploration never merges a placement in a run with this model, it runs each one.
    fn state_digest(&self) -> Option<u64> {
        None
    }
}

impl ProxyModel for Proxy {
    fn handle(&mut self, input: ProxyInput, out: &mut Vec<Action>) {
        Proxy::handle(self, input, out)
    }

    fn handle_decoded(
        &mut self,
        conn: ConnId,
        line: String,
        decoded: Value,
        out: &mut Vec<Action>,
    ) {
        self.frame(conn, &line, Some(decoded), out);
    }

    fn state_digest(&self) -> Option<u64> {
        Some(crate::digest::of(self, &[]))
    }
}

/// The proxy.
#[derive(Debug, Default)]
pub struct Proxy {
    mutant: Option<ProxyMutant>,
    ups: IndexMap<ConnId, Up>,
    downs: IndexMap<ConnId, ConnId>,
    next_id: u64,
    /// (down conn, down id) → (up conn, up id): Client requests in flight.
    fwd: IndexMap<(ConnId, u64), (ConnId, Value)>,
    /// (up conn, up id) → down id, for mapping `$/cancel_request`.
    by_up: IndexMap<(ConnId, String), u64>,
    /// (up conn, rewritten id) → (down conn, Agent's id): Agent requests in flight.
    back: IndexMap<(ConnId, u64), (ConnId, Value)>,
}

impl Proxy {
    /// A proxy, correct or mutated.
    pub fn new(mutant: Option<ProxyMutant>) -> Proxy {
        // Its own id space, visibly apart from the Client's counters.
        Proxy {
            mutant,
            next_id: 100,
            ..Proxy::default()
        }
    }

    /// Handle one input; push the actions to run, in order.
    pub fn handle(&mut self, input: ProxyInput, out: &mut Vec<Action>) {
        match input {
            ProxyInput::Accepted(up) => {
                self.ups.insert(up, Up::default());
                out.push(Action::Connect {
                    after_ms: 0,
                    tag: up,
                });
            }
            ProxyInput::DownConnected { tag, conn } => {
                let Some(u) = self.ups.get_mut(&tag) else {
                    // The Client left meanwhile.
                    return out.push(Action::Close { conn });
                };
                u.down = Some(conn);
                self.downs.insert(conn, tag);
                for line in std::mem::take(&mut u.queue) {
                    self.upstream_line(tag, &line, None, out);
                }
            }
            ProxyInput::DownFailed { tag } => {
                if self.ups.contains_key(&tag) {
                    out.push(Action::Connect { after_ms: 20, tag });
                }
            }
            ProxyInput::Frame(conn, line) => self.frame(conn, &line, None, out),
            ProxyInput::Disconnected(conn) => {
                // Either side ending ends the pair: the Client then reconnects and resumes.
                if let Some(u) = self.ups.shift_remove(&conn) {
                    if let Some(d) = u.down {
                        self.downs.shift_remove(&d);
                        out.push(Action::Close { conn: d });
                    }
                } else if let Some(up) = self.downs.shift_remove(&conn) {
                    self.ups.shift_remove(&up);
                    out.push(Action::Close { conn: up });
                }
                self.fwd.retain(|(d, _), (u, _)| *d != conn && *u != conn);
                self.by_up.retain(|(u, _), _| *u != conn);
                self.back.retain(|(u, _), (d, _)| *u != conn && *d != conn);
            }
        }
    }

    /// One line read on `conn`; `decoded` is the line's JSON when the driver already decoded it
    /// ([`ProxyModel::handle_decoded`]).
    fn frame(&mut self, conn: ConnId, line: &str, decoded: Option<Value>, out: &mut Vec<Action>) {
        if self.ups.contains_key(&conn) {
            self.upstream_line(conn, line, decoded, out);
        } else if let Some(&up) = self.downs.get(&conn) {
            self.downstream_line(conn, up, line, decoded, out);
        }
    }

    fn upstream_line(
        &mut self,
        up: ConnId,
        line: &str,
        decoded: Option<Value>,
        out: &mut Vec<Action>,
    ) {
        let Some(down) = self.ups.get(&up).and_then(|u| u.down) else {
            if let Some(u) = self.ups.get_mut(&up) {
                u.queue.push(line.to_string());
            }
            return;
        };
        let parsed = decoded.map_or_else(|| rpc::parse(line), |v| Ok(rpc::decode(v)));
        if self.mutant == Some(ProxyMutant::ReordersPrompt) {
            if let Ok(Frame::Request { method, .. }) = &parsed {
                let u = self.ups.get_mut(&up).expect("checked above");
                if method == "session/prompt" && u.held.is_none() {
                    u.held = Some(line.to_string());
                    return;
                }
                if let Some(h) = u.held.take() {
                    // The newer request first, then the held prompt.
                    self.forward_line(up, down, rpc::parse(line), out);
                    return self.forward_line(up, down, rpc::parse(&h), out);
                }
            }
        }
        self.forward_line(up, down, parsed, out);
    }

    /// Forward one parsed upstream line (rewriting ids), or answer it here.
    fn forward_line(
        &mut self,
        up: ConnId,
        down: ConnId,
        parsed: Result<Frame, rpc::ParseError>,
        out: &mut Vec<Action>,
    ) {
        match parsed {
            Ok(Frame::Request {
                id,
                method,
                mut params,
            }) => {
                self.next_id += 1;
                let nid = self.next_id;
                self.fwd.insert((down, nid), (up, id.clone()));
                self.by_up.insert((up, id.to_string()), nid);
                if method == "session/prompt" && self.mutant == Some(ProxyMutant::DropsKey) {
                    if let Some(o) = params.as_object_mut() {
                        o.remove("idempotencyKey");
                    }
                }
                out.push(effect(op::FORWARD,
                    json!({"method": method, "up_conn": up, "up_id": id, "down_conn": down, "down_id": nid}),
                ));
                let line = rpc::request(nid, &method, params);
                if method == "session/prompt" && self.mutant == Some(ProxyMutant::DuplicatesPrompt)
                {
                    out.push(Action::Send {
                        conn: down,
                        line: line.clone(),
                    });
                }
                out.push(Action::Send { conn: down, line });
            }
            Ok(Frame::Notification { method, mut params }) => {
                if method == "$/cancel_request" {
                    let rid = params.get("requestId").cloned().unwrap_or(Value::Null);
                    let mapped = self.by_up.get(&(up, rid.to_string())).copied();
                    let down_rid = match (self.mutant, mapped) {
                        (Some(ProxyMutant::UnmappedCancel), _) => rid.clone(),
                        (_, Some(n)) => json!(n),
                        // Unknown to us: the Agent would ignore it anyway (A5).
                        (_, None) => return,
                    };
                    params["requestId"] = down_rid.clone();
                    out.push(effect(op::FORWARD,
                        json!({"method": method, "up_conn": up, "up_request_id": rid, "down_conn": down, "down_request_id": down_rid, "mapped": mapped}),
                    ));
                }
                out.push(Action::Send {
                    conn: down,
                    line: rpc::notification(&method, params),
                });
            }
            Ok(Frame::Response { id, result }) => {
                let Some((d, aid)) = id.as_u64().and_then(|i| self.back.shift_remove(&(up, i)))
                else {
                    return;
                };
                let line = match result {
                    Ok(r) => rpc::ok(&aid, r),
                    Err(e) => json!({"jsonrpc": "2.0", "id": aid, "error": e}).to_string(),
                };
                out.push(Action::Send { conn: d, line });
            }
            // Garbage is answered here: passing it on with the Client's id would let the
            // Agent's error collide with a rewritten id.
            Err(e) => out.push(Action::Send {
                conn: up,
                line: rpc::err(
                    &Value::Null,
                    rpc::code::PARSE_ERROR,
                    "Parse error",
                    Some(json!(e.0)),
                ),
            }),
            Ok(Frame::Invalid { id }) => out.push(Action::Send {
                conn: up,
                line: rpc::err(&id, rpc::code::INVALID_REQUEST, "Invalid Request", None),
            }),
        }
    }

    fn downstream_line(
        &mut self,
        down: ConnId,
        up: ConnId,
        line: &str,
        decoded: Option<Value>,
        out: &mut Vec<Action>,
    ) {
        match decoded.map_or_else(|| rpc::parse(line), |v| Ok(rpc::decode(v))) {
            Ok(Frame::Response { id, result }) => {
                let Some((u, cid)) = id.as_u64().and_then(|i| self.fwd.shift_remove(&(down, i)))
                else {
                    return;
                };
                self.by_up.shift_remove(&(u, cid.to_string()));
                let line = match result {
                    Ok(r) => rpc::ok(&cid, r),
                    Err(e) => json!({"jsonrpc": "2.0", "id": cid, "error": e}).to_string(),
                };
                out.push(Action::Send { conn: u, line });
            }
            Ok(Frame::Request { id, method, params }) => {
                self.next_id += 1;
                let nid = self.next_id;
                self.back.insert((up, nid), (down, id));
                out.push(Action::Send {
                    conn: up,
                    line: rpc::request(nid, &method, params),
                });
            }
            Ok(Frame::Notification { method, mut params }) => {
                if method == "$/cancel_request" {
                    // The Agent withdraws one of its own requests: map its id to ours.
                    let rid = params.get("requestId").cloned().unwrap_or(Value::Null);
                    let ours = self
                        .back
                        .iter()
                        .find(|((u, _), (d, aid))| *u == up && *d == down && *aid == rid)
                        .map(|((_, n), _)| *n);
                    match ours {
                        Some(n) => params["requestId"] = json!(n),
                        None => return,
                    }
                }
                out.push(Action::Send {
                    conn: up,
                    line: rpc::notification(&method, params),
                });
            }
            _ => out.push(Action::Send {
                conn: up,
                line: line.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sends(out: &[Action]) -> Vec<(ConnId, Value)> {
        out.iter()
            .filter_map(|a| match a {
                Action::Send { conn, line } => Some((*conn, serde_json::from_str(line).unwrap())),
                _ => None,
            })
            .collect()
    }

    fn paired(m: Option<ProxyMutant>) -> Proxy {
        let mut p = Proxy::new(m);
        let mut out = vec![];
        p.handle(ProxyInput::Accepted(1), &mut out);
        assert_eq!(
            out,
            vec![Action::Connect {
                after_ms: 0,
                tag: 1
            }]
        );
        p.handle(ProxyInput::DownConnected { tag: 1, conn: 2 }, &mut vec![]);
        p
    }

    fn prompt(id: u64) -> String {
        rpc::request(
            id,
            "session/prompt",
            json!({"sessionId": "s", "prompt": [], "idempotencyKey": "k"}),
        )
    }

    #[test]
    fn rewrites_ids_both_ways_and_keeps_the_key() {
        let mut p = paired(None);
        let mut out = vec![];
        p.handle(ProxyInput::Frame(1, prompt(7)), &mut out);
        let (c, v) = &sends(&out)[0];
        assert_eq!(*c, 2);
        assert_eq!(v["params"]["idempotencyKey"], "k");
        let nid = v["id"].clone();
        assert_ne!(nid, json!(7));
        let mut back = vec![];
        p.handle(
            ProxyInput::Frame(2, rpc::ok(&nid, json!({"messageId": "m"}))),
            &mut back,
        );
        assert_eq!(
            sends(&back),
            vec![(
                1,
                json!({"jsonrpc": "2.0", "id": 7, "result": {"messageId": "m"}})
            )]
        );
    }

    #[test]
    fn maps_cancel_request_to_the_rewritten_id() {
        let mut p = paired(None);
        let mut out = vec![];
        p.handle(ProxyInput::Frame(1, prompt(7)), &mut out);
        let nid = sends(&out)[0].1["id"].clone();
        let mut c = vec![];
        p.handle(
            ProxyInput::Frame(
                1,
                rpc::notification("$/cancel_request", json!({"requestId": 7})),
            ),
            &mut c,
        );
        assert_eq!(sends(&c)[0].1["params"]["requestId"], nid);
        // The unmapped-cancel mutant forwards the Client's id.
        let mut m = paired(Some(ProxyMutant::UnmappedCancel));
        m.handle(ProxyInput::Frame(1, prompt(7)), &mut vec![]);
        let mut c = vec![];
        m.handle(
            ProxyInput::Frame(
                1,
                rpc::notification("$/cancel_request", json!({"requestId": 7})),
            ),
            &mut c,
        );
        assert_eq!(sends(&c)[0].1["params"]["requestId"], 7);
    }

    #[test]
    fn garbage_from_the_client_is_answered_by_the_proxy_not_forwarded() {
        let mut p = paired(None);
        let mut out = vec![];
        p.handle(ProxyInput::Frame(1, "{nope".into()), &mut out);
        p.handle(
            ProxyInput::Frame(1, r#"{"id":101,"method":5}"#.into()),
            &mut out,
        );
        let s = sends(&out);
        assert!(s.iter().all(|(c, _)| *c == 1), "{s:?}");
        assert_eq!(s[0].1["error"]["code"], rpc::code::PARSE_ERROR);
        assert_eq!(s[1].1["error"]["code"], rpc::code::INVALID_REQUEST);
    }

    #[test]
    fn drops_key_mutant_strips_the_key() {
        let mut p = paired(Some(ProxyMutant::DropsKey));
        let mut out = vec![];
        p.handle(ProxyInput::Frame(1, prompt(7)), &mut out);
        assert!(sends(&out)[0].1["params"].get("idempotencyKey").is_none());
    }

    #[test]
    fn agent_requests_are_rewritten_and_answered_back() {
        let mut p = paired(None);
        let mut out = vec![];
        p.handle(
            ProxyInput::Frame(2, rpc::request(1, "session/request_permission", json!({}))),
            &mut out,
        );
        let up_id = sends(&out)[0].1["id"].clone();
        let mut back = vec![];
        p.handle(
            ProxyInput::Frame(
                1,
                rpc::ok(&up_id, json!({"outcome": {"outcome": "cancelled"}})),
            ),
            &mut back,
        );
        assert_eq!(
            sends(&back)[0],
            (
                2,
                json!({"jsonrpc": "2.0", "id": 1, "result": {"outcome": {"outcome": "cancelled"}}})
            )
        );
    }

    #[test]
    fn frames_before_the_downstream_opens_are_queued_and_a_closed_side_closes_the_other() {
        let mut p = Proxy::new(None);
        p.handle(ProxyInput::Accepted(1), &mut vec![]);
        let mut out = vec![];
        p.handle(ProxyInput::Frame(1, prompt(3)), &mut out);
        assert!(sends(&out).is_empty());
        let mut out = vec![];
        p.handle(ProxyInput::DownConnected { tag: 1, conn: 2 }, &mut out);
        assert_eq!(sends(&out).len(), 1);
        let mut out = vec![];
        p.handle(ProxyInput::Disconnected(2), &mut out);
        assert_eq!(out, vec![Action::Close { conn: 1 }]);
    }

    /// `handle_decoded` with the line's own JSON does what `handle(Frame)` does with the line,
    /// both ways through the proxy, under each mutant.
    #[test]
    fn a_decoded_frame_is_handled_as_its_line() {
        let lines: [(ConnId, String); 7] = [
            (1, prompt(7)),
            (
                1,
                rpc::notification("$/cancel_request", json!({"requestId": 7})),
            ),
            (1, r#"{"nothing":"here"}"#.to_string()),
            (2, rpc::ok(&json!(101), json!({"messageId": "m"}))),
            (
                2,
                rpc::request(5, "session/request_permission", json!({"sessionId": "s"})),
            ),
            (
                2,
                rpc::notification("$/cancel_request", json!({"requestId": 5})),
            ),
            (
                1,
                rpc::ok(&json!(102), json!({"outcome": {"outcome": "cancelled"}})),
            ),
        ];
        let mutants = [
            None,
            Some(ProxyMutant::DropsKey),
            Some(ProxyMutant::UnmappedCancel),
            Some(ProxyMutant::DuplicatesPrompt),
            Some(ProxyMutant::ReordersPrompt),
        ];
        for m in mutants {
            let (mut by_line, mut by_value) = (paired(m), paired(m));
            let mut sent = 0;
            for (conn, line) in &lines {
                let (mut a, mut b) = (vec![], vec![]);
                by_line.handle(ProxyInput::Frame(*conn, line.clone()), &mut a);
                let decoded: Value = serde_json::from_str(line).unwrap();
                ProxyModel::handle_decoded(&mut by_value, *conn, line.clone(), decoded, &mut b);
                sent += sends(&a).len();
                assert_eq!(a, b, "{line} ({m:?})");
            }
            assert!(
                sent >= 3,
                "{m:?}: the script forwarded almost nothing ({sent})"
            );
        }
    }
}
