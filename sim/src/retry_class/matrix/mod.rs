//! `acp-chaos matrix`: the retry-class conformance matrix (RULES.md "Retry classes", P10).
//!
//! Every method of [`crate::models::methods`] has a row: the Client→Agent methods the models
//! speak are run ([`METHODS`]); the others are listed with their class and why not
//! ([`not_run`]).
//!
//! For each method × fault class × Client policy, run the correct model Agent (or a mutant) over
//! N seeds and count what the user ends up with: `ok`, `surfaced-error`, `duplicate-effect` or
//! `silent-drop` (see [`Outcome`]), keeping the first seed of each outcome. From the counts, a
//! verdict per method confirms or refutes the class RULES.md gives it (stated or inferred, as in
//! [`crate::retry_class::audit`]).
//!
//! Sans-IO like the audit: no turmoil. A small discrete-event loop (1 ms per hop, simulated
//! milliseconds, no wall clock) drives [`crate::models::ModelAgent`] directly and plays a scripted Client:
//! setup without faults, then the op under one fault, then the Client's next op, then quiescence.
//! Every choice comes from the seed ([`Variation`]), so any cell's seed reruns verbosely with
//! `acp-chaos matrix --seed N --method M --fault F --policy P`.
//!
//! The Client (rules C4, C6, C8, C9): every attempt is a new JSON-RPC id (C4); it waits
//! [`TIMEOUT_MS`] for an answer; after a connection ends it reconnects after [`RECONNECT_MS`] with
//! `initialize` and `session/resume` of its session (C6), then resends per policy.

//!
//! Files: `space.rs` (the axes: methods and their classes, faults, policies, outcomes, the
//! seed's variation), `world.rs` with `script.rs`, `frames.rs`, `agent.rs` and `observe.rs`
//! (one run: the discrete-event world), `verdict.rs` (the class verdicts from the counts),
//! `table.rs` (the matrix as text).

mod agent;
mod frames;
mod observe;
mod script;
mod space;
mod table;
mod verdict;
mod world;

use std::collections::BTreeMap;

use serde::Serialize;

pub use space::{
    not_applicable, not_run, Fault, Method, MethodClass, NotRun, Outcome, Policy, Variation,
    METHODS,
};
pub use table::table_text;
pub use verdict::{ClassSummary, ClassVerdict, Example};

use crate::models::AgentMutant;
use crate::models::RetryClass;
use verdict::verdict;
use world::EventWorld;

/// How long the Client waits for an answer (or, for a notification, for its effect to show)
/// before its policy acts, in simulated ms.
pub const TIMEOUT_MS: u64 = 100;
/// Attempts the Client makes on timeouts before it gives up and shows the user an error
/// (a reconnect adds one more resend, C6).
pub const MAX_ATTEMPTS: usize = 3;
/// Delay between a connection ending and the Client's reconnect, in simulated ms.
pub const RECONNECT_MS: u64 = 5;
/// One hop, either direction, in simulated ms.
const LATENCY_MS: u64 = 1;
/// A run stops here whatever is still queued (simulated ms); no correct run comes near it.
const CAP_MS: u64 = 20_000;

/// One run: what happened and why.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// The seed.
    pub seed: u64,
    /// What the seed drew.
    pub variation: Variation,
    /// The outcome.
    pub outcome: Outcome,
    /// Whether the fault fired (a crash needs the batch that answers the op; a late copy needs
    /// its connection still open).
    pub fired: bool,
    /// One line: why this outcome.
    pub why: String,
    /// Every frame in and out, record, effect, crash and Client decision (verbose runs only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
}

/// Run one (method, fault, policy, seed); with `verbose`, keep the log.
pub fn run_cell(
    method: Method,
    fault: Fault,
    policy: Policy,
    seed: u64,
    mutant: Option<AgentMutant>,
    verbose: bool,
) -> Run {
    let var = Variation::derive(seed, method);
    let mut w = EventWorld::new(method, fault, policy, seed, var.clone(), mutant, verbose);
    w.script();
    let (outcome, why) = w.classify();
    if verbose {
        let line = format!("outcome {}: {why}", outcome.as_str());
        w.push_note(line);
    }
    Run {
        seed,
        variation: var,
        outcome,
        fired: w.fired || fault == Fault::None,
        why,
        log: w.log.unwrap_or_default(),
    }
}

