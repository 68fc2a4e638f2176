//! `acp-chaos shrink`: the smallest schedule that still fails.
//!
//! A failing run is its [`Plan`]: every setting derived from (scenario, seed, mutant, design),
//! the fault schedule (scripted or drawn by the swarm) and the workload (the user's
//! submissions, each with its cancel, stop, close or fork) and raw probes. Shrinking first fixes
//! the network latency (`latency_ms_min = latency_ms_max`, so that removing one fault or op does
//! not move the frames of the others), keeping the first fixed value that still fails, then
//! re-anchors every fault triggered by "the nth `session/prompt` request or response" to the
//! submission whose attempt it hit (`attempt_of`: removing an earlier submission would
//! otherwise move it to another prompt), keeping that only if the run still fails, then
//! runs delta debugging (Zeller's ddmin) over the units (faults, submissions, raw probes) until
//! removing any single one makes the failure disappear (1-minimal). Every choice inside a run
//! comes from its own seed stream, so the same input always shrinks to the same schedule.
//!
//! The failure kept is the target verdict: its property, with the same status (invalid, or a
//! finding for a mutant whose rule is a SHOULD) and the same party at fault. The result is a
//! schedule file (the plan as TOML) that `acp-chaos replay --schedule FILE` runs again.

use std::cell::Cell;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::checkers::{self, Status, Verdict};
use crate::history::{op, process, History};
use crate::models::Party;
use crate::nemesis::Trigger;
use crate::plan::Plan;
use crate::world::{self, Parties};

/// What must still fail: a property, a status and a party. Built with [`Target::new`],
/// [`Target::of_verdict`], [`Target::of_mutant`] or [`Target::invalid`] (fields may be added).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Target {
    /// Property id, e.g. `P1`.
    pub property: String,
    /// `invalid` (or `finding`).
    pub status: Status,
    /// Who the verdict blames.
    pub party: Option<Party>,
    /// Whether a verdict blaming any party (or none) matches: `party` is then not compared
    /// (`Harness::expect("P9")`, where the test names the property, not who breaks it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub any_party: bool,
}

impl Target {
    /// Whether a verdict matches.
    pub fn matches(&self, v: &Verdict) -> bool {
        v.property == self.property
            && v.status == self.status
            && (self.any_party || v.party == self.party)
    }

    /// `property` with `status`, blaming `party`.
    pub fn new(property: &str, status: Status, party: Option<Party>) -> Target {
        Target {
            property: property.to_string(),
            status,
            party,
            any_party: false,
        }
    }

    /// What a verdict is: its property, status and party.
    pub fn of_verdict(v: &Verdict) -> Target {
        Target {
            property: v.property.clone(),
            status: v.status,
            party: v.party,
            any_party: false,
        }
    }

    /// `property` invalid, whoever it blames.
    pub fn invalid(property: &str) -> Target {
        Target {
            property: property.to_string(),
            status: Status::Invalid,
            party: None,
            any_party: true,
        }
    }

    /// What catches mutant `m`: its property and party, invalid (a finding for a mutant that
    /// breaks a SHOULD).
    pub fn of_mutant(m: &crate::models::mutant::Mutant) -> Target {
        Target {
            property: m.property.to_string(),
            status: if m.finding {
                Status::Finding
            } else {
                Status::Invalid
            },
            party: Some(m.party),
            any_party: false,
        }
    }

    /// The target of a run: the verdict on `property` if given (it must be invalid or a
    /// finding), else the first invalid verdict, else the first finding.
    pub fn of(verdicts: &[Verdict], property: Option<&str>) -> Option<Target> {
        let pick = |s: Status| {
            verdicts
                .iter()
                .find(|v| v.status == s && property.is_none_or(|p| v.property == p))
        };
        pick(Status::Invalid)
            .or_else(|| pick(Status::Finding))
            .map(Target::of_verdict)
    }
}

/// One removable unit of a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "unit", content = "index", rename_all = "kebab-case")]
pub enum Unit {
    /// A fault of `plan.faults`, by index in the original plan.
    Fault(usize),
    /// A submission of `plan.workload`, by index in the original plan.
    Op(usize),
    /// A raw probe of `plan.raw`, by index in the original plan.
    Raw(usize),
}

