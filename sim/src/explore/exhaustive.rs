//! Bounded exhaustive exploration: every schedule of at most `k` faults over the places of a
//! trace, each equivalence class run once.
//!
//! The trace is the scenario's run with its faults removed, at a fixed latency (so one fault
//! placed does not move the frames of the others). Level 1 places every fault shape
//! ([`shapes`]) at every `Place` of that run. Level 2 places a second fault at every place of
//! each level-1 run after its first fault fired (a reconnect adds frames, so the second fault is
//! placed over the first fault's run, not the fault-free one), and so on to `k`. Every schedule
//! is a [`Plan`] whose faults are triggered by protocol events, so it replays exactly.
//!
//! A placement is pruned when (its abstract state, its fault) was already explored
//! (`super::state`): the run it would start is taken to be the same as its
//! representative's. The pruned ones are counted, and `--audit-pruning` runs a seeded sample
//! of them and compares verdicts. The result is a certificate ("explored N schedules of <=k
//! faults, M pruned as equivalent, 0 violations") or the violating schedules.

use std::collections::{BTreeMap, BTreeSet};

use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::orders;
use super::places::{places, Place, Spot};
use super::runner::map_runs;
use super::shrink::Target;
use super::state::{placement_class, states_at};
use crate::checkers::{self, Status, Verdict};
use crate::history::{process, History};
use crate::nemesis::kinds::{AtFrames, OnCluster, Shapes};
use crate::nemesis::{fault_line, Direction, FaultKind, FaultSpec, Sender, Setting, Side, Trigger};
use crate::plan::{stream, Plan};
use crate::world::{self, Parties, Trace};

/// What to explore.
#[derive(Debug, Clone)]
pub struct Options {
    /// Most faults per schedule (`--faults`).
    pub faults: usize,
    /// The fault kinds placed (`--kinds`); see [`default_kinds`].
    pub kinds: Vec<FaultKind>,
    /// Run only the `K`-th of `N` slices of the last level (every shard runs the levels below).
    pub shard: Option<(u64, u64)>,
    /// Pruned schedules to run anyway and compare with their representatives (0: none).
    pub audit: usize,
    /// Stop at the first catch (runs to first catch, for the scoreboard).
    pub stop_at_first: bool,
    /// What counts as a catch: this failure (a mutant's property, status and party); `None`:
    /// any invalid or unknown verdict.
    pub target: Option<Target>,
    /// With `stop_at_first`: most schedules run (the trace's run included).
    pub budget: Option<usize>,
    /// What two placements must share to be merged ([`Merge`]).
    pub merge: Merge,
    /// Also reverse every race of every run (`--orders`, [`super::orders`]): over each
    /// schedule's run, each race's other order is one more run, its delay added to the
    /// schedule. Orders are not faults: a schedule of `k` faults plus one reversal is explored
    /// at level `k`.
    pub orders: bool,
}

/// What two placements must share to be merged (the second pruned).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Merge {
    /// The abstract protocol state and the world's snapshot (time, timers, every party's
    /// memory, the nemesis's work in force): sound as far as the snapshot holds everything a
    /// future depends on, which `--audit-pruning all` checks by running what it pruned.
    #[default]
    Snapshot,
    /// The abstract protocol state alone, as exploration merged before snapshots: unsound
    /// (a stall that outlasts the Client's timeout and one that does not were one class).
    /// Kept as the pruning's mutant: a test shows the audit catches what it merges wrongly.
    ProtocolStateOnly,
}

/// The fault kinds placed by default for a plan's topology: losing and stalling frames,
/// crashing the Agent, restarting the Client, partitions, transient errors; the proxy's crash
/// with a proxy; the store's faults and the remote transport's lost exchange on a cluster.
/// Not `drop-updates` (as the swarm does not draw it): an Agent request on a dead update
/// stream, such as `session/request_permission`, waits forever, a gap the proposal leaves open
/// rather than a model's bug; `--kinds drop-updates` places it.
pub fn default_kinds(plan: &Plan) -> Vec<FaultKind> {
    let topology = plan.topology();
    FaultKind::explored_by_default()
        .into_iter()
        .filter(|k| topology.acts(k.reach()))
        .collect()
}

/// One schedule's run.
#[derive(Debug, Clone)]
pub struct Explored {
    /// The schedule: the trace's plan with these faults, in firing order.
    pub plan: Plan,
    /// Its place in the exploration: `L.I` for the `I`-th schedule (from 0) of level `L` (its
    /// number of faults), the same in every shard.
    pub id: String,
    /// Every checker's verdict on its run.
    pub verdicts: Vec<Verdict>,
    /// The run's history hash.
    pub hash: String,
}

impl Explored {
    /// Whether a checker found the run invalid or could not decide it.
    pub fn failed(&self) -> bool {
        self.verdicts
            .iter()
            .any(|v| matches!(v.status, Status::Invalid | Status::Unknown))
    }

    /// Whether the run catches `target` (any failure when `None`).
    pub fn catches(&self, target: Option<&Target>) -> bool {
        match target {
            Some(t) => self.verdicts.iter().any(|v| t.matches(v)),
            None => self.failed(),
        }
    }
}

