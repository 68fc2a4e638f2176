//! P1 at-most-once (A1 A4 A10 A12 A13 C1): [`p1_at_most_once`].

use acp_chaos_models::Party;

use super::facts::{Facts, Insert};
use super::verdict::{Status, Verdict};
use crate::history::{op, process};

/// P1 at-most-once: no second insertion for a submission while an earlier one that took
/// effect is retained, or should be by the design's declared retention, or is live-only with the
/// session still active somewhere; and no second round of work (turn or tool call) for one
/// message; and (A4) no second message under a recorded key, whoever sent it: a new submission
/// or a raw frame with another prompt under the key (the Client's C3 is P14's to blame). Two
/// keys for one submission: Client (C1). Second insertions the rules allow (A11,
/// A16: the earlier message was lost as the retention allows, discarded at the end of the
/// Agent's retention window, or a live-only key forgotten) are findings.
pub fn p1_at_most_once(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P1");
    // K4: an Agent that advertises `capabilities.session` honours keys, with no other flag.
    let advertised = f.history.ops.iter().any(|o| {
        o.process == crate::history::process::NET
            && o.f == crate::history::op::SEND
            && o.value["from"]
                .as_str()
                .is_some_and(crate::history::is_agent_host)
            && o.value["frame"]["result"]["capabilities"]["session"].is_object()
    });
    for (j, later) in f.inserts.iter().enumerate() {
        // Pairs of one submission, and (A4) pairs under one recorded key whoever sent them: a
        // new submission or a raw frame reusing a key with another prompt.
        let same_submission =
            |e: &Insert| later.submission.is_some() && e.submission == later.submission;
        let same_key = |e: &Insert| e.key.is_some() && e.key == later.key;
        for e in f.inserts[..j].iter().filter(|e| {
            (same_submission(e) || same_key(e))
                && e.session == later.session
                && e.took_effect.is_some_and(|t| t < later.op)
        }) {
            let cross = !same_submission(e);
            let (what, whose) = if cross {
                let of = |i: &Insert| {
                    i.submission
                        .map_or("a frame of no submission".to_string(), |n| {
                            format!("submission {n}")
                        })
                };
                let key = later.key.as_deref().unwrap_or("");
                (
                    format!("key {key:?}"),
                    format!(", from {} then {}", of(e), of(later)),
                )
            } else {
                (
                    format!("submission {}", later.submission.unwrap_or_default()),
                    String::new(),
                )
            };
            let (status, party, rules, why) = judge_pair(f, e, later, cross, advertised);
            if status > v.status {
                v.status = status;
                v.party = Some(party);
                v.rules = rules.into_iter().map(String::from).collect();
                v.witnesses = vec![e.op, e.took_effect.unwrap_or(e.op), later.op];
                v.fault = f.fault_before(later.op);
                // An Agent that derives the messageId from the key gives both the same one:
                // then the ops tell the two insertions apart.
                let twice = if e.message_id == later.message_id {
                    format!(
                        "as {} at op {} and again at op {}",
                        e.message_id, e.op, later.op
                    )
                } else {
                    format!("{} then {}", e.message_id, later.message_id)
                };
                v.message = format!("{what} inserted twice ({twice}{whose}) {why}");
                if status == Status::Invalid {
                    return v;
                }
            }
        }
    }
    second_round(f).unwrap_or(v)
}

/// Why `later` inserted what `e` had inserted already (`cross`: under one key from another
/// submission or a raw frame): (status, party, rules, reason), by the first clause that
/// explains it: an intermediary changed the key (X1), the Client changed it (C1) or sent none
/// (C9), the first was still retained (A1, A4 and the lifetime clauses; K4 when the Agent
/// advertised `capabilities.session`), a retention window discarded it (A16), a restart lost
/// it from a durable design (D1) or as the design allows (A11, A16).
fn judge_pair(
    f: &Facts,
    e: &Insert,
    later: &Insert,
    cross: bool,
    advertised: bool,
) -> (Status, Party, Vec<&'static str>, String) {
    // The request an insertion came from (one attempt inserted twice is the Agent's doing).
    let same_attempt = |a: &Insert, b: &Insert| {
        let at = |i: &Insert| {
            let v = &f.history.ops[i.op].value;
            (v["conn"].clone(), v["id"].clone())
        };
        at(a) == at(b)
    };
    let durable = f.retention == acp_chaos_models::Retention::Durable;
    let gone = e.gone_before(later.op);
    let changed = |i: &Insert| i.sent_key.as_ref().is_some_and(|k| *k != i.key);
    if changed(e) || changed(later) {
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
            vec!["C9"],
            "without a key: the Client sent it again although it could not rule out a duplicate"
                .to_string(),
        )
    } else if gone.is_none() {
        let key = e.key.as_deref().unwrap_or("");
        // A1 is about retries; a new prompt under a recorded key breaks A4 alone.
        let mut rules = if cross { vec!["A4"] } else { vec!["A1", "A4"] };
        if !cross {
            rules.extend(lifetime_rules(f, e, later));
        }
        if advertised {
            rules.push("K4");
        }
        let why = if cross {
            "while the first was still retained (A4: a recorded key is answered as a retry or rejected -32602, whatever the prompt)".to_string()
        } else {
            format!("under the same key {key:?} while the first was still retained")
        };
        (Status::Invalid, Party::Agent, rules, why)
    } else if e.discarded_at == gone {
        // The Agent's retention window let the first go, key and all: A16 allows the
        // second; C7 says a Client should not have resent a prompt that old.
        let window = f
            .retention_ms
            .map_or(String::new(), |w| format!(" ({w} ms)"));
        (
            Status::Finding,
            Party::Spec,
            vec!["A16"],
            format!("after the Agent's retention window{window} discarded the first with its key, as A16 allows (C7: a Client shows a prompt that old to the user instead of resending it)"),
        )
    } else if durable && !e.live_only {
        (
            Status::Invalid,
            Party::Agent,
            vec!["D1"],
            "after a restart lost the first, which a durable design must keep".to_string(),
        )
    } else if e.live_only {
        (
            Status::Finding,
            Party::Spec,
            vec!["A11"],
            "after the session was active nowhere and the live-only key was forgotten (allowed)"
                .to_string(),
        )
    } else {
        (
            Status::Finding,
            Party::Spec,
            vec!["A16"],
            "after a restart lost the first, as the design's process retention allows".to_string(),
        )
    }
}

