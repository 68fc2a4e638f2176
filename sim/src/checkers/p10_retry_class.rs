//! P10 retry-class (C1 C7 C9 R1): [`p10_retry_class`].

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::rpc::code as rpc_code;
use acp_chaos_models::Party;

use super::facts::{track_active, Facts};
use super::verdict::{Status, Verdict};
use crate::history::{op, process};

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
    let mut v = Verdict::valid("P10");
    let mut keys: BTreeMap<u64, (usize, Option<String>)> = BTreeMap::new();
    // Attempts the Client saw fail: an error means nothing was inserted (A2), so the
    // outcome is known and sending again without a key is safe.
    let mut failed: BTreeSet<(u64, String)> = BTreeSet::new();
    let mut sent: BTreeMap<u64, Vec<(u64, String)>> = BTreeMap::new();
    let mut active: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    let mut resumes: BTreeMap<(u64, String), (usize, String, bool)> = BTreeMap::new();
    let mut finding: Option<Verdict> = None;
    let stale_ms = f.history.header["plan"]["client"]["stale_ms"]
        .as_u64()
        .unwrap_or(0);
    for (op, w) in f.ops_with_wire() {
        let val = &op.value;
        match (op.process.as_str(), op.f.as_str(), w) {
            (process::NET, op::RECV, Some(w)) if w.frame["error"].is_object() && !w.has_method => {
                failed.insert(w.key());
            }
            // X5: it failed before it was accepted, so it reached nobody.
            (process::CLIENT, op::NOT_ACCEPTED, _) => {
                failed.insert((val["conn"].as_u64().unwrap_or(0), val["id"].to_string()));
            }
            (process::CLIENT, op::ATTEMPT, _) => {
                let n = val["submission"].as_u64().unwrap_or(0);
                let key = val["key"].as_str().map(str::to_string);
                let earlier = sent.entry(n).or_default();
                let unknown = earlier.iter().any(|a| !failed.contains(a));
                let conn = val["conn"].as_u64().unwrap_or(0);
                let new_conn = !earlier.is_empty() && earlier.iter().all(|a| a.0 != conn);
                let age = f
                    .submissions
                    .get(&n)
                    .map(|&i| op.time_ms.saturating_sub(f.history.ops[i].time_ms));
                if finding.is_none()
                    && new_conn
                    && stale_ms > 0
                    && age.is_some_and(|a| a > stale_ms)
                {
                    finding = Some(Verdict {
                        property: "P10".into(),
                        status: Status::Finding,
                        rules: vec!["C7".into()],
                        witnesses: vec![f.submissions[&n], op.index],
                        fault: f.fault_before(op.index),
                        party: Some(Party::Client),
                        message: format!(
                            "submission {n} was resent after a reconnect {} ms after it was submitted, past the Client's staleness limit of {stale_ms} ms: it should have been shown to the user instead (C7)",
                            age.unwrap_or(0)
                        ),
                    });
                }
                earlier.push((val["conn"].as_u64().unwrap_or(0), val["id"].to_string()));
                match keys.get(&n) {
                    None => {
                        keys.insert(n, (op.index, key));
                    }
                    Some((first, k0)) if *k0 != key => {
                        v.status = Status::Invalid;
                        v.party = Some(Party::Client);
                        v.rules = vec!["C1".into()];
                        v.witnesses = vec![*first, op.index];
                        v.fault = f.fault_before(op.index);
                        v.message = format!(
                            "submission {n} was sent with key {k0:?} and again with key {key:?} (the keyed class: send again only with the same key)"
                        );
                        return v;
                    }
                    Some((first, None)) if finding.is_none() && unknown => {
                        finding = Some(Verdict {
                            property: "P10".into(),
                            status: Status::Finding,
                            rules: vec!["C9".into()],
                            witnesses: vec![*first, op.index],
                            fault: f.fault_before(op.index),
                            party: Some(Party::Client),
                            message: format!(
                                "submission {n} was sent again without a key: an earlier attempt's outcome was unknown, so a duplicate could not be ruled out (C9)"
                            ),
                        });
                    }
                    Some(_) => {}
                }
            }
            (process::CLIENT, op::SDK_RESEND, _)
                if finding.is_none()
                    && matches!(val["method"].as_str(), Some("session/new" | "session/fork")) =>
            {
                finding = Some(Verdict {
                    property: "P10".into(),
                    status: Status::Finding,
                    rules: vec!["C9".into()],
                    witnesses: vec![op.index],
                    fault: f.fault_before(op.index),
                    party: Some(Party::Client),
                    message: format!(
                        "the SDK resent {} by itself: a duplicating method (inferred: never resent automatically)",
                        val["method"]
                    ),
                });
            }
            _ if track_active(&mut active, op) => {}
            (process::NET, op::RECV, Some(w))
                if matches!(w.from, "client" | "proxy") && w.method == Some("session/resume") =>
            {
                let sid = w.frame["params"]["sessionId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let conn = w.conn;
                let elsewhere = active
                    .get(&sid)
                    .is_some_and(|c| c.iter().any(|x| *x != conn));
                resumes.insert(w.key(), (op.index, sid, elsewhere));
            }
            (process::NET, op::SEND, Some(w))
                if w.from_agent && w.frame["error"]["code"].is_i64() =>
            {
                let code = w.frame["error"]["code"].as_i64().unwrap_or(0);
                let a = w.key();
                if let Some((r, sid, true)) = resumes.remove(&a) {
                    // A malformed request, or one its sender cancelled (A5), may fail.
                    if code != rpc_code::INVALID_PARAMS && code != rpc_code::REQUEST_CANCELLED {
                        v.status = Status::Invalid;
                        v.party = Some(Party::Agent);
                        // R1: a class the proposal states (resume is idempotent).
                        v.rules = vec!["R1".into()];
                        v.witnesses = vec![r, op.index];
                        v.fault = f.fault_before(r);
                        v.message = format!(
                            "session/resume of {sid}, active on another connection, was answered {code} (stated: a resume of an active session synchronizes it again)"
                        );
                        return v;
                    }
                }
            }
            _ => {}
        }
    }
    finding.unwrap_or(v)
}
