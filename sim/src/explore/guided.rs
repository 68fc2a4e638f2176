//! A swarm that steers itself (after coverage-guided fuzzers and Mallory: Meng et al.,
//! "Mallory: Greybox Fuzzing of Distributed Systems", CCS 2023).
//!
//! Runs come in fixed batches (the same runs whatever `--jobs`). Each run is either a fresh
//! swarm draw (the scenario at the next seed) or a mutation of a parent from the corpus: a
//! fault moved to another place of the parent's run, one added, one given another kind, one
//! removed. Places are read off the parent's run (`super::places`), so frame faults reach
//! every method in both directions. The feedback is what a run covered: the coverage cells
//! (fault kind × the protocol state it landed in, [`crate::checkers::fault_states`]) and the
//! happens-before shape of the run (every pair of consecutive Client, Agent and nemesis ops, by
//! name), and the protocol state each of the user's cancels, stops and closes came in (with
//! `held-retried`, a held prompt a retry waits on, finer than `held`). A run that covers
//! something new joins the corpus as a parent.
//!
//! Steering: an uncovered fault cell is aimed at (a parent with a place in that state where
//! the kind lands, else the state stretched over the next such place), least-aimed first, with
//! a share that decays as a cell resists; and the first parents that reach a held prompt, and
//! a held prompt a retry waits on, get their user's cancel, stop and close placed there at
//! once, as a fuzzer's deterministic stage treats a new input.

use std::collections::{BTreeMap, BTreeSet};

use rand::seq::SliceRandom;
use rand::Rng;
use rayon::prelude::*;

use super::exhaustive::{shapes, Explored};
use super::places::{places, Place};
use super::runner::map_runs;
use crate::checkers::{self, FAULT_STATES};
use crate::history::{is_agent_host, op, process, History};
use crate::models::Design;
use crate::nemesis::{FaultKind, Reach, Trigger};
use crate::plan::{stream, Plan};
use crate::scenario::Scenario;
use crate::world::{self, Parties};

/// Runs per batch: the corpus grows between batches, so the same batch size gives the same
/// runs for any number of threads.
pub const BATCH: usize = 8;

/// Share of a batch mutated from the corpus (the rest are fresh swarm draws).
const MUTATE: f64 = 0.45;

/// Share of a batch steered to a coverage cell not hit yet (before the mutation coin).
const STEER: f64 = 0.5;

/// Aims at a cell after which steering's share halves (then thirds, ...).
const STEER_PATIENCE: f64 = 8.0;

/// Parents per kind of held state whose user's cancel, stop and close are placed there at once
/// (see `guided`): where A5 and A15 are decided.
const STAGED: usize = 4;

/// The user-op state finer than `held`: a retry of the held prompt waits on it (A7), so the
/// op meets two attempts of one key (A5: every one is answered).
const HELD_RETRIED: &str = "held-retried";

/// The user ops the guided swarm steers by the protocol state they land in.
const USER_OPS: [&str; 3] = [op::CANCEL, op::STOP, op::CLOSE];

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Most runs.
    pub runs: usize,
    /// The first fresh draw's seed.
    pub seed_start: u64,
    /// Stop at the first catch.
    pub stop_at_first: bool,
    /// What counts as a catch (`None`: any invalid or unknown verdict).
    pub target: Option<super::shrink::Target>,
    /// Stop once every allowed coverage cell was hit.
    pub stop_at_full_coverage: bool,
}

/// What a guided swarm did.
#[derive(Debug, Clone, Default)]
pub struct Guided {
    /// Runs made.
    pub runs: usize,
    /// The 1-based run of the first catch.
    pub first_catch: Option<usize>,
    /// The failing runs.
    pub violations: Vec<Explored>,
    /// Coverage cells hit, `kind@state`, with the 1-based run that first hit each.
    pub cells: BTreeMap<String, usize>,
    /// The 1-based run after which every allowed cell was hit.
    pub full_coverage_at: Option<usize>,
    /// Parents in the corpus at the end.
    pub corpus: usize,
}

