//! What should have happened, beside what did: for a verdict, the behaviour its rules required
//! ([`Expected::of`]), one sentence per property, made concrete from the run where the history
//! says enough (the messageId a retry was owed, the answer an attempt was owed), and one row per
//! witness op: what the op did, what the rule required of it.

use std::collections::BTreeSet;

use super::diagram::Diagram;
use crate::checkers::Verdict;
use crate::history::{is_agent_host, History, Op};

/// What a witness op was required to do, from the op.
type PerOp = Box<dyn Fn(&Op) -> String>;

/// What a verdict's rules required, for a page to show beside the diagram.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    /// One sentence: what the rules required in this run (concrete ids where the history
    /// gives them, else the rule's general statement).
    pub summary: String,
    /// One row per witness op: (op number as `#27`, what the diagram's row says happened,
    /// what was required of it).
    pub rows: Vec<(String, String, String)>,
}

/// The property's general statement of the required behaviour, from its rules in
/// `spec/RULES.md` (`None` for a property id this version does not know).
pub fn general(property: &str) -> Option<&'static str> {
    Some(match property {
        "P1" => "insert a submission's message once: a retry with a recorded key is answered from the key's record with the first insertion's messageId, and nothing is inserted, no work started (A1, A4, A10)",
        "P2" => "every submission ends acknowledged with its messageId or shown to the user (failed, withdrawn, pending); the Client never forgets an input silently (C8, C1, C6)",
        "P3" => "every attempt of one submission is answered with the same messageId, the original's; a retry that arrives while the original is held gets the original's outcome, never an error (A1, A7)",
        "P4" => "an error answer means nothing was inserted: an attempt whose prompt was inserted is answered with its messageId (A2, A3)",
        "P5" => "a key of 1 to 255 characters is honoured, a null or absent key means no key, a malformed key is answered -32602 and nothing is inserted (K1, K2, K3)",
        "P6" => "$/cancel_request answers every pending attempt of the key with -32800 and nothing is inserted after; session/cancel withdraws the prompts not yet inserted, and no later one (A5, A6)",
        "P7" => "every request read is answered exactly once while its connection is open; a $/cancel_request naming an unknown or answered id is ignored (A5, A15, C4)",
        "P8" => "the key travels only in the Client's session/prompt: no update, response or other frame carries it (A8)",
        "P9" => "key records are per session: the same key string in another session is a new key (A9)",
        "P10" => "after a reconnect a keyed input is resent with its key; an unkeyed or stale one is shown to the user, not resent; a resume of an active session synchronises it again (C6, C7, C9, X3, X4)",
        "P11" => "a message the Agent acknowledged or made visible survives a crash of a durable Agent (D1, A13)",
        "P12" => "a messageId names one user message in its session (A1)",
        "P13" => "an intermediary forwards each frame once, in its connection's order, with ids rewritten both ways (X1)",
        "P14" => "a new submission gets a new key; a resend keeps its submission's key and prompt, never an empty prompt (C1, C2, C3, C5, A17)",
        "P15" => "a held prompt is echoed (user_message) only once it is inserted (A14)",
        "P16" => "a request for a session not active on its connection is answered -32002 with data.sessionId; a Client resends only after the resume response (X2, C6)",
        "P17" => "a turn ends with the stopReason that fits (cancelled after a stop, error after a failure) and its work ends before session/close is answered (A3, A6, A15)",
        "X4" => "a session/resume answered with success sends, before its response and for its session, the replayed history, exactly one replay_complete and then a state_update snapshot when replayFrom is set, and a snapshot without replay_complete when it is not (X4)",
        _ => return None,
    })
}

/// A witness row's requirement when no op-specific one is known: the property's expected
/// behaviour itself, so every row reads on its own (a page never defers to another line).
fn same(general: &str) -> PerOp {
    let g = general.to_string();
    Box::new(move |_: &Op| g.clone())
}

impl Expected {
    /// What `v`'s rules required in run `h` (the run the verdict was given on).
    pub fn of(v: &Verdict, h: &History) -> Expected {
        let d = Diagram::of(h, Some(v));
        let row_text = |i: usize| {
            d.items
                .iter()
                .find(|it| it.draws_op(i))
                .map(|it| it.text().to_string())
                .unwrap_or_else(|| {
                    h.ops
                        .iter()
                        .find(|o| o.index == i)
                        .map(|o| format!("{} {}", o.process, o.f))
                        .unwrap_or_default()
                })
        };
        let witnesses: BTreeSet<usize> = v.witnesses.iter().copied().collect();
        let ops: Vec<&Op> = h
            .ops
            .iter()
            .filter(|o| witnesses.contains(&o.index))
            .collect();
        let general = general(&v.property).unwrap_or("what the rules quoted on this page require");
        let inserts: Vec<&Op> = ops
            .iter()
            .copied()
            .filter(|o| is_agent_host(&o.process) && o.f == "insert")
            .collect();
        let mid = |o: &Op| o.value["messageId"].as_str().unwrap_or("?").to_string();
        let (summary, per_op): (String, PerOp) = match v.property.as_str() {
            "P1" | "P12" if inserts.len() >= 2 => {
                let first = mid(inserts[0]);
                let later: Vec<String> = inserts[1..].iter().map(|o| mid(o)).collect();
                let first_op = inserts[0].index;
                let f2 = first.clone();
                (
                    format!(
                        "answer the retry with {first} from the key's record (the insertion at op #{first_op}) and insert nothing: {} should not exist ({general})",
                        later.join(", ")
                    ),
                    Box::new(move |o: &Op| {
                        if o.index == first_op {
                            "the first insertion for the key: as it should be".to_string()
                        } else if o.f == "insert" {
                            format!("insert nothing; answer the retry with {f2} from the record")
                        } else {
                            format!("only {f2} for this key")
                        }
                    }),
                )
            }
            "P3" => {
                let answers: Vec<String> = ops
                    .iter()
                    .filter_map(|o| o.value["frame"]["result"]["messageId"].as_str())
                    .map(str::to_string)
                    .collect();
                match answers.first() {
                    Some(a) => {
                        let a2 = a.clone();
                        (
                            format!("answer every attempt of the submission with {a}, the original's messageId ({general})"),
                            Box::new(move |_: &Op| format!("the same answer: messageId {a2}")),
                        )
                    }
                    None => (general.to_string(), same(general)),
                }
            }
            "P4" => {
                let inserted: Vec<String> = ops
                    .iter()
                    .filter(|o| o.f == "insert")
                    .map(|o| mid(o))
                    .collect();
                match inserted.first() {
                    Some(m) => {
                        let m2 = m.clone();
                        (
                            format!("the prompt was inserted as {m}, so its attempt is owed the answer messageId {m}, not an error ({general})"),
                            Box::new(move |o: &Op| {
                                if o.f == "insert" {
                                    "the insertion: as it should be".to_string()
                                } else {
                                    format!("answer messageId {m2}")
                                }
                            }),
                        )
                    }
                    None => (general.to_string(), same(general)),
                }
            }
            _ => (general.to_string(), same(general)),
        };
        let rows = ops
            .iter()
            .map(|o| (format!("#{}", o.index), row_text(o.index), per_op(o)))
            .collect();
        Expected { summary, rows }
    }
}
