//! Lineage-driven fault injection (after Molly: Alvaro, Rosen and Hellerstein, "Lineage-driven
//! Fault Injection", SIGMOD 2015): reason backwards from a good outcome to the faults that could
//! have prevented it.
//!
//! From a passing run, each good outcome (a submission the Client holds the `messageId` of, one
//! withdrawn by its user's cancel, a request the Client got its answer to) depends on a set of
//! places: the frames of the exchange that produced it, the protocol points the Agent passed
//! while producing it, its connection staying up while an attempt of it was alive (sent and not
//! yet answered), the Client and the Agent staying up. A fault at one of them cuts that
//! support. Cuts are proposed outcome by outcome in the order that most often breaks a retry
//! protocol: first the window between the Agent's durable write and the answer that
//! acknowledges it (a crash there, a cluster's store down while another prompt arrives, or the
//! Client restarted to come back just before its user's cancel, stop or close while an attempt
//! that op withdraws lives on: each cuts two supports at once), then the answer itself lost,
//! then the work in front of it and a break of the connection while an attempt is alive (the
//! Client resends while the first attempt lives on: A7, A12, A13), then the request. A cut
//! whose run still ends well showed another derivation of the outcome (a resend on a new
//! connection, an answer from a key record): its support is cut in turn, placed after the
//! first fault in that run, up to `faults` faults. Placements that land in an abstract state
//! and fault already tried are skipped, as in [`super::exhaustive`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use sha2::{Digest, Sha256};

use super::exhaustive::{shape_family, shapes, trace_plan, Exploration, Explored, Level};
use super::places::{places, Place, Spot};
use super::shrink::Target;
use super::state::{placement_class, states_at};
use crate::checkers;
use crate::history::{is_agent_host, op, process, History, Op};
use crate::models::{HeldOnDisconnect, Point};
use crate::nemesis::kinds::{Effect, OnCluster};
use crate::nemesis::{fault_line, FaultKind, FaultSpec, Reach, Sender, Side, Trigger};
use crate::plan::Plan;
use crate::world::{self, Parties, Trace};

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
    /// A frame on the connection of an attempt the Agent was working on.
    live: bool,
    /// Which outcome it cuts (its order among the run's outcomes).
    outcome: usize,
    fault: FaultSpec,
    place: Place,
}

/// Whether an op is an Agent host waiting: a prompt held, a store op sent again.
fn is_wait(o: &Op) -> bool {
    is_agent_host(&o.process) && (o.f == op::HOLD || o.f == op::STORE_RETRY)
}

/// How often an Agent host of `h` waited (held a prompt, sent a store op again) from op
/// `from` on.
fn waits(h: &History, from: usize) -> usize {
    h.ops[from.min(h.ops.len())..]
        .iter()
        .filter(|o| is_wait(o))
        .count()
}

/// The connection a frame place of `h` was written on.
fn frame_conn(h: &History, at: usize) -> Option<u64> {
    let o = h.ops.get(at)?;
    let d = if o.process == process::NET {
        &o.value
    } else {
        &o.value["detail"]
    };
    d["conn"].as_u64()
}

/// Whether a fault breaks the connection at its frame for the Client at least (a visible
/// loss, or a half-open one).
fn breaks(f: &FaultSpec) -> bool {
    match f.kind.effect() {
        Effect::Break => !f.silent,
        Effect::HalfOpen => true,
        _ => false,
    }
}

/// The rank of an Agent crash at a point of its own (see [`rank`]): between its sync and its
/// response first, where a lost answer meets a kept insertion.
fn crash_rank(point: Point) -> Option<u32> {
    Some(match point {
        Point::AfterSyncBeforeResponse => 0,
        Point::AfterInsertBeforeSync => 1,
        Point::AfterResponseBeforeUpdate => 4,
        Point::WhileHeld => 6,
        Point::DuringHistoryFill => 6,
        Point::AfterReceive => 8,
        Point::AfterStoreWrite => return None,
    })
}

