//! What a trace must hold before any fault schedule over it can show a mutant: a mutant that
//! mishandles `session/close` shows only on a trace where the user closes a session. Faults
//! lose, delay, crash and restart; they never add a user action, a second session or a probe.
//! `explore --mutants` reads this to say *why* a mutant was not shown, and only the mutants
//! whose needs the trace meets count as ones it should show.

use std::collections::BTreeSet;

use crate::history::{op, process, History};
use crate::models::{DuringTurn, HeldOnDisconnect};
use crate::plan::Plan;

pub use crate::models::mutant::Need;
use crate::models::mutant::MUTANTS;

/// The needs of a mutant, by name: its registry row's ([`crate::models::Mutant::needs`]; every
/// shipped mutant has one). Empty: any trace with a prompt can show it, given the right
/// faults; also for a name that is no shipped mutant.
pub fn of_mutant(name: &str) -> &'static [Need] {
    MUTANTS
        .iter()
        .find(|m| m.name == name)
        .map_or(&[], |m| m.needs)
}

/// Every need the run of `plan` whose history is `h` meets.
pub fn met(plan: &Plan, h: &History) -> BTreeSet<Need> {
    let mut out = BTreeSet::new();
    let mut submissions = 0;
    let mut texts = BTreeSet::new();
    let mut sessions = BTreeSet::new();
    let mut raw = RawFrames::default();
    // The sessions the Client knows, for the raw frames that name one (a probe may name a
    // session that does not exist).
    let known: BTreeSet<&str> = h
        .ops
        .iter()
        .filter(|o| o.process == process::CLIENT && o.f == op::SESSION_KNOWN)
        .filter_map(|o| o.value["session"].as_str())
        .collect();
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
                if plan.cluster() {
                    out.insert(Need::InactiveClose);
                }
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
                out.extend(raw.read(line, &known));
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
    if plan.agent.tool_rate > 0.0 && plan.agent.permission_rate > 0.0 {
        out.insert(Need::PermissionAsk);
    }
    if plan.agent.fail_rate > 0.0 {
        out.insert(Need::FailingWork);
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
    if plan.agent.o1 == HeldOnDisconnect::Drop {
        out.insert(Need::DropHeld);
    }
    out
}

/// What the raw frames of a run bring, read one by one in the order they were sent.
#[derive(Default)]
struct RawFrames {
    /// (session, key) -> the prompts of the raw `session/prompt`s that carried that key.
    prompts: std::collections::BTreeMap<(String, String), BTreeSet<String>>,
}

impl RawFrames {
    /// The needs raw frame `line` meets. A raw stop, cancel or close reaches the Agent as the
    /// user's would: a stop and a cancel are also ones nobody pressed; a close counts as a
    /// close of the session only when it names one the Client knows, and always as a close
    /// the Agent may find inactive. A line that is not JSON is read by the method it names.
    fn read(&mut self, line: &str, known: &BTreeSet<&str>) -> Vec<Need> {
        let Ok(f) = serde_json::from_str::<serde_json::Value>(line) else {
            return [
                ("\"session/cancel\"", &[Need::Stop, Need::UnpressedStop][..]),
                (
                    "\"$/cancel_request\"",
                    &[Need::CancelRequest, Need::UnpressedStop],
                ),
                ("\"session/close\"", &[Need::Close, Need::InactiveClose]),
            ]
            .iter()
            .filter(|(method, _)| line.contains(method))
            .flat_map(|(_, needs)| needs.iter().copied())
            .collect();
        };
        let p = &f["params"];
        let sid = p["sessionId"].as_str().unwrap_or_default();
        match f["method"].as_str().unwrap_or_default() {
            "session/cancel" => vec![Need::Stop, Need::UnpressedStop],
            "$/cancel_request" => vec![Need::CancelRequest, Need::UnpressedStop],
            "session/close" if known.contains(sid) => vec![Need::Close, Need::InactiveClose],
            "session/close" => vec![Need::InactiveClose],
            "session/prompt" => {
                let Some(key) = p["idempotencyKey"].as_str() else {
                    return Vec::new();
                };
                let seen = self
                    .prompts
                    .entry((sid.to_string(), key.to_string()))
                    .or_default();
                seen.insert(p["prompt"].to_string());
                if seen.len() > 1 {
                    vec![Need::RekeyProbe]
                } else {
                    Vec::new()
                }
            }
            _ => Vec::new(),
        }
    }
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
