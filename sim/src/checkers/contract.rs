//! The effect contract: which effects of each pluggable party (Agent, Client, proxy) each
//! property's checker cannot judge without ([`DEPENDENCIES`]), and the vacuity rule
//! ([`apply`]).
//!
//! The checkers judge an Agent by the effects it reports (`insert`, `turn-start`, ...; the
//! whole list, with fields, is in the `AgentModel` docs and `docs/effects.md`). An
//! Agent plugged in through [`crate::world::run_with`] that never emits one of them would be
//! checked against nothing on that point and still come out valid. So: when the wire shows
//! the Agent owed an effect (it answered a `session/prompt` with a `messageId`, it said a turn
//! is `running`, ...) and the Agent never emitted it anywhere in the history, every property
//! that rests on it says so: a valid verdict becomes [`Status::Unknown`] ("not checked",
//! naming the effect), an invalid one too (keeping what its checker saw in the message) unless
//! it blames the silent party itself on frames alone, which, like a finding, keeps its status
//! and gains a note. The Client's (`attempt`, `ack`) and the proxy's (`forward`)
//! dependencies work the same way.
//!
//! The rule looks at the whole history, never at one occurrence: an Agent that emits the
//! effect at all is taken to emit it where it applies (each checker judges the occurrences).
//! The project's model Agent emits every effect wherever the wire shows it owed one, so its
//! verdicts never change. Histories the probe recorded from a real Agent (`plan.probe` in the
//! header) are not judged by this contract: a real Agent reports no effects, the probe infers
//! the few it can from the wire and its checkers say what they judge there.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::facts::Facts;
use super::verdict::{Status, Verdict};
use super::wire::WireFrame;
use crate::history::{op, process, History, Op};
use crate::models::Property;

/// One Agent effect some properties cannot be judged without, and what on the wire shows
/// the Agent owed it.
pub struct Dependency {
    /// The party that owes it: its ops are the history's `agent`, `client` or `proxy` ones.
    pub party: &'static str,
    /// The effect's op name (`insert`, ...).
    pub effect: &'static str,
    /// Effects that stand in for it (`visible` for `durable`: either says the insertion took
    /// effect).
    pub or: &'static [&'static str],
    /// The properties that are not checked when it is owed and never emitted.
    pub properties: &'static [Property],
    /// When the Agent owes it, as the wire (or its other effects) shows it.
    pub owed_when: &'static str,
    /// The first op that shows it owed, if any.
    witness: fn(&Index) -> Option<usize>,
}

impl Dependency {
    /// The effect and its stand-ins, as the message names them: `` `durable` or `visible` ``.
    fn named(&self) -> String {
        std::iter::once(self.effect)
            .chain(self.or.iter().copied())
            .map(|e| format!("`{e}`"))
            .collect::<Vec<_>>()
            .join(" or ")
    }
}