/// The result of shrinking.
#[derive(Debug, Clone, Serialize)]
pub struct Shrunk {
    /// The failure kept.
    pub target: Target,
    /// The minimal plan (fixed latency, if a fixed value still failed).
    pub plan: Plan,
    /// Units kept, as indices into the original plan.
    pub kept: Vec<Unit>,
    /// Faults, submissions and raw probes before.
    pub before: (usize, usize, usize),
    /// Faults, submissions and raw probes after.
    pub after: (usize, usize, usize),
    /// The latency it was fixed at (ms), or `None` if no fixed value failed.
    pub latency_ms: Option<u64>,
    /// Simulated runs it took.
    pub runs: usize,
    /// The verdict of the minimal plan's run.
    pub verdict: Verdict,
}

/// The plan with only `units` kept.
pub fn restrict(plan: &Plan, units: &[Unit]) -> Plan {
    let mut p = plan.clone();
    p.faults.clear();
    p.workload.clear();
    p.raw.clear();
    for u in units {
        match *u {
            Unit::Fault(i) => p.faults.extend(plan.faults.get(i).cloned()),
            Unit::Op(i) => p.workload.extend(plan.workload.get(i).cloned()),
            Unit::Raw(i) => p.raw.extend(plan.raw.get(i).cloned()),
        }
    }
    p
}

/// The plan with every `session/prompt` frame trigger re-anchored to the submission whose
/// attempt it fired on in `plan`'s run (`on.attempt_of`, `nth` its attempt number); faults
/// that never fired keep their trigger.
pub fn anchor(plan: &Plan) -> Plan {
    anchor_with(plan, &Parties::default())
}

