//! P7 every-request-answered (A5 A7 A15): [`p7_every_request_answered`].

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::{methods, Party};

use super::facts::Facts;
use super::verdict::{Status, Verdict};
use super::wire::lost_answer;
use crate::history::{op, process};
use crate::nemesis::logged;

/// P7 every-request-answered, from the Agent's own log: a request it read got at most one
/// response, and exactly one when its connection was still open at quiescence (A5, A7, A15). A
/// response the network dropped after the Agent wrote it (`lose-exchange`) counts as sent.
pub fn p7_every_request_answered(f: &Facts) -> Verdict {
    let x = match Exchanges::read(f) {
        Ok(x) => x,
        Err(c4) => return c4,
    };
    answered_unread(f, &x)
        .or_else(|| answered_once(f, &x))
        .unwrap_or_else(|| Verdict::valid("P7"))
}

/// What one pass over a run tells P7: the requests the Agent read, its answers, the ids
/// written and not yet answered, the connections ended, the crashes, whether the run ended
/// quiescent, and the lines it read that were not JSON.
#[derive(Default)]
struct Exchanges<'a> {
    /// (conn, id) → op index of the request the Agent read, and of its responses.
    read: BTreeMap<(u64, String), usize>,
    answers: BTreeMap<(u64, String), Vec<usize>>,
    awaiting: BTreeMap<(u64, String), usize>,
    ended: BTreeSet<u64>,
    /// A crashed process logs no end of its connections (nor does a peer that is partitioned
    /// away and crashes too): a crash after the read ends the exchange.
    crashes: Vec<usize>,
    quiescent: bool,
    /// Connections where the Agent read a line the history could not parse (not JSON): what it
    /// answers there afterwards is P5's to judge (K3), not an answer to nothing.
    garbled: BTreeMap<u64, Vec<(usize, &'a str)>>,
}

