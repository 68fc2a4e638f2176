//! Lineage-driven fault injection (after Molly: Alvaro, Rosen and Hellerstein, "Lineage-driven
//! Fault Injection", SIGMOD 2015): reason backwards from a good outcome to the faults that could
//! have prevented it.
//!
//! From a passing run, each good outcome (a submission the Client holds the `messageId` of, one
//! withdrawn by its user's cancel, a request the Client got its answer to) depends on a set of
//! places: the frames of the exchange that produced it, the protocol points the Agent passed
//! while producing it, the Client and the Agent staying up. A fault at one of them cuts that
//! support. Cuts are proposed in the order that most often breaks a retry protocol: first the
//! window between the Agent's durable write and the answer that acknowledges it (a crash
//! there), then the answer itself lost, then the work in front of it, then the request. A cut
//! whose run still ends well showed another derivation of the outcome (a resend on a new
//! connection, an answer from a key record): its support is cut in turn, placed after the
//! first fault in that run, up to `faults` faults. Placements that land in an abstract state
//! and fault already tried are skipped, as in [`super::exhaustive`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use sha2::{Digest, Sha256};

use super::exhaustive::{shapes, trace_plan, Exploration, Explored, Level};
use super::places::{places, Place, Spot};
use super::shrink::Target;
use super::state::states_at;
use crate::checkers;
use crate::history::{is_agent_host, op, process, History};
use crate::models::Point;
use crate::nemesis::{fault_line, FaultKind, FaultSpec, Sender, Side};
use crate::plan::Plan;
use crate::world::{self, Trace};

/// What to try.
#[derive(Debug, Clone)]
pub struct Options {
    /// Most faults per schedule.
    pub faults: usize,
    /// Most schedules run.
    pub budget: usize,
    /// Stop at the first catch.
    pub stop_at_first: bool,
    /// What counts as a catch (`None`: any invalid or unknown verdict).
    pub target: Option<Target>,
}

/// A cut: a fault at a place of an outcome's support, with its rank (lower is tried first).
#[derive(Debug, Clone)]
struct Cut {
    rank: u32,
    /// Which outcome it cuts (its order among the run's outcomes).
    outcome: usize,
    fault: FaultSpec,
    place: Place,
}

/// The rank of a fault at a place of a support: where a retry protocol is weakest first.
fn rank(f: &FaultSpec, spot: &Spot) -> Option<u32> {
    use FaultKind as K;
    let r = match (f.kind, spot) {
        (K::CrashAgent, Spot::Point { point, .. }) => match point {
            Point::AfterSyncBeforeResponse => 0,
            Point::AfterInsertBeforeSync => 1,
            Point::AfterResponseBeforeUpdate => 4,
            Point::WhileHeld => 6,
            Point::DuringHistoryFill => 6,
            Point::AfterReceive => 8,
            Point::AfterStoreWrite => return None,
        },
        (K::CrashStore | K::PartitionStore, Spot::Point { .. }) => 0,
        (
            K::LoseFrame,
            Spot::Frame {
                side: Side::Response,
                ..
            },
        ) => {
            if f.silent {
                3
            } else {
                2
            }
        }
        (
            K::LoseExchange,
            Spot::Frame {
                side: Side::Response,
                ..
            },
        ) => 2,
        (
            K::RestartClient,
            Spot::Frame {
                side: Side::Response,
                ..
            },
        ) => 5,
        // Past the Client's timeout: the Client resends while the frame is on its way, so two
        // attempts of one key meet (a late request after its retry, a cancel naming one of
        // two attempts: A5, A7, A11).
        (K::StallFrame, Spot::Frame { .. }) if f.stall_ms.unwrap_or(0) > 100 => 3,
        (K::StallFrame, Spot::Frame { .. }) => 7,
        (K::TransientError, Spot::Frame { .. }) => 8,
        (
            K::LoseFrame | K::LoseExchange,
            Spot::Frame {
                side: Side::Request,
                ..
            },
        ) => 9,
        (
            K::Partition,
            Spot::Frame {
                side: Side::Response,
                ..
            },
        ) => 10,
        (K::RestartClient, Spot::Submission(_)) => 10,
        (K::CrashAgent, Spot::Submission(_)) => 11,
        (K::CrashProxy, _) => 6,
        _ => return None,
    };
    Some(r)
}