/// Counts per level.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Level {
    /// Faults per schedule at this level.
    pub faults: usize,
    /// Places read off the runs of the level below (after their last fault).
    pub places: usize,
    /// Schedules run.
    pub explored: usize,
    /// Schedules pruned as equivalent to one run.
    pub pruned: usize,
    /// Schedules whose new fault never fired (the run was its parent's).
    pub not_fired: usize,
    /// Whether this level was sharded (`--shard`): its counts are the shard's slice.
    pub sharded: bool,
    /// Races reversed over this level's runs (`--orders`): each one more run.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub orders: usize,
    /// Of those, reversals whose delay never fired (the run was its schedule's).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub orders_not_fired: usize,
    /// Of those, reversals whose run delivered the race's second delivery and the first only
    /// after it ([`orders::Race::reversed_in`]); the others' delay changed more than the order.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub orders_reversed: usize,
}

/// Serde: leave a zero count out (a certificate without orders reads as before them).
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A pruned schedule run anyway whose placement changed its parent's verdicts otherwise than
/// its representative's placement changed its own parent's ([`delta`]): pruning merged two
/// placements whose futures differ.
#[derive(Debug, Clone, Serialize)]
pub struct AuditMismatch {
    /// The pruned schedule's faults.
    pub pruned: Vec<String>,
    /// Its representative's faults.
    pub representative: Vec<String>,
    /// What the pruned placement changed: (property, `parent -> run`).
    pub pruned_delta: Vec<(String, String)>,
    /// What the representative's placement changed.
    pub representative_delta: Vec<(String, String)>,
}

/// The result of exploring a trace.
#[derive(Debug, Clone)]
pub struct Exploration {
    /// The fault-free trace's plan (fixed latency, no faults).
    pub base: Plan,
    /// The kinds placed.
    pub kinds: Vec<FaultKind>,
    /// Counts per level (level 0: the trace itself).
    pub levels: Vec<Level>,
    /// Every schedule whose run failed, in exploration order.
    pub violations: Vec<Explored>,
    /// SHA-256 (hex, 16 chars) over the schedules run, in order: the same exploration gives the
    /// same list, whatever `--jobs`.
    pub order_hash: String,
    /// Runs made (the trace, the schedules, the audit).
    pub runs: usize,
    /// Pruned schedules audited, and the mismatches found.
    pub audited: usize,
    /// Audit mismatches: pruning merged schedules whose verdicts differ.
    pub mismatches: Vec<AuditMismatch>,
    /// The 1-based run (the trace's run is the first) of the first catch, if any.
    pub first_catch: Option<usize>,
    /// The run of the first catch (a violation, or a finding when the target is one).
    pub caught: Option<Explored>,
    /// Every shape placed ([`shape_family`]) with how many schedules placed it (run or
    /// pruned): what the certificate covers, read off the placements made.
    pub shapes: BTreeMap<String, usize>,
    /// Whether races were reversed (`--orders`).
    pub orders: bool,
}

impl Exploration {
    /// Schedules run, over every level.
    pub fn explored(&self) -> usize {
        self.levels.iter().map(|l| l.explored).sum()
    }

    /// Schedules pruned, over every level.
    pub fn pruned(&self) -> usize {
        self.levels.iter().map(|l| l.pruned).sum()
    }

    /// Races reversed (reversals run), over every level.
    pub fn orders(&self) -> usize {
        self.levels.iter().map(|l| l.orders).sum()
    }

    /// Reversals whose run came out in the other order, over every level.
    pub fn orders_reversed(&self) -> usize {
        self.levels.iter().map(|l| l.orders_reversed).sum()
    }
}

/// The trace a scenario's plan explores: no faults, latency fixed at its minimum.
pub fn trace_plan(plan: &Plan) -> Plan {
    let mut p = plan.clone();
    p.faults.clear();
    p.latency_ms_max = p.latency_ms_min;
    p
}

/// The methods whose frames also get a stall past the Client's prompt timeout (see [`shapes`]).
pub const LONG_STALL_METHODS: &[&str] = &[
    "session/prompt",
    "session/request_permission",
    "$/cancel_request",
    "session/cancel",
];

/// The fault shapes placed at a place: each a kind with the settings it takes (`lose-frame`
/// both visible and silent; `stall-frame` for 100 ms and, on the frames of
/// [`LONG_STALL_METHODS`], also past the Client's prompt timeout; one-way partitions both ways), those of `kinds` that can land
/// there on this topology.
pub fn shapes(place: &Place, plan: &Plan, kinds: &[FaultKind]) -> Vec<FaultSpec> {
    let mut out = Vec::new();
    for &k in kinds {
        // Only where the part it acts on is there (a remote transport's fault not behind a
        // proxy, a proxy's with one, a store's on a cluster).
        if !plan.topology().acts(k.reach()) {
            continue;
        }
        let placed = k.row().explore.placed;
        let lands = match &place.spot {
            Spot::Frame {
                by, side, method, ..
            } => match placed.frames {
                AtFrames::No => false,
                AtFrames::Every => true,
                AtFrames::PromptRequests => {
                    *by == Sender::Client && *side == Side::Request && method == "session/prompt"
                }
            },
            Spot::Submission(_) => placed.submissions,
            Spot::Point { point, .. } => placed.points.contains(point),
        };
        if lands {
            shapes_at(place, plan, k, placed.shapes, &mut out);
        }
    }
    out
}