/// The coverage cells a scenario's swarm can hit under `designs`: every fault kind it draws ×
/// every protocol state, but the cluster's own faults only on the cluster and the history fill
/// only on the adapter (so never a cluster-only fault in a history fill).
pub fn allowed_cells(s: &Scenario, designs: &[Design]) -> BTreeSet<String> {
    let kinds: Vec<FaultKind> = s
        .swarm
        .as_ref()
        .map(|w| w.faults.clone())
        .unwrap_or_default();
    let cluster = designs.contains(&Design::Cluster);
    let adapter = designs.contains(&Design::Adapter);
    let mut out = BTreeSet::new();
    for k in kinds {
        let cluster_only = matches!(k.reach(), Reach::Store | Reach::Remote);
        if cluster_only && !cluster {
            continue;
        }
        // A disk kind damages a single process's log: no cell when every design is the cluster.
        if k.reach() == Reach::Log && designs.iter().all(|d| *d == Design::Cluster) {
            continue;
        }
        if k == FaultKind::CrashProxy && s.topology.transport == crate::scenario::Transport::Stdio {
            continue;
        }
        for st in FAULT_STATES {
            if st == "filling-history" && (cluster_only || !adapter) {
                continue;
            }
            out.insert(format!("{}@{st}", k.as_str()));
        }
    }
    out
}

/// The happens-before shape of a run: every pair of consecutive Client, Agent and nemesis
/// ops, by name.
fn shape(h: &History) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    let mut prev: Option<&str> = None;
    for o in &h.ops {
        let keep = o.process == process::CLIENT
            || o.process == process::NEMESIS
            || is_agent_host(&o.process);
        if !keep {
            continue;
        }
        if let Some(p) = prev {
            out.insert((p.to_string(), o.f.clone()));
        }
        prev = Some(o.f.as_str());
    }
    out
}

/// The user-op cells a run hit: each cancel, stop and close of its user as `user:OP@STATE`,
/// STATE the protocol state it came in (kept apart from the fault cells of [`allowed_cells`]).
fn user_cells(h: &History) -> BTreeSet<String> {
    let at: BTreeSet<usize> = h
        .ops
        .iter()
        .filter(|o| o.process == process::USER && USER_OPS.contains(&o.f.as_str()))
        .map(|o| o.index)
        .collect();
    if at.is_empty() {
        return BTreeSet::new();
    }
    let st = checkers::protocol_states_at(h, &at);
    let waits = wait_windows(h);
    at.iter()
        .map(|i| {
            let o = &h.ops[*i];
            let retried = waits
                .iter()
                .any(|(_, from, to)| *from <= o.time_ms && o.time_ms < *to);
            let state = if retried { HELD_RETRIED } else { st[i] };
            format!("user:{}@{state}", o.f)
        })
        .collect()
}

/// Have the user cancel submission `w`, or stop or close its session, at `t` ms.
fn set_user_op(w: &mut crate::plan::Submission, user_op: &str, t: u64) {
    match user_op {
        op::CANCEL => w.cancel_at_ms = Some(t),
        op::STOP => w.stop_at_ms = Some(t),
        _ => w.close_at_ms = Some(t),
    }
}

/// Place a user's cancel, stop or close into protocol state `state` of a parent's run. In
/// `held-retried`: early in a window where a retry waits on a held prompt (the op still has to
/// reach the Agent before the hold ends), on that prompt's own submission. Else at a time the
/// run was in `state` (its last moment half the time, where a held prompt has waited longest),
/// on the latest submission made before then.
fn user_move(
    p: &Parent,
    user_op: &str,
    state: &str,
    r: &mut rand_chacha::ChaCha8Rng,
) -> Option<Plan> {
    let mut plan = p.plan.clone();
    let (w, t) = if state == HELD_RETRIED {
        let &(n, from, to) = p.waits.choose(r)?;
        if to <= from + 1 {
            return None;
        }
        let t = r.gen_range(from + 1..from + 1 + (to - from).div_ceil(2));
        (plan.workload.iter_mut().find(|w| w.submission == n)?, t)
    } else {
        let ts = p.times.get(state)?;
        let t = if r.gen_bool(0.5) {
            ts.last().copied()
        } else {
            ts.choose(r).copied()
        }?;
        (plan.workload.iter_mut().filter(|w| w.at_ms < t).last()?, t)
    };
    set_user_op(w, user_op, t);
    plan.check().is_none().then_some(plan)
}

/// What kind of place a spot is, without its occurrence: a frame's sender, side and method, a
/// point's name, or a submission.
fn spot_kind(s: &super::places::Spot) -> String {
    use super::places::Spot;
    match s {
        Spot::Frame {
            by, side, method, ..
        } => format!("{by:?}:{side:?}:{method}"),
        Spot::Point { point, .. } => point.as_str().to_string(),
        Spot::Submission(_) => "submission".to_string(),
    }
}

