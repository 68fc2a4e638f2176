//! From the runs' results to a [`Summary`], one result at a time as the runs finish (in the
//! order the runs are listed): the table, the classes, the events, the hashes (to a log on
//! disk), the coverage map, and the failing runs kept as folders (the first of each row ×
//! property shrunk). What stays in memory does not grow with the seeds, only with the failures.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

use super::counterexample::{run_dir_name, shrink_into, write_counterexample, write_run, Names};
use super::{reference, CampaignSpec};
use acp_chaos::checkers::{Status, SubmissionClass};
use acp_chaos::run::{repro, run_one, RunResult};
use acp_chaos::scenario::Expect;
use acp_chaos::summary::{
    failure_group, HashLogWriter, Summary, Tally, FAILURES_LISTED, SUMMARY_FORMAT,
};

/// The campaign's tables so far, and where its report is written.
pub(super) struct Summarizer<'a> {
    spec: &'a CampaignSpec,
    /// Where files are written (the staging folder).
    dir: &'a Path,
    /// Where the report will be: what paths written into it name.
    shown: &'a Path,
    /// The first write that failed: nothing is written after it, the tables go on.
    pub(super) write_error: Option<String>,
    table: BTreeMap<String, BTreeMap<String, Tally>>,
    classes: BTreeMap<String, BTreeMap<SubmissionClass, u64>>,
    failures: Vec<serde_json::Value>,
    findings: Vec<serde_json::Value>,
    kept: BTreeMap<(String, String), usize>,
    listed: BTreeMap<String, usize>,
    omitted: BTreeMap<String, u64>,
    nondeterministic: Vec<String>,
    events: BTreeMap<String, BTreeMap<String, u64>>,
    hashes: HashLogWriter,
    coverage_map: BTreeMap<String, BTreeMap<String, u64>>,
    order: Vec<String>,
    first_property: BTreeMap<String, String>,
}