/// Every dependency the vacuity rule checks, in the order the messages name them.
///
/// Effects the checkers read that are not here have no wire witness (`work-failed`,
/// `drop-held`, `discard`, `release`: nothing on the wire says they happened), or make the
/// checkers stricter when missing rather than vacuous (`deactivate`, `reject`: a missing one
/// shows as a violation, never as a hollow valid). The effect contract lists them all.
pub const DEPENDENCIES: &[Dependency] = &[
    Dependency {
        party: process::AGENT,
        effect: op::INSERT,
        or: &[],
        properties: &[Property::P1, Property::P2, Property::P3, Property::P4, Property::P6, Property::P9, Property::P11, Property::P12, Property::P15],
        owed_when: "it answered a session/prompt with a messageId, or echoed a user_message",
        // An answer the Agent reported as a `dedup-hit` (a retry) inserted nothing itself.
        witness: |i| {
            i.prompt_ok
                .iter()
                .find(|(_, a, _)| !i.deduplicated.contains(a))
                .map(|a| a.0)
                .into_iter()
                .chain(i.echo)
                .min()
        },
    },
    Dependency {
        party: process::AGENT,
        effect: op::DURABLE,
        or: &[op::VISIBLE],
        properties: &[Property::P1, Property::P11, Property::P12],
        owed_when: "it answered a session/prompt with the messageId of an insertion (one no restart reported kept)",
        witness: |i| {
            i.prompt_ok
                .iter()
                .find(|(_, _, mid)| i.inserted.contains(mid) && !i.recovered.contains(mid))
                .map(|a| a.0)
        },
    },
    Dependency {
        party: process::AGENT,
        effect: op::DEDUP_HIT,
        or: &[],
        properties: &[Property::P9],
        owed_when: "it answered a retry with a messageId an earlier attempt got, inserting nothing",
        witness: |i| i.repeated_answer,
    },
    Dependency {
        party: process::AGENT,
        effect: op::TURN_START,
        or: &[],
        properties: &[Property::P1, Property::P17],
        owed_when: "it sent a state_update `running`",
        witness: |i| i.running,
    },
    Dependency {
        party: process::AGENT,
        effect: op::TURN_END,
        or: &[],
        properties: &[Property::P17],
        owed_when: "it sent a state_update with a stopReason",
        witness: |i| i.stopped,
    },
    Dependency {
        party: process::AGENT,
        effect: op::TOOL_EFFECT,
        or: &[],
        properties: &[Property::P1],
        owed_when: "it sent a completed tool call",
        witness: |i| i.tool_done,
    },
    Dependency {
        party: process::AGENT,
        effect: op::HOLD,
        or: &[],
        properties: &[Property::P6],
        owed_when: "it reported an insertion from its queue (`insert` with mode `held`)",
        witness: |i| i.held_insert,
    },
    Dependency {
        party: process::AGENT,
        effect: op::WITHDRAW,
        or: &[],
        properties: &[Property::P6],
        owed_when: "it answered a session/prompt -32800",
        witness: |i| i.prompt_cancelled,
    },
    Dependency {
        party: process::AGENT,
        effect: op::ACTIVATE,
        or: &[],
        properties: &[Property::P6, Property::P10, Property::P17],
        owed_when:
            "it answered session/new, session/fork, session/load or session/resume with a success",
        witness: |i| i.session_ok,
    },
    // The Client's and the proxy's reports: a user's Client or proxy that never makes them
    // leaves the checkers that map its frames to submissions with nothing to map.
    Dependency {
        party: process::CLIENT,
        effect: op::ATTEMPT,
        or: &[],
        // Each maps the Agent's attempts to the user's submissions through `attempt`.
        properties: &[Property::P1, Property::P2, Property::P3, Property::P10, Property::P14],
        owed_when: "it wrote a session/prompt",
        witness: |i| i.client_prompt,
    },
    Dependency {
        party: process::CLIENT,
        effect: op::ACK,
        // A Client that let the submission go first (an unkeyed attempt not resent and shown
        // to the user, C9; a withdrawal) owes no `ack` for a late answer.
        or: &[op::SURFACE, op::WITHDRAWN, op::NOT_RESENT],
        properties: &[Property::P2],
        owed_when: "it read a session/prompt answered with a messageId",
        witness: |i| i.client_answer,
    },
    Dependency {
        party: process::PROXY,
        effect: op::FORWARD,
        or: &[],
        // Each maps the attempts the proxy rewrote through `forward`.
        properties: &[Property::P1, Property::P2, Property::P3, Property::P6, Property::P13],
        owed_when: "it wrote a session/prompt to the Agent",
        witness: |i| i.proxy_prompt,
    },
];

/// The Client's and proxy's effects the contract names (the rest are not recorded).
const NAMED: &[&str] = &[
    op::ATTEMPT,
    op::ACK,
    op::SURFACE,
    op::WITHDRAWN,
    op::NOT_RESENT,
    op::FORWARD,
];