/// A parent to mutate: half the time one that has the rarest kind of place (in the protocol
/// state it is in) among the corpus, else any.
fn rare_parent(
    spots: &BTreeMap<String, Vec<usize>>,
    n: usize,
    r: &mut rand_chacha::ChaCha8Rng,
) -> usize {
    if r.gen_bool(0.5) {
        if let Some(min) = spots.values().map(Vec::len).min() {
            let rare: Vec<&Vec<usize>> = spots.values().filter(|v| v.len() == min).collect();
            if let Some(ps) = rare.choose(r) {
                if let Some(&i) = ps.choose(r) {
                    return i;
                }
            }
        }
    }
    r.gen_range(0..n)
}

/// The windows of a run in which a retry waited on a held prompt (A7): the submission, from
/// the retry's arrival to the end of the hold (its insertion, withdrawal or drop), ms.
fn wait_windows(h: &History) -> Vec<(u64, u64, u64)> {
    let mut sub_of_key: BTreeMap<String, u64> = BTreeMap::new();
    let mut open: Vec<(String, u64, u64)> = Vec::new();
    let mut out = Vec::new();
    let end_ms = h.ops.last().map_or(0, |o| o.time_ms);
    for o in &h.ops {
        let v = &o.value;
        let key = v["key"].as_str().map(str::to_string);
        if o.process == process::CLIENT && o.f == op::ATTEMPT {
            if let (Some(k), Some(n)) = (key.clone(), v["submission"].as_u64()) {
                sub_of_key.insert(k, n);
            }
        } else if is_agent_host(&o.process) {
            match o.f.as_str() {
                op::WAIT_HELD => {
                    if let Some(n) = key.as_ref().and_then(|k| sub_of_key.get(k)) {
                        open.push((key.clone().unwrap_or_default(), *n, o.time_ms));
                    }
                }
                op::INSERT | op::WITHDRAW | op::DROP_HELD => {
                    open.retain(|(k, n, t)| {
                        let ends = key.as_deref() == Some(k.as_str()) || o.f == op::DROP_HELD;
                        if ends {
                            out.push((*n, *t, o.time_ms));
                        }
                        !ends
                    });
                }
                _ => {}
            }
        }
    }
    out.extend(open.into_iter().map(|(_, n, t)| (n, t, end_ms)));
    out
}

/// A parent: a plan, the places of its run, and the protocol state each place is in.
struct Parent {
    plan: Plan,
    places: Vec<Place>,
    states: Vec<&'static str>,
    /// The simulated time of each place, ms.
    place_ms: Vec<u64>,
    /// Each protocol state the run passed through, with the simulated times it held (a
    /// process-level fault triggered at one of them lands in that state).
    times: BTreeMap<&'static str, Vec<u64>>,
    /// See [`wait_windows`].
    waits: Vec<(u64, u64, u64)>,
}

impl Parent {
    fn of(plan: Plan, h: &History, places: Vec<Place>) -> Parent {
        let at: BTreeSet<usize> = (0..=h.ops.len()).collect();
        let st = checkers::protocol_states_at(h, &at);
        let states = places.iter().map(|p| st[&p.at]).collect();
        let end_ms = h.ops.last().map_or(0, |o| o.time_ms);
        let place_ms = places
            .iter()
            .map(|p| h.ops.get(p.at).map_or(end_ms, |o| o.time_ms))
            .collect();
        let mut times: BTreeMap<&'static str, Vec<u64>> = BTreeMap::new();
        for o in &h.ops {
            let t = times.entry(st[&o.index]).or_default();
            if t.last() != Some(&o.time_ms) {
                t.push(o.time_ms);
            }
        }
        Parent {
            plan,
            places,
            states,
            place_ms,
            times,
            waits: wait_windows(h),
        }
    }
}

/// Fault kinds the step loop carries out (crashes, restarts, partitions, holds): a time
/// trigger lands them in whatever state the run is in then.
fn process_level(k: FaultKind) -> bool {
    k.level() == crate::nemesis::Level::Process
}