/// The shapes of a fault of `k` at `place` ([`Shapes`]), pushed to `out`.
fn shapes_at(place: &Place, plan: &Plan, k: FaultKind, shapes: Shapes, out: &mut Vec<FaultSpec>) {
    let f = FaultSpec::placed(k, place.on.clone());
    match shapes {
        Shapes::One => out.push(f),
        Shapes::AlsoSilent => {
            out.push(f.clone());
            out.push(FaultSpec { silent: true, ..f });
        }
        Shapes::AlsoPastTimeout => {
            out.push(f.clone());
            // Past the Client's prompt timeout: the Client resends while the frame is still
            // on its way, so a second attempt of the key meets the first (A5, A7). Only on
            // the frames of a prompt's life, where the timeout runs.
            let long = plan.client.prompt_timeout_ms + 20;
            let on_prompt_life = matches!(&place.spot, Spot::Frame { method, .. }
                if LONG_STALL_METHODS.contains(&method.as_str()));
            if long > 100 && on_prompt_life {
                out.push(FaultSpec {
                    stall_ms: Some(long),
                    ..f
                });
            }
        }
        Shapes::EachDirection => {
            for d in [Direction::ClientToAgent, Direction::AgentToClient] {
                out.push(FaultSpec {
                    direction: Some(d),
                    ..f.clone()
                });
            }
        }
    }
}

/// How long a store fault lasts in its long shape, ms: past a break placed after it and the
/// Client's reconnect, resume and resend on another node (lineage widens a store fault to
/// outlast the break it follows up with; exhaustive places this one length).
pub const STORE_FAULT_LONG_MS: u64 = 400;

/// Every shape exhaustive exploration places at `place`: the [`shapes`] the other modes draw
/// from, and on a cluster of two nodes or more the shapes lineage also uses, so a certificate
/// covers them: a visible break and a Client restart with `reroute` (the Client's next
/// connection goes to another node), the store cut from the node that passed
/// `after-insert-before-sync` (it decided to insert and its write waits), and every store
/// fault also held [`STORE_FAULT_LONG_MS`].
pub fn exhaustive_shapes(place: &Place, plan: &Plan, kinds: &[FaultKind]) -> Vec<FaultSpec> {
    let mut out = shapes(place, plan, kinds);
    if !(plan.cluster() && plan.nodes >= 2) {
        return out;
    }
    let mut more = Vec::new();
    for f in &out {
        match f.kind.row().explore.placed.on_cluster {
            OnCluster::AlsoReroute if !f.silent => more.push(FaultSpec {
                reroute: true,
                ..f.clone()
            }),
            OnCluster::AlsoLong(s) => more.push(held_long(f.clone(), s)),
            OnCluster::AlsoReroute | OnCluster::Nothing => {}
        }
    }
    out.extend(more);
    // The kinds placed at a point only on a cluster, in their default shape and their long one.
    if let Spot::Point { point, .. } = &place.spot {
        for &k in kinds {
            let placed = k.row().explore.placed;
            if let (true, OnCluster::AlsoLong(s)) =
                (placed.cluster_points.contains(point), placed.on_cluster)
            {
                let f = FaultSpec::placed(k, place.on.clone());
                out.push(f.clone());
                out.push(held_long(f, s));
            }
        }
    }
    out
}

/// `f` with its duration `s` held [`STORE_FAULT_LONG_MS`].
pub fn held_long(mut f: FaultSpec, s: Setting) -> FaultSpec {
    if let Some(ms) = f.ms_mut(s) {
        *ms = Some(STORE_FAULT_LONG_MS);
    }
    f
}

/// The family of a shape for a certificate's scope: the fault without its trigger, and what
/// kind of place it lands on (`frames`, a protocol point, `submissions`).
pub fn shape_family(f: &FaultSpec, spot: &Spot) -> String {
    let line = fault_line(&FaultSpec {
        on: Trigger::at_time(0),
        ..f.clone()
    })
    .replacen(" on at 0ms", "", 1);
    let at = match spot {
        Spot::Frame { .. } => "frames".to_string(),
        Spot::Point { point, .. } => format!("point {}", point.as_str()),
        Spot::Submission(_) => "submissions".to_string(),
    };
    format!("{line} @ {at}")
}

/// A fault and where it lands, without the occurrence numbers: with the abstract state, the
/// key of an equivalence class.
fn shape_key(f: &FaultSpec, spot: &Spot) -> String {
    let mut line = fault_line(&FaultSpec {
        on: Trigger::at_time(0),
        ..f.clone()
    });
    line.push_str(&match spot {
        Spot::Frame {
            by,
            side,
            method,
            submission,
        } => format!(" @{by:?}:{side:?}:{method}:{submission:?}"),
        Spot::Point { point, host } => format!(" @{}:{host}", point.as_str()),
        Spot::Submission(n) => format!(" @submission {n}"),
    });
    line
}

/// A run at one level, to place further faults over: what placing needs of it, read from its
/// history and trace as it finished (they are dropped then: a level keeps no history).
struct Node {
    plan: Plan,
    /// Its places from where its newest fault fired on (all of the trace's).
    places: Vec<Place>,
    /// The abstract protocol state at each of those places' ops ([`states_at`]).
    states: BTreeMap<usize, String>,
    /// Its run's position in the list of runs (`None`: the trace).
    pos: Option<usize>,
}