/// The good outcomes of a run and the places each depended on, in the order they came: every
/// acknowledged or withdrawn submission (its attempt's request and answer, and the points the
/// Agent passed between them), then every other Client request that was answered. Each with
/// its kind of derivation ([`OutcomeClass`]).
fn supports(h: &History, trace: &Trace, from: usize) -> Vec<(OutcomeClass, Vec<Place>)> {
    let all: Vec<Place> = places(h, trace)
        .into_iter()
        .filter(|p| p.at >= from)
        .collect();
    // The Agent's reads of prompt attempts: op index → (conn, id).
    let mut prompt_reads: Vec<(usize, (u64, String))> = Vec::new();
    // (conn, id) → submission, and the submissions that ended well with their answer's id.
    let mut attempt_sub: BTreeMap<(u64, String), u64> = BTreeMap::new();
    let mut good: Vec<u64> = Vec::new();
    let mut answered_by: BTreeMap<u64, (u64, String)> = BTreeMap::new();
    let mut other: Vec<usize> = Vec::new();
    let mut commands: BTreeSet<u64> = BTreeSet::new();
    let mut unkeyed: BTreeSet<u64> = BTreeSet::new();
    let mut withdrawn: BTreeSet<u64> = BTreeSet::new();
    for o in &h.ops {
        let v = &o.value;
        match (o.process.as_str(), o.f.as_str()) {
            (process::USER, op::SUBMIT) => {
                if let (Some(n), Some(t)) = (v["submission"].as_u64(), v["text"].as_str()) {
                    if t.starts_with('/') {
                        commands.insert(n);
                    }
                }
            }
            (process::CLIENT, op::ATTEMPT) => {
                if let (Some(c), Some(n)) = (v["conn"].as_u64(), v["submission"].as_u64()) {
                    attempt_sub.insert((c, v["id"].to_string()), n);
                    if v["key"].is_null() {
                        unkeyed.insert(n);
                    }
                }
            }
            // Through a proxy the Agent reads the attempt under a rewritten id: the same one.
            (process::PROXY, op::FORWARD) if v["method"] == "session/prompt" => {
                let up = (v["up_conn"].as_u64().unwrap_or(0), v["up_id"].to_string());
                let down = (
                    v["down_conn"].as_u64().unwrap_or(0),
                    v["down_id"].to_string(),
                );
                if let Some(&n) = attempt_sub.get(&up) {
                    attempt_sub.insert(down, n);
                }
            }
            (process::CLIENT, op::ACK | op::WITHDRAWN) => {
                if let Some(n) = v["submission"].as_u64() {
                    if o.f == op::WITHDRAWN {
                        withdrawn.insert(n);
                    }
                    if !good.contains(&n) {
                        good.push(n);
                    }
                }
            }
            (process::NET, op::RECV)
                if v["from"] == "client" && v["frame"]["method"] == "session/prompt" =>
            {
                prompt_reads.push((
                    o.index,
                    (
                        v["conn"].as_u64().unwrap_or(0),
                        v["frame"]["id"].to_string(),
                    ),
                ));
            }
            (process::NET, op::SEND)
                if v["from"].as_str().is_some_and(is_agent_host)
                    && v["frame"].get("method").is_none() =>
            {
                let k = (
                    v["conn"].as_u64().unwrap_or(0),
                    v["frame"]["id"].to_string(),
                );
                if let Some(&n) = attempt_sub.get(&k) {
                    answered_by.insert(n, k);
                } else if o.index >= from {
                    other.push(o.index);
                }
            }
            _ => {}
        }
    }
    // Which attempt each point pass served: the latest prompt the Agent read before it.
    let attempt_of_pass = |at: usize| -> Option<&(u64, String)> {
        prompt_reads
            .iter()
            .rev()
            .find(|(r, _)| *r <= at)
            .map(|(_, k)| k)
    };
    let mut out = Vec::new();
    for n in good {
        let attempt = answered_by.get(&n);
        let mut support: Vec<Place> = Vec::new();
        for p in &all {
            let keep = match &p.spot {
                Spot::Frame {
                    by: Sender::Client,
                    submission: Some(s),
                    ..
                } => *s == n,
                Spot::Point { .. } => attempt.is_some() && attempt_of_pass(p.at) == attempt,
                Spot::Submission(s) => *s == n,
                // The cancels of a withdrawn submission, and its Agent's answers.
                Spot::Frame {
                    by: Sender::Client,
                    method,
                    ..
                } => method == "$/cancel_request" || method == "session/cancel",
                _ => false,
            };
            if keep {
                support.push(p.clone());
            }
        }
        let class = if withdrawn.contains(&n) {
            OutcomeClass::Withdrawn
        } else if commands.contains(&n) {
            OutcomeClass::Command
        } else if unkeyed.contains(&n) {
            OutcomeClass::Unkeyed
        } else {
            OutcomeClass::Keyed
        };
        out.push((class, support));
    }
    // Every other answered request: its answer.
    for idx in other {
        let support: Vec<Place> = all
            .iter()
            .filter(|p| {
                p.at == idx
                    && matches!(
                        p.spot,
                        Spot::Frame {
                            side: Side::Response,
                            ..
                        }
                    )
            })
            .cloned()
            .collect();
        if !support.is_empty() {
            out.push((OutcomeClass::Other, support));
        }
    }
    out
}

/// The kind of derivation a good outcome had: a keyed prompt acknowledged, an unkeyed one, a
/// command the Agent answered itself, a submission its user withdrew, another request. Cuts go
/// round the kinds (every cut of the first outcome of each kind, then of the second, ...): the
/// outcomes of one kind mostly share a derivation, so a trace with one command and nine
/// prompts has its command cut early, not after nine prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum OutcomeClass {
    Keyed,
    Command,
    Unkeyed,
    Withdrawn,
    Other,
}