/// A process-level fault of `kind` at simulated time `at_ms`, as exploration places it (its
/// default durations; a one-way partition cuts the Client's frames); `None` for another level
/// or a kind this topology has no part for.
fn at_time(kind: FaultKind, plan: &Plan, at_ms: u64) -> Option<crate::nemesis::FaultSpec> {
    if !process_level(kind) || !plan.topology().has(kind.reach()) {
        return None;
    }
    let mut f = crate::nemesis::FaultSpec::placed(kind, Trigger::at_time(at_ms));
    if kind.takes(crate::nemesis::Setting::Direction).is_some() {
        f.direction = Some(crate::nemesis::Direction::ClientToAgent);
    }
    Some(f)
}

/// Steer to an uncovered cell: a parent with a place in the cell's protocol state where the
/// cell's fault kind can land, and that fault added there.
fn toward(
    corpus: &[Parent],
    (kind, state): (FaultKind, &str),
    r: &mut rand_chacha::ChaCha8Rng,
) -> Option<Plan> {
    if let Some(plan) = land(corpus, kind, state, r) {
        return Some(plan);
    }
    // No parent has a place for that fault in that state: stretch the state over the next
    // place where the fault lands, and put the fault there. A resume or an inserted prompt
    // lasts until its answer: stall the last such answer before the place until just after
    // it. Any other state: hold every frame from the start of the parent's last stretch in
    // that state before the place until just after it (frames written meanwhile are still
    // places).
    if let Some(plan) = stretch(corpus, kind, state, r) {
        return Some(plan);
    }
    // Else widen the state where some parent passes through it, so the next runs have places
    // inside it. Half the time by holding every frame from a time in that state, else by
    // stalling the answer that ends it (a resume's, or an inserted prompt's).
    if r.gen_bool(0.5) {
        if let Some(plan) = hold_from(corpus, state, r) {
            return Some(plan);
        }
    }
    let ends = match state {
        "resuming" => "session/resume",
        "inserted-unanswered" => "session/prompt",
        _ => return None,
    };
    if let Some(plan) = stall_answer(corpus, ends, r) {
        return Some(plan);
    }
    // No parent even enters that state: a Client restart while input is pending makes it
    // reconnect and resume (a remote transport's Client only resumes on a new process).
    restart_client(corpus, r)
}

/// A parent, in random order, with a place in `state` where `kind` lands (a process-level
/// fault, half the time: at a time the run was in that state), and the fault added there.
fn land(
    corpus: &[Parent],
    kind: FaultKind,
    state: &str,
    r: &mut rand_chacha::ChaCha8Rng,
) -> Option<Plan> {
    let mut order: Vec<usize> = (0..corpus.len()).collect();
    order.shuffle(r);
    for i in order {
        let p = &corpus[i];
        // A process-level fault: at a time the run was in that state (half the time; else
        // it is stretched below, where a short state is widened first).
        if process_level(kind) && r.gen_bool(0.5) {
            let t = p.times.get(state).and_then(|ts| ts.choose(r));
            if let Some(f) = t.and_then(|t| at_time(kind, &p.plan, *t)) {
                let mut plan = p.plan.clone();
                plan.faults.push(f);
                if plan.check().is_none() {
                    return Some(plan);
                }
            }
        }
        let mut spots: Vec<usize> = (0..p.places.len())
            .filter(|&j| p.states[j] == state)
            .collect();
        spots.shuffle(r);
        for j in spots {
            let fs = shapes(&p.places[j], &p.plan, &[kind]);
            if let Some(f) = fs.choose(r) {
                let mut plan = p.plan.clone();
                plan.faults.push(f.clone());
                return Some(plan);
            }
        }
    }
    None
}

/// A parent, in random order, that passes through `state`, with every frame held from a
/// time in it.
fn hold_from(corpus: &[Parent], state: &str, r: &mut rand_chacha::ChaCha8Rng) -> Option<Plan> {
    let mut order: Vec<usize> = (0..corpus.len()).collect();
    order.shuffle(r);
    for i in order {
        let p = &corpus[i];
        let Some(t) = p.times.get(state).and_then(|ts| ts.choose(r)) else {
            continue;
        };
        let Some(mut f) = at_time(FaultKind::Hold, &p.plan, *t) else {
            continue;
        };
        f.heal_after_ms = Some(r.gen_range(100..=400));
        let mut plan = p.plan.clone();
        plan.faults.push(f);
        if plan.check().is_none() {
            return Some(plan);
        }
    }
    None
}