/// What placing needs of a run ([`Node`]): its places from op `from` on, and the protocol state
/// at each.
type Placing = (Vec<Place>, BTreeMap<usize, String>);

/// [`Placing`] of the run `h`, `t`, from op `from` on.
fn placing(h: &History, t: &Trace, from: usize) -> Placing {
    let ps: Vec<Place> = places(h, t).into_iter().filter(|p| p.at >= from).collect();
    let at: BTreeSet<usize> = ps.iter().map(|p| p.at).collect();
    let states = states_at(h, &at);
    (ps, states)
}

/// The newest fault of a schedule's plan.
fn newest(plan: &Plan) -> FaultSpec {
    plan.faults
        .last()
        .cloned()
        .expect("a schedule places a fault")
}

/// The op index where fault `i` of the plan fired in `h`, if it did.
fn fired_at(h: &History, i: usize) -> Option<usize> {
    h.ops
        .iter()
        .find(|o| o.process == process::NEMESIS && o.value["fault"].as_u64() == Some(i as u64))
        .map(|o| o.index)
}

/// One schedule's run as a level keeps it: its verdicts, the op where its newest fault fired
/// (`None`: it never fired), for a run further faults are placed over what placing needs of it
/// ([`Placing`]), and with `--orders` its races' delays ([`orders::races`]); its history and
/// trace are dropped as it finishes, on the worker.
type Ran = (Explored, Option<usize>, Option<Placing>, Vec<orders::Race>);

/// [`run`] as a level keeps it ([`Ran`]); `orders`: find its races.
fn run_kept(plan: &Plan, id: String, parent: bool, orders: bool, parties: &Parties) -> Ran {
    let (e, h, t) = run(plan, id, parent, parties);
    let fired = fired_at(&h, plan.faults.len() - 1);
    let kept = match (parent, fired) {
        (true, Some(at)) => Some(placing(&h, &t, at + 1)),
        _ => None,
    };
    let races = match (orders, fired) {
        (true, Some(_)) => orders::races(&h, &t),
        _ => Vec::new(),
    };
    (e, fired, kept, races)
}

/// Run `plan`; `parent`: its run will have further faults placed over it, so it takes
/// snapshots of the world at its places ([`world::Run::snapshots`]).
fn run(plan: &Plan, id: String, parent: bool, parties: &Parties) -> (Explored, History, Trace) {
    let (h, t) = if parent {
        world::Run::new(plan).parties(parties).snapshots().traced()
    } else {
        world::Run::new(plan).parties(parties).traced()
    };
    let verdicts = checkers::check_all(&h);
    let e = Explored {
        plan: plan.clone(),
        id,
        verdicts,
        hash: h.hash(),
    };
    (e, h, t)
}

/// A reversal's run: its verdicts, whether its delay fired, and whether the race came out
/// reversed ([`orders::Race::reversed_in`]).
fn run_reversed(
    plan: &Plan,
    id: String,
    race: &orders::Race,
    parties: &Parties,
) -> (Explored, bool, bool) {
    let (e, h, t) = run(plan, id, false, parties);
    let fired = fired_at(&h, plan.faults.len() - 1).is_some();
    let reversed = fired && race.reversed_in(&h, &t);
    (e, fired, reversed)
}

/// How many candidates a level places before running them ([`Search::stream_level`]): enough
/// to keep every thread busy, few enough that their plans stay small.
const LEVEL_CHUNK: usize = 4096;

/// A schedule of one level, not run yet.
struct Candidate {
    plan: Plan,
    /// Its parent's run (`None`: the trace).
    parent: Option<usize>,
}

/// A pruned schedule: its newest fault, its parent's run and its representative's run
/// (positions in the list of runs; `None`: the trace). Its plan is its parent's plus the fault
/// ([`Audit::plan_of`]): no plan is held per pruned schedule.
type Pruned = (FaultSpec, Option<usize>, usize);

/// Each verdict's status and party, in `check_all`'s order: what the pruning audit compares
/// ([`delta`]).
type Judged = Vec<(Status, Option<crate::models::Party>)>;

/// A schedule run (or listed from another shard's slice), as the search keeps it for the pruning
/// audit: its newest fault, its parent's position in the list of runs, and what it judged (empty:
/// it ran in another shard). Its plan is its parent's plus the fault ([`Audit::plan_of`]).
struct RanBrief {
    fault: FaultSpec,
    parent: Option<usize>,
    judged: Judged,
}

/// What `verdicts` judged ([`Judged`]).
fn judged(verdicts: &[Verdict]) -> Judged {
    verdicts.iter().map(|v| (v.status, v.party)).collect()
}

/// Explore `plan`'s trace (see the module doc). `pool` runs the schedules of a level in
/// parallel; results keep the schedules' order, so the exploration is the same for any
/// number of threads.
pub fn explore(plan: &Plan, opts: &Options, pool: &rayon::ThreadPool) -> Exploration {
    explore_with(plan, opts, pool, &Parties::default())
}

/// [`explore`] with your own parties in every run (`crate::harness::Harness::explore`):
/// the same schedules, placed over your parties' own trace, run one at a time on this thread
/// ([`super::runner`]). A party without `state_digest` is never merged, so nothing is pruned
/// on a guess about its memory.
pub fn explore_with(
    plan: &Plan,
    opts: &Options,
    pool: &rayon::ThreadPool,
    parties: &Parties,
) -> Exploration {
    explore_chunked(plan, opts, pool, parties, LEVEL_CHUNK)
}

