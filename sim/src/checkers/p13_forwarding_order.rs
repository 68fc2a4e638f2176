//! P13 forwarding-order (X1 C4): [`p13_forwarding_order`].

use std::collections::BTreeMap;

use acp_chaos_models::Party;

use super::facts::Facts;
use super::verdict::{Status, Verdict};
use super::wire::WireFrame;
use crate::history::{op, process};

/// P13 forwarding-order *(ours; DESIGN.md: faults keep transport guarantees)*: an intermediary
/// forwards the Client's requests on each downstream connection once each and in the order it
/// read them upstream (it may rewrite ids, X1, and answer or drop what it cannot map). A
/// request written downstream twice, or ahead of one read before it, is the intermediary's
/// fault, never the Agent's. Read from the proxy's `forward` log (up id ↔ down id), its reads
/// on the upstream connection and its writes downstream; valid when there is no proxy.
pub fn p13_forwarding_order(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P13");
    // (up conn, up id) → op index of the proxy's read of that request.
    let mut read_at: BTreeMap<(u64, String), usize> = BTreeMap::new();
    // (down conn, down id) → op index of the proxy's read of the request it forwards there,
    // taken when the proxy logs the forward (a Client that reuses an id is read twice).
    let mut up_of: BTreeMap<(u64, String), usize> = BTreeMap::new();
    // Per down conn: (read index, send index) of the newest request written there.
    let mut last: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    let is_request = |w: &WireFrame| w.has_method && w.has_id();
    for (op, w) in f.ops_with_wire() {
        let val = &op.value;
        match (op.process.as_str(), op.f.as_str(), w) {
            (process::PROXY, op::FORWARD, _) if val.get("up_id").is_some() => {
                let up = (
                    val["up_conn"].as_u64().unwrap_or(0),
                    val["up_id"].to_string(),
                );
                if let Some(&r) = read_at.get(&up) {
                    up_of.insert(
                        (
                            val["down_conn"].as_u64().unwrap_or(0),
                            val["down_id"].to_string(),
                        ),
                        r,
                    );
                }
            }
            (process::NET, op::RECV, Some(w)) if is_request(w) && w.from == "peer" => {
                read_at.insert(w.key(), op.index);
            }
            (process::NET, op::SEND, Some(w)) if w.from == "proxy" && is_request(w) => {
                let down = w.key();
                let Some(r) = up_of.get(&down).copied() else {
                    continue;
                };
                if let Some(&(prev_r, prev_s)) = last.get(&down.0) {
                    if r <= prev_r {
                        let dup = r == prev_r;
                        v.breach(
                            Status::Invalid,
                            Party::Intermediary,
                            if dup {
                            vec!["X1".into(), "C4".into()]
                        } else {
                            vec!["X1".into()]
                        },
                            if dup {
                            vec![r, prev_s, op.index]
                        } else {
                            vec![prev_r, r, prev_s, op.index]
                        },
                            f.fault_before(op.index),
                            if dup {
                            format!(
                                "the proxy wrote the request it read at op {r} twice on connection {} (ops {prev_s} and {}): intermediaries must not duplicate frames",
                                down.0, op.index
                            )
                        } else {
                            format!(
                                "the proxy read a request at op {r} after one at op {prev_r}, but wrote it on connection {} (op {}) after that one (op {prev_s}): intermediaries must keep each connection's order",
                                down.0, op.index
                            )
                        },
                        );
                        return v;
                    }
                }
                last.insert(down.0, (r, op.index));
            }
            (_, op::CONN_END, _) => {
                if let Some(c) = val["conn"].as_u64() {
                    last.remove(&c);
                }
            }
            _ => {}
        }
    }
    v
}
