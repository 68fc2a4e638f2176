//! What a trace must hold before any fault schedule over it can show a mutant: a mutant that
//! mishandles `session/close` shows only on a trace where the user closes a session. Faults
//! lose, delay, crash and restart; they never add a user action, a second session or a probe.
//! `explore --mutants` reads this to say *why* a mutant was not shown, and only the mutants
//! whose needs the trace meets count as ones it should show.

use std::collections::BTreeSet;

use crate::history::{op, process, History};
use crate::models::DuringTurn;
use crate::plan::Plan;

/// What a trace holds that some mutant needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Need {
    /// The user cancels a request (`$/cancel_request`).
    CancelRequest,
    /// The user stops a turn (`session/cancel`).
    Stop,
    /// The user closes a session (`session/close`).
    Close,
    /// Raw `session/prompt` probes with hand-written keys (`[[raw]]`).
    RawProbe,
    /// A raw probe whose key is `null` (K1).
    NullKeyProbe,
    /// A prompt sent without a key (`sdk-auto-retry` Client, `unkeyed_rate`).
    UnkeyedPrompt,
    /// The same text submitted twice.
    RepeatedText,
    /// Two sessions.
    TwoSessions,
    /// A command the Agent answers locally (`/status`).
    Command,
    /// Two submissions (a second prompt to confuse with the first).
    TwoSubmissions,
    /// An Agent that holds a prompt arriving during a turn (O4 `hold`, not `steer`), and two
    /// submissions to hold one behind the other.
    Holding,
    /// A cluster of two nodes or more: a retry can reach a node other than the one working on
    /// the first attempt (one node serialises a session's inserts itself).
    TwoNodes,
    /// A Client with a staleness limit (`[client] stale_ms` > 0): without one nothing is ever
    /// too old to resend (C7).
    StaleLimit,
}

impl Need {
    /// What is missing, as a sentence fragment: "the trace has no {this}".
    pub fn what(self) -> &'static str {
        match self {
            Need::CancelRequest => "$/cancel_request",
            Need::Stop => "session/cancel (user stop)",
            Need::Close => "session/close",
            Need::RawProbe => "raw session/prompt probe",
            Need::NullKeyProbe => "raw session/prompt probe with a null key",
            Need::UnkeyedPrompt => "prompt without a key",
            Need::RepeatedText => "text submitted twice",
            Need::TwoSessions => "second session",
            Need::Command => "locally answered command (/status)",
            Need::TwoSubmissions => "second submission",
            Need::Holding => "prompt the Agent can hold (O4 hold and two submissions)",
            Need::TwoNodes => "second cluster node",
            Need::StaleLimit => "Client staleness limit (stale_ms)",
        }
    }
}

/// The needs of a mutant, by name (every shipped mutant is listed; a test checks it). Empty:
/// any trace with a prompt can show it, given the right faults.
pub fn of_mutant(name: &str) -> &'static [Need] {
    match name {
        "cancel-answers-one" | "cancel-answers-none" | "proxy-unmapped-cancel" => {
            &[Need::CancelRequest]
        }
        "stop-cancels-later" | "cancel-skips-held" => &[Need::Stop],
        "close-forgets-held" => &[Need::Close],
        "invalid-key-as-omitted" => &[Need::RawProbe],
        "null-key-rejected" => &[Need::NullKeyProbe],
        "resends-unkeyed" => &[Need::UnkeyedPrompt],
        "key-from-text" => &[Need::RepeatedText],
        "keys-across-sessions" => &[Need::TwoSessions],
        "forgets-live-while-active" => &[Need::Command],
        "same-key-new-prompt" | "dedup-by-id" => &[Need::TwoSubmissions],
        "held-retry-errors" | "echo-before-insert" => &[Need::Holding],
        "cluster-check-then-insert" => &[Need::TwoNodes],
        "resends-stale" => &[Need::StaleLimit],
        _ => &[],
    }
}

/// Every need the run of `plan` whose history is `h` meets.
pub fn met(plan: &Plan, h: &History) -> BTreeSet<Need> {
    let mut out = BTreeSet::new();
    let mut submissions = 0;
    let mut texts = BTreeSet::new();
    let mut sessions = BTreeSet::new();
    for o in &h.ops {
        let v = &o.value;
        match (o.process.as_str(), o.f.as_str()) {
            (process::USER, op::CANCEL) => {
                out.insert(Need::CancelRequest);
            }
            (process::USER, op::STOP) => {
                out.insert(Need::Stop);
            }
            (process::USER, op::CLOSE) => {
                out.insert(Need::Close);
            }
            (process::USER, op::SUBMIT) => {
                submissions += 1;
                if let Some(t) = v["text"].as_str() {
                    if t.starts_with('/') {
                        out.insert(Need::Command);
                    }
                    if !texts.insert(t.to_string()) {
                        out.insert(Need::RepeatedText);
                    }
                }
            }
            (process::CLIENT, op::RAW_SENT) => {
                out.insert(Need::RawProbe);
                let line = v["line"].as_str().unwrap_or_default();
                if crate::checkers::null_key_alone(line) {
                    out.insert(Need::NullKeyProbe);
                }
            }
            (process::CLIENT, op::ATTEMPT) if v["key"].is_null() => {
                out.insert(Need::UnkeyedPrompt);
            }
            (process::CLIENT, op::SESSION_KNOWN) => {
                sessions.insert(v["slot"].to_string());
            }
            _ => {}
        }
    }
    if plan.nodes > 1 {
        out.insert(Need::TwoNodes);
    }
    if plan.client.stale_ms > 0 {
        out.insert(Need::StaleLimit);
    }
    if sessions.len() > 1 {
        out.insert(Need::TwoSessions);
    }
    if submissions > 1 {
        out.insert(Need::TwoSubmissions);
        if plan.agent.o4 == DuringTurn::Hold {
            out.insert(Need::Holding);
        }
    }
    out
}

/// The needs of mutant `name` that the run of `plan` (history `h`) does not meet.
pub fn missing(name: &str, plan: &Plan, h: &History) -> Vec<Need> {
    let has = met(plan, h);
    of_mutant(name)
        .iter()
        .copied()
        .filter(|n| !has.contains(n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::mutant::MUTANTS;

    /// The table names only shipped mutants, and every mutant that needs a user action or a
    /// workload shape the rfd traces lack is in it (else `--mutants` would report it as a trace
    /// that should show it).
    #[test]
    fn needs_name_shipped_mutants() {
        let names: BTreeSet<&str> = MUTANTS.iter().map(|m| m.name).collect();
        for n in [
            "cancel-answers-one",
            "cancel-answers-none",
            "proxy-unmapped-cancel",
            "stop-cancels-later",
            "cancel-skips-held",
            "close-forgets-held",
            "invalid-key-as-omitted",
            "null-key-rejected",
            "resends-unkeyed",
            "key-from-text",
            "keys-across-sessions",
            "forgets-live-while-active",
            "same-key-new-prompt",
            "dedup-by-id",
            "held-retry-errors",
            "echo-before-insert",
            "cluster-check-then-insert",
            "resends-stale",
        ] {
            assert!(names.contains(n), "{n} is not a shipped mutant");
            assert!(!of_mutant(n).is_empty());
        }
    }
}