/// [`explore_with`], a level placed and run `chunk` candidates at a time (at least one): the
/// exploration is the same for any chunk (a test holds it); only its peak memory differs.
#[doc(hidden)]
pub fn explore_chunked(
    plan: &Plan,
    opts: &Options,
    pool: &rayon::ThreadPool,
    parties: &Parties,
    chunk: usize,
) -> Exploration {
    let base = trace_plan(plan);
    let (e0, h0, t0) = run(&base, "0.0".into(), opts.faults > 0, parties);
    let (places0, states0) = placing(&h0, &t0, 0);
    let races0 = if opts.orders {
        orders::races(&h0, &t0)
    } else {
        Vec::new()
    };
    drop((h0, t0));
    let mut x = Search::new(opts, pool, parties, e0.clone());
    x.chunk = chunk.max(1);
    let mut level0 = std::mem::take(&mut x.levels[0]);
    x.reverse(&[(e0, races0)], &mut level0);
    x.levels[0] = level0;
    x.violations.append(&mut x.order_violations);
    let mut nodes = vec![Node {
        plan: base.clone(),
        places: places0,
        states: states0,
        pos: None,
    }];
    for k in 1..=opts.faults {
        if opts.stop_at_first
            && (x.first_catch.is_some() || opts.budget.is_some_and(|b| x.runs >= b))
        {
            break;
        }
        let mut level = Level {
            faults: k,
            ..Level::default()
        };
        let pruned_from = x.pruned_list.len();
        let last = k == opts.faults;
        if last && opts.shard.is_some() {
            // A shard's slice is cut from the whole level's list: count it first (placing
            // without keeping a plan), then stream the level as an unsharded run does.
            x.level_len = Some(x.count(&nodes));
        }
        let next = x.stream_level(k, std::mem::take(&mut nodes), last, &mut level);
        // A level's reversals come after its schedules in the list of violations (as a merge
        // of shards lists them).
        x.violations.append(&mut x.order_violations);
        if opts.stop_at_first {
            // Stopped at a catch or the budget: a placement counts as pruned only when the
            // representative it was merged into ran.
            level.pruned = x.pruned_list[pruned_from..]
                .iter()
                .filter(|(_, _, rep)| *rep < x.ran_len)
                .count();
        }
        x.levels.push(level);
        nodes = if last { Vec::new() } else { next };
    }
    x.finish(base)
}

/// One exploration under way: what it has run, pruned and found so far, level by level.
struct Search<'a> {
    opts: &'a Options,
    pool: &'a rayon::ThreadPool,
    parties: &'a Parties,
    /// The schedules of every level in order (the exploration's `order_hash`).
    order: Sha256,
    levels: Vec<Level>,
    violations: Vec<Explored>,
    /// The reversals of the level under way that failed (they join `violations` after it).
    order_violations: Vec<Explored>,
    runs: usize,
    first_catch: Option<usize>,
    caught: Option<Explored>,
    trace_verdicts: Vec<crate::checkers::Verdict>,
    /// Equivalence class → the representative's position in `ran` (for the audit).
    seen: BTreeMap<String, usize>,
    /// Every schedule run (or, of another shard's slice, listed), with its parent.
    ran: Vec<RanBrief>,
    /// How many schedules `ran` lists (or would: without the audit and `stop_at_first`,
    /// which alone read it and `pruned_list`, neither is kept: a level's memory is then its
    /// pruning keys and the next level's places).
    ran_len: usize,
    pruned_list: Vec<Pruned>,
    shapes_placed: BTreeMap<String, usize>,
    /// How many candidates a level places before running them ([`LEVEL_CHUNK`]).
    chunk: usize,
    /// A shard's last level: how many candidates the whole level has ([`Search::count`]).
    level_len: Option<usize>,
}