/// Outcome counts of one cell.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub struct Counts {
    /// `ok` runs.
    pub ok: u64,
    /// `surfaced-error` runs.
    pub surfaced_error: u64,
    /// `duplicate-effect` runs.
    pub duplicate_effect: u64,
    /// `silent-drop` runs.
    pub silent_drop: u64,
}

impl Counts {
    fn get(&self, o: Outcome) -> u64 {
        match o {
            Outcome::Ok => self.ok,
            Outcome::SurfacedError => self.surfaced_error,
            Outcome::DuplicateEffect => self.duplicate_effect,
            Outcome::SilentDrop => self.silent_drop,
        }
    }

    fn add(&mut self, o: Outcome) {
        match o {
            Outcome::Ok => self.ok += 1,
            Outcome::SurfacedError => self.surfaced_error += 1,
            Outcome::DuplicateEffect => self.duplicate_effect += 1,
            Outcome::SilentDrop => self.silent_drop += 1,
        }
    }
}

/// One cell: a method under one fault and one Client policy, over the seeds.
#[derive(Debug, Clone, Serialize)]
pub struct MatrixCell {
    /// The method.
    pub method: Method,
    /// Its class.
    pub class: RetryClass,
    /// Whether RULES.md infers the class.
    pub inferred: bool,
    /// The fault.
    pub fault: Fault,
    /// The Client policy.
    pub policy: Policy,
    /// Why the cell is not run (then every count is 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<&'static str>,
    /// Runs per outcome.
    pub counts: Counts,
    /// Runs in which the fault fired.
    pub fired: u64,
    /// The first seed of each outcome that occurred (ok included, for confirming examples).
    pub first_seed: BTreeMap<Outcome, u64>,
}

impl MatrixCell {
    fn run(m: MethodClass, fault: Fault, policy: Policy, spec: &Spec) -> MatrixCell {
        let mut cell = MatrixCell {
            method: m.method,
            class: m.class,
            inferred: m.inferred,
            fault,
            policy,
            not_applicable: not_applicable(m.method, fault, policy),
            counts: Counts::default(),
            fired: 0,
            first_seed: BTreeMap::new(),
        };
        if cell.not_applicable.is_some() {
            return cell;
        }
        for seed in spec.seed_start..spec.seed_start + spec.seeds {
            let r = run_cell(m.method, fault, policy, seed, spec.mutant, false);
            cell.counts.add(r.outcome);
            cell.fired += u64::from(r.fired);
            cell.first_seed.entry(r.outcome).or_insert(seed);
        }
        cell
    }

    /// The counts as `ok=N err=N@S ...` (non-zero outcomes; `@S` the first seed of a non-ok
    /// outcome), led by `fired=K/N` when the fault fired in fewer than all runs.
    fn text(&self) -> String {
        if self.not_applicable.is_some() {
            return "n/a".into();
        }
        let mut parts = Vec::new();
        let runs: u64 = Outcome::ALL.iter().map(|o| self.counts.get(*o)).sum();
        if self.fired < runs {
            // A fault that did not fire leaves those runs fault-free: say so.
            parts.push(format!("fired={}/{runs}", self.fired));
        }
        for o in Outcome::ALL {
            let n = self.counts.get(o);
            if n == 0 {
                continue;
            }
            match (o, self.first_seed.get(&o)) {
                (Outcome::Ok, _) | (_, None) => parts.push(format!("{}={n}", o.short())),
                (_, Some(s)) => parts.push(format!("{}={n}@{s}", o.short())),
            }
        }
        parts.join(" ")
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    /// First seed.
    pub seed_start: u64,
    /// Seeds per cell.
    pub seeds: u64,
    /// The Agent mutant (`None`: the correct models).
    pub mutant: Option<AgentMutant>,
    /// Its CLI name, for printed commands.
    pub mutant_name: Option<String>,
    /// Only this method's cells and verdict (`None`: every method).
    pub only: Option<Method>,
}

impl Spec {
    fn methods(&self) -> Vec<MethodClass> {
        METHODS
            .into_iter()
            .filter(|m| self.only.is_none_or(|o| o == m.method))
            .collect()
    }
}

/// The whole matrix.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    /// First seed.
    pub seed_start: u64,
    /// Seeds per cell.
    pub seeds: u64,
    /// The mutant, if any.
    pub mutant: Option<String>,
    /// Client timeout in simulated ms.
    pub timeout_ms: u64,
    /// Every cell, methods (all, or [`Spec::only`]) × faults × policies in table order (n/a
    /// cells included).
    pub cells: Vec<MatrixCell>,
    /// One verdict per method.
    pub verdicts: Vec<ClassVerdict>,
    /// One summary per class.
    pub classes: Vec<ClassSummary>,
    /// The methods of the table the matrix does not run, with their classes and why.
    pub not_run: Vec<NotRun>,
    /// 0 if every stated class is confirmed, 1 if one is refuted (inferred ones refuted are
    /// findings).
    pub exit: i32,
}

