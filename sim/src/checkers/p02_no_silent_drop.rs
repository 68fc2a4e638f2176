//! P2 no-silent-drop (C1 C6 C8 A2): [`p2_no_silent_drop`].

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::Party;

use super::facts::{Facts, Insert, SubmissionClass};
use super::verdict::{Status, Verdict};
use crate::history::is_agent_host;
use crate::history::{op, process};
use acp_chaos_models::rpc::code;
use serde_json::Value;

/// P2 no-silent-drop: after heal and quiescence every submission is acknowledged or surfaced.
pub fn p2_no_silent_drop(f: &Facts) -> Verdict {
    let classes: BTreeMap<u64, SubmissionClass> = f
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
        let wrong = match c {
            SubmissionClass::Lost | SubmissionClass::Unacknowledged => Some(dropped(f, *n, *c)),
            SubmissionClass::Acknowledged => acknowledged_otherwise(f, *n),
            SubmissionClass::Withdrawn => withdrawn_otherwise(f, *n),
            SubmissionClass::Pending => {
                pending.push(*n);
                None
            }
            _ => None,
        };
        if let Some(v) = wrong {
            return v;
        }
    }
    liveness(f, &pending)
}

/// Submission `n` ended `c` (lost or unacknowledged): the Client dropped it silently.
fn dropped(f: &Facts, n: u64, c: SubmissionClass) -> Verdict {
    let (n, c) = (&n, &c);
    let mut v = Verdict::valid("P2");
    let at = f.submissions[n];
    let last_client_op = f
        .history
        .ops
        .iter()
        .rev()
        .find(|o| o.process == process::NEMESIS && o.value["host"] == "client");
    v.breach(
        Status::Invalid,
        Party::Client,
        lost_rules(f, *n, at),
        vec![at],
        last_client_op
        .map(|o| o.index)
        .or_else(|| f.fault_before(f.history.ops.len())),
        format!(
        "submission {n} is {}: the Client no longer holds it, never got its messageId and never showed an error",
        if *c == SubmissionClass::Lost { "lost (never inserted)" } else { "unacknowledged (inserted)" }
    ),
    );
    v
}

/// Submission `n` was acknowledged with a `messageId` that is not its own insertion: whose
/// message it is names the clause broken (C2 or C3 for a reused key, A2, A12, A9 or A1).
fn acknowledged_otherwise(f: &Facts, n: u64) -> Option<Verdict> {
    let (op, mid) = &f.acks[&n];
    if f.inserts
        .iter()
        .any(|i| i.submission == Some(n) && &i.message_id == mid)
    {
        return None;
    }
    let mut v = Verdict::valid("P2");
    // Whose message is it? If it carries a key this submission used, the
    // Client reused a key for a new submission (C2); otherwise the Agent
    // answered with another submission's message (A1, A9).
    let other = f.inserts.iter().find(|i| &i.message_id == mid);
    let attempts = attempts_of(f, n);
    let sessions = sessions_of(f, &attempts);
    let reused = other.and_then(|o| o.key.as_ref()).is_some_and(|k| {
        f.attempt_keys.get(&n).is_some_and(|ks| ks.contains(k))
            && other.is_some_and(|o| sessions.is_empty() || sessions.contains(o.session.as_str()))
    });
    v.status = Status::Invalid;
    v.witnesses = std::iter::once(*op).chain(other.map(|o| o.op)).collect();
    v.fault = f.fault_before(*op);
    if reused {
        // C3 when the reused key came with another prompt, C2 when with the
        // same text (a key derived from content).
        let rule =
            if submitted_text(f, Some(n)) == submitted_text(f, other.and_then(|o| o.submission)) {
                "C2"
            } else {
                "C3"
            };
        v.party = Some(Party::Client);
        v.rules = vec![rule.into()];
        v.message = format!("submission {n} was acknowledged with {mid}, the message of an earlier submission whose key it reused ({rule})");
    } else if let (None, Some(err)) = (other, errored_before(f, &attempts, *op)) {
        // No message has that id, and an attempt of it failed first: the
        // failure left its key behind.
        v.party = Some(Party::Agent);
        v.rules = vec!["A2".into()];
        v.witnesses.insert(0, err);
        v.message = format!("submission {n} was acknowledged with {mid}, which no message has; an earlier attempt was answered with an error (op {err}), and an error records nothing for the key");
    } else {
        v.party = Some(Party::Agent);
        let (rule, why) = agent_clause(other, &sessions);
        v.rules = vec![rule.into()];
        v.message = format!("submission {n} was acknowledged with {mid}, {why} ({rule})");
    }
    Some(v)
}

