//! Checkers: pure functions from a [`History`] to a [`Verdict`], one per property of
//! `spec/RULES.md` (P1 to P12, and our P13 and P14; see [`CHECKERS`]).
//!
//! Every non-valid verdict names the property, the rule ids, the witnessing op indices, the
//! fault that enabled it (the last nemesis op before the witness) and who is at fault.

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::Party;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::history::{is_agent_host, History, Op};
use acp_chaos_models::rpc::code as rpc_code;

/// Verdict status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The property holds.
    Valid,
    /// A SHOULD or an *(ours)* rule broken, or a permitted outcome worth a look. Never fails.
    Finding,
    /// Cannot decide (e.g. still pending at the liveness bound).
    Unknown,
    /// A MUST broken.
    Invalid,
}

impl Status {
    /// `valid`, `finding`, `unknown` or `invalid` (as in `summary.json`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Valid => "valid",
            Status::Finding => "finding",
            Status::Unknown => "unknown",
            Status::Invalid => "invalid",
        }
    }
}

/// One checker's answer for one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Property id, e.g. `P1`.
    pub property: String,
    /// Status.
    pub status: Status,
    /// RULES.md ids concerned.
    pub rules: Vec<String>,
    /// Op indices that witness it.
    pub witnesses: Vec<usize>,
    /// Index of the nemesis op that enabled it, if any.
    pub fault: Option<usize>,
    /// Who is at fault.
    pub party: Option<Party>,
    /// One readable sentence.
    pub message: String,
}

impl Verdict {
    fn valid(property: &str, rules: &[&str]) -> Verdict {
        Verdict {
            property: property.into(),
            status: Status::Valid,
            rules: rules.iter().map(|r| r.to_string()).collect(),
            witnesses: vec![],
            fault: None,
            party: None,
            message: String::new(),
        }
    }
}

/// A checker: a property id, its title, and the pure function.
pub struct Checker {
    /// Property id.
    pub property: &'static str,
    /// Short name.
    pub title: &'static str,
    /// RULES.md ids it enforces.
    pub rules: &'static [&'static str],
    /// The check.
    pub check: fn(&Facts) -> Verdict,
}

/// Every checker, in report order.
pub const CHECKERS: &[Checker] = &[
    Checker {
        property: "P1",
        title: "at-most-once",
        rules: &["A1", "A4", "A10", "A12", "A13", "C1"],
        check: p1_at_most_once,
    },
    Checker {
        property: "P2",
        title: "no-silent-drop",
        rules: &["C1", "C6", "C8", "A2"],
        check: p2_no_silent_drop,
    },
    Checker {
        property: "P3",
        title: "same-answer",
        rules: &["A1", "A7"],
        check: p3_same_answer,
    },
    Checker {
        property: "P4",
        title: "error-means-not-inserted",
        rules: &["A2", "A3", "A12"],
        check: p4_error_means_not_inserted,
    },
    Checker {
        property: "P5",
        title: "key-validation",
        rules: &["K2", "K3"],
        check: p5_key_validation,
    },
    Checker {
        property: "P6",
        title: "cancel",
        rules: &["A5", "A6", "A15", "X1"],
        check: p6_cancel,
    },
    Checker {
        property: "P7",
        title: "every-request-answered",
        rules: &["A5", "A7", "A15"],
        check: p7_every_request_answered,
    },
    Checker {
        property: "P8",
        title: "key-privacy",
        rules: &["A8"],
        check: p8_key_privacy,
    },
    Checker {
        property: "P9",
        title: "key-scope",
        rules: &["A9"],
        check: p9_key_scope,
    },
    Checker {
        property: "P10",
        title: "retry-class",
        rules: &["C1", "C9", "X4"],
        check: p10_retry_class,
    },
    Checker {
        property: "P11",
        title: "durability",
        rules: &["D1"],
        check: p11_durability,
    },
    Checker {
        property: "P12",
        title: "id-uniqueness",
        rules: &["A11", "A16"],
        check: p12_id_uniqueness,
    },
    Checker {
        property: "P13",
        title: "forwarding-order",
        rules: &["X1", "C4"],
        check: p13_forwarding_order,
    },
    Checker {
        property: "P14",
        title: "client-keys",
        rules: &["C2", "C3", "C5"],
        check: p14_client_keys,
    },
];

/// Run every checker.
pub fn check_all(h: &History) -> Vec<Verdict> {
    let h = agent_view(h);
    let facts = Facts::of(&h);
    CHECKERS.iter().map(|c| (c.check)(&facts)).collect()
}

/// The history as the checkers read it: a cluster's nodes and store are one Agent (the rules
/// are about the Agent, whatever its design). Op indices are unchanged.
pub fn agent_view(h: &History) -> std::borrow::Cow<'_, History> {
    let renamed = |op: &Op| {
        (op.process != "agent" && is_agent_host(&op.process))
            || op.value["from"]
                .as_str()
                .is_some_and(|f| f != "agent" && is_agent_host(f))
            || op.value["host"]
                .as_str()
                .is_some_and(|f| f != "agent" && is_agent_host(f))
    };
    if !h.ops.iter().any(renamed) {
        return std::borrow::Cow::Borrowed(h);
    }
    let mut h = h.clone();
    for op in h.ops.iter_mut().filter(|o| renamed(o)) {
        if is_agent_host(&op.process) {
            if op.process != "agent" && op.value.is_object() {
                // Checkers that must tell the store from a node read it here.
                op.value["renamed_from"] = op.process.clone().into();
            }
            op.process = "agent".into();
        }
        for field in ["from", "host"] {
            if op.value[field].as_str().is_some_and(is_agent_host) {
                op.value[field] = "agent".into();
            }
        }
    }
    std::borrow::Cow::Owned(h)
}

/// One insertion as the Agent reported it.
#[derive(Debug, Clone)]
pub struct Insert {
    /// Op index of the `insert` effect.
    pub op: usize,
    /// Session.
    pub session: String,
    /// The message id.
    pub message_id: String,
    /// Key it carried.
    pub key: Option<String>,
    /// The submission its attempt belongs to (from the ledger's attempt links).
    pub submission: Option<u64>,
    /// Op index where it took effect (became durable or visible), if it did.
    pub took_effect: Option<usize>,
    /// A live-only message (a locally handled command, never retained: A11).
    pub live_only: bool,
    /// The key the Client put on the attempt (`None` inside: unknown attempt; `Some(None)`:
    /// sent without a key). Differs from `key` when an intermediary changed it (X1).
    pub sent_key: Option<Option<String>>,
    /// Op index of the Agent restart whose recovery no longer had it.
    pub lost_at: Option<usize>,
    /// Live-only: op index where its session became active on no connection (key forgettable).
    pub forgotten_at: Option<usize>,
}

impl Insert {
    /// Op index from which the Agent may have forgotten it, if before `before`.
    pub fn gone_before(&self, before: usize) -> Option<usize> {
        [self.lost_at, self.forgotten_at]
            .into_iter()
            .flatten()
            .filter(|g| *g < before)
            .min()
    }
}

/// How one submission ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Inserted, and the Client holds its messageId.
    Acknowledged,
    /// Shown to the user as failed.
    Surfaced,
    /// Withdrawn by its own user's cancel (`-32800`).
    Withdrawn,
    /// Inserted more than once (P1).
    Duplicated,
    /// Inserted again after the first was lost or forgotten as the rules allow (a finding).
    Reinserted,
    /// Never inserted, never shown (P2).
    Lost,
    /// Inserted, but the Client never learned its id and no longer holds the input (P2).
    Unacknowledged,
    /// Still pending at the liveness bound.
    Pending,
}

/// Facts extracted once from a history; the checkers read only these and the ops.
pub struct Facts<'a> {
    /// The history.
    pub history: &'a History,
    /// Every insertion, in order.
    pub inserts: Vec<Insert>,
    /// User submissions: number → op index of the `submit` invoke.
    pub submissions: BTreeMap<u64, usize>,
    /// Submission → op index of the Client's `ack`, and the messageId it holds.
    pub acks: BTreeMap<u64, (usize, String)>,
    /// Submission → op index where it was shown to the user as failed.
    pub surfaced: BTreeMap<u64, usize>,
    /// Submission → op index where its own user's cancel withdrew it.
    pub withdrawn: BTreeMap<u64, usize>,
    /// (connection, JSON-RPC id) of every attempt, also as the Agent saw it through a proxy →
    /// its submission.
    pub attempts: BTreeMap<(u64, String), u64>,
    /// Keys the Client put on each submission's attempts.
    pub attempt_keys: BTreeMap<u64, BTreeSet<String>>,
    /// Insertion (index into `inserts`) → op indices of `turn-start` ops for it (rounds of
    /// work). Keyed by insertion, not id: a design that derives ids repeats them.
    pub turns: BTreeMap<usize, Vec<usize>>,
    /// Insertion → op indices of `tool-effect` ops for it (side effects).
    pub tool_effects: BTreeMap<usize, Vec<usize>>,
    /// The design's declared retention (from the history header).
    pub retention: acp_chaos_models::Retention,
    /// Submissions the Client still held at the end.
    pub pending_at_end: BTreeSet<u64>,
    /// `recover` ops: (op index, session → retained messageIds).
    pub recoveries: Vec<(usize, BTreeMap<String, BTreeSet<String>>)>,
}