/// The rank of a fault at a place of a support: where a retry protocol is weakest first.
/// `live`: the place is a frame on the connection of an attempt the Agent has read and not
/// yet answered (held, waiting on its store, working).
fn rank(f: &FaultSpec, spot: &Spot, live: bool) -> Option<u32> {
    // By what the fault does (its effect), so a kind that does what another does ranks alike.
    use Effect as E;
    let r = match (f.kind.effect(), spot) {
        // The connection breaks while the Agent still works on an attempt: the Client resends
        // on a new connection (another node of a cluster) while the first attempt is alive,
        // so two attempts of one key meet inside the Agent (A7, A12, A13).
        (E::Break, Spot::Frame { .. }) if live && !f.silent => 4,
        // The same break seen by the Client only: its retry reaches the Agent while the Agent
        // still counts the first connection open, and the first attempt's end comes after the
        // retry began to wait for it (A7 under O1 `drop`).
        (E::HalfOpen, Spot::Frame { .. }) if live => 4,
        // While the Agent holds the attempt (its only place when no frame crosses its
        // connection meanwhile): every Client connection breaks for the Client only.
        (E::HalfOpen, Spot::Point { .. }) => 4,
        // A node decided to insert and its write is cut from the store: a resend through
        // another node decides again meanwhile (A4, A13: insert-if-absent must be one step).
        (
            E::PartitionStore,
            Spot::Point {
                point: Point::AfterInsertBeforeSync,
                ..
            },
        ) => 1,
        (E::CRASH_AGENT, Spot::Point { point, .. }) => return crash_rank(*point),
        // A store down while another attempt comes in (`live`): two outcomes' supports cut
        // at once, the second attempt waiting on the store while its Client can resend.
        (E::CRASH_STORE | E::PartitionStore, Spot::Point { .. }) if live => 0,
        (E::CRASH_STORE | E::PartitionStore, Spot::Point { .. }) => 6,
        (
            E::Break,
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
            E::LoseExchange,
            Spot::Frame {
                side: Side::Response,
                ..
            },
        ) => 2,
        (
            E::RESTART_CLIENT,
            Spot::Frame {
                side: Side::Response,
                ..
            },
        ) => 5,
        // Past the Client's timeout: the Client resends while the frame is on its way, so two
        // attempts of one key meet (a late request after its retry, a cancel naming one of
        // two attempts: A5, A7, A11).
        (E::Stall, Spot::Frame { .. }) if f.stall_ms.unwrap_or(0) > 100 => 3,
        (E::Stall, Spot::Frame { .. }) => 7,
        (E::RejectPrompt, Spot::Frame { .. }) => 8,
        (
            E::Break | E::LoseExchange,
            Spot::Frame {
                side: Side::Request,
                ..
            },
        ) => 9,
        (
            E::Partition,
            Spot::Frame {
                side: Side::Response,
                ..
            },
        ) => 10,
        (E::RESTART_CLIENT, Spot::Submission(_)) => 10,
        (E::CRASH_AGENT, Spot::Submission(_)) => 11,
        (E::CRASH_PROXY, _) => 6,
        // Not a cause lineage follows up (each effect named: a new one must choose).
        (
            E::Break
            | E::HalfOpen
            | E::LoseExchange
            | E::KillUpdates
            | E::Stall
            | E::Reorder
            | E::RejectPrompt
            | E::Crash { .. }
            | E::Partition
            | E::PartitionOneway
            | E::Hold
            | E::PartitionStore
            | E::Pause,
            _,
        ) => return None,
    };
    Some(r)
}

/// One place of a support: whether the outcome's own exchange or points hold it (`own`), and
/// whether it is a frame on the connection of one of its attempts while that was alive
/// (`live`).
struct Supporting {
    place: Place,
    own: bool,
    live: bool,
}

/// The good outcomes of a run and the places each depended on, in the order they came: every
/// acknowledged or withdrawn submission (its attempt's request and answer, and the points the
/// Agent passed between them), then every other Client request that was answered. Each with
/// its kind of derivation ([`OutcomeClass`]).
fn supports(h: &History, trace: &Trace, from: usize) -> Vec<(OutcomeClass, Vec<Supporting>)> {
    let all: Vec<Place> = places(h, trace)
        .into_iter()
        .filter(|p| p.at >= from)
        .collect();
    let x = Exchanges::read(h, from);
    let mut out: Vec<_> = x.good.iter().map(|&n| support_of(h, &x, &all, n)).collect();
    // Every other answered request: its answer.
    for &idx in &x.other {
        let support: Vec<Supporting> = all
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
            .map(|p| Supporting {
                place: p.clone(),
                own: true,
                live: false,
            })
            .collect();
        if !support.is_empty() {
            out.push((OutcomeClass::Other, support));
        }
    }
    out
}