/// A1: no second round of work for one message: one turn, one tool side effect. A turn that
/// a restart of its own host stopped before it ended may be continued (A1 leaves that to the
/// Agent); a retry that starts a second round is caught either way.
fn second_round(f: &Facts) -> Option<Verdict> {
    let mut v = Verdict::valid("P1");
    let host = |i: usize| {
        f.history.ops[i].value["renamed_from"]
            .as_str()
            .unwrap_or(process::AGENT)
    };
    let continues = |a: usize, b: usize| {
        let mid = &f.history.ops[a].value["messageId"];
        let between = &f.history.ops[a + 1..b];
        let ended = between.iter().any(|o| {
            o.process == process::AGENT && o.f == op::TURN_END && o.value["messageId"] == *mid
        });
        let restarted = between
            .iter()
            .any(|o| o.process == process::AGENT && o.f == op::RECOVER && host(o.index) == host(a));
        !ended && restarted
    };
    let rounds = |ops: &Vec<usize>, turns: bool| -> Vec<usize> {
        let mut out = vec![ops[0]];
        for w in ops.windows(2) {
            if !(turns && continues(w[0], w[1])) {
                out.push(w[1]);
            }
        }
        out
    };
    for (what, map, turns) in [
        ("rounds of work", &f.turns, true),
        ("tool side effects", &f.tool_effects, false),
    ] {
        let second = map
            .iter()
            .map(|(&i, ops)| (i, rounds(ops, turns)))
            .find(|(_, r)| r.len() > 1);
        if let Some((i, ops)) = second {
            let mid = &f.inserts[i].message_id;
            v.breach(
                Status::Invalid,
                Party::Agent,
                vec!["A1".into()],
                ops.clone(),
                f.fault_before(ops[1]),
                format!(
                "message {mid} got {} {what} (A1: a retry starts no second round; only work a restart stopped may be continued)",
                ops.len()
            ),
            );
            return Some(v);
        }
    }
    None
}

/// Which of the key's lifetime clauses a second insertion of the submission of `first`
/// (`second`, while `first` is retained) broke, besides A1 and A4:
/// - a live-only message whose key is forgotten while its session is active: A11;
/// - across connections or a restart of the host that inserted it: A10 (the key is
///   recognised for as long as the message is retained, across connections and restarts);
/// - where the record lives (A13, ours): on a cluster, by another node than the first or by a
///   node that restarted since (the record belongs in the store the session is loaded from,
///   never per node); on one process, after a recovery that kept the first message but not
///   its key.
///
/// Two insertions on one connection with no restart between break neither lifetime clause:
/// the key was simply not honoured (A1, A4).
fn lifetime_rules(f: &Facts, first: &Insert, second: &Insert) -> Vec<&'static str> {
    let ops = &f.history.ops;
    if first.live_only {
        return vec!["A11"];
    }
    // The host that inserted: a cluster's store logs the insertion with the node that made it.
    let host = |i: usize| {
        let v = &ops[i].value;
        v["node"]
            .as_str()
            .or(v["renamed_from"].as_str())
            .unwrap_or(process::AGENT)
            .to_string()
    };
    let (a, b) = (host(first.op), host(second.op));
    let cluster = ops[first.op].value["node"].is_string();
    let conn = |i: usize| ops[i].value["conn"].as_u64();
    let starts = |o: &&crate::history::Op| {
        o.process == process::AGENT && (o.f == op::RECOVER || o.f == op::BOOT) && host(o.index) == a
    };
    let between = &ops[first.op + 1..second.op];
    let restarted = between.iter().any(|o| starts(&o));
    let kept_across_recovery = between.iter().filter(starts).any(|o| {
        o.value["retained"].as_object().is_some_and(|r| {
            r.values()
                .filter_map(|m| m.as_array())
                .flatten()
                .any(|m| m == first.message_id.as_str())
        })
    });
    let mut rules = Vec::new();
    if conn(first.op) != conn(second.op) || restarted || a != b {
        rules.push("A10");
    }
    if (cluster && (a != b || restarted)) || kept_across_recovery {
        rules.push("A13");
    }
    rules
}