/// The cuts of a run's outcomes, best first: round-robin over the kinds of outcome
/// ([`OutcomeClass`]: the first outcome of each kind before the second of any), then by rank,
/// then outcome, then time.
fn cuts(h: &History, trace: &Trace, plan: &Plan, from: usize) -> Vec<Cut> {
    let kinds = super::exhaustive::default_kinds(plan);
    let mut out = Vec::new();
    let mut seen: BTreeMap<OutcomeClass, usize> = BTreeMap::new();
    for (i, (class, support)) in supports(h, trace, from).into_iter().enumerate() {
        let nth = seen.entry(class).or_default();
        *nth += 1;
        for p in support {
            for f in shapes(&p, plan, &kinds) {
                if let Some(rank) = rank(&f, &p.spot) {
                    out.push((
                        *nth,
                        Cut {
                            rank,
                            outcome: i,
                            fault: f,
                            place: p.clone(),
                        },
                    ));
                }
            }
        }
    }
    out.sort_by_key(|(nth, c)| (*nth, c.rank, c.outcome, c.place.at));
    out.into_iter().map(|(_, c)| c).collect()
}

/// Try `plan`'s trace's cuts (see the module doc) until `opts.budget` schedules ran, every
/// support was cut up to `opts.faults` faults, or (with `stop_at_first`) a run failed.
pub fn lineage(plan: &Plan, opts: &Options) -> Exploration {
    let base = trace_plan(plan);
    let (h0, t0) = world::run_traced(&base);
    let v0 = checkers::check_all(&h0);
    let mut levels = vec![Level {
        explored: 1,
        ..Level::default()
    }];
    let first = Explored {
        plan: base.clone(),
        id: "0.0".into(),
        verdicts: v0,
        hash: h0.hash(),
    };
    let mut violations = Vec::new();
    let mut first_catch = first.catches(opts.target.as_ref()).then_some(1);
    if first.failed() {
        violations.push(first);
    }
    // (plan, its run, the op from which its next fault may land), by level.
    let mut queue: VecDeque<(Plan, History, Trace, usize)> = VecDeque::new();
    queue.push_back((base.clone(), h0, t0, 0));
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut runs = 1usize;
    let mut order = Vec::new();
    'levels: for k in 1..=opts.faults {
        let mut level = Level {
            faults: k,
            ..Level::default()
        };
        let mut next = VecDeque::new();
        while let Some((parent, h, t, from)) = queue.pop_front() {
            let cs = cuts(&h, &t, &parent, from);
            level.places += cs.len();
            let at: BTreeSet<usize> = cs.iter().map(|c| c.place.at).collect();
            let states = states_at(&h, &at);
            for c in cs {
                let key = format!(
                    "{}#{}#{:?}",
                    states[&c.place.at],
                    fault_line(&FaultSpec {
                        on: Default::default(),
                        ..c.fault.clone()
                    }),
                    c.place.spot
                );
                if !seen.insert(key) {
                    level.pruned += 1;
                    continue;
                }
                if runs >= opts.budget {
                    levels.push(level);
                    break 'levels;
                }
                let mut child = parent.clone();
                child.faults.push(c.fault.clone());
                let (h2, t2) = world::run_traced(&child);
                runs += 1;
                level.explored += 1;
                order.push(child.faults.iter().map(fault_line).collect::<Vec<_>>());
                let i = child.faults.len() - 1;
                let Some(fired) = h2.ops.iter().find(|o| {
                    o.process == process::NEMESIS && o.value["fault"].as_u64() == Some(i as u64)
                }) else {
                    level.not_fired += 1;
                    continue;
                };
                let fired = fired.index;
                let verdicts = checkers::check_all(&h2);
                let e = Explored {
                    plan: child.clone(),
                    id: format!("{k}.{}", level.explored - 1),
                    verdicts,
                    hash: h2.hash(),
                };
                let caught = e.catches(opts.target.as_ref());
                if caught && first_catch.is_none() {
                    first_catch = Some(runs);
                }
                if e.failed() {
                    violations.push(e);
                    if caught && opts.stop_at_first {
                        levels.push(level);
                        break 'levels;
                    }
                    continue;
                }
                next.push_back((child, h2, t2, fired + 1));
            }
        }
        levels.push(level);
        queue = next;
    }
    let mut order_hash = Sha256::new();
    for o in &order {
        order_hash.update(o.join(";").as_bytes());
        order_hash.update(b"\n");
    }
    let digest = order_hash.finalize();
    Exploration {
        base,
        kinds: super::exhaustive::default_kinds(plan),
        levels,
        violations,
        order_hash: digest.iter().take(8).map(|b| format!("{b:02x}")).collect(),
        runs,
        audited: 0,
        mismatches: Vec::new(),
        first_catch,
    }
}

/// The first cut lineage proposes for a plan's trace, as a fault line (for tests and docs).
pub fn first_cut(plan: &Plan) -> Option<String> {
    let base = trace_plan(plan);
    let (h, t) = world::run_traced(&base);
    cuts(&h, &t, &base, 0).first().map(|c| fault_line(&c.fault))
}