/// The (connection, JSON-RPC id) of every attempt of submission `n`.
fn attempts_of(f: &Facts, n: u64) -> BTreeSet<(u64, String)> {
    f.history
        .ops
        .iter()
        .filter(|o| {
            o.process == process::CLIENT
                && o.f == op::ATTEMPT
                && o.value["submission"].as_u64() == Some(n)
        })
        .map(|o| {
            (
                o.value["conn"].as_u64().unwrap_or(0),
                o.value["id"].to_string(),
            )
        })
        .collect()
}

/// The sessions these attempts went to (from the frames the Client wrote): a key is only
/// reused within one session (A9).
fn sessions_of<'a>(f: &Facts<'a>, attempts: &BTreeSet<(u64, String)>) -> BTreeSet<&'a str> {
    f.history
        .ops
        .iter()
        .filter(|o| {
            o.process == process::NET
                && o.f == op::SEND
                && o.value["from"] == "client"
                && attempts.contains(&(
                    o.value["conn"].as_u64().unwrap_or(0),
                    o.value["frame"]["id"].to_string(),
                ))
        })
        .filter_map(|o| o.value["frame"]["params"]["sessionId"].as_str())
        .collect()
}

/// The text the user submitted as submission `s`.
fn submitted_text(f: &Facts, s: Option<u64>) -> Option<Value> {
    f.history
        .ops
        .iter()
        .find(|o| {
            o.process == process::USER && o.f == op::SUBMIT && o.value["submission"].as_u64() == s
        })
        .map(|o| o.value["text"].clone())
}

/// The clause the Agent's answer broke, and how: an id no message has is a key recorded
/// without an insertion (A12: recorded when inserted, not on arrival); another session's
/// message crosses key scopes (A9); another message of the same session is not the
/// original's answer (A1).
fn agent_clause(other: Option<&Insert>, sessions: &BTreeSet<&str>) -> (&'static str, &'static str) {
    match other {
        None => (
            "A12",
            "which no message has: its key was recorded without an insertion",
        ),
        Some(o) if !sessions.is_empty() && !sessions.contains(o.session.as_str()) => {
            ("A9", "the message of a submission in another session")
        }
        Some(_) => (
            "A1",
            "another message of its session, not its own insertion",
        ),
    }
}