/// What the rule reads from a history, in one pass.
#[derive(Default)]
struct Index {
    /// The effects each party emitted: (party, op name).
    emitted: BTreeSet<(String, String)>,
    /// The first `session/prompt` the Client wrote.
    client_prompt: Option<usize>,
    /// The first answer with a `messageId` the Client read to a `session/prompt` it wrote.
    client_answer: Option<usize>,
    /// The first `session/prompt` the proxy wrote (to the Agent).
    proxy_prompt: Option<usize>,
    /// Agent answers to `session/prompt` with a `messageId`: (op, attempt, messageId).
    prompt_ok: Vec<(usize, (u64, String), String)>,
    /// The first `user_message` update with a `messageId` the Agent wrote.
    echo: Option<usize>,
    /// The first answer to a `session/prompt` that repeats an earlier attempt's `messageId`,
    /// the attempt neither inserted nor a retry waiting for a held one (`wait-held`).
    repeated_answer: Option<usize>,
    /// The first `-32800` answer to a `session/prompt`.
    prompt_cancelled: Option<usize>,
    /// The first `state_update` `running`, and the first one with a `stopReason`.
    running: Option<usize>,
    stopped: Option<usize>,
    /// The first completed tool call the Agent wrote.
    tool_done: Option<usize>,
    /// The first success answer to a request that activates a session.
    session_ok: Option<usize>,
    /// The first `insert` with `mode: held`.
    held_insert: Option<usize>,
    /// messageIds of the Agent's insertions.
    inserted: BTreeSet<String>,
    /// messageIds a restart's `recover` listed as kept: the Agent's own word that those
    /// insertions took effect (a crash between sync and response leaves no `durable`).
    recovered: BTreeSet<String>,
    /// Attempts the Agent answered as retries (`dedup-hit`).
    deduplicated: BTreeSet<(u64, String)>,
}

impl Index {
    fn of(f: &Facts) -> Index {
        let mut walk = IndexWalk {
            ix: Index::default(),
            raw: f.raw_probes(),
            requests: BTreeMap::new(),
            own_answer: BTreeSet::new(),
            answered: BTreeMap::new(),
            client_prompts: BTreeSet::new(),
        };
        for (o, w) in f.ops_with_wire() {
            walk.step(o, w);
        }
        walk.ix
    }
}

/// [`Index::of`]'s walk over the ops: the index so far, and what it remembers on the way.
struct IndexWalk<'f> {
    ix: Index,
    /// The swarm's raw probes (no submission: no `attempt`, no `ack`).
    raw: &'f BTreeSet<(u64, String)>,
    /// (conn, id) → method of every request written to the Agent.
    requests: BTreeMap<(u64, String), String>,
    /// Attempts the Agent inserted or parked behind a held attempt of their key.
    own_answer: BTreeSet<(u64, String)>,
    /// messageId → the attempt first answered with it.
    answered: BTreeMap<String, (u64, String)>,
    /// (conn, id) of every session/prompt the Client wrote, the raw probes aside.
    client_prompts: BTreeSet<(u64, String)>,
}

fn attempt(v: &Value) -> (u64, String) {
    (v["conn"].as_u64().unwrap_or(0), v["id"].to_string())
}

