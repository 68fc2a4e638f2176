//! P10 retry-class (C1 C7 C9 R1): [`p10_retry_class`].

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::rpc::code as rpc_code;
use acp_chaos_models::Party;

use super::facts::{track_active, Facts};
use super::verdict::{Status, Verdict};
use super::wire::WireFrame;
use crate::history::{op, process, Op};

/// P10 retry-class: each method behaves on a repeat as its class says (RULES.md "Retry
/// classes"), on both ends:
/// - Client, keyed class (stated; C1 MUST): every attempt of one submission carries the same
///   key: invalid, Client at fault;
/// - Client, C9 (SHOULD NOT): a submission sent again without a key, or an SDK resending a
///   duplicating method (`session/new`, `session/fork`; never resent automatically is
///   inferred): a finding, Client at fault;
/// - Client, C7 (SHOULD): a submission resent on a new connection when it had been pending
///   longer than the Client's own staleness limit (`[client] stale_ms`, from the history's
///   header; 0: none): a finding, Client at fault (it should have been shown to the user);
/// - Agent, idempotent class (stated: "`session/resume` of an active session synchronizes it
///   again"): a `session/resume` answered with an error while the session is active on
///   another of the Agent's connections: invalid, Agent at fault.
pub fn p10_retry_class(f: &Facts) -> Verdict {
    let mut walk = Retries::new(f);
    for (op, w) in f.ops_with_wire() {
        if let Some(v) = walk.step(op, w) {
            return v;
        }
    }
    walk.finding.unwrap_or_else(|| Verdict::valid("P10"))
}

/// A P10 verdict other than valid.
fn breach(
    status: Status,
    party: Party,
    rule: &str,
    witnesses: Vec<usize>,
    fault: Option<usize>,
    message: String,
) -> Verdict {
    let mut v = Verdict::valid("P10");
    v.breach(status, party, vec![rule.into()], witnesses, fault, message);
    v
}

/// What [`p10_retry_class`] knows as it walks the ops.
struct Retries<'f> {
    f: &'f Facts<'f>,
    /// Submission → its first attempt's op and key.
    keys: BTreeMap<u64, (usize, Option<String>)>,
    /// Attempts the Client saw fail: an error means nothing was inserted (A2), so the
    /// outcome is known and sending again without a key is safe.
    failed: BTreeSet<(u64, String)>,
    /// Submission → its attempts so far: (connection, JSON-RPC id).
    sent: BTreeMap<u64, Vec<(u64, String)>>,
    /// Session → the connections it is active on.
    active: BTreeMap<String, BTreeSet<u64>>,
    /// The `session/resume`s the Agent read: (its op, its session, active elsewhere then).
    resumes: BTreeMap<(u64, String), (usize, String, bool)>,
    /// The first finding (a finding does not end the walk: an invalid may come later).
    finding: Option<Verdict>,
    /// The Client's staleness limit (`[client] stale_ms`; 0: none).
    stale_ms: u64,
}