/// What one pass over a run's ops tells [`supports`] about its submissions and answers.
#[derive(Default)]
struct Exchanges {
    /// The Agent's reads of prompt attempts: op index → (conn, id).
    prompt_reads: Vec<(usize, (u64, String))>,
    /// (conn, id) → submission, and the submissions that ended well with their answer's id.
    attempt_sub: BTreeMap<(u64, String), u64>,
    good: Vec<u64>,
    answered_by: BTreeMap<u64, (u64, String)>,
    other: Vec<usize>,
    commands: BTreeSet<u64>,
    unkeyed: BTreeSet<u64>,
    withdrawn: BTreeSet<u64>,
    /// Submissions an attempt of which the Agent held behind a running turn (O4 `hold`).
    held: BTreeSet<u64>,
    /// (conn, id) of an attempt → the op its first answer was written at.
    answer_at: BTreeMap<(u64, String), usize>,
    /// (conn, id) of a prompt attempt → the op the Client wrote it at.
    client_sent: BTreeMap<(u64, String), usize>,
}

impl Exchanges {
    /// Read the ops of `h` once; answers to requests other than prompts count from op `from`.
    fn read(h: &History, from: usize) -> Exchanges {
        let mut x = Exchanges::default();
        for o in &h.ops {
            let v = &o.value;
            // An answer written to the Client (by the Agent or a proxy): it ends its request's
            // window.
            if o.process == process::NET
                && o.f == op::SEND
                && v["from"] != "client"
                && v["frame"].get("method").is_none()
            {
                let k = (
                    v["conn"].as_u64().unwrap_or(0),
                    v["frame"]["id"].to_string(),
                );
                x.answer_at.entry(k).or_insert(o.index);
            }
            match (o.process.as_str(), o.f.as_str()) {
                (process::USER, op::SUBMIT) => {
                    if let (Some(n), Some(t)) = (v["submission"].as_u64(), v["text"].as_str()) {
                        if t.starts_with('/') {
                            x.commands.insert(n);
                        }
                    }
                }
                (process::CLIENT, op::ATTEMPT) => {
                    if let (Some(c), Some(n)) = (v["conn"].as_u64(), v["submission"].as_u64()) {
                        x.attempt_sub.insert((c, v["id"].to_string()), n);
                        if v["key"].is_null() {
                            x.unkeyed.insert(n);
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
                    if let Some(&n) = x.attempt_sub.get(&up) {
                        x.attempt_sub.insert(down, n);
                    }
                }
                (process::CLIENT, op::ACK | op::WITHDRAWN) => {
                    if let Some(n) = v["submission"].as_u64() {
                        if o.f == op::WITHDRAWN {
                            x.withdrawn.insert(n);
                        }
                        if !x.good.contains(&n) {
                            x.good.push(n);
                        }
                    }
                }
                (p, op::HOLD) if is_agent_host(p) => {
                    let k = (v["conn"].as_u64().unwrap_or(0), v["id"].to_string());
                    if let Some(&n) = x.attempt_sub.get(&k) {
                        x.held.insert(n);
                    }
                }
                (process::NET, op::RECV)
                    if v["from"] == "client" && v["frame"]["method"] == "session/prompt" =>
                {
                    x.prompt_reads.push((
                        o.index,
                        (
                            v["conn"].as_u64().unwrap_or(0),
                            v["frame"]["id"].to_string(),
                        ),
                    ));
                }
                (process::NET, op::SEND)
                    if v["from"] == "client" && v["frame"]["method"] == "session/prompt" =>
                {
                    let k = (
                        v["conn"].as_u64().unwrap_or(0),
                        v["frame"]["id"].to_string(),
                    );
                    x.client_sent.entry(k).or_insert(o.index);
                }
                (process::NET, op::SEND)
                    if v["from"].as_str().is_some_and(is_agent_host)
                        && v["frame"].get("method").is_none() =>
                {
                    let k = (
                        v["conn"].as_u64().unwrap_or(0),
                        v["frame"]["id"].to_string(),
                    );
                    if let Some(&n) = x.attempt_sub.get(&k) {
                        x.answered_by.insert(n, k);
                    } else if o.index >= from {
                        x.other.push(o.index);
                    }
                }
                _ => {}
            }
        }
        x
    }
}

/// The support of good submission `n`: its own places (its attempt's frames, the points the
/// Agent passed serving it, its submission, its cancels) and every frame on one of its
/// attempts' connections while that attempt was alive; with its kind of derivation.
fn support_of(
    h: &History,
    x: &Exchanges,
    all: &[Place],
    n: u64,
) -> (OutcomeClass, Vec<Supporting>) {
    // Which attempt each point pass served: the latest prompt the Agent read before it.
    let attempt_of_pass = |at: usize| -> Option<&(u64, String)> {
        x.prompt_reads
            .iter()
            .rev()
            .find(|(r, _)| *r <= at)
            .map(|(_, k)| k)
    };
    // The connection a frame place was written on.
    let conn_of = |p: &Place| -> Option<u64> {
        let o = h.ops.get(p.at)?;
        let d = if o.process == process::NET {
            &o.value
        } else {
            &o.value["detail"]
        };
        d["conn"].as_u64()
    };
    let attempt = x.answered_by.get(&n);
    // While an attempt of the submission is alive (sent, not yet answered: on its way,
    // held, waiting on a store, working), its answer depends on its connection staying
    // up: every frame on that connection in that window is support, and a break there
    // makes the Client resend while the attempt lives on.
    let windows: Vec<(u64, usize, usize)> = x
        .attempt_sub
        .iter()
        .filter(|(_, &s)| s == n)
        .filter_map(|(k, _)| {
            let start = x
                .client_sent
                .get(k)
                .copied()
                .or_else(|| x.prompt_reads.iter().find(|(_, r)| r == k).map(|r| r.0))?;
            Some((
                k.0,
                start,
                x.answer_at.get(k).copied().unwrap_or(usize::MAX),
            ))
        })
        .collect();
    let live = |p: &Place| {
        matches!(p.spot, Spot::Frame { .. })
            && windows
                .iter()
                .any(|&(c, r, a)| r < p.at && p.at < a && conn_of(p) == Some(c))
    };
    let mut support: Vec<Supporting> = Vec::new();
    for p in all {
        let own = match &p.spot {
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
        let live = live(p);
        if own || live {
            support.push(Supporting {
                place: p.clone(),
                own,
                live,
            });
        }
    }
    let class = if x.withdrawn.contains(&n) {
        OutcomeClass::Withdrawn
    } else if x.commands.contains(&n) {
        OutcomeClass::Command
    } else if x.held.contains(&n) {
        OutcomeClass::Held
    } else if x.unkeyed.contains(&n) {
        OutcomeClass::Unkeyed
    } else {
        OutcomeClass::Keyed
    };
    (class, support)
}

/// The kind of derivation a good outcome had: a keyed prompt acknowledged, one held behind a
/// running turn first, an unkeyed one, a command the Agent answered itself, a submission its
/// user withdrew, another request. Cuts go
/// round the kinds (every cut of the first outcome of each kind, then of the second, ...): the
/// outcomes of one kind mostly share a derivation, so a trace with one command and nine
/// prompts has its command cut early, not after nine prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum OutcomeClass {
    Keyed,
    /// A prompt the Agent held behind a running turn and inserted when the turn ended (A7):
    /// its derivation goes through the hold, whose connection's end decides it (O1).
    Held,
    Command,
    Unkeyed,
    Withdrawn,
    Other,
}

/// The cuts of a run's outcomes, best first: round-robin over the kinds of outcome
/// ([`OutcomeClass`]: the first outcome of each kind before the second of any), then by rank,
/// then outcome, then time.
fn cuts(h: &History, trace: &Trace, plan: &Plan, from: usize) -> Vec<Cut> {
    let mut kinds = super::exhaustive::default_kinds(plan);
    // Where the Agent drops a held prompt when its connection ends (O1 `drop`), when that
    // end reaches it decides what happens to a retry already waiting for the prompt: a
    // half-open break moves the end past the retry. (Elsewhere a connection's end does
    // nothing a visible break does not already show.)
    if plan.agent.o1 == HeldOnDisconnect::Drop {
        kinds.push(FaultKind::HalfOpen);
    }
    // When the Agent read each prompt attempt (simulated ms).
    let prompt_read_ms: Vec<u64> = h
        .ops
        .iter()
        .filter(|o| {
            o.process == process::NET
                && o.f == op::RECV
                && o.value["from"] == "client"
                && o.value["frame"]["method"] == "session/prompt"
        })
        .map(|o| o.time_ms)
        .collect();
    let mut out = Vec::new();
    let mut seen: BTreeMap<OutcomeClass, usize> = BTreeMap::new();
    for (i, (class, support)) in supports(h, trace, from).into_iter().enumerate() {
        let nth = seen.entry(class).or_default();
        *nth += 1;
        for Supporting {
            place: p,
            own,
            live,
        } in support
        {
            for (f, splits) in shapes(&p, plan, &kinds)
                .into_iter()
                .chain(store_cut_before_write(&p, plan, &kinds))
                .flat_map(|f| {
                    let (timed, splits) = restarts_timed_to_user(&f, &p, h, plan);
                    std::iter::once((f, false)).chain(timed.into_iter().map(move |g| (g, splits)))
                })
            {
                // A frame held only for its connection: only breaking that connection cuts it.
                if !own && !breaks(&f) {
                    continue;
                }
                // A store fault is live when a prompt reaches the Agent while the store is
                // down (before it heals or restarts).
                let live = match f.kind.reach() {
                    Reach::Store => {
                        let t = h.ops.get(p.at).map_or(0, |o| o.time_ms);
                        let down = f.heal_after_ms.or(f.restart_after_ms).unwrap_or(0);
                        prompt_read_ms.iter().any(|&r| t < r && r <= t + down)
                    }
                    Reach::Everywhere
                    | Reach::Proxy
                    | Reach::Remote
                    | Reach::Log
                    | Reach::Socket => live,
                };
                // A restart timed to the user's op that splits it from the attempt it withdraws
                // cuts two supports at once: first, like a store down while a prompt arrives.
                if let Some(rank) = rank(&f, &p.spot, live).map(|r| if splits { 0 } else { r }) {
                    out.push((
                        *nth,
                        Cut {
                            rank,
                            live,
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

/// Restart-client shape `f` at place `p` again, timed to the user's next cancel, stop or close
/// after `p` in run `h`, where the fixed restart lands on the wrong side of it: the Client back
/// halfway to the op (resumed before it; on a cluster, on another node, so a stop reaches that
/// node only while a prompt stays held on the first), and back 1 ms
/// before it (the op lands while the Client resumes, before it resends what it had pending).
/// On a cluster of two nodes or more both carry `reroute`. None when no user op follows, or a
/// duration would be under 1 ms or the shape's own.
///
/// Also whether they split the user's op from an attempt it withdraws: a prompt the Client had
/// sent by `p` is still unanswered when the op comes, so the restarted Client sends the op on a
/// new connection (another node) while that attempt lives on the old one. Such a restart cuts
/// two supports at once (the attempt's connection and the op's way to it) and ranks first in
/// [`cuts`]; the fixed 50 ms restart it refines lands after the op and keeps its rank.
fn restarts_timed_to_user(
    f: &FaultSpec,
    p: &Place,
    h: &History,
    plan: &Plan,
) -> (Vec<FaultSpec>, bool) {
    if f.kind.effect() != Effect::RESTART_CLIENT {
        return (Vec::new(), false);
    }
    let Some(at) = h.ops.get(p.at).map(|o| o.time_ms) else {
        return (Vec::new(), false);
    };
    let next = h.ops.iter().find(|o| {
        o.process == process::USER
            && matches!(o.f.as_str(), op::CANCEL | op::STOP | op::CLOSE)
            && o.time_ms > at
    });
    let Some(next) = next else {
        return (Vec::new(), false);
    };
    let gap = next.time_ms - at;
    let splits = unanswered_prompts(h, next.index, next.index)
        .iter()
        .any(|&(_, sent)| sent <= p.at);
    let mut out: Vec<FaultSpec> = Vec::new();
    for ms in [gap / 2, gap.saturating_sub(1)] {
        if ms < 1
            || Some(ms) == f.restart_after_ms
            || out.iter().any(|g| g.restart_after_ms == Some(ms))
        {
            continue;
        }
        let mut g = f.clone();
        g.restart_after_ms = Some(ms);
        // On two nodes or more the Client comes back on another node: the routing stream
        // alone may send it back to the first.
        g.reroute |= plan.cluster() && plan.nodes >= 2;
        out.push(g);
    }
    (out, splits)
}

/// On a cluster of two nodes or more, the first of `kinds` placed at this point only on a
/// cluster ([`crate::nemesis::kinds::Placed::cluster_points`]), in its default shape: the
/// store cut from the node that passed `after-insert-before-sync` (heals after 100 ms), which
/// has decided to insert and whose write waits. (Exhaustive exploration places it long too.)
fn store_cut_before_write(p: &Place, plan: &Plan, kinds: &[FaultKind]) -> Option<FaultSpec> {
    let Spot::Point { point, .. } = &p.spot else {
        return None;
    };
    if !(plan.cluster() && plan.nodes >= 2) {
        return None;
    }
    let k = kinds
        .iter()
        .find(|k| k.row().explore.placed.cluster_points.contains(point))?;
    Some(FaultSpec::placed(*k, p.on.clone()))
}

/// A run proposed by a cut, and what came of it.
enum Tried {
    /// Its abstract state and fault were tried already.
    Pruned,
    /// The budget is spent.
    Spent,
    /// Its fault never fired, or the run failed (and the search goes on).
    Done,
    /// A catch, with `stop_at_first`.
    Stop,
    /// The run passed: its plan, run, and the op after its fault fired.
    Passed(Box<(Plan, History, Trace, usize)>),
}

/// The state of one lineage search.
struct Search<'a> {
    opts: &'a Options,
    /// The parties every run is made with.
    parties: &'a Parties,
    /// Level 0 is the trace; level k has k faults.
    levels: Vec<Level>,
    seen: BTreeSet<String>,
    runs: usize,
    order: Vec<Vec<String>>,
    violations: Vec<Explored>,
    first_catch: Option<usize>,
    caught: Option<Explored>,
    /// Every shape tried (run or pruned), by family ([`shape_family`]).
    shapes: BTreeMap<String, usize>,
}

impl Search<'_> {
    /// The counts of level `k` (`k` faults), made when first needed.
    fn level(&mut self, k: usize) -> &mut Level {
        if self.levels.len() <= k {
            let from = self.levels.len();
            self.levels.resize_with(k + 1, Level::default);
            for (i, l) in self.levels.iter_mut().enumerate().skip(from) {
                l.faults = i;
            }
        }
        &mut self.levels[k]
    }

    /// The follow-up breaks of a window `child`'s run `h` opened at op `fired` ([`follow_ups`]),
    /// each as it is, then with the window held open past the break ([`widen`]), as level-`k`
    /// schedules: the runs that passed, or `None` when the budget is spent or a catch stops the
    /// search.
    fn follow(
        &mut self,
        k: usize,
        child: &Plan,
        h: &History,
        t: &Trace,
        fired: usize,
    ) -> Option<Vec<(Plan, History, Trace, usize)>> {
        let follow = follow_ups(h, t, child, fired);
        let at: BTreeSet<usize> = follow.iter().map(|c| c.place.at).collect();
        let states = states_at(h, &at);
        let mut passed = Vec::new();
        for f in follow {
            let held = widen(child, h, fired - 1, f.place.at);
            let parents = if held.faults == child.faults {
                vec![child]
            } else {
                vec![child, &held]
            };
            for (i, p) in parents.into_iter().enumerate() {
                // The held variant is another schedule from the same state.
                let tag = if i == 0 { "" } else { "#held" };
                let state = format!("{}{tag}", states[&f.place.at]);
                match self.try_cut(k, p, &f, &state) {
                    Tried::Spent | Tried::Stop => return None,
                    Tried::Passed(run) => passed.push(*run),
                    _ => {}
                }
            }
        }
        Some(passed)
    }

    /// Run `parent` plus the cut's fault as a level-`k` schedule, unless its abstract state
    /// (`state`) and fault were tried already.
    fn try_cut(&mut self, k: usize, parent: &Plan, c: &Cut, state: &str) -> Tried {
        let shape = format!(
            "{}#{:?}",
            fault_line(&FaultSpec {
                on: Trigger::at_time(0),
                ..c.fault.clone()
            }),
            c.place.spot
        );
        *self
            .shapes
            .entry(shape_family(&c.fault, &c.place.spot))
            .or_default() += 1;
        let class = placement_class(state, c.place.state, &shape);
        let pruned = class.as_ref().is_some_and(|k| self.seen.contains(k));
        if !pruned && self.runs >= self.opts.budget {
            return Tried::Spent;
        }
        if pruned {
            self.level(k).pruned += 1;
            return Tried::Pruned;
        }
        if let Some(class) = class {
            self.seen.insert(class);
        }
        let mut child = parent.clone();
        child.faults.push(c.fault.clone());
        let (h2, t2) = world::Run::new(&child)
            .parties(self.parties)
            .snapshots()
            .traced();
        self.runs += 1;
        let level = self.level(k);
        level.explored += 1;
        let id = format!("{k}.{}", level.explored - 1);
        self.order
            .push(child.faults.iter().map(fault_line).collect::<Vec<_>>());
        let i = child.faults.len() - 1;
        let Some(fired) = h2
            .ops
            .iter()
            .find(|o| o.process == process::NEMESIS && o.value["fault"].as_u64() == Some(i as u64))
        else {
            self.level(k).not_fired += 1;
            return Tried::Done;
        };
        let fired = fired.index;
        let e = Explored {
            plan: child.clone(),
            id,
            verdicts: checkers::check_all(&h2),
            hash: h2.hash(),
        };
        let caught = e.catches(self.opts.target.as_ref());
        if caught && self.first_catch.is_none() {
            self.first_catch = Some(self.runs);
            self.caught = Some(e.clone());
        }
        if e.failed() {
            self.violations.push(e);
            return if caught && self.opts.stop_at_first {
                Tried::Stop
            } else {
                Tried::Done
            };
        }
        Tried::Passed(Box::new((child, h2, t2, fired + 1)))
    }
}

/// Most connection breaks tried at once inside a window a cut opened (see [`lineage`]).
const FOLLOW_UPS: usize = 2;

/// Prompts the Client wrote up to op `end` that had no answer before op `from`, as
/// (connection, op index): they wait at (or are on their way to) a node that waits.
fn unanswered_prompts(h: &History, from: usize, end: usize) -> Vec<(u64, usize)> {
    if h.ops.is_empty() {
        return Vec::new();
    }
    let frame_of = |o: &Op| {
        Some((
            o.value["conn"].as_u64()?,
            o.value["frame"]["id"].to_string(),
        ))
    };
    let net_send = |o: &&Op| o.process == process::NET && o.f == op::SEND;
    let answered: BTreeSet<(u64, String)> = h.ops[..from.min(h.ops.len())]
        .iter()
        .filter(net_send)
        .filter(|o| o.value["from"] != "client" && o.value["frame"].get("method").is_none())
        .filter_map(frame_of)
        .collect();
    h.ops[..=end.min(h.ops.len() - 1)]
        .iter()
        .filter(net_send)
        .filter(|o| o.value["from"] == "client" && o.value["frame"]["method"] == "session/prompt")
        .filter(|o| frame_of(o).is_some_and(|k| !answered.contains(&k)))
        .filter_map(|o| Some((o.value["conn"].as_u64()?, o.index)))
        .collect()
}

/// The connection breaks tried at once in a window a cut opened (a run whose Agent waits from
/// op `from` on), at most [`FOLLOW_UPS`]: first the earliest frames, on its connection, after a
/// prompt still unanswered when the wait began (the break makes the Client resend it elsewhere
/// while the first copy lives on), then frames on the connection of an attempt alive in the
/// window. Each carries `reroute`: the routing stream alone may send the resend back to the
/// node that holds the key.
fn follow_ups(h: &History, t: &Trace, p: &Plan, from: usize) -> Vec<Cut> {
    let end = h.ops[from.min(h.ops.len())..]
        .iter()
        .rev()
        .find(|o| is_wait(o))
        .map_or(from, |o| o.index);
    let sent = unanswered_prompts(h, from, end);
    let all: Vec<Cut> = cuts(h, t, p, from)
        .into_iter()
        // Visible breaks only: a follow-up moves the Client with `reroute`, which a
        // half-open break does not take.
        .filter(|c| c.fault.kind.effect() == Effect::Break && breaks(&c.fault))
        .collect();
    let mut after: Vec<&Cut> = all
        .iter()
        .filter(|c| {
            let conn = frame_conn(h, c.place.at);
            sent.iter()
                .any(|&(sc, si)| conn == Some(sc) && si < c.place.at)
        })
        .collect();
    after.sort_by_key(|c| c.place.at);
    let mut out: Vec<Cut> = Vec::new();
    for c in after.into_iter().chain(all.iter().filter(|c| c.live)) {
        if out.len() == FOLLOW_UPS {
            break;
        }
        if out.iter().any(|o| o.place.at == c.place.at) {
            continue;
        }
        let mut c = c.clone();
        c.fault.reroute = true;
        out.push(c);
    }
    out
}

/// How long past a follow-up break the window that opened it stays open, ms: long enough for
/// the Client to reconnect, resume and resend on another node (a reconnect and two round
/// trips at the highest latency the swarm draws, with room).
const WIDEN_MS: u64 = 100;

/// `plan` with its newest fault (the one that opened a wait, fired at op `fired` of `h`) held
/// open until [`WIDEN_MS`] past op `at` (the follow-up break), if it would end sooner: a store
/// that comes back before the resend arrives closes the window the break was aimed at.
fn widen(plan: &Plan, h: &History, fired: usize, at: usize) -> Plan {
    let mut out = plan.clone();
    let (Some(f), Some(a), Some(b)) = (out.faults.last_mut(), h.ops.get(fired), h.ops.get(at))
    else {
        return out;
    };
    let need = b.time_ms.saturating_sub(a.time_ms) + WIDEN_MS;
    // Only a fault with a long shape on a cluster (a store fault) is widened to outlast what
    // follows it.
    let OnCluster::AlsoLong(setting) = f.kind.row().explore.placed.on_cluster else {
        return out;
    };
    let Some(window) = f.ms_mut(setting) else {
        return out;
    };
    if window.is_some_and(|ms| ms < need) {
        *window = Some(need.min(600_000));
    }
    out
}

/// Try `plan`'s trace's cuts (see the module doc) until `opts.budget` schedules ran, every
/// support was cut up to `opts.faults` faults, or (with `stop_at_first`) a run failed.
///
/// Levels go breadth first, with one exception: when, on a cluster of two nodes or more, a
/// cut's run passes with an attempt the Agent worked on for longer than before (held, or
/// waiting on a partitioned store), breaking a connection in that window (`follow_ups`) is
/// tried at once, one level deeper, as it is and with the store fault held open past the
/// break (`widen`): the cut opened a window in which a retry on a new connection meets the
/// first attempt, and that window is rare in a fault-free trace.
pub fn lineage(plan: &Plan, opts: &Options) -> Exploration {
    lineage_with(plan, opts, &Parties::default())
}

/// [`lineage`] with your own parties in every run (`crate::harness::Harness::explore`).
pub fn lineage_with(plan: &Plan, opts: &Options, parties: &Parties) -> Exploration {
    let base = trace_plan(plan);
    let (h0, t0) = world::Run::new(&base).parties(parties).snapshots().traced();
    let v0 = checkers::check_all(&h0);
    let first = Explored {
        plan: base.clone(),
        id: "0.0".into(),
        verdicts: v0,
        hash: h0.hash(),
    };
    let mut search = Search {
        opts,
        parties,
        levels: vec![Level {
            explored: 1,
            ..Level::default()
        }],
        seen: BTreeSet::new(),
        runs: 1,
        order: Vec::new(),
        violations: Vec::new(),
        first_catch: first.catches(opts.target.as_ref()).then_some(1),
        caught: first.catches(opts.target.as_ref()).then(|| first.clone()),
        shapes: BTreeMap::new(),
    };
    if first.failed() {
        search.violations.push(first);
    }
    // (plan, its run, the op from which its next fault may land), by level: queues[k] holds
    // the passing runs of k faults.
    type Queued = (Plan, History, Trace, usize);
    let mut queues: Vec<VecDeque<Queued>> = vec![VecDeque::new(); opts.faults + 1];
    queues[0].push_back((base.clone(), h0, t0, 0));
    'levels: for k in 1..=opts.faults {
        while let Some((parent, h, t, from)) = queues[k - 1].pop_front() {
            let cs = cuts(&h, &t, &parent, from);
            search.level(k).places += cs.len();
            let at: BTreeSet<usize> = cs.iter().map(|c| c.place.at).collect();
            let states = states_at(&h, &at);
            for c in cs {
                match search.try_cut(k, &parent, &c, &states[&c.place.at]) {
                    Tried::Spent | Tried::Stop => break 'levels,
                    Tried::Pruned | Tried::Done => {}
                    Tried::Passed(run) => {
                        let (child, h2, t2, fired) = *run;
                        // On a cluster of two nodes or more (where a resend can reach
                        // another node), when the cut opened a window: the child waited
                        // more after its fault than the parent did after the same place.
                        if k < opts.faults
                            && child.nodes >= 2
                            && waits(&h2, fired) > waits(&h, c.place.at)
                        {
                            match search.follow(k + 1, &child, &h2, &t2, fired) {
                                Some(passed) if k + 1 < opts.faults => queues[k + 1].extend(passed),
                                Some(_) => {}
                                None => break 'levels,
                            }
                        }
                        queues[k].push_back((child, h2, t2, fired));
                    }
                }
            }
        }
    }
    let mut order_hash = Sha256::new();
    for o in &search.order {
        order_hash.update(o.join(";").as_bytes());
        order_hash.update(b"\n");
    }
    let digest = order_hash.finalize();
    Exploration {
        base,
        kinds: super::exhaustive::default_kinds(plan),
        levels: search.levels,
        violations: search.violations,
        order_hash: digest.iter().take(8).map(|b| format!("{b:02x}")).collect(),
        runs: search.runs,
        audited: 0,
        mismatches: Vec::new(),
        first_catch: search.first_catch,
        caught: search.caught,
        shapes: search.shapes,
        orders: false,
    }
}

/// The first cut lineage proposes for a plan's trace, as a fault line (for tests and docs).
pub fn first_cut(plan: &Plan) -> Option<String> {
    let base = trace_plan(plan);
    let (h, t) = world::Run::new(&base).traced();
    cuts(&h, &t, &base, 0).first().map(|c| fault_line(&c.fault))
}