impl<'a> Facts<'a> {
    /// Extract the facts.
    pub fn of(h: &'a History) -> Facts<'a> {
        let mut attempts: BTreeMap<(u64, String), u64> = BTreeMap::new();
        let mut inserts: Vec<Insert> = Vec::new();
        let mut by_mid: BTreeMap<String, usize> = BTreeMap::new();
        let mut submissions = BTreeMap::new();
        let mut acks = BTreeMap::new();
        let mut surfaced = BTreeMap::new();
        let mut pending_at_end = BTreeSet::new();
        let mut recoveries = Vec::new();
        let mut unreported: BTreeSet<usize> = BTreeSet::new();
        let mut attempt_keys: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
        let mut sent_keys: BTreeMap<(u64, String), Option<String>> = BTreeMap::new();
        let mut withdrawn = BTreeMap::new();
        let mut turns: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut tool_effects: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        // Which connections each session is active on, for A11's forgetting of live-only keys.
        let mut active: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
        let mut live_pending: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        fn forget_if_inactive(
            sid: &str,
            at: usize,
            active: &BTreeMap<String, BTreeSet<u64>>,
            inserts: &mut [Insert],
            live_pending: &mut BTreeMap<String, Vec<usize>>,
        ) {
            if active.get(sid).is_none_or(|s| s.is_empty()) {
                for i in live_pending.remove(sid).unwrap_or_default() {
                    inserts[i].forgotten_at.get_or_insert(at);
                }
            }
        }
        for op in &h.ops {
            let v = &op.value;
            match (op.process.as_str(), op.f.as_str()) {
                ("user", "submit") => {
                    if let Some(n) = v["submission"].as_u64() {
                        submissions.insert(n, op.index);
                    }
                }
                ("client", "attempt") => {
                    if let (Some(c), Some(s)) = (v["conn"].as_u64(), v["submission"].as_u64()) {
                        attempts.insert((c, v["id"].to_string()), s);
                        sent_keys.insert(
                            (c, v["id"].to_string()),
                            v["key"].as_str().map(str::to_string),
                        );
                        if let Some(k) = v["key"].as_str() {
                            attempt_keys.entry(s).or_default().insert(k.to_string());
                        }
                    }
                }
                ("proxy", "forward") if v["method"] == "session/prompt" => {
                    // The proxy rewrote the id: the Agent's (conn, id) is the same attempt.
                    let up = (v["up_conn"].as_u64().unwrap_or(0), v["up_id"].to_string());
                    let down = (
                        v["down_conn"].as_u64().unwrap_or(0),
                        v["down_id"].to_string(),
                    );
                    if let Some(&s) = attempts.get(&up) {
                        attempts.insert(down.clone(), s);
                    }
                    if let Some(k) = sent_keys.get(&up).cloned() {
                        sent_keys.insert(down, k);
                    }
                }
                ("client", "withdrawn") => {
                    if let Some(n) = v["submission"].as_u64() {
                        withdrawn.insert(n, op.index);
                    }
                }
                ("client", "ack") => {
                    if let Some(n) = v["submission"].as_u64() {
                        acks.insert(
                            n,
                            (
                                op.index,
                                v["messageId"].as_str().unwrap_or_default().to_string(),
                            ),
                        );
                    }
                }
                ("client", "surface") => {
                    if let Some(n) = v["submission"].as_u64() {
                        surfaced.insert(n, op.index);
                    }
                }
                ("client", "pending-at-end") => {
                    pending_at_end = v["submissions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_u64)
                        .collect();
                }
                ("agent", "activate") => {
                    if let (Some(sid), Some(c)) = (v["session"].as_str(), v["conn"].as_u64()) {
                        active.entry(sid.to_string()).or_default().insert(c);
                    }
                }
                ("agent", "deactivate") => {
                    if let (Some(sid), Some(c)) = (v["session"].as_str(), v["conn"].as_u64()) {
                        active.entry(sid.to_string()).or_default().remove(&c);
                        forget_if_inactive(sid, op.index, &active, &mut inserts, &mut live_pending);
                    }
                }
                ("agent", "conn-end") => {
                    if let Some(c) = v["conn"].as_u64() {
                        let sids: Vec<String> = active
                            .iter()
                            .filter(|(_, cs)| cs.contains(&c))
                            .map(|(s, _)| s.clone())
                            .collect();
                        for sid in sids {
                            active.entry(sid.clone()).or_default().remove(&c);
                            forget_if_inactive(
                                &sid,
                                op.index,
                                &active,
                                &mut inserts,
                                &mut live_pending,
                            );
                        }
                    }
                }
                ("agent", "tool-effect") => {
                    if let Some(&i) = v["messageId"].as_str().and_then(|m| by_mid.get(m)) {
                        tool_effects.entry(i).or_default().push(op.index);
                    }
                }
                ("agent", "insert") => {
                    let mid = v["messageId"].as_str().unwrap_or_default().to_string();
                    let live_only = v["live_only"] == true;
                    if live_only {
                        let sid = v["session"].as_str().unwrap_or_default().to_string();
                        live_pending.entry(sid).or_default().push(inserts.len());
                    }
                    let submission = v["conn"]
                        .as_u64()
                        .and_then(|c| attempts.get(&(c, v["id"].to_string())).copied());
                    by_mid.insert(mid.clone(), inserts.len());
                    let sent_key = v["conn"]
                        .as_u64()
                        .and_then(|c| sent_keys.get(&(c, v["id"].to_string())).cloned());
                    inserts.push(Insert {
                        sent_key,
                        op: op.index,
                        session: v["session"].as_str().unwrap_or_default().to_string(),
                        message_id: mid,
                        key: v["key"].as_str().map(str::to_string),
                        submission,
                        took_effect: None,
                        live_only,
                        lost_at: None,
                        forgotten_at: None,
                    });
                }
                ("agent", "durable") | ("agent", "visible") => {
                    if let Some(&i) = v["messageId"].as_str().and_then(|m| by_mid.get(m)) {
                        inserts[i].took_effect.get_or_insert(op.index);
                    }
                }
                ("agent", "turn-start") => {
                    if let Some(&i) = v["messageId"].as_str().and_then(|m| by_mid.get(m)) {
                        turns.entry(i).or_default().push(op.index);
                    }
                }
                ("agent", "recover") => {
                    // A restart: the session is active nowhere any more.
                    for cs in active.values_mut() {
                        cs.clear();
                    }
                    for (_, idx) in std::mem::take(&mut live_pending) {
                        for i in idx {
                            inserts[i].forgotten_at.get_or_insert(op.index);
                        }
                    }
                    let mut m = BTreeMap::new();
                    if let Some(o) = v["retained"].as_object() {
                        for (sid, ids) in o {
                            let set = ids
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|x| x.as_str().map(str::to_string))
                                .collect();
                            m.insert(sid.clone(), set);
                        }
                    }
                    if !v["retained"].is_object() {
                        // A user Agent that does not report what it kept (`AgentModel::retained`
                        // left at its default): assume it kept everything.
                        unreported.insert(op.index);
                    }
                    recoveries.push((op.index, m));
                }
                _ => {}
            }
        }
        // When did each insertion get lost? The first restart after it took effect whose
        // recovery does not have it.
        for i in inserts.iter_mut() {
            let Some(t) = i.took_effect else { continue };
            i.lost_at = recoveries
                .iter()
                .find(|(rop, kept)| {
                    *rop > t
                        && !unreported.contains(rop)
                        && !kept
                            .get(&i.session)
                            .is_some_and(|s: &BTreeSet<String>| s.contains(&i.message_id))
                })
                .map(|(rop, _)| *rop);
        }
        let retention = match h.header["plan"]["retention"].as_str() {
            Some("process") => acp_chaos_models::Retention::Process,
            _ => acp_chaos_models::Retention::Durable,
        };
        Facts {
            history: h,
            inserts,
            submissions,
            acks,
            surfaced,
            withdrawn,
            attempts,
            attempt_keys,
            turns,
            tool_effects,
            retention,
            pending_at_end,
            recoveries,
        }
    }

    /// The submission an attempt (connection, JSON-RPC id) belongs to, through proxy rewrites.
    pub fn attempt_submission(&self, attempt: &(u64, String)) -> Option<u64> {
        self.attempts.get(attempt).copied()
    }

    /// The last nemesis op strictly before `index`.
    pub fn fault_before(&self, index: usize) -> Option<usize> {
        self.history.ops[..index.min(self.history.ops.len())]
            .iter()
            .rev()
            .find(|o| {
                o.process == "nemesis"
                    && o.f != "heal"
                    && o.f != "restart"
                    && o.f != "heal-partition"
            })
            .map(|o| o.index)
    }

    /// Class of each submission (Jepsen set-full style).
    pub fn classes(&self) -> BTreeMap<u64, Class> {
        let mut per_sub: BTreeMap<u64, Vec<&Insert>> = BTreeMap::new();
        for i in self.inserts.iter().filter(|i| i.took_effect.is_some()) {
            if let Some(s) = i.submission {
                per_sub.entry(s).or_default().push(i);
            }
        }
        self.submissions
            .keys()
            .map(|n| {
                let ins = per_sub.get(n).map(Vec::as_slice).unwrap_or_default();
                // A second insertion while the first was still there is a duplicate; one
                // after the rules let the Agent forget the first (A11, A16) is a reinsertion.
                let dup = ins
                    .iter()
                    .enumerate()
                    .any(|(j, l)| ins[..j].iter().any(|e| e.gone_before(l.op).is_none()));
                let c = if dup {
                    Class::Duplicated
                } else if ins.len() > 1 {
                    Class::Reinserted
                } else {
                    self.settlement(*n, !ins.is_empty())
                };
                (*n, c)
            })
            .collect()
    }

    /// How the user's side of submission `n` ended, whatever happened to its insertions:
    /// acknowledged, surfaced, withdrawn, still pending, or neither (unacknowledged when it was
    /// inserted, lost when not).
    pub fn settlement(&self, n: u64, inserted: bool) -> Class {
        if self.acks.contains_key(&n) {
            Class::Acknowledged
        } else if self.surfaced.contains_key(&n) {
            Class::Surfaced
        } else if self.withdrawn.contains_key(&n) {
            Class::Withdrawn
        } else if self.pending_at_end.contains(&n) {
            Class::Pending
        } else if inserted {
            Class::Unacknowledged
        } else {
            Class::Lost
        }
    }
}

/// P1 at-most-once: no second insertion for a submission while an earlier one that took
/// effect is retained, or should be by the design's declared retention, or is live-only with the
/// session still active somewhere; and no second round of work (turn or tool call) for one
/// message. Two keys for one submission: Client (C1). Second insertions the rules allow (A11,
/// A16: the earlier message was lost as the retention allows, or a live-only key forgotten) are
/// findings.
pub fn p1_at_most_once(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P1", &["A1", "A4", "A10", "A11", "A13", "A16", "C1"]);
    // The request an insertion came from (one attempt inserted twice is the Agent's doing).
    let same_attempt = |a: &Insert, b: &Insert| {
        let at = |i: &Insert| {
            let v = &f.history.ops[i.op].value;
            (v["conn"].clone(), v["id"].clone())
        };
        at(a) == at(b)
    };
    let durable = f.retention == acp_chaos_models::Retention::Durable;
    for (j, later) in f.inserts.iter().enumerate() {
        let Some(sub) = later.submission else {
            continue;
        };
        for e in f.inserts[..j].iter().filter(|e| {
            e.submission == Some(sub)
                && e.session == later.session
                && e.took_effect.is_some_and(|t| t < later.op)
        }) {
            let gone = e.gone_before(later.op);
            let changed = |i: &Insert| i.sent_key.as_ref().is_some_and(|k| *k != i.key);
            let (status, party, rules, why) = if changed(e) || changed(later) {
                (
                    Status::Invalid,
                    Party::Intermediary,
                    vec!["X1"],
                    "because an intermediary did not forward the key unchanged".to_string(),
                )
            } else if e.key != later.key {
                (
                    Status::Invalid,
                    Party::Client,
                    vec!["C1"],
                    "under two keys: the Client changed the key between attempts".to_string(),
                )
            } else if e.key.is_none() && !same_attempt(e, later) {
                // K1: no key, no duplicate detection: the Client resent a prompt it sent
                // without a key (C9: it should not, unless a duplicate does not matter).
                (
                    Status::Finding,
                    Party::Client,
                    vec!["C9", "K1"],
                    "without a key: the Client sent it again although it could not rule out a duplicate".to_string(),
                )
            } else if gone.is_none() {
                let rule = if e.live_only { "A11" } else { "A10" };
                let key = e.key.as_deref().unwrap_or("");
                (
                    Status::Invalid,
                    Party::Agent,
                    vec!["A1", "A4", rule],
                    format!("under the same key {key:?} while the first was still retained"),
                )
            } else if durable && !e.live_only {
                (
                    Status::Invalid,
                    Party::Agent,
                    vec!["D1", "A10"],
                    "after a restart lost the first, which a durable design must keep".to_string(),
                )
            } else if e.live_only {
                (Status::Finding, Party::Spec, vec!["A11", "O3"], "after the session was active nowhere and the live-only key was forgotten (allowed)".to_string())
            } else {
                (
                    Status::Finding,
                    Party::Spec,
                    vec!["A16"],
                    "after a restart lost the first, as the design's process retention allows"
                        .to_string(),
                )
            };
            if status > v.status {
                v.status = status;
                v.party = Some(party);
                v.rules = rules.into_iter().map(String::from).collect();
                v.witnesses = vec![e.op, e.took_effect.unwrap_or(e.op), later.op];
                v.fault = f.fault_before(later.op);
                v.message = format!(
                    "submission {sub} inserted twice ({} then {}) {why}",
                    e.message_id, later.message_id
                );
                if status == Status::Invalid {
                    return v;
                }
            }
        }
    }
    // A1: no second round of work for one message: one turn, one tool side effect.
    for (what, map) in [
        ("rounds of work", &f.turns),
        ("tool side effects", &f.tool_effects),
    ] {
        if let Some((&i, ops)) = map.iter().find(|(_, ops)| ops.len() > 1) {
            let mid = &f.inserts[i].message_id;
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec!["A1".into()];
            v.witnesses = ops.clone();
            v.fault = f.fault_before(ops[1]);
            v.message = format!(
                "message {mid} got {} {what} (A1: a retry starts no second round)",
                ops.len()
            );
            return v;
        }
    }
    v
}

/// P2 no-silent-drop: after heal and quiescence every submission is acknowledged or surfaced.
pub fn p2_no_silent_drop(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P2", &["C1", "C6", "C8", "A2"]);
    let classes: BTreeMap<u64, Class> = f
        .submissions
        .keys()
        .map(|n| {
            let inserted = f
                .inserts
                .iter()
                .any(|i| i.submission == Some(*n) && i.took_effect.is_some());
            (*n, f.settlement(*n, inserted))
        })
        .collect();
    let mut pending = Vec::new();
    for (n, c) in &classes {
        match c {
            Class::Lost | Class::Unacknowledged => {
                let at = f.submissions[n];
                let last_client_op = f
                    .history
                    .ops
                    .iter()
                    .rev()
                    .find(|o| o.process == "nemesis" && o.value["host"] == "client");
                v.status = Status::Invalid;
                v.party = Some(Party::Client);
                v.rules = vec!["C1".into(), "C8".into()];
                v.witnesses = vec![at];
                v.fault = last_client_op
                    .map(|o| o.index)
                    .or_else(|| f.fault_before(f.history.ops.len()));
                v.message = format!(
                    "submission {n} is {}: the Client no longer holds it, never got its messageId and never showed an error",
                    if *c == Class::Lost { "lost (never inserted)" } else { "unacknowledged (inserted)" }
                );
                return v;
            }
            Class::Acknowledged => {
                let (op, mid) = &f.acks[n];
                let real = f
                    .inserts
                    .iter()
                    .any(|i| i.submission == Some(*n) && &i.message_id == mid);
                if !real {
                    // Whose message is it? If it carries a key this submission used, the
                    // Client reused a key for a new submission (C2); otherwise the Agent
                    // answered with another submission's message (A1, A9).
                    let other = f.inserts.iter().find(|i| &i.message_id == mid);
                    // The sessions this submission's attempts went to (from the frames the
                    // Client wrote): a key is only reused within one session (A9).
                    let attempts: BTreeSet<(u64, String)> = f
                        .history
                        .ops
                        .iter()
                        .filter(|o| {
                            o.process == "client"
                                && o.f == "attempt"
                                && o.value["submission"].as_u64() == Some(*n)
                        })
                        .map(|o| {
                            (
                                o.value["conn"].as_u64().unwrap_or(0),
                                o.value["id"].to_string(),
                            )
                        })
                        .collect();
                    let sessions: BTreeSet<&str> = f
                        .history
                        .ops
                        .iter()
                        .filter(|o| {
                            o.process == "net"
                                && o.f == "send"
                                && o.value["from"] == "client"
                                && attempts.contains(&(
                                    o.value["conn"].as_u64().unwrap_or(0),
                                    o.value["frame"]["id"].to_string(),
                                ))
                        })
                        .filter_map(|o| o.value["frame"]["params"]["sessionId"].as_str())
                        .collect();
                    let reused = other.and_then(|o| o.key.as_ref()).is_some_and(|k| {
                        f.attempt_keys.get(n).is_some_and(|ks| ks.contains(k))
                            && other.is_some_and(|o| {
                                sessions.is_empty() || sessions.contains(o.session.as_str())
                            })
                    });
                    v.status = Status::Invalid;
                    v.witnesses = std::iter::once(*op).chain(other.map(|o| o.op)).collect();
                    v.fault = f.fault_before(*op);
                    if reused {
                        v.party = Some(Party::Client);
                        v.rules = vec!["C2".into()];
                        v.message = format!("submission {n} was acknowledged with {mid}, the message of an earlier submission whose key it reused (C2)");
                    } else {
                        v.party = Some(Party::Agent);
                        v.rules = vec!["A1".into(), "A9".into()];
                        v.message = format!("submission {n} was acknowledged with {mid}, which is not one of its insertions");
                    }
                    return v;
                }
            }
            Class::Pending => pending.push(*n),
            _ => {}
        }
    }
    let undelivered = f
        .history
        .ops
        .iter()
        .rev()
        .find(|o| o.process == "world" && o.f == "end")
        .and_then(|o| o.value["undelivered"].as_u64())
        .unwrap_or(0);
    if pending.is_empty() && undelivered > 0 {
        v.status = Status::Unknown;
        v.message =
            format!("liveness: {undelivered} user actions were never made before the bound");
    }
    if !pending.is_empty() {
        v.status = Status::Unknown;
        v.witnesses = pending.iter().map(|n| f.submissions[n]).collect();
        v.message = format!("liveness: submissions {pending:?} still pending at the bound");
    }
    v
}

/// One Agent answer to a `session/prompt` attempt: (conn, id), op index, messageId or code.
type Answer = ((u64, String), usize, Result<String, i64>);

/// Agent answers to `session/prompt` attempts, in order.
fn prompt_answers(f: &Facts) -> Vec<Answer> {
    let mut prompts: BTreeSet<(u64, String)> = BTreeSet::new();
    let mut out = Vec::new();
    for op in &f.history.ops {
        if op.process != "net" || op.f != "send" {
            continue;
        }
        let fr = &op.value["frame"];
        let key = (op.value["conn"].as_u64().unwrap_or(0), fr["id"].to_string());
        if op.value["from"] == "proxy" || (op.value["from"] == "client") {
            if fr["method"] == "session/prompt" {
                prompts.insert(key);
            }
            continue;
        }
        if op.value["from"] != "agent" || !prompts.contains(&key) {
            continue;
        }
        if let Some(m) = fr["result"]["messageId"].as_str() {
            out.push((key, op.index, Ok(m.to_string())));
        } else if let Some(c) = fr["error"]["code"].as_i64() {
            out.push((key, op.index, Err(c)));
        }
    }
    out
}

/// One `session/prompt` request as the Agent read it.
#[derive(Debug, Clone)]
struct Read {
    /// Op index of the `recv`.
    at: usize,
    /// Op index of the Agent boot it was read in (the last `recover` before it).
    boot: usize,
    session: String,
    key: Option<String>,
}

/// Every `session/prompt` request the Agent read, by (connection, JSON-RPC id); for the same
/// pair read twice (a reused id), the first.
fn prompt_reads(f: &Facts) -> BTreeMap<(u64, String), Read> {
    let mut out: BTreeMap<(u64, String), Read> = BTreeMap::new();
    let mut boot = 0;
    for op in &f.history.ops {
        let val = &op.value;
        match (op.process.as_str(), op.f.as_str()) {
            ("agent", "recover") if !is_store_op(op) => boot = op.index,
            ("net", "recv")
                if matches!(val["from"].as_str(), Some("client" | "proxy"))
                    && val["frame"]["method"] == "session/prompt"
                    && val["frame"].get("id").is_some() =>
            {
                let fr = &val["frame"];
                out.entry((val["conn"].as_u64().unwrap_or(0), fr["id"].to_string()))
                    .or_insert(Read {
                        at: op.index,
                        boot,
                        session: fr["params"]["sessionId"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        key: fr["params"]["idempotencyKey"].as_str().map(str::to_string),
                    });
            }
            _ => {}
        }
    }
    out
}

/// Error codes that say what was wrong with the request itself, not that the Agent failed
/// it: A7 does not cover them (`-32602` only with a malformed key, see [`key_malformed`]).
const REQUEST_ERRORS: [i64; 4] = [
    rpc_code::PARSE_ERROR,
    rpc_code::INVALID_REQUEST,
    rpc_code::METHOD_NOT_FOUND,
    rpc_code::RESOURCE_NOT_FOUND,
];

/// A string key outside K2's 1 to 255 characters (Unicode scalar values).
fn key_malformed(k: &str) -> bool {
    let n = k.chars().count();
    n == 0 || n > 255
}

/// P3 same-answer: every success for one submission's key carries the same `messageId`, with
/// P1's exemptions (a first message the rules let the Agent forget); a success carries a
/// messageId of the attempt's own key, never another key's (A1, A4); and a retry that
/// arrives while an attempt of its key is held gets that attempt's outcome, never an error of
/// its own (A7: "still in progress" is not an answer).
pub fn p3_same_answer(f: &Facts) -> Verdict {
    let answers = prompt_answers(f);
    let mut v = p3_messageids(f, &answers);
    if v.status == Status::Invalid {
        return v;
    }
    let reads = prompt_reads(f);
    // When the Agent decided each attempt: its answer, or its own log of the decision (an
    // answer lost on the way was decided all the same).
    let mut answered_at: BTreeMap<(u64, String), usize> = BTreeMap::new();
    for (a, op, _) in &answers {
        answered_at.entry(a.clone()).or_insert(*op);
    }
    for op in &f.history.ops {
        if op.process == "agent"
            && matches!(
                op.f.as_str(),
                "reject" | "insert" | "dedup-hit" | "withdraw" | "drop-held"
            )
        {
            let a = (
                op.value["conn"].as_u64().unwrap_or(0),
                op.value["id"].to_string(),
            );
            let e = answered_at.entry(a).or_insert(op.index);
            *e = (*e).min(op.index);
        }
    }
    // Cross-wired answers: a success whose messageId the Agent inserted for another key.
    for (attempt, op, ans) in &answers {
        let Ok(mid) = ans else { continue };
        let Some(r) = reads.get(attempt) else {
            continue;
        };
        let Some(other) = f
            .inserts
            .iter()
            .rev()
            .find(|i| i.op < *op && &i.message_id == mid)
        else {
            continue;
        };
        let own = &f.history.ops[other.op].value;
        let own = (own["conn"].as_u64().unwrap_or(0), own["id"].to_string()) == *attempt;
        if own || (other.key == r.key && other.key.is_some()) {
            continue;
        }
        if f.attempts
            .get(attempt)
            .is_some_and(|s| other.submission == Some(*s))
        {
            continue;
        }
        v.status = Status::Invalid;
        v.party = Some(Party::Agent);
        v.rules = vec!["A1".into(), "A4".into()];
        v.witnesses = vec![other.op, r.at, *op];
        v.fault = f.fault_before(*op);
        v.message = format!(
            "attempt {attempt:?} (key {:?}) was answered {mid}, the message the Agent inserted for key {:?}",
            r.key, other.key
        );
        return v;
    }
    // The nemesis's `transient-error` makes the Agent fail a later prompt with -32603 (a
    // failure before insertion, which A3 allows); the Agent logs which one it failed.
    let excused: BTreeSet<(u64, String)> = f
        .history
        .ops
        .iter()
        .filter(|o| o.process == "agent" && o.f == "reject" && o.value["transient"] == true)
        .map(|o| {
            (
                o.value["conn"].as_u64().unwrap_or(0),
                o.value["id"].to_string(),
            )
        })
        .collect();
    // A7: an error for a retry that arrived while an attempt of its key was held, that held
    // attempt then inserted by this Agent process. Even -32800 counts: had the Agent withdrawn
    // the held prompt, it would not have been inserted (A5).
    let inserted_attempt = |i: &Insert| {
        let v = &f.history.ops[i.op].value;
        (v["conn"].as_u64().unwrap_or(0), v["id"].to_string())
    };
    for (attempt, op, ans) in &answers {
        let Err(code) = ans else { continue };
        if REQUEST_ERRORS.contains(code) || excused.contains(attempt) {
            continue;
        }
        let Some(r) = reads.get(attempt) else {
            continue;
        };
        let Some(key) = &r.key else { continue };
        if *code == rpc_code::INVALID_PARAMS && key_malformed(key) {
            continue;
        }
        let next_boot = f
            .recoveries
            .iter()
            .map(|(i, _)| *i)
            .find(|i| *i > r.at)
            .unwrap_or(usize::MAX);
        let held_then_inserted = reads
            .iter()
            .filter(|(a, o)| {
                *a != attempt
                    && o.key.as_ref() == Some(key)
                    && o.session == r.session
                    && o.boot == r.boot
                    && o.at < r.at
                    && answered_at.get(*a).is_none_or(|x| *x > r.at)
            })
            .find_map(|(a, o)| {
                f.inserts
                    .iter()
                    .find(|i| i.op > r.at && i.op < next_boot && inserted_attempt(i) == *a)
                    .map(|i| (a, o, i))
            });
        if let Some((held, o, i)) = held_then_inserted {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec!["A7".into()];
            v.witnesses = vec![o.at, r.at, *op, i.op];
            v.fault = f.fault_before(r.at);
            v.message = format!(
                "retry {attempt:?} arrived while {held:?} with its key was held and was answered {code}; the key was then inserted as {} (A7: the same outcome, never an error)",
                i.message_id
            );
            return v;
        }
    }
    v
}

/// P3's first half: every success for one submission carries the same `messageId`.
fn p3_messageids(f: &Facts, answers: &[Answer]) -> Verdict {
    let mut v = Verdict::valid("P3", &["A1", "A7"]);
    let mut first: BTreeMap<u64, (usize, String)> = BTreeMap::new();
    for (attempt, op, ans) in answers {
        let (attempt, op) = (attempt.clone(), *op);
        let Ok(mid) = ans.clone() else { continue };
        let Some(sub) = f.attempt_submission(&attempt) else {
            continue;
        };
        match first.get(&sub) {
            None => {
                first.insert(sub, (op, mid));
            }
            Some((op0, mid0)) if *mid0 != mid => {
                let forgotten = f
                    .inserts
                    .iter()
                    .filter(|i| i.message_id == *mid0 && i.submission == Some(sub))
                    .any(|i| i.gone_before(op).is_some() || i.took_effect.is_none());
                let status = if forgotten {
                    Status::Finding
                } else {
                    Status::Invalid
                };
                // Who changed the answer: an intermediary that did not pass the key on, a
                // Client that changed the key, else the Agent.
                let of = |m: &str| {
                    f.inserts
                        .iter()
                        .rev()
                        .find(|i| i.message_id == m && i.submission == Some(sub))
                };
                let (e, l) = (of(mid0), of(&mid));
                let changed = |i: Option<&Insert>| {
                    i.is_some_and(|i| i.sent_key.as_ref().is_some_and(|k| *k != i.key))
                };
                // Two answers for a prompt sent twice without a key: no key, no duplicate
                // detection (K1); the Client's resend is C9's business.
                let unkeyed = e
                    .zip(l)
                    .is_some_and(|(e, l)| e.key.is_none() && l.key.is_none());
                let status = if unkeyed { Status::Finding } else { status };
                let (party, rules) = if unkeyed {
                    (Party::Client, vec!["C9".into(), "K1".into()])
                } else if forgotten {
                    (Party::Spec, vec!["A11".into(), "A16".into()])
                } else if changed(e) || changed(l) {
                    (Party::Intermediary, vec!["X1".into()])
                } else if e.zip(l).is_some_and(|(e, l)| e.key != l.key) {
                    (Party::Client, vec!["C1".into()])
                } else {
                    (Party::Agent, vec!["A1".into(), "A7".into()])
                };
                if status > v.status {
                    v.status = status;
                    v.party = Some(party);
                    v.rules = rules;
                    v.witnesses = vec![*op0, op];
                    v.fault = f.fault_before(op);
                    v.message = format!("submission {sub} was answered {mid0} and later {mid}");
                    if status == Status::Invalid {
                        return v;
                    }
                }
            }
            Some(_) => {}
        }
    }
    v
}

/// P4 error-means-not-inserted: an Agent error to a `session/prompt` attempt means that
/// attempt inserted nothing (A2, A3, A12). Errors from a proxy or Client timeouts are not
/// Agent errors; `-32800` is P6's.
pub fn p4_error_means_not_inserted(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P4", &["A2", "A3", "A12"]);
    let inserted: BTreeMap<(u64, String), usize> = f
        .history
        .ops
        .iter()
        .filter(|o| o.process == "agent" && o.f == "insert")
        .map(|o| {
            (
                (
                    o.value["conn"].as_u64().unwrap_or(0),
                    o.value["id"].to_string(),
                ),
                o.index,
            )
        })
        .collect();
    for (attempt, op, ans) in prompt_answers(f) {
        let Err(code) = ans else { continue };
        if code == acp_chaos_models::rpc::code::REQUEST_CANCELLED {
            continue;
        }
        if let Some(&i) = inserted.get(&attempt) {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec!["A2".into(), "A3".into()];
            v.witnesses = vec![i, op];
            v.fault = f.fault_before(op);
            v.message = format!("attempt {attempt:?} was answered with error {code} after it had inserted a message");
            return v;
        }
    }
    v
}

/// P6 cancel: an attempt the Agent answered `-32800` inserted nothing (A5, A6), and a
/// `$/cancel_request` reaches the Agent naming the request its sender meant: a proxy maps it to
/// the id it rewrote that request to (X1, A5).
pub fn p6_cancel(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P6", &["A5", "A6", "A15", "X1"]);
    let mut cancelled: BTreeMap<(u64, String), usize> = BTreeMap::new();
    let mut inserted: BTreeMap<(u64, String), usize> = BTreeMap::new();
    let mut rewritten: BTreeMap<(u64, String), (Value, usize)> = BTreeMap::new();
    for op in &f.history.ops {
        let val = &op.value;
        match (op.process.as_str(), op.f.as_str()) {
            ("net", "send")
                if val["from"] == "agent" && val["frame"]["error"]["code"] == rpc_cancelled() =>
            {
                cancelled.insert(
                    (
                        val["conn"].as_u64().unwrap_or(0),
                        val["frame"]["id"].to_string(),
                    ),
                    op.index,
                );
            }
            ("agent", "insert") => {
                inserted.insert(
                    (val["conn"].as_u64().unwrap_or(0), val["id"].to_string()),
                    op.index,
                );
            }
            ("proxy", "forward") if val["method"] == "$/cancel_request" => {
                let up = (
                    val["up_conn"].as_u64().unwrap_or(0),
                    val["up_request_id"].to_string(),
                );
                if let Some((down_id, fwd_op)) = rewritten.get(&up) {
                    if *down_id != val["down_request_id"] {
                        v.status = Status::Invalid;
                        v.party = Some(Party::Intermediary);
                        v.rules = vec!["X1".into(), "A5".into()];
                        v.witnesses = vec![*fwd_op, op.index];
                        v.fault = f.fault_before(op.index);
                        v.message = format!(
                            "the proxy forwarded $/cancel_request for request {} as {}, but had rewritten that request to {down_id}",
                            val["up_request_id"], val["down_request_id"]
                        );
                        return v;
                    }
                }
            }
            ("proxy", "forward") => {
                let up = (
                    val["up_conn"].as_u64().unwrap_or(0),
                    val["up_id"].to_string(),
                );
                rewritten.insert(up, (val["down_id"].clone(), op.index));
            }
            _ => {}
        }
    }
    // A5 and A6 from the Agent's own log: after it withdraws a keyed prompt, every attempt of
    // that key it had received and not answered gets -32800 (unless its connection ended);
    // and `session/cancel` withdraws only prompts received before it.
    let mut recv: BTreeMap<(u64, String), (usize, Option<String>, String)> = BTreeMap::new();
    let mut answered: BTreeMap<(u64, String), (usize, Option<i64>)> = BTreeMap::new();
    let mut ended: BTreeMap<u64, usize> = BTreeMap::new();
    let mut last_cancel: BTreeMap<String, usize> = BTreeMap::new();
    let mut withdrawals = Vec::new();
    let mut decided: BTreeMap<(u64, String), usize> = BTreeMap::new();
    let mut boots: Vec<usize> = Vec::new();
    let mut crashes: Vec<usize> = Vec::new();
    for op in &f.history.ops {
        let val = &op.value;
        match (op.process.as_str(), op.f.as_str()) {
            // What the Agent read (its peer is the Client or a proxy).
            ("net", "recv") if val["from"] == "client" => {
                let fr = &val["frame"];
                let conn = val["conn"].as_u64().unwrap_or(0);
                if fr["method"] == "session/prompt" {
                    let session = fr["params"]["sessionId"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let key = fr["params"]["idempotencyKey"].as_str().map(str::to_string);
                    recv.insert((conn, fr["id"].to_string()), (op.index, key, session));
                } else if fr["method"] == "session/cancel" {
                    last_cancel.insert(
                        fr["params"]["sessionId"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        op.index,
                    );
                }
            }
            ("net", "send") if val["from"] == "agent" && val["frame"].get("method").is_none() => {
                let k = (
                    val["conn"].as_u64().unwrap_or(0),
                    val["frame"]["id"].to_string(),
                );
                answered
                    .entry(k)
                    .or_insert((op.index, val["frame"]["error"]["code"].as_i64()));
            }
            // An answer the remote transport dropped after the Agent wrote it.
            ("nemesis", "lose-exchange")
                if val["detail"]["from"].as_str().is_some_and(is_agent_host) =>
            {
                let d = &val["detail"];
                let k = (
                    d["conn"].as_u64().unwrap_or(0),
                    d["frame"]["id"].to_string(),
                );
                answered
                    .entry(k)
                    .or_insert((op.index, d["frame"]["error"]["code"].as_i64()));
            }
            // Either end (the later one): a crashed process logs no end of its own, its peer
            // does; and an end may read a last frame before it notices the close.
            ("agent" | "client", "conn-end") => {
                ended.insert(val["conn"].as_u64().unwrap_or(0), op.index);
            }
            ("agent", "withdraw") => withdrawals.push(op),
            // The Agent's own decisions, logged before the writer sends the answer: a
            // request already rejected or inserted was not pending any more.
            ("agent", "reject" | "insert" | "dedup-hit") => {
                let k = (val["conn"].as_u64().unwrap_or(0), val["id"].to_string());
                decided.entry(k).or_insert(op.index);
            }
            ("agent", "recover") => boots.push(op.index),
            ("nemesis", "crash") if val["host"] == "agent" => crashes.push(op.index),
            _ => {}
        }
    }
    for w in withdrawals {
        let val = &w.value;
        let session = val["session"].as_str().unwrap_or_default();
        let named = (val["conn"].as_u64().unwrap_or(0), val["id"].to_string());
        if val["by"] == "session/cancel" {
            let cancel_at = last_cancel.get(session).copied().unwrap_or(0);
            if recv.get(&named).is_some_and(|(r, _, _)| *r > cancel_at) {
                v.status = Status::Invalid;
                v.party = Some(Party::Agent);
                v.rules = vec!["A6".into()];
                v.witnesses = vec![cancel_at, w.index];
                v.message =
                    format!("session/cancel withdrew prompt {named:?}, received after the cancel");
                return v;
            }
        }
        let Some(key) = val["key"].as_str() else {
            continue;
        };
        // Only what this Agent process read: a crash ended everything before it.
        let boot = boots
            .iter()
            .rev()
            .find(|b| **b < w.index)
            .copied()
            .unwrap_or(0);
        for (attempt, (r, k, s)) in &recv {
            if k.as_deref() != Some(key) || s != session || *r > w.index || *r < boot {
                continue;
            }
            let pending_then = answered.get(attempt).is_none_or(|(a, _)| *a > w.index)
                && decided.get(attempt).is_none_or(|d| *d > w.index);
            if !pending_then {
                continue;
            }
            let ok = match answered.get(attempt) {
                Some((_, Some(code))) => *code == acp_chaos_models::rpc::code::REQUEST_CANCELLED,
                Some((_, None)) => false,
                // Unanswered is fine only if the connection or the process ended meanwhile (a
                // -32800 still queued behind a stall dies with it).
                None => {
                    ended.get(&attempt.0).is_some_and(|e| *e > *r)
                        || crashes.iter().any(|c| *c > *r)
                }
            };
            if !ok {
                v.status = Status::Invalid;
                v.party = Some(Party::Agent);
                v.rules = vec!["A5".into()];
                v.witnesses = vec![*r, w.index];
                v.fault = f.fault_before(w.index);
                v.message = format!(
                    "the prompt with key {key:?} was withdrawn (op {}), but its pending attempt {attempt:?} did not get -32800",
                    w.index
                );
                return v;
            }
        }
    }
    if let Some(bad) = a6_earlier_held(f) {
        return bad;
    }
    for (attempt, c_op) in &cancelled {
        if let Some(i_op) = inserted.get(attempt) {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec!["A5".into(), "A6".into(), "A2".into()];
            v.witnesses = vec![*i_op, *c_op];
            v.fault = f.fault_before(*c_op);
            v.message =
                format!("attempt {attempt:?} was answered -32800 but had inserted a message");
            return v;
        }
    }
    v
}

/// A6 from the Agent's own log: a `session/cancel` the Agent honoured (its session active on
/// that connection) withdraws every prompt of the session it had held and not yet inserted;
/// none of them is inserted later (from the queue, `mode: held`).
fn a6_earlier_held(f: &Facts) -> Option<Verdict> {
    let mut active: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    let mut held: BTreeMap<(u64, String), String> = BTreeMap::new();
    // Held prompt → (the stop's op, whether the stop reached another cluster node than the one
    // holding it).
    let mut covered: BTreeMap<(u64, String), (usize, bool)> = BTreeMap::new();
    // Cluster: which node each connection reached.
    let mut node_of: BTreeMap<u64, String> = BTreeMap::new();
    let mut finding: Option<Verdict> = None;
    let attempt = |v: &Value| (v["conn"].as_u64().unwrap_or(0), v["id"].to_string());
    for op in &f.history.ops {
        let val = &op.value;
        match (op.process.as_str(), op.f.as_str()) {
            ("net", "conn-open") => {
                if let (Some(c), Some(n)) = (val["conn"].as_u64(), val["seen_by"].as_str()) {
                    node_of.insert(c, n.to_string());
                }
            }
            // (No arm below reads the ops `track_active` consumes.)
            _ if track_active(&mut active, op) && op.f == "recover" && !is_store_op(op) => {
                held.clear();
                covered.clear();
            }
            ("agent", "hold") => {
                held.insert(
                    attempt(val),
                    val["session"].as_str().unwrap_or_default().to_string(),
                );
            }
            ("agent", "withdraw" | "release" | "drop-held") => {
                held.remove(&attempt(val));
            }
            ("net", "recv")
                if matches!(val["from"].as_str(), Some("client" | "proxy"))
                    && val["frame"]["method"] == "session/cancel" =>
            {
                let sid = val["frame"]["params"]["sessionId"]
                    .as_str()
                    .unwrap_or_default();
                let conn = val["conn"].as_u64().unwrap_or(0);
                if active.get(sid).is_some_and(|c| c.contains(&conn)) {
                    for (a, s) in &held {
                        if s == sid {
                            let other_node = node_of
                                .get(&a.0)
                                .zip(node_of.get(&conn))
                                .is_some_and(|(x, y)| x.starts_with("node") && x != y);
                            covered.entry(a.clone()).or_insert((op.index, other_node));
                        }
                    }
                }
            }
            ("agent", "insert") if val["mode"] == "held" => {
                let a = attempt(val);
                held.remove(&a);
                if let Some(&(c, true)) = covered.get(&a) {
                    // Our cluster model's stop reaches only the node that reads it: a known
                    // gap of the model (README), reported, not failed.
                    finding.get_or_insert(Verdict {
                        property: "P6".into(),
                        status: Status::Finding,
                        rules: vec!["A6".into()],
                        witnesses: vec![c, op.index],
                        fault: f.fault_before(op.index),
                        party: Some(Party::Agent),
                        message: format!(
                            "prompt {a:?} was held on another cluster node than the one that read session/cancel (op {c}) and was inserted afterwards (A6; the cluster model's stop does not reach other nodes)"
                        ),
                    });
                } else if let Some(&(c, false)) = covered.get(&a) {
                    return Some(Verdict {
                        property: "P6".into(),
                        status: Status::Invalid,
                        rules: vec!["A6".into()],
                        witnesses: vec![c, op.index],
                        fault: f.fault_before(op.index),
                        party: Some(Party::Agent),
                        message: format!(
                            "prompt {a:?} was held when session/cancel arrived (op {c}) and was inserted afterwards (A6: a stop withdraws earlier prompts not yet inserted)"
                        ),
                    });
                }
            }
            _ => {}
        }
    }
    finding
}

/// Session → the connections it is active on, from the Agent's own log (`activate`,
/// `deactivate`, `conn-end`; an Agent restart, not the cluster store's, clears it). Returns
/// whether `op` was one of those.
fn track_active(active: &mut BTreeMap<String, BTreeSet<u64>>, op: &Op) -> bool {
    if op.process != "agent" {
        return false;
    }
    let conn = op.value["conn"].as_u64().unwrap_or(0);
    let sid = op.value["session"].as_str().unwrap_or_default();
    match op.f.as_str() {
        "recover" if is_store_op(op) => {}
        "recover" => active.clear(),
        "activate" => {
            active.entry(sid.to_string()).or_default().insert(conn);
        }
        "deactivate" => {
            if let Some(c) = active.get_mut(sid) {
                c.remove(&conn);
            }
        }
        "conn-end" => {
            for c in active.values_mut() {
                c.remove(&conn);
            }
        }
        _ => return false,
    }
    true
}

/// Whether an op renamed `agent` by [`agent_view`] was the cluster store's.
fn is_store_op(op: &Op) -> bool {
    op.value["renamed_from"] == "store"
}

fn rpc_cancelled() -> Value {
    Value::from(acp_chaos_models::rpc::code::REQUEST_CANCELLED)
}

/// P8 key-privacy: no JSON string equal to a key the Client sent appears in anything the Agent
/// sends: notifications, list and resume results, replay, frames to another Client (A8).
pub fn p8_key_privacy(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P8", &["A8"]);
    let keys: BTreeSet<&str> = f
        .attempt_keys
        .values()
        .flatten()
        .map(String::as_str)
        .collect();
    fn find<'a>(x: &'a Value, keys: &BTreeSet<&str>) -> Option<&'a str> {
        match x {
            Value::String(s) => keys.contains(s.as_str()).then_some(s.as_str()),
            Value::Array(a) => a.iter().find_map(|y| find(y, keys)),
            Value::Object(o) => o.values().find_map(|y| find(y, keys)),
            _ => None,
        }
    }
    for op in f
        .history
        .ops
        .iter()
        .filter(|o| o.process == "net" && o.f == "send" && o.value["from"] == "agent")
    {
        if let Some(k) = find(&op.value["frame"], &keys) {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec!["A8".into()];
            v.witnesses = vec![op.index];
            v.message = format!(
                "the Agent sent the key {k:?} in a {} frame on connection {}",
                op.value["frame"]["method"].as_str().unwrap_or("response"),
                op.value["conn"]
            );
            return v;
        }
    }
    v
}

/// P11 durability: a `durable` design never loses a message whose insertion took effect (D1).
/// For other designs, work that started on a message a crash then lost, redone by a retry, is a
/// finding: nothing in the spec requires durability before visible effects.
pub fn p11_durability(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P11", &["D1"]);
    let durable = f.retention == acp_chaos_models::Retention::Durable;
    for i in f.inserts.iter().filter(|i| !i.live_only) {
        let (Some(t), Some(lost)) = (i.took_effect, i.lost_at) else {
            continue;
        };
        if durable {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec!["D1".into(), "A10".into()];
            v.witnesses = vec![i.op, t, lost];
            v.fault = f.fault_before(lost);
            v.message = format!(
                "message {} (session {}) took effect at op {t} but was gone when the Agent restarted (op {lost})",
                i.message_id, i.session
            );
            return v;
        }
        let redone = f
            .inserts
            .iter()
            .find(|r| r.op > lost && r.submission.is_some() && r.submission == i.submission);
        if let (Some(r), Status::Valid) = (redone, v.status) {
            v.status = Status::Finding;
            v.party = Some(Party::Spec);
            v.rules = vec!["D1".into(), "A16".into()];
            v.witnesses = vec![i.op, t, lost, r.op];
            v.fault = f.fault_before(lost);
            v.message = format!(
                "message {} became visible, a restart lost it (process retention), and a retry inserted it again as {}: nothing requires durability before visible effects",
                i.message_id, r.message_id
            );
        }
    }
    v
}

/// P12 id-uniqueness: `messageId`s of user messages are unique within a session. A design that
/// derives ids from keys repeats one when a forgotten key is used again: a finding when the
/// rules allowed forgetting (A11, A16), otherwise a violation.
pub fn p12_id_uniqueness(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P12", &["A11", "A16"]);
    for (j, later) in f.inserts.iter().enumerate() {
        // An insertion that never took effect (a crash before its sync and echo) never happened.
        let Some(e) = f.inserts[..j].iter().find(|e| {
            e.session == later.session
                && e.message_id == later.message_id
                && e.took_effect.is_some_and(|t| t < later.op)
        }) else {
            continue;
        };
        let allowed = e.gone_before(later.op).is_some();
        let status = if allowed {
            Status::Finding
        } else {
            Status::Invalid
        };
        if status > v.status {
            v.status = status;
            v.party = Some(if allowed { Party::Spec } else { Party::Agent });
            v.rules = if allowed {
                vec!["A11".into(), "A16".into()]
            } else {
                vec!["A1".into()]
            };
            v.witnesses = vec![e.op, later.op];
            v.fault = f.fault_before(later.op);
            let note = if allowed {
                " (the first was forgotten, as the rules allow, and its key was used again)"
            } else {
                ""
            };
            v.message = format!(
                "messageId {} names two user messages in session {}{note}",
                e.message_id, e.session
            );
            if status == Status::Invalid {
                return v;
            }
        }
    }
    v
}

/// P7 every-request-answered, from the Agent's own log: a request it read got at most one
/// response, and exactly one when its connection was still open at quiescence (A5, A7, A15). A
/// response the network dropped after the Agent wrote it (`lose-exchange`) counts as sent.
pub fn p7_every_request_answered(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P7", &["A5", "A7", "A15"]);
    // (conn, id) → op index of the request the Agent read, and of its responses.
    let mut read: BTreeMap<(u64, String), usize> = BTreeMap::new();
    let mut answers: BTreeMap<(u64, String), Vec<usize>> = BTreeMap::new();
    let mut awaiting: BTreeMap<(u64, String), usize> = BTreeMap::new();
    let mut ended: BTreeSet<u64> = BTreeSet::new();
    // A crashed process logs no end of its connections (nor does a peer that is partitioned
    // away and crashes too): a crash after the read ends the exchange.
    let mut crashes: Vec<usize> = Vec::new();
    let mut quiescent = false;
    for op in &f.history.ops {
        let val = &op.value;
        let key = |fr: &Value| (val["conn"].as_u64().unwrap_or(0), fr["id"].to_string());
        match (op.process.as_str(), op.f.as_str()) {
            ("net", "recv")
                if val["from"] == "client"
                    && val["frame"].get("method").is_some()
                    && val["frame"].get("id").is_some_and(|i| !i.is_null()) =>
            {
                let k = key(&val["frame"]);
                read.insert(k.clone(), op.index);
                answers.remove(&k);
            }
            // C4, from the sender's side: an id written again on a connection while its
            // first request there awaits an answer.
            ("net", "send")
                if !val["from"].as_str().is_some_and(is_agent_host)
                    && val["frame"].get("method").is_some()
                    && val["frame"].get("id").is_some_and(|i| !i.is_null()) =>
            {
                let k = key(&val["frame"]);
                if let Some(first) = awaiting.get(&k) {
                    v.status = Status::Invalid;
                    v.party = Some(if val["from"] == "proxy" {
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
                    return v;
                }
                awaiting.insert(k, op.index);
            }
            ("net", "recv") if val["from"] == "agent" && val["frame"].get("method").is_none() => {
                awaiting.remove(&key(&val["frame"]));
            }
            ("net", "send") if val["from"] == "agent" && val["frame"].get("method").is_none() => {
                answers
                    .entry(key(&val["frame"]))
                    .or_default()
                    .push(op.index);
            }
            ("nemesis", "lose-exchange")
                if val["detail"]["from"].as_str().is_some_and(is_agent_host) =>
            {
                let d = &val["detail"];
                let k = (
                    d["conn"].as_u64().unwrap_or(0),
                    d["frame"]["id"].to_string(),
                );
                answers.entry(k).or_default().push(op.index);
            }
            (_, "conn-end") => {
                if let Some(c) = val["conn"].as_u64() {
                    ended.insert(c);
                    awaiting.retain(|k, _| k.0 != c);
                }
            }
            ("nemesis", "crash") => crashes.push(op.index),
            // A lost frame breaks its connection there (a silent break logs no end until a
            // heartbeat gives up): nothing after it can be delivered.
            ("nemesis", "lose-frame") => {
                if let Some(c) = val["detail"]["conn"].as_u64() {
                    ended.insert(c);
                }
            }
            ("world", "end") => quiescent = val["outcome"] == "quiescent",
            _ => {}
        }
    }
    for (k, r) in &read {
        let a = answers.get(k).map(Vec::as_slice).unwrap_or_default();
        if a.len() > 1 {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.witnesses = std::iter::once(*r).chain(a.iter().copied()).collect();
            v.fault = f.fault_before(a[1]);
            v.message = format!(
                "request {} on connection {} got {} responses",
                k.1,
                k.0,
                a.len()
            );
            return v;
        }
        if a.is_empty() && !ended.contains(&k.0) && !crashes.iter().any(|c| c > r) {
            v.status = if quiescent {
                Status::Invalid
            } else {
                Status::Unknown
            };
            v.party = quiescent.then_some(Party::Agent);
            v.witnesses = vec![*r];
            v.fault = f.fault_before(*r);
            v.message = format!(
                "request {} on connection {} (op {r}) was never answered and its connection is still open{}",
                k.1,
                k.0,
                if quiescent { " at quiescence" } else { " at the liveness bound" }
            );
            return v;
        }
    }
    v
}

/// What K2/K3 make of a raw probe's line.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyForm {
    /// Not valid JSON: the frame gets `-32700`.
    NotJson,
    /// No key, or `null` (K1): nothing to validate.
    Omitted,
    /// A string of 1 to 255 Unicode scalar values (K2).
    Valid,
    /// Anything else (K3): `""`, 256+ characters, a number, bool, object or array.
    Malformed(String),
}

/// Classify a raw `session/prompt` line by K1–K3 (characters are Unicode scalar values).
pub fn key_form(line: &str) -> KeyForm {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return KeyForm::NotJson;
    };
    match v["params"].get("idempotencyKey") {
        None | Some(Value::Null) => KeyForm::Omitted,
        Some(Value::String(s)) if (1..=255).contains(&s.chars().count()) => KeyForm::Valid,
        Some(Value::String(s)) => {
            KeyForm::Malformed(format!("a string of {} characters", s.chars().count()))
        }
        Some(other) => KeyForm::Malformed(format!("{other}")),
    }
}

#[cfg(test)]
mod key_form_tests {
    use super::{key_form, KeyForm};

    fn probe(key: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{{"sessionId":"s","prompt":[],"idempotencyKey":{key}}}}}"#
        )
    }

    #[test]
    fn keys_are_classified_by_k1_to_k3_counting_unicode_scalar_values() {
        assert_eq!(key_form(r#"{"params":{}}"#), KeyForm::Omitted);
        assert_eq!(key_form(&probe("null")), KeyForm::Omitted);
        assert_eq!(key_form(&probe(r#""a""#)), KeyForm::Valid);
        assert_eq!(
            key_form(&probe(&format!("\"{}\"", "é".repeat(255)))),
            KeyForm::Valid
        );
        assert_eq!(
            key_form(&probe(&format!("\"{}😀\"", "d".repeat(254)))),
            KeyForm::Valid
        );
        for bad in [
            r#""""#.to_string(),
            format!("\"{}\"", "é".repeat(256)),
            "1".into(),
            "true".into(),
            "{}".into(),
            "[]".into(),
        ] {
            assert!(
                matches!(key_form(&probe(&bad)), KeyForm::Malformed(_)),
                "{bad}"
            );
        }
        assert_eq!(key_form(&probe(r#""\ud800""#)), KeyForm::NotJson);
        assert_eq!(key_form("{\"jsonrpc\":"), KeyForm::NotJson);
    }
}

/// P5 key-validation (K2 K3): every raw probe the Client sent (`[[raw]]`) is classified by
/// [`key_form`] independently of the Agent, then: a malformed key gets an error, `-32602`
/// (nothing else is wrong in a probe), and inserts nothing (never treated as omitted); a
/// valid key is never answered `-32602`; a frame that is not JSON gets `-32700`. A probe whose
/// connection ended before any answer is not judged (P7 judges unanswered requests).
pub fn p5_key_validation(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P5", &["K2", "K3"]);
    let ops = &f.history.ops;
    for sent in ops
        .iter()
        .filter(|o| o.process == "client" && o.f == "raw-sent")
    {
        let conn = sent.value["conn"].as_u64().unwrap_or(0);
        let id = &sent.value["id"];
        let form = key_form(sent.value["line"].as_str().unwrap_or_default());
        let later = || ops[sent.index..].iter();
        // Through a proxy the Agent sees the probe under the id the proxy wrote downstream.
        let (aconn, aid) = later()
            .find(|o| {
                o.process == "proxy"
                    && o.f == "forward"
                    && o.value["up_conn"].as_u64() == Some(conn)
                    && o.value["up_id"] == *id
            })
            .map_or((conn, id.clone()), |o| {
                (
                    o.value["down_conn"].as_u64().unwrap_or(0),
                    o.value["down_id"].clone(),
                )
            });
        let on_conn = |o: &&Op| o.value["conn"].as_u64() == Some(conn);
        let on_aconn = |o: &&Op| o.value["conn"].as_u64() == Some(aconn);
        let answer = if form == KeyForm::NotJson {
            // Garbage is answered by whoever reads it first: the Agent, or a proxy.
            later().filter(on_conn).find(|o| {
                o.process == "net"
                    && o.f == "send"
                    && o.value["from"] != "client"
                    && o.value["frame"]["id"].is_null()
                    && o.value["frame"]["error"]["code"] == rpc_code::PARSE_ERROR
            })
        } else {
            later().filter(on_aconn).find(|o| {
                o.process == "net"
                    && o.f == "send"
                    && o.value["from"] == "agent"
                    && o.value["frame"].get("method").is_none()
                    && o.value["frame"]["id"] == aid
            })
        };
        let insert = later()
            .filter(on_aconn)
            .find(|o| o.process == "agent" && o.f == "insert" && o.value["id"] == aid);
        let code = answer.and_then(|a| a.value["frame"]["error"]["code"].as_i64());
        let bad = match (&form, answer, insert) {
            (KeyForm::Malformed(what), _, Some(i)) => Some((
                i.index,
                format!(
                    "a malformed key ({what}) was treated as omitted: the prompt was inserted (K3)"
                ),
            )),
            (KeyForm::Malformed(what), Some(a), None) if code != Some(rpc_code::INVALID_PARAMS) => {
                Some((
                    a.index,
                    format!(
                        "a malformed key ({what}) was answered {} instead of -32602 (K3)",
                        code.map_or("with a result".to_string(), |c| c.to_string())
                    ),
                ))
            }
            (KeyForm::Valid, Some(a), _) if code == Some(rpc_code::INVALID_PARAMS) => Some((
                a.index,
                "a valid key (1 to 255 characters) was rejected -32602 (K2)".to_string(),
            )),
            (KeyForm::NotJson, None, _) if !later().filter(on_conn).any(|o| o.f == "conn-end") => {
                Some((
                    sent.index,
                    "a frame that is not JSON got no -32700".to_string(),
                ))
            }
            _ => None,
        };
        if let Some((at, message)) = bad {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.witnesses = vec![sent.index, at];
            v.fault = f.fault_before(at);
            v.message = format!("raw probe {}: {message}", sent.value["n"]);
            return v;
        }
    }
    v
}

/// P14 client-keys *(ours, from C2 C3 C5)*: read from the Client's own log, one key names one
/// submission in its session. A key the Client sends for a second submission with another
/// prompt breaks C3; with the same prompt (the user sent the text again on purpose) it breaks
/// C2, the mark of a key derived from content (C5). Keys are scoped per session (A9), so the
/// same string in two sessions, or in a fork, is fine. The Client is at fault.
pub fn p14_client_keys(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P14", &["C2", "C3", "C5"]);
    // submission → (slot, text), from the user's submits.
    let mut sub: BTreeMap<u64, (u64, String, usize)> = BTreeMap::new();
    // (slot, key) → (submission, attempt op).
    let mut owner: BTreeMap<(u64, String), (u64, usize)> = BTreeMap::new();
    for op in &f.history.ops {
        match (op.process.as_str(), op.f.as_str()) {
            ("user", "submit") => {
                if let Some(n) = op.value["submission"].as_u64() {
                    sub.insert(
                        n,
                        (
                            op.value["slot"].as_u64().unwrap_or(0),
                            op.value["text"].as_str().unwrap_or_default().to_string(),
                            op.index,
                        ),
                    );
                }
            }
            ("client", "attempt") => {
                let (Some(n), Some(key)) =
                    (op.value["submission"].as_u64(), op.value["key"].as_str())
                else {
                    continue;
                };
                let Some((slot, text, _)) = sub.get(&n).cloned() else {
                    continue;
                };
                match owner.get(&(slot, key.to_string())).copied() {
                    Some((first, at)) if first != n => {
                        let same_text = sub.get(&first).is_some_and(|s| s.1 == text);
                        v.status = Status::Invalid;
                        v.party = Some(Party::Client);
                        v.rules = if same_text {
                            vec!["C2".into(), "C5".into()]
                        } else {
                            vec!["C3".into()]
                        };
                        v.witnesses = vec![at, op.index];
                        v.fault = f.fault_before(op.index);
                        v.message = if same_text {
                            format!(
                                "submission {n} reuses the key of submission {first} because its text is the same: a new submission needs a new key (C2); a key derived from content does this (C5)"
                            )
                        } else {
                            format!(
                                "submission {n} was sent with the key of submission {first} and a different prompt (C3)"
                            )
                        };
                        return v;
                    }
                    Some(_) => {}
                    None => {
                        owner.insert((slot, key.to_string()), (n, op.index));
                    }
                }
            }
            _ => {}
        }
    }
    v
}

/// P9 key-scope (A9): a key suppresses a prompt only in its own session. From the Agent's log:
/// every `dedup-hit` answers with a messageId inserted in the same session (a fork copies the
/// history, never the keys, so a hit on a copied message is out of scope too).
pub fn p9_key_scope(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P9", &["A9"]);
    // messageId → sessions it was inserted in (with the op).
    let mut inserted: BTreeMap<String, Vec<(String, usize)>> = BTreeMap::new();
    for op in &f.history.ops {
        if op.process != "agent" {
            continue;
        }
        let (Some(sid), Some(mid)) = (op.value["session"].as_str(), op.value["messageId"].as_str())
        else {
            continue;
        };
        match op.f.as_str() {
            "insert" => inserted
                .entry(mid.to_string())
                .or_default()
                .push((sid.to_string(), op.index)),
            "dedup-hit" => {
                let at = inserted.get(mid).map(Vec::as_slice).unwrap_or_default();
                if at.iter().any(|(s, _)| s == sid) {
                    continue;
                }
                if let Some((other, first)) = at.first() {
                    v.status = Status::Invalid;
                    v.party = Some(Party::Agent);
                    v.witnesses = vec![*first, op.index];
                    v.fault = f.fault_before(op.index);
                    v.message = format!(
                        "key {} in session {sid} was answered with {mid}, a message of session {other}: keys are scoped per session (A9)",
                        op.value["key"]
                    );
                    return v;
                }
            }
            _ => {}
        }
    }
    v
}

/// P10 retry-class: each method behaves on a repeat as its class says (RULES.md "Retry
/// classes"), on both ends:
/// - Client, keyed class (stated; C1 MUST): every attempt of one submission carries the same
///   key: invalid, Client at fault;
/// - Client, C9 (SHOULD NOT): a submission sent again without a key, or an SDK resending a
///   duplicating method (`session/new`, `session/fork`; never resent automatically is
///   inferred): a finding, Client at fault;
/// - Agent, idempotent class (stated: "`session/resume` of an active session synchronizes it
///   again"): a `session/resume` answered with an error while the session is active on
///   another of the Agent's connections: invalid, Agent at fault.
pub fn p10_retry_class(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P10", &["C1", "C9", "X4"]);
    let mut keys: BTreeMap<u64, (usize, Option<String>)> = BTreeMap::new();
    // Attempts the Client saw fail: an error means nothing was inserted (A2), so the
    // outcome is known and sending again without a key is safe.
    let mut failed: BTreeSet<(u64, String)> = BTreeSet::new();
    let mut sent: BTreeMap<u64, Vec<(u64, String)>> = BTreeMap::new();
    let mut active: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    let mut resumes: BTreeMap<(u64, String), (usize, String, bool)> = BTreeMap::new();
    let mut finding: Option<Verdict> = None;
    for op in &f.history.ops {
        let val = &op.value;
        match (op.process.as_str(), op.f.as_str()) {
            ("net", "recv")
                if val["frame"]["error"].is_object() && val["frame"].get("method").is_none() =>
            {
                failed.insert((
                    val["conn"].as_u64().unwrap_or(0),
                    val["frame"]["id"].to_string(),
                ));
            }
            // X5: it failed before it was accepted, so it reached nobody.
            ("client", "not-accepted") => {
                failed.insert((val["conn"].as_u64().unwrap_or(0), val["id"].to_string()));
            }
            ("client", "attempt") => {
                let n = val["submission"].as_u64().unwrap_or(0);
                let key = val["key"].as_str().map(str::to_string);
                let earlier = sent.entry(n).or_default();
                let unknown = earlier.iter().any(|a| !failed.contains(a));
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
                            rules: vec!["C9".into(), "K1".into()],
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
            ("client", "sdk-resend")
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
            ("net", "recv")
                if matches!(val["from"].as_str(), Some("client" | "proxy"))
                    && val["frame"]["method"] == "session/resume" =>
            {
                let sid = val["frame"]["params"]["sessionId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let conn = val["conn"].as_u64().unwrap_or(0);
                let elsewhere = active
                    .get(&sid)
                    .is_some_and(|c| c.iter().any(|x| *x != conn));
                resumes.insert(
                    (conn, val["frame"]["id"].to_string()),
                    (op.index, sid, elsewhere),
                );
            }
            ("net", "send")
                if val["from"].as_str().is_some_and(is_agent_host)
                    && val["frame"]["error"]["code"].is_i64() =>
            {
                let code = val["frame"]["error"]["code"].as_i64().unwrap_or(0);
                let a = (
                    val["conn"].as_u64().unwrap_or(0),
                    val["frame"]["id"].to_string(),
                );
                if let Some((r, sid, true)) = resumes.remove(&a) {
                    // A malformed request, or one its sender cancelled (A5), may fail.
                    if code != rpc_code::INVALID_PARAMS && code != rpc_code::REQUEST_CANCELLED {
                        v.status = Status::Invalid;
                        v.party = Some(Party::Agent);
                        v.rules = vec!["X4".into(), "X3".into()];
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

/// P13 forwarding-order *(ours; DESIGN.md: faults keep transport guarantees)*: an intermediary
/// forwards the Client's requests on each downstream connection once each and in the order it
/// read them upstream (it may rewrite ids, X1, and answer or drop what it cannot map). A
/// request written downstream twice, or ahead of one read before it, is the intermediary's
/// fault, never the Agent's. Read from the proxy's `forward` log (up id ↔ down id), its reads
/// on the upstream connection and its writes downstream; valid when there is no proxy.
pub fn p13_forwarding_order(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P13", &["X1"]);
    // (up conn, up id) → op index of the proxy's read of that request.
    let mut read_at: BTreeMap<(u64, String), usize> = BTreeMap::new();
    // (down conn, down id) → op index of the proxy's read of the request it forwards there,
    // taken when the proxy logs the forward (a Client that reuses an id is read twice).
    let mut up_of: BTreeMap<(u64, String), usize> = BTreeMap::new();
    // Per down conn: (read index, send index) of the newest request written there.
    let mut last: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    let is_request =
        |fr: &Value| fr.get("method").is_some() && fr.get("id").is_some_and(|i| !i.is_null());
    for op in &f.history.ops {
        let val = &op.value;
        match (op.process.as_str(), op.f.as_str()) {
            ("proxy", "forward") if val.get("up_id").is_some() => {
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
            ("net", "recv") if is_request(&val["frame"]) && val["from"] == "peer" => {
                let c = val["conn"].as_u64().unwrap_or(0);
                read_at.insert((c, val["frame"]["id"].to_string()), op.index);
            }
            ("net", "send") if val["from"] == "proxy" && is_request(&val["frame"]) => {
                let down = (
                    val["conn"].as_u64().unwrap_or(0),
                    val["frame"]["id"].to_string(),
                );
                let Some(r) = up_of.get(&down).copied() else {
                    continue;
                };
                if let Some(&(prev_r, prev_s)) = last.get(&down.0) {
                    if r <= prev_r {
                        let dup = r == prev_r;
                        v.status = Status::Invalid;
                        v.party = Some(Party::Intermediary);
                        v.rules = if dup {
                            vec!["X1".into(), "C4".into()]
                        } else {
                            vec!["X1".into()]
                        };
                        v.witnesses = if dup {
                            vec![r, prev_s, op.index]
                        } else {
                            vec![prev_r, r, prev_s, op.index]
                        };
                        v.fault = f.fault_before(op.index);
                        v.message = if dup {
                            format!(
                                "the proxy wrote the request it read at op {r} twice on connection {} (ops {prev_s} and {}): intermediaries must not duplicate frames",
                                down.0, op.index
                            )
                        } else {
                            format!(
                                "the proxy read a request at op {r} after one at op {prev_r}, but wrote it on connection {} (op {}) after that one (op {prev_s}): intermediaries must keep each connection's order",
                                down.0, op.index
                            )
                        };
                        return v;
                    }
                }
                last.insert(down.0, (r, op.index));
            }
            (_, "conn-end") => {
                if let Some(c) = val["conn"].as_u64() {
                    last.remove(&c);
                }
            }
            _ => {}
        }
    }
    v
}

/// Protocol states a fault can land in, for the coverage map (most specific first).
pub const FAULT_STATES: [&str; 6] = [
    "filling-history",
    "resuming",
    "inserted-unanswered",
    "held",
    "answered",
    "idle",
];

/// For every fault the nemesis fired: (protocol state at that moment, fault kind). The state is
/// read from the history: an adapter history fill under way; a `session/resume` sent and not
/// answered; a prompt inserted and not answered; a prompt held; some prompt answered; else idle.
pub fn fault_states(h: &History) -> Vec<(&'static str, String)> {
    let h = agent_view(h);
    let kinds: BTreeSet<&str> = crate::nemesis::FaultKind::ALL
        .iter()
        .map(|k| k.as_str())
        .collect();
    let mut filling = 0i64;
    let mut resuming: BTreeSet<(u64, String)> = BTreeSet::new();
    let mut unanswered: BTreeSet<(u64, String)> = BTreeSet::new();
    let mut held = 0i64;
    let mut answered = false;
    let mut out = Vec::new();
    for op in &h.ops {
        let v = &op.value;
        let id = |fr: &Value| (v["conn"].as_u64().unwrap_or(0), fr["id"].to_string());
        match (op.process.as_str(), op.f.as_str()) {
            ("agent", "history-read-start") => filling += 1,
            ("agent", "history-read") => filling = (filling - 1).max(0),
            ("agent", "hold") => held += 1,
            ("agent", "insert") => {
                if v["mode"] == "held" {
                    held = (held - 1).max(0);
                }
                unanswered.insert((v["conn"].as_u64().unwrap_or(0), v["id"].to_string()));
            }
            ("agent", "withdraw" | "drop-held") => held = (held - 1).max(0),
            ("agent", "recover" | "boot") => {
                held = 0;
                filling = 0;
                unanswered.clear();
            }
            ("net", "send")
                if v["from"] == "client" && v["frame"]["method"] == "session/resume" =>
            {
                resuming.insert(id(&v["frame"]));
            }
            ("net", "recv") if v["from"] == "agent" && v["frame"].get("method").is_none() => {
                resuming.remove(&id(&v["frame"]));
            }
            ("net", "send") if v["from"] == "agent" && v["frame"].get("method").is_none() => {
                answered |= unanswered.remove(&id(&v["frame"]));
            }
            (_, "conn-end") => {
                let c = v["conn"].as_u64().unwrap_or(0);
                resuming.retain(|k| k.0 != c);
                unanswered.retain(|k| k.0 != c);
            }
            // The op the ledger logs when a fault fires (it names its fault index).
            ("nemesis", f) if kinds.contains(f) && v.get("fault").is_some() => {
                let state = if filling > 0 {
                    "filling-history"
                } else if !resuming.is_empty() {
                    "resuming"
                } else if !unanswered.is_empty() {
                    "inserted-unanswered"
                } else if held > 0 {
                    "held"
                } else if answered {
                    "answered"
                } else {
                    "idle"
                };
                out.push((state, f.to_string()));
            }
            _ => {}
        }
    }
    out
}

/// Events that are one (process, op) each: (process, op name, event).
const PLAIN_EVENTS: &[(&str, &str, &str)] = &[
    ("agent", "dedup-hit", "dedup-hit"),
    ("agent", "wait-held", "wait-held"),
    ("agent", "hold", "held"),
    ("agent", "store-retry", "store-retry"),
    ("user", "close", "closed"),
    ("user", "fork", "forked"),
    ("client", "not-resent", "not-resent"),
    ("client", "resend-not-accepted", "resend-not-accepted"),
    ("client", "surface", "surfaced"),
    ("watcher", "watch", "watched"),
    ("client", "withdrawn", "withdrawn"),
    ("agent", "tool-effect", "tool"),
    ("agent", "permission", "permission"),
    ("client", "raw-sent", "raw-probe"),
];

/// Events of a run, for the scenario's `sometimes` guard.
pub fn events(h: &History) -> BTreeSet<&'static str> {
    let mut e = BTreeSet::new();
    // Cluster: which node each connection reached, then which nodes each submission's
    // attempts reached.
    let mut node_of: BTreeMap<u64, &str> = BTreeMap::new();
    let mut nodes: BTreeMap<u64, BTreeSet<&str>> = BTreeMap::new();
    for op in &h.ops {
        if op.f == "logical" && op.process.starts_with("node") {
            if let Some(c) = op.value["conn"].as_u64() {
                node_of.insert(c, op.process.as_str());
            }
        }
        if op.process == "client" && op.f == "attempt" {
            let at = op.value["conn"].as_u64().and_then(|c| node_of.get(&c));
            if let (Some(n), Some(node)) = (op.value["submission"].as_u64(), at) {
                nodes.entry(n).or_default().insert(node);
            }
        }
    }
    if nodes.values().any(|s| s.len() > 1) {
        e.insert("other-node");
    }
    let h = agent_view(h);
    let mut attempts: BTreeMap<u64, u32> = BTreeMap::new();
    let mut open_ids: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    let mut client_conns = 0;
    for op in &h.ops {
        let has = |o: &Op, p: &str, f: &str| o.process == p && o.f == f;
        if let Some((_, _, ev)) = PLAIN_EVENTS
            .iter()
            .find(|(p, f, _)| op.process == *p && op.f == *f)
        {
            e.insert(ev);
        }
        if op.process == "nemesis"
            && !matches!(op.f.as_str(), "heal" | "restart" | "heal-partition")
        {
            e.insert("fault");
        }
        if op.process == "net" && op.f == "reorder-end" && !op.value["overtaken_by"].is_null() {
            e.insert("reordered");
        }
        // The same JSON-RPC id awaiting the Agent's answer on two connections at once (legal:
        // ids are per connection, and dedup must go by key, never by id).
        let fr = &op.value["frame"];
        let conn = op.value["conn"].as_u64().unwrap_or(0);
        if op.process == "net" && fr.get("id").is_some_and(|i| !i.is_null()) {
            let id = fr["id"].to_string();
            match (op.f.as_str(), op.value["from"].as_str(), fr.get("method")) {
                ("recv", Some("client"), Some(_)) => {
                    let conns = open_ids.entry(id).or_default();
                    if conns.iter().any(|c| *c != conn) {
                        e.insert("id-shared");
                    }
                    conns.insert(conn);
                }
                ("send", Some("agent"), None) => {
                    if let Some(c) = open_ids.get_mut(&id) {
                        c.remove(&conn);
                    }
                }
                _ => {}
            }
        }
        if op.f == "conn-end" {
            for c in open_ids.values_mut() {
                c.remove(&conn);
            }
        }
        if has(op, "client", "attempt") {
            if let Some(s) = op.value["submission"].as_u64() {
                *attempts.entry(s).or_default() += 1;
            }
        }
        if has(op, "agent", "insert") && op.value["mode"] == "steer" {
            e.insert("steer");
        }
        if (has(op, "agent", "recover") || has(op, "agent", "boot"))
            && op.value["boot"].as_u64() > Some(0)
        {
            e.insert("agent-restart");
        }
        if op.f == "truncate-torn-tail" {
            e.insert("torn-tail");
        }
        if has(op, "client", "boot") && op.value["boot"].as_u64() > Some(0) {
            e.insert("client-restart");
        }
        if has(op, "agent", "reject") && op.value["transient"] == true {
            e.insert("transient-error");
        }
        if has(op, "agent", "insert") && op.value["live_only"] == true {
            e.insert("live-only");
        }
        if has(op, "net", "send")
            && op.value["from"] == "client"
            && op.value["frame"]["method"] == "initialize"
        {
            client_conns += 1;
        }
    }
    if attempts.values().any(|n| *n > 1) {
        e.insert("retry");
    }
    if client_conns > 1 {
        e.insert("reconnect");
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Op, OpType};
    use serde_json::json;

    /// A tiny history builder: (process, f, value) in order.
    fn hist(ops: &[(&str, &str, Value)]) -> History {
        History {
            header: json!({"format": 1}),
            ops: ops
                .iter()
                .enumerate()
                .map(|(i, (p, f, v))| Op {
                    index: i,
                    time_ms: i as u64,
                    process: p.to_string(),
                    kind: OpType::Info,
                    f: f.to_string(),
                    value: v.clone(),
                })
                .collect(),
        }
    }

    fn submit_and_attempt(
        n: u64,
        conn: u64,
        id: u64,
        key: &str,
    ) -> Vec<(&'static str, &'static str, Value)> {
        vec![
            ("user", "submit", json!({"submission": n})),
            (
                "client",
                "attempt",
                json!({"submission": n, "conn": conn, "id": id, "key": key}),
            ),
        ]
    }

    fn insert(
        mid: &str,
        conn: u64,
        id: u64,
        key: &str,
    ) -> Vec<(&'static str, &'static str, Value)> {
        vec![
            (
                "agent",
                "insert",
                json!({"session": "s", "messageId": mid, "key": key, "conn": conn, "id": id}),
            ),
            ("agent", "durable", json!({"messageId": mid})),
            ("agent", "visible", json!({"messageId": mid})),
        ]
    }

    fn status(h: &History, p: &str) -> (Status, Option<Party>) {
        let v = check_all(h).into_iter().find(|v| v.property == p).unwrap();
        (v.status, v.party)
    }

    #[test]
    fn one_insertion_acknowledged_is_valid_everywhere() {
        let mut ops = submit_and_attempt(1, 1, 3, "k");
        ops.extend(insert("m1", 1, 3, "k"));
        ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
        let h = hist(&ops);
        for v in check_all(&h) {
            assert_eq!(v.status, Status::Valid, "{v:?}");
        }
    }

    #[test]
    fn p1_second_insertion_same_key_blames_the_agent() {
        let mut ops = submit_and_attempt(1, 1, 3, "k");
        ops.extend(insert("m1", 1, 3, "k"));
        ops.push(("nemesis", "lose-frame", json!({})));
        ops.push((
            "client",
            "attempt",
            json!({"submission": 1, "conn": 2, "id": 3, "key": "k"}),
        ));
        ops.extend(insert("m2", 2, 3, "k"));
        ops.push(("client", "ack", json!({"submission": 1, "messageId": "m2"})));
        let h = hist(&ops);
        assert_eq!(status(&h, "P1"), (Status::Invalid, Some(Party::Agent)));
        let v = check_all(&h).remove(0);
        assert_eq!(v.fault, Some(5));
        assert_eq!(v.witnesses, vec![2, 3, 7]);
    }

    #[test]
    fn p1_second_insertion_new_key_blames_the_client() {
        let mut ops = submit_and_attempt(1, 1, 3, "k");
        ops.extend(insert("m1", 1, 3, "k"));
        ops.push((
            "client",
            "attempt",
            json!({"submission": 1, "conn": 2, "id": 3, "key": "k2"}),
        ));
        ops.extend(insert("m2", 2, 3, "k2"));
        assert_eq!(
            status(&hist(&ops), "P1"),
            (Status::Invalid, Some(Party::Client))
        );
    }

    #[test]
    fn p1_insertion_that_never_took_effect_may_be_redone() {
        let mut ops = submit_and_attempt(1, 1, 3, "k");
        ops.push((
            "agent",
            "insert",
            json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 3}),
        ));
        ops.push(("nemesis", "crash", json!({"host": "agent"})));
        ops.push((
            "agent",
            "recover",
            json!({"boot": 1, "retained": {"s": []}}),
        ));
        ops.push((
            "client",
            "attempt",
            json!({"submission": 1, "conn": 2, "id": 3, "key": "k"}),
        ));
        ops.extend(insert("m2", 2, 3, "k"));
        ops.push(("client", "ack", json!({"submission": 1, "messageId": "m2"})));
        for v in check_all(&hist(&ops)) {
            assert_eq!(v.status, Status::Valid, "{v:?}");
        }
    }

    #[test]
    fn p1_two_rounds_of_work_for_one_message() {
        let mut ops = submit_and_attempt(1, 1, 3, "k");
        ops.extend(insert("m1", 1, 3, "k"));
        ops.push(("agent", "turn-start", json!({"messageId": "m1"})));
        ops.push(("agent", "turn-start", json!({"messageId": "m1"})));
        ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
        assert_eq!(
            status(&hist(&ops), "P1"),
            (Status::Invalid, Some(Party::Agent))
        );
    }

    #[test]
    fn p2_lost_submission_blames_the_client_and_pending_is_unknown() {
        let ops = submit_and_attempt(1, 1, 3, "k");
        let mut lost = ops.clone();
        lost.push(("client", "pending-at-end", json!({"submissions": []})));
        assert_eq!(
            status(&hist(&lost), "P2"),
            (Status::Invalid, Some(Party::Client))
        );
        let mut pending = ops.clone();
        pending.push(("client", "pending-at-end", json!({"submissions": [1]})));
        assert_eq!(status(&hist(&pending), "P2").0, Status::Unknown);
        let mut surfaced = ops;
        surfaced.push(("client", "surface", json!({"submission": 1})));
        assert_eq!(status(&hist(&surfaced), "P2").0, Status::Valid);
    }

    #[test]
    fn p2_ack_with_a_message_of_another_submission() {
        let mut ops = submit_and_attempt(1, 1, 3, "a");
        ops.extend(insert("m1", 1, 3, "a"));
        ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
        ops.extend(submit_and_attempt(2, 1, 4, "b"));
        ops.push(("client", "ack", json!({"submission": 2, "messageId": "m1"})));
        assert_eq!(
            status(&hist(&ops), "P2"),
            (Status::Invalid, Some(Party::Agent))
        );
        // Same key reused for a new submission: the Client's fault (C2).
        let mut ops = submit_and_attempt(1, 1, 3, "a");
        ops.extend(insert("m1", 1, 3, "a"));
        ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
        ops.extend(submit_and_attempt(2, 1, 4, "a"));
        ops.push(("client", "ack", json!({"submission": 2, "messageId": "m1"})));
        assert_eq!(
            status(&hist(&ops), "P2"),
            (Status::Invalid, Some(Party::Client))
        );
    }

    #[test]
    fn p11_message_missing_after_restart() {
        let mut ops = submit_and_attempt(1, 1, 3, "k");
        ops.push((
            "agent",
            "insert",
            json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 3}),
        ));
        ops.push(("agent", "visible", json!({"messageId": "m1"})));
        ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
        ops.push(("nemesis", "crash", json!({"host": "agent"})));
        ops.push((
            "agent",
            "recover",
            json!({"boot": 1, "retained": {"s": []}}),
        ));
        let h = hist(&ops);
        assert_eq!(status(&h, "P11"), (Status::Invalid, Some(Party::Agent)));
        let mut kept = ops.clone();
        kept.pop();
        kept.push((
            "agent",
            "recover",
            json!({"boot": 1, "retained": {"s": ["m1"]}}),
        ));
        assert_eq!(status(&hist(&kept), "P11").0, Status::Valid);
    }
}

#[cfg(test)]
mod retention_tests {
    use super::*;
    use crate::history::{Op, OpType};
    use serde_json::json;

    fn hist(retention: &str, ops: &[(&str, &str, Value)]) -> History {
        History {
            header: json!({"format": 1, "plan": {"retention": retention}}),
            ops: ops
                .iter()
                .enumerate()
                .map(|(i, (p, f, v))| Op {
                    index: i,
                    time_ms: i as u64,
                    process: p.to_string(),
                    kind: OpType::Info,
                    f: f.to_string(),
                    value: v.clone(),
                })
                .collect(),
        }
    }

    /// Insert m1 (visible), crash, recover without it, retry inserts m2 (same key).
    fn lost_then_redone(mid2: &str) -> Vec<(&'static str, &'static str, Value)> {
        vec![
            ("user", "submit", json!({"submission": 1})),
            (
                "client",
                "attempt",
                json!({"submission": 1, "conn": 1, "id": 3, "key": "k"}),
            ),
            (
                "agent",
                "insert",
                json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 3}),
            ),
            ("agent", "visible", json!({"messageId": "m1"})),
            ("nemesis", "crash", json!({"host": "agent"})),
            (
                "agent",
                "recover",
                json!({"boot": 1, "retained": {"s": []}}),
            ),
            (
                "client",
                "attempt",
                json!({"submission": 1, "conn": 2, "id": 3, "key": "k"}),
            ),
            (
                "agent",
                "insert",
                json!({"session": "s", "messageId": mid2, "key": "k", "conn": 2, "id": 3}),
            ),
            ("agent", "visible", json!({"messageId": mid2})),
            ("client", "ack", json!({"submission": 1, "messageId": mid2})),
        ]
    }

    fn verdict(h: &History, p: &str) -> Verdict {
        check_all(h).into_iter().find(|v| v.property == p).unwrap()
    }

    #[test]
    fn a_loss_the_retention_allows_is_a_finding_a_durable_loss_a_violation() {
        let process = hist("process", &lost_then_redone("m2"));
        assert_eq!(verdict(&process, "P1").status, Status::Finding);
        assert_eq!(verdict(&process, "P11").status, Status::Finding);
        let durable = hist("durable", &lost_then_redone("m2"));
        assert_eq!(verdict(&durable, "P1").status, Status::Invalid);
        assert_eq!(verdict(&durable, "P11").status, Status::Invalid);
    }

    #[test]
    fn p12_repeated_id_is_a_finding_after_a_loss_and_a_violation_otherwise() {
        let h = hist("process", &lost_then_redone("m1"));
        assert_eq!(verdict(&h, "P12").status, Status::Finding);
        let mut ops = lost_then_redone("m1");
        ops.remove(5); // no restart: the first m1 is still there
        ops.remove(4);
        let h = hist("process", &ops);
        assert_eq!(verdict(&h, "P12").status, Status::Invalid);
        assert_eq!(verdict(&h, "P1").status, Status::Invalid);
    }

    #[test]
    fn live_only_key_forgotten_after_the_session_is_active_nowhere_is_a_finding() {
        let ops = vec![
            ("user", "submit", json!({"submission": 1})),
            ("agent", "activate", json!({"session": "s", "conn": 1})),
            (
                "client",
                "attempt",
                json!({"submission": 1, "conn": 1, "id": 3, "key": "k"}),
            ),
            (
                "agent",
                "insert",
                json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 3, "live_only": true}),
            ),
            ("agent", "visible", json!({"messageId": "m1"})),
            ("agent", "conn-end", json!({"conn": 1})),
            ("agent", "activate", json!({"session": "s", "conn": 2})),
            (
                "client",
                "attempt",
                json!({"submission": 1, "conn": 2, "id": 3, "key": "k"}),
            ),
            (
                "agent",
                "insert",
                json!({"session": "s", "messageId": "m2", "key": "k", "conn": 2, "id": 3, "live_only": true}),
            ),
            ("agent", "visible", json!({"messageId": "m2"})),
            ("client", "ack", json!({"submission": 1, "messageId": "m2"})),
        ];
        assert_eq!(
            verdict(&hist("durable", &ops), "P1").status,
            Status::Finding
        );
        // Still active on another connection: the key must be recognized (A11).
        let mut kept = ops.clone();
        kept.insert(2, ("agent", "activate", json!({"session": "s", "conn": 9})));
        assert_eq!(
            verdict(&hist("durable", &kept), "P1").status,
            Status::Invalid
        );
    }

    fn answer(conn: u64, id: u64, body: Value) -> (&'static str, &'static str, Value) {
        let mut frame = json!({"jsonrpc": "2.0", "id": id});
        for (k, v) in body.as_object().unwrap() {
            frame[k] = v.clone();
        }
        (
            "net",
            "send",
            json!({"conn": conn, "from": "agent", "frame": frame}),
        )
    }

    fn prompt_sent(conn: u64, id: u64) -> (&'static str, &'static str, Value) {
        (
            "net",
            "send",
            json!({"conn": conn, "from": "client", "frame": {"id": id, "method": "session/prompt"}}),
        )
    }

    #[test]
    fn p3_two_message_ids_for_one_submission() {
        let mut ops = lost_then_redone("m2");
        ops.truncate(2);
        ops.push(prompt_sent(1, 3));
        ops.push((
            "agent",
            "insert",
            json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 3}),
        ));
        ops.push(("agent", "visible", json!({"messageId": "m1"})));
        ops.push(answer(1, 3, json!({"result": {"messageId": "m1"}})));
        ops.push((
            "client",
            "attempt",
            json!({"submission": 1, "conn": 1, "id": 4, "key": "k"}),
        ));
        ops.push(prompt_sent(1, 4));
        ops.push(answer(1, 4, json!({"result": {"messageId": "m9"}})));
        let v = verdict(&hist("durable", &ops), "P3");
        assert_eq!((v.status, v.party), (Status::Invalid, Some(Party::Agent)));
        ops.pop();
        ops.push(answer(1, 4, json!({"result": {"messageId": "m1"}})));
        assert_eq!(verdict(&hist("durable", &ops), "P3").status, Status::Valid);
    }

    #[test]
    fn p4_error_after_insertion_blames_the_agent() {
        let mut ops = lost_then_redone("m2");
        ops.truncate(2);
        ops.push(prompt_sent(1, 3));
        ops.push((
            "agent",
            "insert",
            json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 3}),
        ));
        ops.push(answer(1, 3, json!({"error": {"code": -32603}})));
        let v = verdict(&hist("durable", &ops), "P4");
        assert_eq!((v.status, v.party), (Status::Invalid, Some(Party::Agent)));
        // An error to an attempt that inserted nothing is fine.
        ops.remove(3);
        assert_eq!(verdict(&hist("durable", &ops), "P4").status, Status::Valid);
    }

    #[test]
    fn a_second_tool_side_effect_for_one_insertion_breaks_a1() {
        let mut ops = lost_then_redone("m2");
        ops.truncate(4);
        ops.push(("agent", "tool-effect", json!({"messageId": "m1"})));
        ops.push(("agent", "tool-effect", json!({"messageId": "m1"})));
        let v = verdict(&hist("durable", &ops), "P1");
        assert_eq!((v.status, v.party), (Status::Invalid, Some(Party::Agent)));
    }

    fn unkeyed_twice(second: (u64, u64)) -> History {
        let ops = vec![
            ("user", "submit", json!({"submission": 1})),
            (
                "client",
                "attempt",
                json!({"submission": 1, "conn": 1, "id": 3, "key": null}),
            ),
            (
                "agent",
                "insert",
                json!({"session": "s", "messageId": "m1", "key": null, "conn": 1, "id": 3}),
            ),
            ("agent", "visible", json!({"messageId": "m1"})),
            (
                "client",
                "attempt",
                json!({"submission": 1, "conn": second.0, "id": second.1, "key": null}),
            ),
            (
                "agent",
                "insert",
                json!({"session": "s", "messageId": "m2", "key": null, "conn": second.0, "id": second.1}),
            ),
            ("agent", "visible", json!({"messageId": "m2"})),
        ];
        hist("durable", &ops)
    }

    #[test]
    fn a_prompt_sent_twice_without_a_key_is_the_clients_finding_not_the_agents_violation() {
        // K1: no key, no duplicate detection; resending it is C9's business.
        let v = verdict(&unkeyed_twice((2, 3)), "P1");
        assert_eq!(
            (v.status, v.party),
            (Status::Finding, Some(Party::Client)),
            "{v:?}"
        );
        assert!(v.rules.contains(&"C9".to_string()));
        // One request inserted twice is the Agent's doing, key or not.
        let v = verdict(&unkeyed_twice((1, 3)), "P1");
        assert_eq!(
            (v.status, v.party),
            (Status::Invalid, Some(Party::Agent)),
            "{v:?}"
        );
    }
}