impl IndexWalk<'_> {
    fn step(&mut self, o: &Op, w: Option<&WireFrame>) {
        if (o.process == process::CLIENT || o.process == process::PROXY)
            && NAMED.contains(&o.f.as_str())
        {
            self.ix.emitted.insert((o.process.clone(), o.f.clone()));
        }
        self.client_side(o, w);
        if o.process == process::AGENT {
            self.agent_op(o);
            return;
        }
        let Some(w) = w.filter(|w| w.sent) else {
            return;
        };
        if !w.from_agent {
            if let (Some(m), Some(_)) = (w.method, w.id) {
                self.requests.insert(w.key(), m.to_string());
            }
            return;
        }
        if let Some(m) = w.method {
            if m == "session/update" {
                self.update(o.index, &w.frame["params"]["update"]);
            }
            return;
        }
        self.answer(o.index, w);
    }

    /// The Client's (or a proxy's) `session/prompt` writes, and the Client's read of a
    /// prompt's answer.
    fn client_side(&mut self, o: &Op, w: Option<&WireFrame>) {
        let ix = &mut self.ix;
        if let Some(w) = w.filter(|w| w.method == Some("session/prompt")) {
            match (w.sent, w.from) {
                (true, "client") if !self.raw.contains(&w.key()) => {
                    ix.client_prompt.get_or_insert(o.index);
                    self.client_prompts.insert(w.key());
                }
                (true, "proxy") => {
                    ix.proxy_prompt.get_or_insert(o.index);
                }
                _ => {}
            }
        }
        // The Client's read of the answer on its own connection (from the Agent, or from a
        // proxy between them): the only reader of that (conn, id).
        if let Some(w) = w.filter(|w| !w.sent && w.method.is_none()) {
            if w.frame["result"]["messageId"].is_string() && self.client_prompts.contains(&w.key())
            {
                ix.client_answer.get_or_insert(o.index);
            }
        }
    }

    /// An op of the Agent's own log.
    fn agent_op(&mut self, o: &Op) {
        let (ix, val) = (&mut self.ix, &o.value);
        ix.emitted.insert((process::AGENT.to_string(), o.f.clone()));
        match o.f.as_str() {
            op::RECOVER => {
                let kept = val["retained"].as_object().into_iter().flatten();
                for m in kept.flat_map(|(_, ids)| ids.as_array().into_iter().flatten()) {
                    if let Some(m) = m.as_str() {
                        ix.recovered.insert(m.to_string());
                    }
                }
            }
            op::INSERT => {
                if let Some(m) = val["messageId"].as_str() {
                    ix.inserted.insert(m.to_string());
                }
                self.own_answer.insert(attempt(val));
                if val["mode"] == "held" {
                    ix.held_insert.get_or_insert(o.index);
                }
            }
            op::WAIT_HELD => {
                self.own_answer.insert(attempt(val));
            }
            op::DEDUP_HIT => {
                ix.deduplicated.insert(attempt(val));
            }
            _ => {}
        }
    }

    /// A `session/update` the Agent wrote at op `at` (`u`: its `params.update`).
    fn update(&mut self, at: usize, u: &Value) {
        let ix = &mut self.ix;
        match u["sessionUpdate"].as_str() {
            Some("user_message") if u["messageId"].is_string() => {
                ix.echo.get_or_insert(at);
            }
            Some("state_update") if u["state"] == "running" => {
                ix.running.get_or_insert(at);
            }
            Some("state_update") if u["stopReason"].is_string() => {
                ix.stopped.get_or_insert(at);
            }
            Some("tool_call" | "tool_call_update") if u["status"] == "completed" => {
                ix.tool_done.get_or_insert(at);
            }
            _ => {}
        }
    }

    /// A response the Agent wrote at op `at`.
    fn answer(&mut self, at: usize, w: &WireFrame) {
        let (ix, fr, a) = (&mut self.ix, w.frame, w.key());
        match self.requests.get(&a).map(String::as_str) {
            Some("session/prompt") => {
                if let Some(mid) = fr["result"]["messageId"].as_str() {
                    ix.prompt_ok.push((at, a.clone(), mid.to_string()));
                    let first = self.answered.entry(mid.to_string()).or_insert(a.clone());
                    if *first != a && !self.own_answer.contains(&a) {
                        ix.repeated_answer.get_or_insert(at);
                    }
                } else if fr["error"]["code"] == acp_chaos_models::rpc::code::REQUEST_CANCELLED {
                    ix.prompt_cancelled.get_or_insert(at);
                }
            }
            Some("session/new" | "session/fork" | "session/load" | "session/resume")
                if fr.get("result").is_some() =>
            {
                ix.session_ok.get_or_insert(at);
            }
            _ => {}
        }
    }
}

/// One dependency a party owed and never emitted: which, and the op that shows it owed.
#[derive(Debug, Clone, PartialEq)]
pub struct Missing {
    /// The party that owed it (`agent`, `client`, `proxy`).
    pub party: &'static str,
    /// The effect (with its stand-ins, as the message names them).
    pub effect: String,
    /// Why it was owed.
    pub owed_when: &'static str,
    /// The first op that shows it owed.
    pub witness: usize,
    /// The properties not checked for want of it.
    pub properties: &'static [Property],
}

/// The dependencies the Agent owed in `h` and never emitted, read as the checkers read it (a
/// cluster's nodes and store are one Agent: [`super::agent_view`]). Empty for a history the
/// probe recorded (see the module docs).
pub fn missing(h: &History) -> Vec<Missing> {
    missing_in_view(&Facts::of(&super::agent_view(h)))
}

