//! One run: a scenario, a seed, a mutant and a design to a [`History`] and its [`RunResult`]
//! (every checker's verdict, the submissions' classes, the events, the coverage cells), and the
//! one line that reproduces it ([`repro`]).

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::Design;
use serde::Serialize;

use crate::checkers::{self, SubmissionClass, Verdict};
use crate::history::History;
use crate::plan::Plan;
use crate::scenario::Scenario;
use crate::world;

/// The outcome of one (scenario, design, seed).
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// Scenario name.
    pub scenario: String,
    /// Agent design.
    pub design: Design,
    /// Seed.
    pub seed: u64,
    /// History hash.
    pub hash: String,
    /// One verdict per checker.
    pub verdicts: Vec<Verdict>,
    /// SubmissionClass counts of the submissions.
    pub classes: BTreeMap<SubmissionClass, u32>,
    /// Events seen (for `sometimes`).
    pub events: BTreeSet<&'static str>,
    /// Number of ops.
    pub ops: usize,
    /// Simulated time at the end, ms.
    pub sim_ms: u64,
    /// `--check-determinism`: the second run's hash, when it differed.
    pub rerun_hash: Option<String>,
    /// (protocol state, fault kind) of every fault fired (the coverage map's cells).
    pub fault_cells: Vec<(&'static str, String)>,
}

impl RunResult {
    /// `scenario@design`: the row key of tables and summaries.
    pub fn key(&self) -> String {
        format!("{}@{}", self.scenario, self.design.as_str())
    }
}

/// Run one (scenario, design, seed, mutant): the history and its result.
pub fn run_one(
    s: &Scenario,
    seed: u64,
    mutant: Option<&str>,
    design: Design,
) -> (History, RunResult) {
    let plan = Plan::derive(s, seed, mutant, design);
    let h = world::run(&plan);
    let r = result_of(&s.name, design, seed, &h);
    (h, r)
}

/// Check a history and summarize it.
pub fn result_of(scenario: &str, design: Design, seed: u64, h: &History) -> RunResult {
    // The history as the checkers read it, and its facts, made once for every use below.
    let view = checkers::agent_view(h);
    let facts = checkers::Facts::of(&view);
    let verdicts = checkers::check_view(&facts);
    // The classes are of the history as recorded; the view is that history unless a cluster's
    // nodes were renamed.
    let classes_of = match &view {
        std::borrow::Cow::Borrowed(_) => facts.classes(),
        std::borrow::Cow::Owned(_) => checkers::Facts::of(h).classes(),
    };
    let mut classes = BTreeMap::new();
    for c in classes_of.values() {
        *classes.entry(*c).or_insert(0) += 1;
    }
    RunResult {
        scenario: scenario.to_string(),
        design,
        seed,
        hash: h.hash(),
        verdicts,
        classes,
        events: checkers::events_in_view(h, &facts),
        ops: h.ops.len(),
        sim_ms: h.ops.last().map(|o| o.time_ms).unwrap_or(0),
        rerun_hash: None,
        fault_cells: checkers::fault_states_in_view(&facts),
    }
}

/// The one-line repro of a run.
pub fn repro(scenario: &str, design: Design, seed: u64, mutant: Option<&str>) -> String {
    let d = design.as_str();
    match mutant {
        Some(m) => format!("acp-chaos replay {scenario} --seed {seed} --agent {d} --mutant {m}"),
        None => format!("acp-chaos replay {scenario} --seed {seed} --agent {d}"),
    }
}