impl<'a> Exchanges<'a> {
    /// Read `f`'s ops once; `Err`: an id written again while its request awaited an answer
    /// (C4), judged as it is read.
    fn read(f: &'a Facts) -> Result<Exchanges<'a>, Verdict> {
        let mut x = Exchanges::default();
        let mut v = Verdict::valid("P7");
        for (op, w) in f.ops_with_wire() {
            let val = &op.value;
            match (op.process.as_str(), op.f.as_str(), w) {
                // A request, or an invalid one with an id (no method: answered -32600 under it).
                (process::NET, op::RECV, Some(w))
                    if w.from == "client"
                        && w.has_id()
                        && (w.has_method
                            || (w.frame.get("result").is_none()
                                && w.frame.get("error").is_none())) =>
                {
                    let k = w.key();
                    x.read.insert(k.clone(), op.index);
                    x.answers.remove(&k);
                }
                // C4, from the sender's side: an id written again on a connection while its
                // first request there awaits an answer. Only requests toward the Agent: a proxy
                // also writes the Agent's own requests (`session/request_permission`) to the
                // Client, in the other direction's id space.
                (process::NET, op::SEND, Some(w))
                    if !w.from_agent
                        && w.method.is_some_and(|m| methods::get(m).is_some())
                        && w.has_id() =>
                {
                    let k = w.key();
                    if let Some(first) = x.awaiting.get(&k) {
                        v.status = Status::Invalid;
                        v.party = Some(if w.from == "proxy" {
                            Party::Intermediary
                        } else {
                            Party::Client
                        });
                        v.rules = vec!["C4".into()];
                        v.witnesses = vec![*first, op.index];
                        v.fault = f.fault_before(op.index);
                        v.message = format!(
                            "request id {} was written again on connection {} while the first still awaited its answer (C4)",
                            k.1, k.0
                        );
                        return Err(v);
                    }
                    x.awaiting.insert(k, op.index);
                }
                (process::NET, op::RECV, Some(w)) if w.from == "client" && w.frame.is_string() => {
                    x.garbled
                        .entry(w.conn)
                        .or_default()
                        .push((op.index, w.frame.as_str().unwrap_or_default()));
                }
                (process::NET, op::RECV, Some(w)) if w.from == "agent" && !w.has_method => {
                    x.awaiting.remove(&w.key());
                }
                (process::NET, op::SEND, Some(w)) if w.from == "agent" && !w.has_method => {
                    x.answers.entry(w.key()).or_default().push(op.index);
                }
                // A response the remote transport lost (not an Agent request it lost).
                (process::NEMESIS, logged::LOSE_EXCHANGE, _) => {
                    if let Some((k, _)) = lost_answer(op) {
                        x.answers.entry(k).or_default().push(op.index);
                    }
                }
                (_, op::CONN_END, _) => {
                    if let Some(c) = val["conn"].as_u64() {
                        x.ended.insert(c);
                        x.awaiting.retain(|k, _| k.0 != c);
                    }
                }
                (process::NEMESIS, op::CRASH, _) => x.crashes.push(op.index),
                // A lost frame breaks its connection there (a silent break logs no end until a
                // heartbeat gives up): nothing after it can be delivered.
                (process::NEMESIS, logged::LOSE_FRAME, _) => {
                    if let Some(c) = val["detail"]["conn"].as_u64() {
                        x.ended.insert(c);
                    }
                }
                (process::WORLD, op::END, _) => x.quiescent = val["outcome"] == "quiescent",
                _ => {}
            }
        }
        Ok(x)
    }
}

/// A5: unknown or already answered ids are ignored, so no response answers a request the
/// Agent never read.
fn answered_unread(f: &Facts, x: &Exchanges) -> Option<Verdict> {
    let mut v = Verdict::valid("P7");
    // A5: unknown or already answered ids are ignored: no response to a request never read
    // (a cancel's `requestId` answered as if it were a request). `id: null` answers a frame
    // whose id could not be read (-32700, -32600).
    if let Some((k, a)) = x.answers.iter().find(|(k, a)| {
        k.1 != "null"
            && !x.read.contains_key(k)
            && !x.garbled.get(&k.0).is_some_and(|g| {
                // P5 judges a non-JSON line answered under an id it carries.
                g.iter()
                    .any(|(at, line)| *at < a[0] && line.contains(&format!("\"id\":{}", k.1)))
            })
    }) {
        v.breach(
            Status::Invalid,
            Party::Agent,
            vec!["A5".into()],
            a.clone(),
            f.fault_before(a[0]),
            format!(
            "the Agent answered id {} on connection {} (op {}), a request it never read there (A5: a cancel naming an unknown or answered id is ignored)",
            k.1, k.0, a[0]
        ),
        );
        return Some(v);
    }
    None
}

/// Every request the Agent read got exactly one response (A5), unless its connection ended or
/// a crash came after it; one unanswered at quiescence is invalid, at the liveness bound
/// unknown.
fn answered_once(f: &Facts, x: &Exchanges) -> Option<Verdict> {
    let mut v = Verdict::valid("P7");
    for (k, r) in &x.read {
        let a = x.answers.get(k).map(Vec::as_slice).unwrap_or_default();
        if a.len() > 1 {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            // A5's "exactly one response to the original request".
            v.rules = vec!["A5".into()];
            v.witnesses = std::iter::once(*r).chain(a.iter().copied()).collect();
            v.fault = f.fault_before(a[1]);
            v.message = format!(
                "request {} on connection {} got {} responses",
                k.1,
                k.0,
                a.len()
            );
            return Some(v);
        }
        if a.is_empty() && !x.ended.contains(&k.0) && !x.crashes.iter().any(|c| c > r) {
            v.status = if x.quiescent {
                Status::Invalid
            } else {
                Status::Unknown
            };
            v.party = x.quiescent.then_some(Party::Agent);
            v.rules = vec![unanswered_rule(f, k).into()];
            v.witnesses = vec![*r];
            v.fault = f.fault_before(*r);
            v.message = format!(
                "request {} on connection {} (op {r}) was never answered and its connection is still open{}",
                k.1,
                k.0,
                if x.quiescent { " at quiescence" } else { " at the liveness bound" }
            );
            return Some(v);
        }
    }
    None
}

/// The clause an unanswered request `k` (connection, id) falls under, from what the Agent
/// logged about it: withdrawn or dropped by a `$/cancel_request` (A5: every pending attempt
/// gets `-32800`), a stop (A6) or a close (A15); a held prompt dropped when its connection
/// ended (O1) or a retry that waited on a held prompt (A7: answered when the original is,
/// or it becomes the submission); anything else, A5's "exactly one response".
fn unanswered_rule(f: &Facts, k: &(u64, String)) -> &'static str {
    let about = |o: &&crate::history::Op| {
        o.process == process::AGENT
            && (
                o.value["conn"].as_u64().unwrap_or(0),
                o.value["id"].to_string(),
            ) == *k
    };
    let last = f
        .history
        .ops
        .iter()
        .rev()
        .filter(about)
        .find(|o| [op::DROP_HELD, op::WITHDRAW, op::WAIT_HELD].contains(&o.f.as_str()));
    match last {
        Some(o) if o.f == op::WAIT_HELD => "A7",
        Some(o) => match o.value["by"].as_str() {
            Some(by) => super::p06_cancel::withdrawal_rule(by),
            None => "A7",
        },
        None => "A5",
    }
}
