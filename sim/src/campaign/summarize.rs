//! From the runs' results to a [`Summary`]: the table, the classes, the events, the hashes,
//! the coverage map, and the failing runs kept as folders (the first of each row × property
//! shrunk).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::counterexample::{run_dir_name, shrink_into, write_counterexample, write_run, Names};
use super::folders::write_summary;
use super::{reference, CampaignSpec};
use crate::checkers::{Status, SubmissionClass};
use crate::run::{repro, run_one, RunResult};
use crate::scenario::Expect;
use crate::summary::{Summary, Tally, SUMMARY_FORMAT};

/// Long on purpose: one pass over the results adding each to every table of the summary, and
/// keeping its failures as folders as it goes.
pub(super) fn summarize(
    spec: &CampaignSpec,
    results: Vec<RunResult>,
    regressions: Vec<crate::explore::regression::Outcome>,
    interrupted: bool,
) -> anyhow::Result<Summary> {
    let mutant = spec.mutant.as_deref();
    let mut table: BTreeMap<String, BTreeMap<String, Tally>> = BTreeMap::new();
    let mut classes: BTreeMap<String, BTreeMap<SubmissionClass, u64>> = BTreeMap::new();
    let mut seen: BTreeMap<String, BTreeSet<&'static str>> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut findings = Vec::new();
    let mut kept: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut nondeterministic = Vec::new();
    let mut events: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut hashes = BTreeMap::new();
    let mut coverage_map: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut first_property: BTreeMap<String, String> = BTreeMap::new();
    for r in &results {
        if order.last() != Some(&r.key()) && !order.contains(&r.key()) {
            order.push(r.key());
        }
        let row = table.entry(r.key()).or_default();
        for (c, n) in &r.classes {
            *classes.entry(r.key()).or_default().entry(*c).or_default() += u64::from(*n);
        }
        seen.entry(r.scenario.clone())
            .or_default()
            .extend(r.events.iter().copied());
        for e in &r.events {
            *events
                .entry(r.key())
                .or_default()
                .entry(e.to_string())
                .or_default() += 1;
        }
        hashes.insert(format!("{}/{}", r.key(), r.seed), r.hash.clone());
        for (state, kind) in &r.fault_cells {
            *coverage_map
                .entry(kind.clone())
                .or_default()
                .entry(state.to_string())
                .or_default() += 1;
        }
        if let Some(other) = &r.rerun_hash {
            let line = repro(&reference(spec, &r.scenario), r.design, r.seed, mutant);
            nondeterministic.push(format!(
                "{line}  (hash {} then {other}; both histories kept)",
                r.hash
            ));
        }
        for v in &r.verdicts {
            let cell = row.entry(v.property.clone()).or_default();
            cell.seeds += 1;
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
            if v.status == Status::Finding && cell.findings == 1 {
                let line = repro(&reference(spec, &r.scenario), r.design, r.seed, mutant);
                findings.push(json!({"scenario": r.scenario, "design": r.design, "seed": r.seed, "property": v.property, "status": v.status, "party": v.party, "rules": v.rules, "message": v.message, "repro": line}));
            }
            if matches!(v.status, Status::Invalid | Status::Unknown) {
                let line = repro(&reference(spec, &r.scenario), r.design, r.seed, mutant);
                let mut failure = json!({"scenario": r.scenario, "design": r.design, "seed": r.seed, "property": v.property, "status": v.status, "party": v.party, "rules": v.rules, "message": v.message, "hash": r.hash, "repro": line});
                let k = kept.entry((r.key(), v.property.clone())).or_default();
                let s = spec
                    .scenarios
                    .iter()
                    .find(|s| s.name == r.scenario)
                    .expect("scenario ran");
                let mut shrunk_run = None;
                // One run can break several properties: the first keeps the plain names
                // (`schedule.toml`, `report.md`), each other one its own (`P12.report.md`).
                let first = first_property
                    .entry(run_dir_name(r))
                    .or_insert_with(|| v.property.clone());
                let prefix = if *first == v.property {
                    String::new()
                } else {
                    format!("{}.", v.property)
                };
                let stop_asked = spec
                    .stop
                    .as_ref()
                    .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed));
                if *k == 0
                    && v.status == Status::Invalid
                    && spec.shrink
                    && !interrupted
                    && !stop_asked
                {
                    // The first failing seed of each (scenario@design, property): shrink it.
                    if let Some((shrunk, run)) = shrink_into(&spec.out, s, r, v, mutant, &prefix)? {
                        failure["shrunk"] = shrunk;
                        shrunk_run = Some(run);
                    }
                }
                if *k < spec.keep_per_property {
                    *k += 1;
                    // Re-run it: the report's history comes from the replay, and a different
                    // hash is nondeterminism (exit 3).
                    let (h, again) = run_one(s, r.seed, mutant, r.design);
                    if again.hash != r.hash {
                        nondeterministic.push(line.clone());
                    }
                    write_run(&spec.out, &h, &again, &line)?;
                    failure["folder"] = json!(run_dir_name(r));
                    failure["report"] = json!(format!("{}/{prefix}report.md", run_dir_name(r)));
                    let names = Names { prefix: &prefix };
                    write_counterexample(&spec.out, r, v, &line, &failure, &h, shrunk_run, names)?;
                }
                failures.push(failure);
            }
        }
    }
    // What the verdict needs beyond the counts, in a form shards can merge.
    let mut sometimes = BTreeMap::new();
    let mut expected_invalid = Vec::new();
    for s in &spec.scenarios {
        // `sometimes` speaks for the scenario's whole design list; a run narrowed by --agent
        // (or a mutant) cannot be held to it.
        let whole = spec.designs_for(s).len() == s.agent.designs.len();
        if mutant.is_none() && whole && !s.sometimes.is_empty() {
            sometimes.insert(s.name.clone(), s.sometimes.clone());
        }
        // A scenario states its expected verdict per design; with a mutant every violation
        // counts.
        for d in spec.designs_for(s) {
            if mutant.is_none() && s.expect_for(d) == Expect::Invalid {
                expected_invalid.push(format!("{}@{}", s.name, d.as_str()));
            }
        }
    }
    let (seed_start, end) = spec.seed_range();
    let mut summary = Summary {
        format: SUMMARY_FORMAT,
        name: spec.name.clone(),
        seed_start,
        seeds: end - seed_start,
        shard: spec.shard,
        mutant: spec.mutant.clone(),
        order,
        expected_invalid,
        sometimes,
        interrupted,
        regressions,
        table,
        classes,
        events,
        hashes,
        vacuous: BTreeMap::new(),
        expectations_unmet: Vec::new(),
        findings,
        failures,
        nondeterministic,
        coverage_map,
        kept_per_property: spec.keep_per_property,
        scoreboard: None,
        exit_code: 0,
    };
    summary.decide();
    write_summary(&spec.out, &summary)?;
    Ok(summary)
}