/// A parent, in random order, with the response to a Client's `ends` request (the answer
/// that ends the state) stalled.
fn stall_answer(corpus: &[Parent], ends: &str, r: &mut rand_chacha::ChaCha8Rng) -> Option<Plan> {
    let mut order: Vec<usize> = (0..corpus.len()).collect();
    order.shuffle(r);
    for i in order {
        let p = &corpus[i];
        let mut spots: Vec<&Place> = p
            .places
            .iter()
            .filter(|pl| {
                matches!(&pl.spot, super::places::Spot::Frame {
                    by: crate::nemesis::Sender::Client,
                    side: crate::nemesis::Side::Response,
                    method,
                    ..
                } if method == ends)
            })
            .collect();
        spots.shuffle(r);
        if let Some(pl) = spots.first() {
            if let Some(f) = shapes(pl, &p.plan, &[FaultKind::StallFrame])
                .into_iter()
                .next()
            {
                let mut plan = p.plan.clone();
                plan.faults.push(f);
                return Some(plan);
            }
        }
    }
    None
}

/// A random parent with a Client restart at a time input was pending.
fn restart_client(corpus: &[Parent], r: &mut rand_chacha::ChaCha8Rng) -> Option<Plan> {
    let p = corpus.choose(r)?;
    let t = ["inserted-unanswered", "held", "answered"]
        .iter()
        .filter_map(|s| p.times.get(s))
        .flatten()
        .copied()
        .collect::<Vec<u64>>();
    let t = *t.choose(r)?;
    let f = at_time(FaultKind::RestartClient, &p.plan, t)?;
    let mut plan = p.plan.clone();
    plan.faults.push(f);
    plan.check().is_none().then_some(plan)
}

/// The method whose answer ends a protocol state, if one does.
fn ended_by(state: &str) -> Option<&'static str> {
    match state {
        "resuming" => Some("session/resume"),
        "inserted-unanswered" => Some("session/prompt"),
        _ => None,
    }
}

/// A parent's plan with `state` stretched over a later place where `kind` lands, and `kind`
/// put there (see [`toward`]).
fn stretch(
    corpus: &[Parent],
    kind: FaultKind,
    state: &str,
    r: &mut rand_chacha::ChaCha8Rng,
) -> Option<Plan> {
    use super::places::Spot;
    use crate::nemesis::{Sender, Side};
    let mut order: Vec<usize> = (0..corpus.len()).collect();
    order.shuffle(r);
    let i = order
        .into_iter()
        .find(|&i| corpus[i].times.contains_key(state))?;
    let p = &corpus[i];
    let in_state = &p.times[state];
    let mut spots: Vec<usize> = (0..p.places.len()).collect();
    spots.shuffle(r);
    for j in spots {
        let at_ms = p.place_ms[j];
        let f = if process_level(kind) && ended_by(state).is_some() {
            // At the place's time, inside the widened state.
            at_time(kind, &p.plan, at_ms)
        } else {
            shapes(&p.places[j], &p.plan, &[kind]).choose(r).cloned()
        };
        let Some(f) = f else {
            continue;
        };
        let widen = if let Some(method) = ended_by(state) {
            // The last answer that ended the state at or before the place.
            let Some(e) = (0..p.places.len())
                .filter(|&e| p.states[e] == state && p.place_ms[e] <= at_ms)
                .filter(|&e| {
                    matches!(&p.places[e].spot, Spot::Frame {
                        by: Sender::Client, side: Side::Response, method: m, ..
                    } if m == method)
                })
                .max_by_key(|&e| (p.place_ms[e], e))
            else {
                continue;
            };
            let Some(mut stall) = shapes(&p.places[e], &p.plan, &[FaultKind::StallFrame])
                .into_iter()
                .next()
            else {
                continue;
            };
            stall.stall_ms = Some(at_ms - p.place_ms[e] + 20);
            stall
        } else {
            // From the start of the last stretch in the state before the place (a gap of a
            // few ms ends a stretch), so the hold catches the frame that ends it.
            let mut before = in_state.iter().rev().filter(|&&t| t < at_ms);
            let Some(&last_ms) = before.next() else {
                continue;
            };
            let mut from_ms = last_ms;
            for &t in before {
                if t + 5 < from_ms {
                    break;
                }
                from_ms = t;
            }
            let Some(mut hold) = at_time(FaultKind::Hold, &p.plan, from_ms) else {
                continue;
            };
            hold.heal_after_ms = Some(at_ms - from_ms + 20);
            hold
        };
        let mut plan = p.plan.clone();
        plan.faults.push(widen);
        plan.faults.push(f);
        if plan.check().is_none() {
            return Some(plan);
        }
    }
    None
}