/// [`anchor`] with the given parties in the run.
pub fn anchor_with(plan: &Plan, parties: &Parties) -> Plan {
    let h = world::Run::new(plan).parties(parties).history();
    let mut links: BTreeMap<(u64, String), u32> = BTreeMap::new();
    let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
    let mut sent: BTreeMap<(u64, String), (u32, u32)> = BTreeMap::new();
    let mut fired: BTreeMap<usize, (u64, String)> = BTreeMap::new();
    for op in &h.ops {
        let v = &op.value;
        match (op.process.as_str(), op.f.as_str()) {
            (process::CLIENT, op::ATTEMPT) => {
                if let (Some(c), Some(n)) = (v["conn"].as_u64(), v["submission"].as_u64()) {
                    links.insert((c, v["id"].to_string()), n as u32);
                }
            }
            (process::NET, op::SEND)
                if v["from"] == "client" && v["frame"]["method"] == "session/prompt" =>
            {
                let a = (
                    v["conn"].as_u64().unwrap_or(0),
                    v["frame"]["id"].to_string(),
                );
                if let Some(&s) = links.get(&a) {
                    let k = counts.entry(s).or_insert(0);
                    *k += 1;
                    sent.entry(a).or_insert((s, *k));
                }
            }
            ("nemesis", _) => {
                if let Some(i) = v["fault"].as_u64() {
                    let d = &v["detail"];
                    if d["frame"].is_object() {
                        fired.entry(i as usize).or_insert((
                            d["conn"].as_u64().unwrap_or(0),
                            d["frame"]["id"].to_string(),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    let mut p = plan.clone();
    for (i, f) in p.faults.iter_mut().enumerate() {
        let Trigger::Frame(t) = &mut f.on else {
            continue;
        };
        if t.method != "session/prompt" || t.attempt_of.is_some() {
            continue;
        }
        if let Some(&(s, k)) = fired.get(&i).and_then(|a| sent.get(a)) {
            t.attempt_of = Some(s);
            t.nth = k;
        }
    }
    p
}

/// The run's verdict on the target, if it still fails that way.
pub fn failing(plan: &Plan, t: &Target) -> Option<Verdict> {
    failing_with(plan, t, &Parties::default())
}

/// [`failing`] with the given parties in the run.
pub fn failing_with(plan: &Plan, t: &Target, parties: &Parties) -> Option<Verdict> {
    let h = world::Run::new(plan).parties(parties).history();
    checkers::check_all(&h).into_iter().find(|v| t.matches(v))
}

/// Delta debugging (ddmin): a 1-minimal subset of `units` on which `fails` holds, given that it
/// holds on all of them. Deterministic: chunks are taken in order.
pub fn ddmin<U: Clone>(units: Vec<U>, fails: &mut dyn FnMut(&[U]) -> bool) -> Vec<U> {
    if fails(&[]) {
        return Vec::new();
    }
    let mut c = units;
    let mut n = 2usize;
    while c.len() >= 2 {
        let size = c.len().div_ceil(n);
        let chunks: Vec<Vec<U>> = c.chunks(size).map(|x| x.to_vec()).collect();
        let mut next = None;
        for ch in &chunks {
            if fails(ch) {
                next = Some((ch.clone(), 2));
                break;
            }
        }
        if next.is_none() && chunks.len() > 2 {
            for i in 0..chunks.len() {
                let rest: Vec<U> = chunks
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .flat_map(|(_, x)| x.iter().cloned())
                    .collect();
                if fails(&rest) {
                    next = Some((rest, (n - 1).max(2)));
                    break;
                }
            }
        }
        match next {
            Some((smaller, m)) => {
                c = smaller;
                n = m;
            }
            None if n >= c.len() => break,
            None => n = (n * 2).min(c.len()),
        }
    }
    c
}

/// Shrink the failing `plan` on `target`. Errors when the plan does not fail that way.
pub fn shrink(plan: &Plan, target: &Target) -> anyhow::Result<Shrunk> {
    shrink_with(plan, target, &Parties::default())
}

/// [`shrink`] with the given parties (your Agent, Client or proxy) in every run.
pub fn shrink_with(plan: &Plan, target: &Target, parties: &Parties) -> anyhow::Result<Shrunk> {
    let fails = |h: &History| checkers::check_all(h).iter().any(|v| target.matches(v));
    let k = shrink_while(plan, parties, &fails).map_err(|_| {
        anyhow::anyhow!(
            "the run does not fail on {} ({:?}): nothing to shrink",
            target.property,
            target.status
        )
    })?;
    let verdict = failing_with(&k.plan, target, parties)
        .ok_or_else(|| anyhow::anyhow!("the shrunk schedule no longer fails (nondeterminism)"))?;
    Ok(Shrunk {
        target: target.clone(),
        before: (plan.faults.len(), plan.workload.len(), plan.raw.len()),
        after: (k.plan.faults.len(), k.plan.workload.len(), k.plan.raw.len()),
        plan: k.plan,
        kept: k.kept,
        latency_ms: k.latency_ms,
        runs: k.runs + 1,
        verdict,
    })
}

/// What [`shrink_while`] kept.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The minimal plan (fixed latency, if a fixed value still held).
    pub plan: Plan,
    /// Units kept, as indices into the original plan.
    pub kept: Vec<Unit>,
    /// The latency it was fixed at (ms), or `None` if no fixed value held.
    pub latency_ms: Option<u64>,
    /// Simulated runs it took.
    pub runs: usize,
}

/// Shrink `plan` to a 1-minimal set of its faults, submissions and raw probes on whose run
/// `holds` (any property of the history: a verdict, a finding's statement) still holds, as
/// [`shrink`] does for a verdict: fixed latency first, prompt faults re-anchored to their
/// submissions, then ddmin. Errors when `holds` is false on `plan`'s own run.
pub fn shrink_while(
    plan: &Plan,
    parties: &Parties,
    holds: &dyn Fn(&History) -> bool,
) -> anyhow::Result<Kept> {
    let runs = Cell::new(0usize);
    let fails = |p: &Plan| {
        runs.set(runs.get() + 1);
        holds(&world::Run::new(p).parties(parties).history())
    };
    anyhow::ensure!(
        fails(plan),
        "it does not hold on the run: nothing to shrink"
    );
    // Fixed latency first, so that removing a unit does not move the others' frames.
    let mut base = plan.clone();
    let mut latency_ms = None;
    for l in [plan.latency_ms_max, plan.latency_ms_min] {
        let mut p = plan.clone();
        p.latency_ms_min = l;
        p.latency_ms_max = l;
        if fails(&p) {
            base = p;
            latency_ms = Some(l);
            break;
        }
    }
    let anchored = anchor_with(&base, parties);
    runs.set(runs.get() + 1);
    if anchored.faults != base.faults && fails(&anchored) {
        base = anchored;
    }
    let units: Vec<Unit> = (0..base.faults.len())
        .map(Unit::Fault)
        .chain((0..base.workload.len()).map(Unit::Op))
        .chain((0..base.raw.len()).map(Unit::Raw))
        .collect();
    let kept = ddmin(units, &mut |u: &[Unit]| fails(&restrict(&base, u)));
    Ok(Kept {
        plan: restrict(&base, &kept),
        kept,
        latency_ms,
        runs: runs.get(),
    })
}