/// [`missing`] of a history already as the checkers read it ([`super::agent_view`]).
fn missing_in_view(f: &Facts) -> Vec<Missing> {
    if f.history.header["plan"]["probe"].is_object() {
        return Vec::new();
    }
    let ix = Index::of(f);
    DEPENDENCIES
        .iter()
        .filter(|d| {
            !std::iter::once(d.effect)
                .chain(d.or.iter().copied())
                .any(|e| ix.emitted.contains(&(d.party.to_string(), e.to_string())))
        })
        .filter_map(|d| {
            (d.witness)(&ix).map(|w| Missing {
                party: d.party,
                effect: d.named(),
                owed_when: d.owed_when,
                witness: w,
                properties: d.properties,
            })
        })
        .collect()
}

/// The vacuity rule: every verdict whose property rests on an effect a party owed and never
/// emitted ([`missing`]) says so. A valid one becomes unknown, "not checked", witnessed by the
/// ops that show the effects owed. An invalid one becomes unknown too (the effect is named, and
/// what the checker saw is kept in the message, with its witnesses and party), unless it
/// blames the silent party itself on frames alone (`stands`): then it stands and gains a
/// note, as a finding does.
pub fn apply(h: &History, verdicts: &mut [Verdict]) {
    let view = super::agent_view(h);
    apply_to_view(&Facts::of(&view), verdicts)
}

/// [`apply`] to the verdicts of a history already as the checkers read it
/// ([`super::agent_view`]).
pub(super) fn apply_to_view(f: &Facts, verdicts: &mut [Verdict]) {
    let missing = missing_in_view(f);
    if missing.is_empty() {
        return;
    }
    for v in verdicts.iter_mut() {
        let of: Vec<&Missing> = missing
            .iter()
            .filter(|m| m.properties.iter().any(|p| *p == v.property))
            .collect();
        if of.is_empty() {
            continue;
        }
        let why = [process::AGENT, process::CLIENT, process::PROXY]
            .iter()
            .filter_map(|party| {
                let effects: Vec<String> = of
                    .iter()
                    .filter(|m| m.party == *party)
                    .map(|m| format!("{} (owed: {}, op {})", m.effect, m.owed_when, m.witness))
                    .collect();
                (!effects.is_empty()).then(|| {
                    format!(
                        "the {} never emitted {}",
                        party_name(party),
                        effects.join(", nor ")
                    )
                })
            })
            .collect::<Vec<_>>()
            .join("; and ");
        if v.status == Status::Valid {
            v.status = Status::Unknown;
            v.witnesses = of.iter().map(|m| m.witness).collect();
            v.message = format!("not checked: {why} (see the effect contract, docs/effects.md)");
        } else if v.status == Status::Invalid && !stands(v, &of, f) {
            // Another party's missing report leaves the checker unable to say who did what:
            // the blame it put on this party is unfounded, so unknown, naming the effect,
            // with what the checker saw kept in words.
            v.status = Status::Unknown;
            v.message = format!(
                "not checked: {why} (see the effect contract, docs/effects.md); judged without it, the checker saw: {}",
                v.message
            );
        } else {
            v.message = format!(
                "{} (note: {why}, which this property reads: see the effect contract, docs/effects.md)",
                v.message
            );
        }
    }
}

/// A party as the messages name it: `Agent`, `Client`, `proxy`.
fn party_name(party: &str) -> &'static str {
    match party {
        process::CLIENT => "Client",
        process::PROXY => "proxy",
        _ => "Agent",
    }
}

/// Whether the violation `v` stands though a party owed `missing` effects: it blames that
/// silent party itself and every op it cites is a frame (its own wire shows it; its silence
/// excuses nothing). A violation that blames another party, or cites what the silent party's
/// reports would have said (a submission it never acknowledged, a message never inserted),
/// rests on the missing effect.
fn stands(v: &Verdict, missing: &[&Missing], f: &Facts) -> bool {
    let blamed = match v.party {
        Some(acp_chaos_models::Party::Agent) => process::AGENT,
        Some(acp_chaos_models::Party::Client) => process::CLIENT,
        Some(acp_chaos_models::Party::Intermediary) => process::PROXY,
        _ => return false,
    };
    let frames_only = !v.witnesses.is_empty()
        && v.witnesses.iter().all(|i| {
            f.history
                .ops
                .get(*i)
                .is_some_and(|o| o.process == process::NET && (o.f == op::SEND || o.f == op::RECV))
        });
    frames_only && missing.iter().all(|m| m.party == blamed)
}
