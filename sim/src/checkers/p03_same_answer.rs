//! P3 same-answer (A1 A7): [`p3_same_answer`].

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::rpc::code as rpc_code;
use acp_chaos_models::Party;

use super::facts::{is_store_op, malformed_request, prompt_answers, Answer, Facts, Insert};
use super::verdict::{Status, Verdict};
use crate::history::{op, process};

/// One `session/prompt` request as the Agent read it.
#[derive(Debug, Clone)]
struct Read {
    /// Op index of the `recv`.
    at: usize,
    /// Op index of the Agent boot it was read in (the last `recover` before it).
    boot: usize,
    session: String,
    key: Option<String>,
    /// `prompt: []`, which the Agent MAY reject with `-32602` (A17).
    empty: bool,
}

/// Every `session/prompt` request the Agent read, by (connection, JSON-RPC id); for the same
/// pair read twice (a reused id), the first.
fn prompt_reads(f: &Facts) -> BTreeMap<(u64, String), Read> {
    let mut out: BTreeMap<(u64, String), Read> = BTreeMap::new();
    let mut boot = 0;
    for (op, w) in f.ops_with_wire() {
        match (op.process.as_str(), op.f.as_str(), w) {
            (process::AGENT, op::RECOVER, _) if !is_store_op(op) => boot = op.index,
            (process::NET, op::RECV, Some(w))
                if matches!(w.from, "client" | "proxy")
                    && w.method == Some("session/prompt")
                    && w.id.is_some() =>
            {
                let fr = w.frame;
                out.entry(w.key()).or_insert(Read {
                    at: op.index,
                    boot,
                    session: fr["params"]["sessionId"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    key: fr["params"]["idempotencyKey"].as_str().map(str::to_string),
                    empty: fr["params"]["prompt"]
                        .as_array()
                        .is_some_and(|p| p.is_empty()),
                });
            }
            _ => {}
        }
    }
    out
}

/// Error codes that say what was wrong with the request itself, not that the Agent failed
/// it: A7 does not cover them (`-32602` only with a malformed key, see [`key_malformed`], or
/// with `prompt: []`, A17).
fn request_error(code: i64) -> bool {
    malformed_request(code) || code == rpc_code::RESOURCE_NOT_FOUND
}

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
    let mut v = p3_messageids(f, answers);
    if v.status == Status::Invalid {
        return v;
    }
    let reads = prompt_reads(f);
    if cross_wired(f, answers, &reads, &mut v) {
        return v;
    }
    held_then_failed(f, answers, &reads, &mut v);
    v
}

/// Cross-wired answers: a success whose messageId the Agent inserted for another key (A1, or
/// A9 across sessions). Writes the violation into `v`; `true` when there is one.
fn cross_wired(
    f: &Facts,
    answers: &[Answer],
    reads: &BTreeMap<(u64, String), Read>,
    v: &mut Verdict,
) -> bool {
    for (attempt, op, ans) in answers {
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
        // Another session's message crosses key scopes (A9); one of its own session is not
        // the original's answer (A1).
        v.rules = vec![if other.session == r.session {
            "A1"
        } else {
            "A9"
        }
        .into()];
        v.witnesses = vec![other.op, r.at, *op];
        v.fault = f.fault_before(*op);
        let attempt_name = super::facts::attempt_name(attempt);
        v.message = format!(
            "attempt {attempt_name} (key {:?}) was answered {mid}, the message the Agent inserted for key {:?}",
            r.key, other.key
        );
        return true;
    }
    false
}

/// When the Agent decided each attempt: its answer, or its own log of the decision (an
/// answer lost on the way was decided all the same).
fn decided_at(f: &Facts, answers: &[Answer]) -> BTreeMap<(u64, String), usize> {
    let mut decided: BTreeMap<(u64, String), usize> = BTreeMap::new();
    for (a, op, _) in answers {
        decided.entry(a.clone()).or_insert(*op);
    }
    for op in &f.history.ops {
        if op.process == process::AGENT
            && matches!(
                op.f.as_str(),
                "reject" | "insert" | "dedup-hit" | "withdraw" | "drop-held"
            )
        {
            let a = (
                op.value["conn"].as_u64().unwrap_or(0),
                op.value["id"].to_string(),
            );
            let e = decided.entry(a).or_insert(op.index);
            *e = (*e).min(op.index);
        }
    }
    decided
}

/// The nemesis's `transient-error` makes the Agent fail a later prompt with -32603 (a
/// failure before insertion, which A3 allows); the Agent logs which one it failed.
fn transient_failures(f: &Facts) -> BTreeSet<(u64, String)> {
    f.history
        .ops
        .iter()
        .filter(|o| {
            o.process == process::AGENT && o.f == op::REJECT && o.value["transient"] == true
        })
        .map(|o| {
            (
                o.value["conn"].as_u64().unwrap_or(0),
                o.value["id"].to_string(),
            )
        })
        .collect()
}