impl<'f> Retries<'f> {
    fn new(f: &'f Facts<'f>) -> Retries<'f> {
        Retries {
            f,
            keys: BTreeMap::new(),
            failed: BTreeSet::new(),
            sent: BTreeMap::new(),
            active: BTreeMap::new(),
            resumes: BTreeMap::new(),
            finding: None,
            stale_ms: f.history.header["plan"]["client"]["stale_ms"]
                .as_u64()
                .unwrap_or(0),
        }
    }

    /// Take one op in; an invalid verdict out.
    fn step(&mut self, op: &Op, w: Option<&WireFrame>) -> Option<Verdict> {
        let val = &op.value;
        match (op.process.as_str(), op.f.as_str(), w) {
            (process::NET, op::RECV, Some(w)) if w.frame["error"].is_object() && !w.has_method => {
                self.failed.insert(w.key());
            }
            // X5: it failed before it was accepted, so it reached nobody.
            (process::CLIENT, op::NOT_ACCEPTED, _) => {
                self.failed
                    .insert((val["conn"].as_u64().unwrap_or(0), val["id"].to_string()));
            }
            (process::CLIENT, op::ATTEMPT, _) => return self.attempt(op),
            (process::CLIENT, op::SDK_RESEND, _)
                if self.finding.is_none()
                    && matches!(val["method"].as_str(), Some("session/new" | "session/fork")) =>
            {
                self.finding = Some(breach(
                    Status::Finding,
                    Party::Client,
                    "C9",
                    vec![op.index],
                    self.f.fault_before(op.index),
                    format!(
                        "the SDK resent {} by itself: a duplicating method (inferred: never resent automatically)",
                        val["method"]
                    ),
                ));
            }
            _ if track_active(&mut self.active, op) => {}
            (process::NET, op::RECV, Some(w))
                if matches!(w.from, "client" | "proxy") && w.method == Some("session/resume") =>
            {
                let sid = w.frame["params"]["sessionId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let elsewhere = self
                    .active
                    .get(&sid)
                    .is_some_and(|c| c.iter().any(|x| *x != w.conn));
                self.resumes.insert(w.key(), (op.index, sid, elsewhere));
            }
            (process::NET, op::SEND, Some(w))
                if w.from_agent && w.frame["error"]["code"].is_i64() =>
            {
                return self.resume_failed(op, w);
            }
            _ => {}
        }
        None
    }

    /// The Client's attempt at `op`: C1 (same key), C7 (stale resend) and C9 (unkeyed resend).
    fn attempt(&mut self, op: &Op) -> Option<Verdict> {
        let (f, val) = (self.f, &op.value);
        let n = val["submission"].as_u64().unwrap_or(0);
        let key = val["key"].as_str().map(str::to_string);
        let conn = val["conn"].as_u64().unwrap_or(0);
        let earlier = self.sent.entry(n).or_default();
        let unknown = earlier.iter().any(|a| !self.failed.contains(a));
        let new_conn = !earlier.is_empty() && earlier.iter().all(|a| a.0 != conn);
        earlier.push((conn, val["id"].to_string()));
        if self.finding.is_none() && new_conn {
            self.finding = self.stale_resend(op, n);
        }
        match self.keys.get(&n) {
            None => {
                self.keys.insert(n, (op.index, key));
            }
            Some((first, k0)) if *k0 != key => {
                return Some(breach(
                    Status::Invalid,
                    Party::Client,
                    "C1",
                    vec![*first, op.index],
                    f.fault_before(op.index),
                    format!(
                        "submission {n} was sent with key {k0:?} and again with key {key:?} (the keyed class: send again only with the same key)"
                    ),
                ));
            }
            Some((first, None)) if self.finding.is_none() && unknown => {
                self.finding = Some(breach(
                    Status::Finding,
                    Party::Client,
                    "C9",
                    vec![*first, op.index],
                    f.fault_before(op.index),
                    format!(
                        "submission {n} was sent again without a key: an earlier attempt's outcome was unknown, so a duplicate could not be ruled out (C9)"
                    ),
                ));
            }
            Some(_) => {}
        }
        None
    }

    /// C7: submission `n` resent on a new connection at `op`, pending longer than the
    /// Client's staleness limit.
    fn stale_resend(&self, op: &Op, n: u64) -> Option<Verdict> {
        let f = self.f;
        let age = f
            .submissions
            .get(&n)
            .map(|&i| op.time_ms.saturating_sub(f.history.ops[i].time_ms))?;
        (self.stale_ms > 0 && age > self.stale_ms).then(|| {
            breach(
                Status::Finding,
                Party::Client,
                "C7",
                vec![f.submissions[&n], op.index],
                f.fault_before(op.index),
                format!(
                    "submission {n} was resent after a reconnect {age} ms after it was submitted, past the Client's staleness limit of {} ms: it should have been shown to the user instead (C7)",
                    self.stale_ms
                ),
            )
        })
    }

    /// The Agent answered with an error at `op`: a `session/resume` of a session active on
    /// another connection may not fail (R1), unless malformed or cancelled (A5).
    fn resume_failed(&mut self, op: &Op, w: &WireFrame) -> Option<Verdict> {
        let code = w.frame["error"]["code"].as_i64().unwrap_or(0);
        let Some((r, sid, true)) = self.resumes.remove(&w.key()) else {
            return None;
        };
        if code == rpc_code::INVALID_PARAMS || code == rpc_code::REQUEST_CANCELLED {
            return None;
        }
        // R1: a class the proposal states (resume is idempotent).
        Some(breach(
            Status::Invalid,
            Party::Agent,
            "R1",
            vec![r, op.index],
            self.f.fault_before(r),
            format!(
                "session/resume of {sid}, active on another connection, was answered {code} (stated: a resume of an active session synchronizes it again)"
            ),
        ))
    }
}