impl<'a> Search<'a> {
    /// An exploration whose trace ran as `e0`.
    fn new(
        opts: &'a Options,
        pool: &'a rayon::ThreadPool,
        parties: &'a Parties,
        e0: Explored,
    ) -> Search<'a> {
        let first_catch = e0.catches(opts.target.as_ref()).then_some(1);
        let caught = first_catch.map(|_| e0.clone());
        let trace_verdicts = e0.verdicts.clone();
        let violations = if e0.failed() { vec![e0] } else { Vec::new() };
        Search {
            opts,
            pool,
            parties,
            order: Sha256::new(),
            levels: vec![Level {
                explored: 1,
                ..Level::default()
            }],
            violations,
            order_violations: Vec::new(),
            runs: 1,
            first_catch,
            caught,
            trace_verdicts,
            seen: BTreeMap::new(),
            ran: Vec::new(),
            ran_len: 0,
            pruned_list: Vec::new(),
            shapes_placed: BTreeMap::new(),
            chunk: LEVEL_CHUNK,
            level_len: None,
        }
    }

    /// Whether the schedules run and pruned are kept ([`RanBrief`], [`Pruned`]): for the
    /// pruning audit and `stop_at_first`'s count of what was pruned.
    fn keeps_briefs(&self) -> bool {
        self.opts.audit > 0 || self.opts.stop_at_first
    }

    /// The next schedule of the list of runs (kept when [`Search::keeps_briefs`]).
    fn brief(&mut self, b: RanBrief) {
        self.ran_len += 1;
        if self.keeps_briefs() {
            self.ran.push(b);
        }
    }

    /// The equivalence class of placing `f` at place `p` of `node`'s run, under the
    /// exploration's merge key (`None`: never merged); [`Search::place`] and
    /// [`Search::count`] prune by it alike.
    fn class(&self, node: &Node, p: &Place, f: &FaultSpec) -> Option<String> {
        let snapshot = match self.opts.merge {
            Merge::Snapshot => p.state,
            Merge::ProtocolStateOnly => Some(0),
        };
        placement_class(&node.states[&p.at], snapshot, &shape_key(f, &p.spot))
    }

    /// How many candidates [`Search::place`] would make of `nodes` (a placement equivalent to
    /// one run before, or to an earlier one of these, is pruned), keeping no plan: a shard
    /// knows its slice of a level it then streams. Changes nothing.
    fn count(&self, nodes: &[Node]) -> usize {
        let mut fresh: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        let mut n = 0;
        for node in nodes {
            for p in &node.places {
                for f in exhaustive_shapes(p, &node.plan, &self.opts.kinds) {
                    match self.class(node, p, &f) {
                        Some(c) if self.seen.contains_key(&c) || fresh.contains(&c) => {}
                        Some(c) => {
                            fresh.insert(c);
                            n += 1;
                        }
                        None => n += 1,
                    }
                }
            }
        }
        n
    }

    /// Place every shape at every place of each node's run: the candidates to run, in order;
    /// a placement equivalent to one already placed is pruned instead. `pending`: candidates
    /// placed before these and not run yet (they join the list of runs first).
    fn place(&mut self, nodes: &[Node], pending: usize, level: &mut Level) -> Vec<Candidate> {
        let mut cands: Vec<Candidate> = Vec::new();
        for node in nodes {
            let ps = &node.places;
            level.places += ps.len();
            for p in ps {
                for f in exhaustive_shapes(p, &node.plan, &self.opts.kinds) {
                    *self
                        .shapes_placed
                        .entry(shape_family(&f, &p.spot))
                        .or_default() += 1;
                    let class = self.class(node, p, &f);
                    match class.as_ref().and_then(|c| self.seen.get(c)) {
                        Some(&rep) => {
                            level.pruned += 1;
                            if self.keeps_briefs() {
                                self.pruned_list.push((f, node.pos, rep));
                            }
                        }
                        None => {
                            let mut child = node.plan.clone();
                            child.faults.push(f);
                            if let Some(c) = class {
                                self.seen.insert(c, self.ran_len + pending + cands.len());
                            }
                            cands.push(Candidate {
                                plan: child,
                                parent: node.pos,
                            });
                        }
                    }
                }
            }
        }
        cands
    }

    /// Place and run level `k` over `nodes` a chunk at a time ([`LEVEL_CHUNK`] candidates),
    /// each node dropped once placed and each chunk's plans once run, so a level holds its
    /// nodes' places and one chunk, never every candidate's plan. The schedules, their ids and
    /// the pruning are those of placing the whole level first: nodes are placed in order and
    /// each chunk's runs join the list before the next chunk is placed.
    fn stream_level(
        &mut self,
        k: usize,
        nodes: Vec<Node>,
        last: bool,
        level: &mut Level,
    ) -> Vec<Node> {
        let mut next = Vec::new();
        let mut cands = Vec::new();
        let mut first_id = 0;
        for node in nodes {
            let placed = self.place(std::slice::from_ref(&node), cands.len(), level);
            cands.extend(placed);
            while cands.len() >= self.chunk {
                let rest = cands.split_off(self.chunk);
                next.extend(self.run_level(k, &cands, first_id, last, level));
                first_id += cands.len();
                cands = rest;
            }
        }
        next.extend(self.run_level(k, &cands, first_id, last, level));
        next
    }

    /// Run candidates of level `k` (numbered from `first_id`; of the last level, this shard's
    /// slice), in order or in parallel; their runs join the list, and the ones whose fault fired
    /// become the next level's nodes.
    fn run_level(
        &mut self,
        k: usize,
        cands: &[Candidate],
        first_id: usize,
        last: bool,
        level: &mut Level,
    ) -> Vec<Node> {
        // The last level is what a shard splits: its slice of the whole level's list, cut to
        // this chunk (`first_id` onward).
        let (lo, hi) = match (self.opts.shard, last) {
            (Some((s, n)), true) => {
                level.sharded = true;
                let len = self.level_len.unwrap_or(cands.len()) as u64;
                let cut = |i: u64| (len * i / n.max(1)) as usize;
                let within = |i: usize| i.clamp(first_id, first_id + cands.len()) - first_id;
                (within(cut(s - 1)), within(cut(s)))
            }
            _ => (0, cands.len()),
        };
        // Stopped at a catch earlier in this level: the rest is placed (and counted), not run.
        let stopped = self.opts.stop_at_first && self.first_catch.is_some();
        let slice = if stopped { &cands[..0] } else { &cands[lo..hi] };
        // Every candidate of the level, also in a shard (whose slice is part of the same list).
        for c in cands {
            for f in &c.plan.faults {
                self.order.update(fault_line(f).as_bytes());
                self.order.update(b";");
            }
            self.order.update(b"\n");
        }
        let results: Vec<Ran> = if self.opts.stop_at_first {
            // In order, one at a time: runs to the first catch.
            let mut out = Vec::new();
            for (i, c) in slice.iter().enumerate() {
                if self.opts.budget.is_some_and(|b| self.runs + out.len() >= b) {
                    break;
                }
                let id = format!("{k}.{}", first_id + lo + i);
                let r = run_kept(&c.plan, id, !last, self.opts.orders, self.parties);
                let failed = r.0.catches(self.opts.target.as_ref()) && r.1.is_some();
                out.push(r);
                if failed {
                    break;
                }
            }
            out
        } else {
            let items: Vec<(usize, &Candidate)> = slice.iter().enumerate().collect();
            map_runs(items, self.parties, self.pool, |(i, c), parties| {
                run_kept(
                    &c.plan,
                    format!("{k}.{}", first_id + lo + i),
                    !last,
                    self.opts.orders,
                    parties,
                )
            })
        };
        self.runs += results.len();
        let results_len = results.len();
        // Representatives of other shards' slices never run here: keep positions aligned.
        for c in &cands[..lo] {
            self.brief(RanBrief {
                fault: newest(&c.plan),
                parent: c.parent,
                judged: Vec::new(),
            });
        }
        let after = &cands[hi..];
        let mut next = Vec::new();
        let mut to_reverse = Vec::new();
        for (i, ((e, fired, kept, races), c)) in results.into_iter().zip(slice).enumerate() {
            level.explored += 1;
            match fired {
                None => level.not_fired += 1,
                Some(_) => {
                    if e.catches(self.opts.target.as_ref()) && self.first_catch.is_none() {
                        // Its number among every run so far (the runs before this chunk, then
                        // its own place in it).
                        self.first_catch = Some(self.runs - results_len + i + 1);
                        self.caught = Some(e.clone());
                    }
                    if e.failed() {
                        self.violations.push(e.clone());
                    }
                    if let Some((places, states)) = kept {
                        next.push(Node {
                            plan: e.plan.clone(),
                            places,
                            states,
                            pos: Some(self.ran_len),
                        });
                    }
                }
            }
            self.brief(RanBrief {
                fault: newest(&e.plan),
                parent: c.parent,
                judged: judged(&e.verdicts),
            });
            if !races.is_empty() {
                to_reverse.push((e, races));
            }
        }
        // And those after this shard's slice (a later chunk's pruned placements count them).
        for c in after {
            self.brief(RanBrief {
                fault: newest(&c.plan),
                parent: c.parent,
                judged: Vec::new(),
            });
        }
        self.reverse(&to_reverse, level);
        next
    }

    /// Reverse each race of each run (`--orders`): its schedule plus the race's delay, run once
    /// each (ids `L.IoN`: the `N`-th race of schedule `L.I`), counted in `level`; a failing one
    /// is kept for the level's violations.
    fn reverse(&mut self, runs: &[(Explored, Vec<orders::Race>)], level: &mut Level) {
        let mut cands: Vec<(String, Plan, &orders::Race)> = Vec::new();
        for (e, races) in runs {
            for (n, r) in races.iter().enumerate() {
                let mut plan = e.plan.clone();
                plan.faults.push(r.delay.clone());
                cands.push((format!("{}o{n}", e.id), plan, r));
            }
        }
        if self.opts.stop_at_first && self.first_catch.is_some() {
            cands.clear();
        }
        let results: Vec<(Explored, bool, bool)> = if self.opts.stop_at_first {
            let mut out = Vec::new();
            for (id, plan, race) in cands {
                if self.opts.budget.is_some_and(|b| self.runs + out.len() >= b) {
                    break;
                }
                let r = run_reversed(&plan, id, race, self.parties);
                let caught = r.1 && r.0.catches(self.opts.target.as_ref());
                out.push(r);
                if caught {
                    break;
                }
            }
            out
        } else {
            map_runs(
                cands,
                self.parties,
                self.pool,
                |(id, plan, race), parties| run_reversed(&plan, id, race, parties),
            )
        };
        let before = self.runs;
        self.runs += results.len();
        for (i, (e, fired, reversed)) in results.into_iter().enumerate() {
            level.orders += 1;
            if !fired {
                level.orders_not_fired += 1;
                continue;
            }
            if reversed {
                level.orders_reversed += 1;
            }
            if e.catches(self.opts.target.as_ref()) && self.first_catch.is_none() {
                self.first_catch = Some(before + i + 1);
                self.caught = Some(e.clone());
            }
            if e.failed() {
                self.order_violations.push(e);
            }
        }
    }

    /// The pruning audit, then the exploration's record.
    fn finish(mut self, base: Plan) -> Exploration {
        let sample = Audit {
            base: &base,
            pruned: &self.pruned_list,
            ran: &self.ran,
            trace: &self.trace_verdicts,
            trace_judged: judged(&self.trace_verdicts),
        };
        let (audited, mismatches) = sample.run(self.opts.audit, self.pool, self.parties);
        self.runs += audited;
        let digest = self.order.finalize();
        Exploration {
            base,
            kinds: self.opts.kinds.clone(),
            levels: self.levels,
            violations: self.violations,
            order_hash: digest.iter().take(8).map(|b| format!("{b:02x}")).collect(),
            runs: self.runs,
            audited,
            mismatches,
            first_catch: self.first_catch,
            caught: self.caught,
            shapes: self.shapes_placed,
            orders: self.opts.orders,
        }
    }
}