impl<'a> Summarizer<'a> {
    /// Empty tables for `spec`, writing into `dir` the files of a report that will be `shown`.
    pub(super) fn new(
        spec: &'a CampaignSpec,
        dir: &'a Path,
        shown: &'a Path,
        hashes: HashLogWriter,
    ) -> Summarizer<'a> {
        Summarizer {
            spec,
            dir,
            shown,
            write_error: None,
            table: BTreeMap::new(),
            classes: BTreeMap::new(),
            failures: Vec::new(),
            findings: Vec::new(),
            kept: BTreeMap::new(),
            listed: BTreeMap::new(),
            omitted: BTreeMap::new(),
            nondeterministic: Vec::new(),
            events: BTreeMap::new(),
            hashes,
            coverage_map: BTreeMap::new(),
            order: Vec::new(),
            first_property: BTreeMap::new(),
        }
    }

    /// Note a failed write (the first one is reported).
    pub(super) fn failed(&mut self, e: impl std::fmt::Display) {
        self.write_error.get_or_insert_with(|| e.to_string());
    }

    /// Add the next run's result (`None`: not run, Ctrl-C).
    pub(super) fn add(&mut self, r: Option<RunResult>) {
        let pushed = self.hashes.push(r.as_ref().map(|r| r.hash.as_str()));
        if let Err(e) = pushed {
            self.failed(format!("{}: {e}", self.dir.join(".hashes").display()));
        }
        if let Some(r) = r {
            self.add_run(&r);
        }
    }

    /// Long on purpose: one result added to every table of the summary, its failures kept as
    /// folders.
    fn add_run(&mut self, r: &RunResult) {
        let spec = self.spec;
        let mutant = spec.mutant.as_deref();
        if self.order.last() != Some(&r.key()) && !self.order.contains(&r.key()) {
            self.order.push(r.key());
        }
        for (c, n) in &r.classes {
            *self
                .classes
                .entry(r.key())
                .or_default()
                .entry(*c)
                .or_default() += u64::from(*n);
        }
        for e in &r.events {
            *self
                .events
                .entry(r.key())
                .or_default()
                .entry(e.to_string())
                .or_default() += 1;
        }
        for (state, kind) in &r.fault_cells {
            *self
                .coverage_map
                .entry(kind.clone())
                .or_default()
                .entry(state.to_string())
                .or_default() += 1;
        }
        if let Some(other) = &r.rerun_hash {
            let line = repro(&reference(spec, &r.scenario), r.design, r.seed, mutant);
            self.nondeterministic.push(format!(
                "{line}  (hash {} then {other}; both histories kept)",
                r.hash
            ));
        }
        for v in &r.verdicts {
            let cell = self
                .table
                .entry(r.key())
                .or_default()
                .entry(v.property.clone())
                .or_default();
            cell.seeds += 1;
            cell.sim_ms += r.sim_ms;
            match v.status {
                Status::Valid => {}
                Status::Finding => cell.findings += 1,
                Status::Unknown => {
                    cell.unknown += 1;
                    cell.first_failing_seed.get_or_insert(r.seed);
                }
                Status::Invalid => {
                    cell.violations += 1;
                    if cell.violations == 1 {
                        cell.first_failing_seed = Some(r.seed);
                    }
                }
            }
            if let (Some(p), Status::Invalid | Status::Unknown) = (v.party, v.status) {
                cell.parties.insert(format!("{p:?}").to_lowercase());
            }
            let first_finding = v.status == Status::Finding && cell.findings == 1;
            if first_finding {
                let line = repro(&reference(spec, &r.scenario), r.design, r.seed, mutant);
                self.findings.push(json!({"scenario": r.scenario, "design": r.design, "seed": r.seed, "property": v.property, "status": v.status, "party": v.party, "rules": v.rules, "message": v.message, "repro": line}));
            }
            if matches!(v.status, Status::Invalid | Status::Unknown) {
                self.add_failure(r, v);
            }
        }
    }

    /// One failing verdict: its entry in `failures` (the first few of its group), and (the
    /// first `keep_per_property` of its row × property) its run folder: the first whole and
    /// shrunk, the others their verdicts and repro line.
    fn add_failure(&mut self, r: &RunResult, v: &acp_chaos::checkers::Verdict) {
        let spec = self.spec;
        let mutant = spec.mutant.as_deref();
        let line = repro(&reference(spec, &r.scenario), r.design, r.seed, mutant);
        let mut failure = json!({"scenario": r.scenario, "design": r.design, "seed": r.seed, "property": v.property, "status": v.status, "party": v.party, "rules": v.rules, "message": v.message, "hash": r.hash, "repro": line});
        // One run can break several properties: the first keeps the plain names
        // (`schedule.toml`, `report.md`), each other one its own (`P12.report.md`).
        let first = self
            .first_property
            .entry(run_dir_name(r))
            .or_insert_with(|| v.property.clone());
        let prefix = if *first == v.property {
            String::new()
        } else {
            format!("{}.", v.property)
        };
        // Past the first few of its group a failure is counted, not listed (nor kept: the
        // kept ones are the first `keep_per_property`, all listed).
        let group = failure_group(&failure);
        let listed = self.listed.entry(group.clone()).or_default();
        if *listed >= FAILURES_LISTED.max(spec.keep_per_property) {
            *self.omitted.entry(group).or_default() += 1;
            return;
        }
        *listed += 1;
        let k = *self.kept.entry((r.key(), v.property.clone())).or_default();
        let Some(s) = spec.scenarios.iter().find(|s| s.name == r.scenario) else {
            self.failures.push(failure);
            return;
        };
        let mut shrunk_run = None;
        let stop_asked = spec
            .stop
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed));
        let writing = self.write_error.is_none();
        if k == 0 && v.status == Status::Invalid && spec.shrink && !stop_asked && writing {
            // The first failing seed of each (scenario@design, property): shrink it.
            match shrink_into(self.dir, self.shown, s, r, v, mutant, &prefix) {
                Ok(Some((shrunk, run))) => {
                    failure["shrunk"] = shrunk;
                    shrunk_run = Some(run);
                }
                Ok(None) => {}
                Err(e) => self.failed(format!("{e:#}")),
            }
        }
        if k < spec.keep_per_property {
            *self.kept.entry((r.key(), v.property.clone())).or_default() += 1;
            // Re-run it: the report's history comes from the replay, and a different hash
            // is nondeterminism (exit 3).
            let (h, again) = run_one(s, r.seed, mutant, r.design);
            if again.hash != r.hash {
                self.nondeterministic.push(line.clone());
            }
            // The first of its row × property is the counterexample: its history, pages and
            // timeline are kept. The next ones keep their verdicts and repro line only (a
            // replay gives the rest): a campaign's report stays small.
            let whole = k == 0;
            failure["folder"] = json!(run_dir_name(r));
            if whole {
                failure["report"] = json!(format!("{}/{prefix}report.md", run_dir_name(r)));
            }
            if self.write_error.is_none() {
                let names = Names { prefix: &prefix };
                let written = write_run(self.dir, &h, &again, &line, whole).and_then(|_| {
                    if !whole {
                        return Ok(());
                    }
                    write_counterexample(self.dir, r, v, &line, &failure, &h, shrunk_run, names)
                });
                if let Err(e) = written {
                    self.failed(format!("{e:#}"));
                }
            }
        }
        self.failures.push(failure);
    }

    /// The summary of every result added (`interrupted`: some runs did not run), its exit code
    /// decided.
    pub(super) fn finish(
        mut self,
        regressions: Vec<acp_chaos::explore::regression::Outcome>,
        interrupted: bool,
    ) -> (Summary, Option<String>) {
        let spec = self.spec;
        let mutant = spec.mutant.as_deref();
        // What the verdict needs beyond the counts, in a form shards can merge.
        let mut sometimes = BTreeMap::new();
        let mut expected_invalid = Vec::new();
        for s in &spec.scenarios {
            // `sometimes` speaks for the scenario's whole design list; a run narrowed by
            // --agent (or a mutant) cannot be held to it.
            let whole = spec.designs_for(s).len() == s.agent.designs.len();
            if mutant.is_none() && whole && !s.sometimes.is_empty() {
                sometimes.insert(s.name.clone(), s.sometimes.clone());
            }
            // A scenario states its expected verdict per design; with a mutant every
            // violation counts.
            for d in spec.designs_for(s) {
                if mutant.is_none() && s.expect_for(d) == Expect::Invalid {
                    expected_invalid.push(format!("{}@{}", s.name, d.as_str()));
                }
            }
        }
        // A log that could not be written still counts its runs (the result line's count).
        let (hashes, written) = self.hashes.finish();
        if let Err(e) = written {
            let what = format!("{}: {e}", self.dir.join(".hashes").display());
            self.write_error.get_or_insert(what);
        }
        let (seed_start, end) = spec.seed_range();
        let mut summary = Summary {
            format: SUMMARY_FORMAT,
            name: spec.name.clone(),
            seed_start,
            seeds: end - seed_start,
            shard: spec.shard,
            mutant: spec.mutant.clone(),
            order: self.order,
            expected_invalid,
            sometimes,
            interrupted,
            regressions,
            table: self.table,
            classes: self.classes,
            events: self.events,
            hashes,
            vacuous: BTreeMap::new(),
            expectations_unmet: Vec::new(),
            findings: self.findings,
            failures: self.failures,
            failures_omitted: self.omitted,
            nondeterministic: self.nondeterministic,
            coverage_map: self.coverage_map,
            kept_per_property: spec.keep_per_property,
            scoreboard: None,
            exit_code: 0,
        };
        summary.decide();
        (summary, self.write_error)
    }
}

/// Every row's `scenario@design`, first seed and seeds, in the order the runs are listed.
pub(super) fn rows(
    spec: &CampaignSpec,
    pairs: &[(usize, acp_chaos_models::Design)],
) -> Vec<(String, u64, u64)> {
    let (first, end) = spec.seed_range();
    pairs
        .iter()
        .map(|&(i, d)| {
            (
                format!("{}@{}", spec.scenarios[i].name, d.as_str()),
                first,
                end - first,
            )
        })
        .collect()
}