/// One mutation of a parent, from the guided stream: move, add, re-kind or remove a fault.
fn mutate(p: &Parent, kinds: &[FaultKind], r: &mut rand_chacha::ChaCha8Rng) -> Plan {
    let mut plan = p.plan.clone();
    if p.places.is_empty() {
        return plan;
    }
    // A fault of one of the kinds at a random place (a few tries: not every kind lands
    // everywhere).
    let fault_at = |r: &mut rand_chacha::ChaCha8Rng, kind: Option<FaultKind>| {
        for _ in 0..16 {
            let place = p.places.choose(r).expect("non-empty");
            let ks: Vec<FaultKind> = match kind {
                Some(k) => vec![k],
                None => kinds.to_vec(),
            };
            let fs = shapes(place, &p.plan, &ks);
            if let Some(f) = fs.choose(r) {
                return Some(f.clone());
            }
        }
        None
    };
    let op = r.gen_range(0..4u32);
    let n = plan.faults.len();
    match op {
        // Move a fault to another place (same kind).
        0 if n > 0 => {
            let i = r.gen_range(0..n);
            if let Some(f) = fault_at(r, Some(plan.faults[i].kind)) {
                plan.faults[i] = f;
            }
        }
        // Another kind at a random place, in place of one.
        1 if n > 0 => {
            let i = r.gen_range(0..n);
            if let Some(f) = fault_at(r, None) {
                plan.faults[i] = f;
            }
        }
        // Drop one.
        2 if n > 1 => {
            let i = r.gen_range(0..n);
            plan.faults.remove(i);
        }
        // Add one.
        _ => {
            if let Some(f) = fault_at(r, None) {
                plan.faults.push(f);
            }
        }
    }
    plan
}

/// Run the guided swarm on scenario `s` under `design` (with `mutant`, if any).
pub fn guided(
    s: &Scenario,
    design: Design,
    mutant: Option<&str>,
    opts: &Options,
    pool: &rayon::ThreadPool,
) -> Guided {
    guided_with(s, design, mutant, opts, pool, &Parties::default())
}

/// [`guided`] with your own parties in every run (`crate::harness::Harness::explore`), one
/// run at a time on this thread ([`super::runner`]); the same plans in the same order.
pub fn guided_with(
    s: &Scenario,
    design: Design,
    mutant: Option<&str>,
    opts: &Options,
    pool: &rayon::ThreadPool,
    parties: &Parties,
) -> Guided {
    let mut g = Steering::new(s, design, mutant, opts);
    while g.out.runs < opts.runs {
        let n = BATCH.min(opts.runs - g.out.runs);
        let batch = g.batch(n);
        let results: Vec<(Plan, History, Vec<Place>, Vec<checkers::Verdict>)> =
            map_runs(batch, parties, pool, |plan, parties| {
                let (h, t) = world::Run::new(&plan).parties(parties).traced();
                let verdicts = checkers::check_all(&h);
                let ps = places(&h, &t);
                (plan, h, ps, verdicts)
            });
        for (plan, h, ps, verdicts) in results {
            g.absorb(plan, h, ps, verdicts);
        }
        let done_failing = opts.stop_at_first && g.out.first_catch.is_some();
        let done_covering = opts.stop_at_full_coverage && g.out.full_coverage_at.is_some();
        if done_failing || done_covering {
            break;
        }
    }
    g.out.corpus = g.corpus.len();
    g.out
}

/// Guided exploration under way: its corpus of parents, what they covered, and the cells it
/// steered toward.
struct Steering<'a> {
    s: &'a Scenario,
    design: Design,
    mutant: Option<&'a str>,
    opts: &'a Options,
    kinds: Vec<FaultKind>,
    allowed: BTreeSet<String>,
    rng: rand_chacha::ChaCha8Rng,
    corpus: Vec<Parent>,
    shapes_seen: BTreeSet<(String, String)>,
    /// (protocol state, kind of place) → parents that have such a place: a rare one marks a
    /// parent worth mutating (its runs reach where few others do).
    spots_seen: BTreeMap<String, Vec<usize>>,
    out: Guided,
    next_seed: u64,
    /// How often each uncovered cell was aimed at.
    aimed: BTreeMap<(FaultKind, &'static str), u32>,
    /// The user cells hit so far (see [`user_cells`]).
    user_seen: BTreeSet<String>,
    /// Plans staged for the next batches (see `STAGED`), and how many parents were staged.
    queued: std::collections::VecDeque<Plan>,
    staged_retried: usize,
    staged_held: usize,
}