/// The equivalence class exploration gives to placing `fault` (at its trigger) over the run
/// of `parent`, after `parent`'s own faults fired: two placements with equal classes are
/// merged, the second pruned (`explore::state::placement_class`). `None` when the run has no
/// such place or no snapshot there (then the placement is never merged). For tests and for a
/// reader who wants to know why two schedules were, or were not, taken to be the same.
pub fn class_of(parent: &Plan, fault: &FaultSpec) -> Option<String> {
    let (h, t) = world::Run::new(parent).snapshots().traced();
    let from = match parent.faults.len() {
        0 => 0,
        n => fired_at(&h, n - 1)? + 1,
    };
    let p = places(&h, &t)
        .into_iter()
        .find(|p| p.at >= from && p.on == fault.on)?;
    let states = states_at(&h, &BTreeSet::from([p.at]));
    placement_class(&states[&p.at], p.state, &shape_key(fault, &p.spot))
}

/// What a run's verdicts changed against its parent's: for each property whose status or
/// party differs, the parent's and the run's (`valid → invalid (agent)`). A placement is
/// judged by this delta only, so a violation its parent already had (before or after the
/// placement) is never counted against it.
pub fn delta(parent: &[Verdict], run: &[Verdict]) -> Vec<(String, String)> {
    delta_judged(run, &judged(parent), &judged(run))
}