/// Run every cell over the spec's seeds, then the verdicts.
pub fn sweep(spec: &Spec) -> Matrix {
    use rayon::prelude::*;
    let keys: Vec<(MethodClass, Fault, Policy)> = spec
        .methods()
        .into_iter()
        .flat_map(|m| {
            Fault::ALL
                .into_iter()
                .flat_map(move |f| Policy::ALL.into_iter().map(move |p| (m, f, p)))
        })
        .collect();
    // Cells are independent; collect keeps table order, so output does not depend on threads.
    let cells: Vec<MatrixCell> = keys
        .par_iter()
        .map(|(m, f, p)| MatrixCell::run(*m, *f, *p, spec))
        .collect();
    let verdicts: Vec<ClassVerdict> = spec
        .methods()
        .iter()
        .map(|m| verdict(m, &cells, spec))
        .collect();
    let classes = [
        RetryClass::Idempotent,
        RetryClass::Keyed,
        RetryClass::Duplicating,
        RetryClass::NotResent,
    ]
    .into_iter()
    .filter(|c| verdicts.iter().any(|v| v.class == *c))
    .map(|c| {
        let of: Vec<&ClassVerdict> = verdicts.iter().filter(|v| v.class == c).collect();
        let refuted: Vec<Method> = of
            .iter()
            .filter(|v| !v.confirmed)
            .map(|v| v.method)
            .collect();
        ClassSummary {
            class: c,
            confirmed: refuted.is_empty(),
            stated: of
                .iter()
                .filter(|v| !v.inferred)
                .map(|v| v.method)
                .collect(),
            inferred: of.iter().filter(|v| v.inferred).map(|v| v.method).collect(),
            // The first refuted method's example, else the first stated method's.
            example: of
                .iter()
                .find(|v| !v.confirmed)
                .or(of.iter().find(|v| !v.inferred))
                .or(of.first())
                .and_then(|v| v.example.clone()),
            refuted,
        }
    })
    .collect();
    let stated_refuted = verdicts.iter().any(|v| !v.inferred && !v.confirmed);
    Matrix {
        seed_start: spec.seed_start,
        seeds: spec.seeds,
        mutant: spec.mutant_name.clone(),
        timeout_ms: TIMEOUT_MS,
        cells,
        verdicts,
        classes,
        not_run: if spec.only.is_none() {
            not_run()
        } else {
            Vec::new()
        },
        exit: if stated_refuted {
            crate::exit::INVALID
        } else {
            crate::exit::VALID
        },
    }
}

/// The command that reruns one cell for one seed verbosely.
pub fn command(
    method: Method,
    fault: Fault,
    policy: Policy,
    seed: u64,
    mutant: Option<&str>,
) -> String {
    format!(
        "acp-chaos matrix --seed {seed} --method {} --fault {} --policy {}{}",
        method.as_str(),
        fault.as_str(),
        policy.as_str(),
        mutant.map(|m| format!(" --mutant {m}")).unwrap_or_default()
    )
}

fn example(cell: &MatrixCell, outcome: Outcome, spec: &Spec) -> Option<Example> {
    cell.first_seed.get(&outcome).map(|&seed| Example {
        seed,
        fault: cell.fault,
        policy: cell.policy,
        outcome,
        command: command(
            cell.method,
            cell.fault,
            cell.policy,
            seed,
            spec.mutant_name.as_deref(),
        ),
    })
}