impl<'a> Steering<'a> {
    fn new(
        s: &'a Scenario,
        design: Design,
        mutant: Option<&'a str>,
        opts: &'a Options,
    ) -> Steering<'a> {
        Steering {
            s,
            design,
            mutant,
            opts,
            kinds: s
                .swarm
                .as_ref()
                .map(|w| w.faults.clone())
                .unwrap_or_default(),
            allowed: allowed_cells(s, &[design]),
            rng: stream(opts.seed_start, "explore.guided"),
            corpus: Vec::new(),
            shapes_seen: BTreeSet::new(),
            spots_seen: BTreeMap::new(),
            out: Guided::default(),
            next_seed: opts.seed_start,
            aimed: BTreeMap::new(),
            user_seen: BTreeSet::new(),
            queued: Default::default(),
            staged_retried: 0,
            staged_held: 0,
        }
    }

    /// The next `n` plans: staged ones first, then each steered toward an uncovered cell, a
    /// mutation of a rare parent, or a fresh draw.
    fn batch(&mut self, n: usize) -> Vec<Plan> {
        let mut batch = Vec::with_capacity(n);
        let uncovered: Vec<(FaultKind, &str)> = self
            .allowed
            .iter()
            .filter(|c| !self.out.cells.contains_key(*c))
            .filter_map(|c| {
                let (k, st) = c.split_once('@')?;
                let kind = FaultKind::named(k)?;
                let st = FAULT_STATES.into_iter().find(|x| *x == st)?;
                Some((kind, st))
            })
            .collect();
        // Steering gives way to fresh draws and mutations as it keeps failing: a cell it has
        // aimed at `STEER_PATIENCE` times without a hit halves its share, and so on.
        let least_tried = uncovered
            .iter()
            .map(|c| self.aimed.get(c).copied().unwrap_or(0))
            .min()
            .unwrap_or(0);
        let steer_p = STEER / (1.0 + f64::from(least_tried) / STEER_PATIENCE);
        for _ in 0..n {
            if let Some(p) = self.queued.pop_front() {
                batch.push(p);
                continue;
            }
            let steer =
                !uncovered.is_empty() && !self.corpus.is_empty() && self.rng.gen_bool(steer_p);
            let steered = if steer {
                // The cells aimed at least, so a hard one does not starve the rest.
                let count = |c: &(FaultKind, &str)| self.aimed.get(c).copied().unwrap_or(0);
                let least = uncovered.iter().map(count).min().unwrap_or(0);
                let fewest: Vec<(FaultKind, &str)> = uncovered
                    .iter()
                    .filter(|c| count(c) == least)
                    .copied()
                    .collect();
                let cell = *fewest
                    .choose(&mut self.rng)
                    .expect("uncovered is not empty");
                *self.aimed.entry(cell).or_insert(0) += 1;
                toward(&self.corpus, cell, &mut self.rng)
            } else {
                None
            };
            let plan = if let Some(p) = steered {
                p
            } else if !self.corpus.is_empty() && self.rng.gen_bool(MUTATE) {
                let p =
                    &self.corpus[rare_parent(&self.spots_seen, self.corpus.len(), &mut self.rng)];
                mutate(p, &self.kinds, &mut self.rng)
            } else {
                let p = Plan::derive(self.s, self.next_seed, self.mutant, self.design);
                self.next_seed += 1;
                p
            };
            batch.push(plan);
        }
        batch
    }

    /// Take one run's results in: its coverage cells, shapes and user cells, its catch or
    /// violation, and, when it reached somewhere new, it joins the corpus as a parent (and a
    /// parent at a held prompt gets its user's ops staged there).
    fn absorb(&mut self, plan: Plan, h: History, ps: Vec<Place>, verdicts: Vec<checkers::Verdict>) {
        self.out.runs += 1;
        let e = Explored {
            hash: h.hash(),
            id: format!("run {}", self.out.runs),
            plan: plan.clone(),
            verdicts,
        };
        let mut new = false;
        for (state, kind) in checkers::fault_states(&h) {
            let cell = format!("{kind}@{state}");
            if !self.out.cells.contains_key(&cell) {
                self.out.cells.insert(cell, self.out.runs);
                new = true;
            }
        }
        for pair in shape(&h) {
            new |= self.shapes_seen.insert(pair);
        }
        for c in user_cells(&h) {
            new |= self.user_seen.insert(c);
        }
        if self.out.full_coverage_at.is_none()
            && self.allowed.iter().all(|c| self.out.cells.contains_key(c))
        {
            self.out.full_coverage_at = Some(self.out.runs);
        }
        if e.catches(self.opts.target.as_ref()) {
            self.out.first_catch.get_or_insert(self.out.runs);
        }
        if e.failed() {
            self.out.violations.push(e);
        } else {
            // A place in a protocol state no parent had it in is new too: where the next
            // fault can land that none could before.
            let parent = Parent::of(plan, &h, ps);
            let sigs: BTreeSet<String> = parent
                .places
                .iter()
                .zip(&parent.states)
                .map(|(p, st)| format!("{st}:{}", spot_kind(&p.spot)))
                .collect();
            new |= sigs.iter().any(|s| !self.spots_seen.contains_key(s));
            if new {
                for s in sigs {
                    self.spots_seen
                        .entry(s)
                        .or_default()
                        .push(self.corpus.len());
                }
                // A parent that reached a held prompt (one a retry waits on, above all)
                // gets its user's ops placed there at once, as a fuzzer's deterministic
                // stage does for a new input: the first few such parents only.
                let state = if !parent.waits.is_empty() {
                    Some((HELD_RETRIED, &mut self.staged_retried))
                } else if parent.times.contains_key("held") {
                    Some(("held", &mut self.staged_held))
                } else {
                    None
                };
                self.corpus.push(parent);
                if let Some((st, staged)) = state.filter(|(_, n)| **n < STAGED) {
                    *staged += 1;
                    let last = self.corpus.len() - 1;
                    for u in USER_OPS {
                        if let Some(plan) = user_move(&self.corpus[last], u, st, &mut self.rng) {
                            self.queued.push_back(plan);
                        }
                    }
                }
            }
        }
    }
}