/// Submission `n` was shown to the user as withdrawn: its own user must have asked (C8), and no
/// insertion of it may stand that the Agent did not answer `-32800`.
fn withdrawn_otherwise(f: &Facts, n: u64) -> Option<Verdict> {
    let n = &n;
    let mut v = Verdict::valid("P2");
    // C8: "withdrawn" tells the user the input is not in the session. An insertion
    // that took effect and was not lost makes that a lie, unless the Agent itself
    // answered the inserted attempt -32800 (then P4 and P6 blame it).
    let at = f.withdrawn[n];
    // C8: "withdrawn by its own user": the user cancelled it, or stopped or closed
    // its session after submitting it. A -32800 nobody asked for is shown as an
    // error or resubmitted, never taken for the user's withdrawal.
    let submitted = f.submissions[n];
    let slot = &f.history.ops[submitted].value["slot"];
    let asked = f.history.ops[submitted..at].iter().any(|o| {
        o.process == process::USER
            && match o.f.as_str() {
                op::CANCEL => o.value["submission"].as_u64() == Some(*n),
                op::STOP | op::CLOSE => o.value["slot"] == *slot,
                _ => false,
            }
    });
    if !asked {
        v.breach(
            Status::Invalid,
            Party::Client,
            vec!["C8".into()],
            vec![submitted, at],
            f.fault_before(at),
            format!(
            "submission {n} was shown to the user as withdrawn (op {at}) though its user never cancelled it, nor stopped or closed its session (C8: a -32800 nobody asked for is shown or resubmitted)"
        ),
        );
        return Some(v);
    }
    // The Agent answered `-32800` to the inserted attempt, or to a retry of it after
    // the insertion took effect (A1, A6: an inserted prompt succeeds with its
    // messageId): the Client believed the Agent.
    let told_cancelled = |i: &Insert| {
        let iv = &f.history.ops[i.op].value;
        let after = i.took_effect.unwrap_or(i.op);
        f.history.ops.iter().any(|o| {
            let (conn, id) = (
                o.value["conn"].as_u64().unwrap_or(0),
                o.value["frame"]["id"].to_string(),
            );
            is_cancelled_answer(o)
                && ((o.value["conn"] == iv["conn"] && o.value["frame"]["id"] == iv["id"])
                    || (o.index > after && f.attempts.get(&(conn, id)) == Some(n)))
        })
    };
    // Or, while it held the keyed attempt it then inserted, it answered another
    // attempt of that key `-32800` (on that connection or another: a retry routed
    // elsewhere) while the held one was still pending (read, unanswered, its
    // connection open, no crash since), and the Client read that answer before it
    // showed the input withdrawn. A5 says a withdrawn key's pending attempts all get
    // `-32800`, A7 that a retry of a held prompt gets its outcome: P6 or P3 blames
    // the Agent, and the Client believed it.
    let withdrew_while_held = |i: &Insert| {
        let iv = &f.history.ops[i.op].value;
        let keyed = iv["key"].as_str().is_some_and(|k| !k.is_empty());
        keyed
            && f.history.ops[..i.op].iter().any(|o| {
                let id = o.value["frame"]["id"].to_string();
                is_cancelled_answer(o)
                    && (o.value["conn"] != iv["conn"] || o.value["frame"]["id"] != iv["id"])
                    && f.attempts.get(&(o.value["conn"].as_u64().unwrap_or(0), id)) == Some(n)
                    && pending_at(f, &iv["conn"], &iv["id"], o.index)
                    && client_read_before(f, o, at)
            })
    };
    let inserted = f.inserts.iter().find(|i| {
        i.submission == Some(*n)
            && i.took_effect.is_some()
            && i.gone_before(at.max(i.op)).is_none()
            && !told_cancelled(i)
            && !withdrew_while_held(i)
    });
    if let Some(i) = inserted {
        v.breach(
            Status::Invalid,
            Party::Client,
            vec!["C8".into()],
            vec![i.op, at],
            f.fault_before(at),
            format!(
            "submission {n} was shown to the user as withdrawn (op {at}), but it was inserted as {} (op {}): the user was told the input is not in the session",
            i.message_id, i.op
        ),
        );
        return Some(v);
    }
    None
}

/// No submission was dropped: what is still pending at the bound, or never made, leaves
/// liveness unknown (unless the Agent refused to start on a damaged store).
fn liveness(f: &Facts, pending: &[u64]) -> Verdict {
    let mut v = Verdict::valid("P2");
    let undelivered = f
        .history
        .ops
        .iter()
        .rev()
        .find(|o| o.process == process::WORLD && o.f == op::END)
        .and_then(|o| o.value["undelivered"].as_u64())
        .unwrap_or(0);
    if pending.is_empty() && undelivered > 0 {
        v.status = Status::Unknown;
        v.message =
            format!("liveness: {undelivered} user actions were never made before the bound");
    }
    // An Agent that refused to start on a store damaged below its synced watermark (the
    // `flip-bit`, `zero-sector` and `lose-synced-record` faults)
    // cannot serve until an operator repairs its disk: inputs the Client still holds are not
    // dropped, and no correct Agent could have finished them.
    let refused = f
        .history
        .ops
        .iter()
        .find(|o| o.process == process::AGENT && o.f == op::STORE_CORRUPT);
    if let (Some(r), false) = (refused, pending.is_empty()) {
        v.message = format!(
            "submissions {pending:?} still pending with the Client: the Agent refused to start on a damaged store (op {}), so liveness is not required",
            r.index
        );
        return v;
    }
    if !pending.is_empty() {
        v.status = Status::Unknown;
        v.witnesses = pending.iter().map(|n| f.submissions[n]).collect();
        v.message = format!("liveness: submissions {pending:?} still pending at the bound");
    }
    v
}