/// A7: an error for a retry that arrived while an attempt of its key was held, that held
/// attempt then inserted by this Agent process. Even -32800 counts: had the Agent withdrawn
/// the held prompt, it would not have been inserted (A5). Writes the violation into `v`.
fn held_then_failed(
    f: &Facts,
    answers: &[Answer],
    reads: &BTreeMap<(u64, String), Read>,
    v: &mut Verdict,
) {
    let decided = decided_at(f, answers);
    let excused = transient_failures(f);
    for (attempt, op, ans) in answers {
        let Err(code) = ans else { continue };
        if request_error(*code) || excused.contains(attempt) {
            continue;
        }
        let Some(r) = reads.get(attempt) else {
            continue;
        };
        let Some(key) = &r.key else { continue };
        if *code == rpc_code::INVALID_PARAMS && (key_malformed(key) || r.empty) {
            continue;
        }
        if let Some((held, o, i)) = held_then_inserted(f, reads, &decided, attempt, r, key) {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec!["A7".into()];
            v.witnesses = vec![o.at, r.at, *op, i.op];
            v.fault = f.fault_before(r.at);
            let (attempt_name, held_name) = (
                super::facts::attempt_name(attempt),
                super::facts::attempt_name(held),
            );
            v.message = format!(
                "retry {attempt_name} arrived while {held_name} with its key was held and was answered {code}; the key was then inserted as {} (A7: the same outcome, never an error)",
                i.message_id
            );
            return;
        }
    }
}

/// An earlier attempt with `key` in the same session and Agent process, undecided when the
/// retry `r` was read, that this process then inserted: (its attempt, its read, the insert).
fn held_then_inserted<'r, 'f>(
    f: &'f Facts,
    reads: &'r BTreeMap<(u64, String), Read>,
    decided: &BTreeMap<(u64, String), usize>,
    attempt: &(u64, String),
    r: &Read,
    key: &str,
) -> Option<(&'r (u64, String), &'r Read, &'f Insert)> {
    let next_boot = f
        .recoveries
        .iter()
        .map(|(i, _)| *i)
        .find(|i| *i > r.at)
        .unwrap_or(usize::MAX);
    let inserted_attempt = |i: &Insert| {
        let v = &f.history.ops[i.op].value;
        (v["conn"].as_u64().unwrap_or(0), v["id"].to_string())
    };
    reads
        .iter()
        .filter(|(a, o)| {
            *a != attempt
                && o.key.as_deref() == Some(key)
                && o.session == r.session
                && o.boot == r.boot
                && o.at < r.at
                && decided.get(*a).is_none_or(|x| *x > r.at)
        })
        .find_map(|(a, o)| {
            f.inserts
                .iter()
                .find(|i| i.op > r.at && i.op < next_boot && inserted_attempt(i) == *a)
                .map(|i| (a, o, i))
        })
}

/// P3's first half: every success for one submission carries the same `messageId`.
fn p3_messageids(f: &Facts, answers: &[Answer]) -> Verdict {
    let mut v = Verdict::valid("P3");
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
                // Either insertion may be the one forgotten first: a late answer to the
                // original attempt can arrive after the answer to the one that inserted again.
                let forgotten = f
                    .inserts
                    .iter()
                    .filter(|i| {
                        (i.message_id == *mid0 || i.message_id == mid) && i.submission == Some(sub)
                    })
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
                // Two answers for a prompt the Client sent twice without a key (from the
                // frames it wrote, not from what reached the Agent): no key, no duplicate
                // detection (K1); the Client's resend is C9's business.
                let sent_unkeyed = |i: Option<&Insert>| {
                    i.is_some_and(|i| i.sent_key.as_ref().is_some_and(Option::is_none))
                };
                let unkeyed = sent_unkeyed(e) && sent_unkeyed(l);
                // An intermediary that changed the key is to blame first: the Client's attempts
                // carried it.
                let (status, party, rules) = if changed(e) || changed(l) {
                    (Status::Invalid, Party::Intermediary, vec!["X1".into()])
                } else if unkeyed {
                    (Status::Finding, Party::Client, vec!["C9".into()])
                } else if forgotten {
                    (status, Party::Spec, vec!["A11".into(), "A16".into()])
                } else if e.zip(l).is_some_and(|(e, l)| e.key != l.key) {
                    (status, Party::Client, vec!["C1".into()])
                } else {
                    // A7 when the later attempt waited while the first was held.
                    let held = f.history.ops[..op].iter().any(|o| {
                        o.process == process::AGENT
                            && o.f == op::HOLD
                            && f.attempts.get(&(
                                o.value["conn"].as_u64().unwrap_or(0),
                                o.value["id"].to_string(),
                            )) == Some(&sub)
                    });
                    let mut rules = vec!["A1".to_string()];
                    if held {
                        rules.push("A7".into());
                    }
                    (status, Party::Agent, rules)
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