/// The plain swarm on the same scenario and design: seeds in order from `seed_start`, each a
/// fresh draw; the 1-based run after which every allowed coverage cell was hit (`None`: not
/// within `runs`), and the first failing run.
pub fn plain(
    s: &Scenario,
    design: Design,
    mutant: Option<&str>,
    opts: &Options,
    pool: &rayon::ThreadPool,
) -> Guided {
    let allowed = allowed_cells(s, &[design]);
    let mut out = Guided::default();
    let mut seed = opts.seed_start;
    while out.runs < opts.runs {
        let n = BATCH.min(opts.runs - out.runs);
        let seeds: Vec<u64> = (seed..seed + n as u64).collect();
        seed += n as u64;
        let results: Vec<(Plan, History, Vec<checkers::Verdict>)> = pool.install(|| {
            seeds
                .into_par_iter()
                .map(|sd| {
                    let plan = Plan::derive(s, sd, mutant, design);
                    let h = world::run(&plan);
                    let v = checkers::check_all(&h);
                    (plan, h, v)
                })
                .collect()
        });
        for (plan, h, verdicts) in results {
            out.runs += 1;
            for (state, kind) in checkers::fault_states(&h) {
                out.cells
                    .entry(format!("{kind}@{state}"))
                    .or_insert(out.runs);
            }
            if out.full_coverage_at.is_none() && allowed.iter().all(|c| out.cells.contains_key(c)) {
                out.full_coverage_at = Some(out.runs);
            }
            let e = Explored {
                hash: h.hash(),
                id: format!("run {}", out.runs),
                plan,
                verdicts,
            };
            if e.catches(opts.target.as_ref()) {
                out.first_catch.get_or_insert(out.runs);
            }
            if e.failed() {
                out.violations.push(e);
            }
        }
        let done_failing = opts.stop_at_first && out.first_catch.is_some();
        let done_covering = opts.stop_at_full_coverage && out.full_coverage_at.is_some();
        if done_failing || done_covering {
            break;
        }
    }
    out
}