/// [`delta`] of what two runs judged, the properties named by `names` (any run's verdicts: every
/// run judges the same properties in the same order).
fn delta_judged(names: &[Verdict], parent: &Judged, run: &Judged) -> Vec<(String, String)> {
    let show = |(status, party): &(Status, Option<crate::models::Party>)| match party {
        Some(p) => format!("{} ({})", status.as_str(), format!("{p:?}").to_lowercase()),
        None => status.as_str().to_string(),
    };
    names
        .iter()
        .zip(parent.iter().zip(run))
        .filter(|(_, (a, b))| a != b)
        .map(|(v, (a, b))| (v.property.clone(), format!("{} -> {}", show(a), show(b))))
        .collect()
}

/// The pruned schedules of an exploration, with the runs their representatives and parents
/// are among.
struct Audit<'a> {
    /// The trace's plan (the root of every schedule's plan).
    base: &'a Plan,
    pruned: &'a [Pruned],
    ran: &'a [RanBrief],
    /// The trace's verdicts (the parent of every level-1 schedule), which name the properties.
    trace: &'a [Verdict],
    trace_judged: Judged,
}

impl Audit<'_> {
    /// What the run at `pos` judged (`None`: the trace); `None` when it ran in another shard.
    fn verdicts(&self, pos: Option<usize>) -> Option<&Judged> {
        match pos {
            None => Some(&self.trace_judged),
            Some(i) => {
                let v = &self.ran.get(i)?.judged;
                (!v.is_empty()).then_some(v)
            }
        }
    }

    /// The plan of the run at `pos` (`None`: the trace): the trace's plus each newest fault on
    /// the way down from the trace.
    fn plan_of(&self, mut pos: Option<usize>) -> Plan {
        let mut faults = Vec::new();
        while let Some(i) = pos {
            faults.push(self.ran[i].fault.clone());
            pos = self.ran[i].parent;
        }
        let mut plan = self.base.clone();
        plan.faults.extend(faults.into_iter().rev());
        plan
    }

    /// Run `n` pruned schedules (a seeded sample; all of them when `n` is at least their
    /// number) whose representatives and parents ran here, and compare each one's delta
    /// against its parent ([`delta`]) with its representative's against its own parent.
    fn run(
        &self,
        n: usize,
        pool: &rayon::ThreadPool,
        parties: &Parties,
    ) -> (usize, Vec<AuditMismatch>) {
        if n == 0 {
            return (0, Vec::new());
        }
        let mut eligible: Vec<&Pruned> = self
            .pruned
            .iter()
            .filter(|(_, parent, rep)| {
                self.verdicts(*parent).is_some()
                    && self.verdicts(Some(*rep)).is_some()
                    && self.verdicts(self.ran[*rep].parent).is_some()
            })
            .collect();
        if n < eligible.len() {
            eligible.shuffle(&mut stream(0, "explore.audit"));
            eligible.truncate(n);
        }
        let lines = |p: &Plan| p.faults.iter().map(fault_line).collect::<Vec<_>>();
        let n_eligible = eligible.len();
        let results: Vec<Option<AuditMismatch>> =
            map_runs(eligible, parties, pool, |(fault, parent, rep), parties| {
                let mut plan = self.plan_of(*parent);
                plan.faults.push(fault.clone());
                let (e, _, _) = run(&plan, String::new(), false, parties);
                let r = &self.ran[*rep];
                let names = self.trace;
                let ours = delta_judged(names, self.verdicts(*parent)?, &judged(&e.verdicts));
                let theirs = delta_judged(names, self.verdicts(r.parent)?, &r.judged);
                (ours != theirs).then(|| AuditMismatch {
                    pruned: lines(&plan),
                    representative: lines(&self.plan_of(Some(*rep))),
                    pruned_delta: ours,
                    representative_delta: theirs,
                })
            });
        (n_eligible, results.into_iter().flatten().collect())
    }
}