/// The first `-32603` (internal error: the attempt failed, A2) the Client read for one of
/// `attempts` before op `before`, with no Agent restart between it and `before` (a restart
/// makes it another process's record, A12): its op. Errors about the request itself
/// (`-32002`, `-32602`, malformed) and `-32800` say nothing about a failed attempt.
fn errored_before(f: &Facts, attempts: &BTreeSet<(u64, String)>, before: usize) -> Option<usize> {
    let ops = &f.history.ops[..before.min(f.history.ops.len())];
    let restarted_after = |at: usize| {
        ops[at..]
            .iter()
            .any(|o| o.process == process::AGENT && o.f == op::RECOVER)
    };
    ops.iter()
        .find(|o| {
            o.process == process::NET
                && o.f == op::RECV
                && o.value["from"] == "agent"
                && o.value["frame"]["error"]["code"] == code::INTERNAL_ERROR
                && !restarted_after(o.index)
                && attempts.contains(&(
                    o.value["conn"].as_u64().unwrap_or(0),
                    o.value["frame"]["id"].to_string(),
                ))
        })
        .map(|o| o.index)
}

/// The clause a lost or unacknowledged submission `n` (submitted at op `at`) broke, from the
/// wire and the nemesis's ops: the Client restarted after its last attempt and never sent it
/// again (C1: the pending input and its key are stored before the first attempt); it resumed
/// a session after its last attempt and never resent it (C6: resend pending prompts once the
/// resume is answered); otherwise it let it go without telling the user (C8).
fn lost_rules(f: &Facts, n: u64, at: usize) -> Vec<String> {
    let ops = &f.history.ops;
    let last_attempt = ops
        .iter()
        .filter(|o| {
            o.process == process::CLIENT
                && o.f == op::ATTEMPT
                && o.value["submission"].as_u64() == Some(n)
        })
        .map(|o| o.index)
        .max();
    let from = last_attempt.unwrap_or(at);
    let restarted = ops[from..].iter().any(|o| {
        o.process == process::NEMESIS
            && (o.f == op::CRASH || o.f == op::RESTART)
            && o.value["host"] == process::CLIENT
    });
    let resumed = last_attempt.is_some()
        && ops[from..].iter().any(|o| {
            o.process == process::NET
                && o.f == op::SEND
                && o.value["from"] == process::CLIENT
                && o.value["frame"]["method"] == "session/resume"
        });
    let rules: &[&str] = if restarted {
        &["C1"]
    } else if resumed {
        &["C6", "C8"]
    } else {
        &["C8"]
    };
    rules.iter().map(|r| r.to_string()).collect()
}

/// An Agent host wrote a `-32800` answer.
fn is_cancelled_answer(o: &crate::history::Op) -> bool {
    o.process == process::NET
        && o.f == op::SEND
        && o.value["from"].as_str().is_some_and(is_agent_host)
        && o.value["frame"]["error"]["code"] == code::REQUEST_CANCELLED
}

/// The Agent had read the prompt `id` on `conn` before op `at` and, at `at`, had not
/// answered it, no process had crashed since the read, and its connection had not ended, or
/// the Agent still held it (`hold` without `release`, `withdraw` or `drop-held` before `at`: a
/// design that keeps a held prompt after its connection ends, O1 keep).
fn pending_at(f: &Facts, conn: &Value, id: &Value, at: usize) -> bool {
    let ops = &f.history.ops[..at];
    let Some(read) = ops.iter().position(|o| {
        o.process == process::NET
            && o.f == op::RECV
            && o.value["conn"] == *conn
            && o.value["frame"]["id"] == *id
            && o.value["frame"]["method"] == "session/prompt"
    }) else {
        return false;
    };
    let this = |o: &&crate::history::Op| o.value["conn"] == *conn && o.value["id"] == *id;
    let held = ops[read..].iter().filter(this).any(|o| o.f == op::HOLD)
        && !ops[read..]
            .iter()
            .filter(this)
            .any(|o| [op::RELEASE, op::WITHDRAW, op::DROP_HELD].contains(&o.f.as_str()));
    !ops[read..].iter().any(|o| {
        (o.process == process::NET
            && o.f == op::SEND
            && o.value["conn"] == *conn
            && o.value["frame"]["id"] == *id
            && o.value["frame"].get("method").is_none())
            || (o.f == op::CONN_END && o.value["conn"] == *conn && !held)
            || (o.process == process::NEMESIS && o.f == op::CRASH)
    })
}

/// The Client read the answer `sent` wrote before op `at`.
fn client_read_before(f: &Facts, sent: &crate::history::Op, at: usize) -> bool {
    f.history.ops[sent.index..at].iter().any(|o| {
        o.process == process::NET
            && o.f == op::RECV
            && o.value["conn"] == sent.value["conn"]
            && o.value["frame"]["id"] == sent.value["frame"]["id"]
            && o.value["frame"]["error"]["code"] == code::REQUEST_CANCELLED
    })
}
