//! A campaign: every scenario × a seed range, in parallel across seeds (one simulation per
//! thread: `Sim` is `!Send`), then a table, a `summary.json` and one folder per failing run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::checkers::{self, Class, Status, Verdict, CHECKERS};
use crate::exit;
use crate::history::History;
use crate::plan::Plan;
use crate::scenario::{Expect, Scenario};
use crate::world;
use acp_chaos_models::Design;

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
    /// Class counts of the submissions.
    pub classes: BTreeMap<Class, u32>,
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
    let verdicts = checkers::check_all(h);
    let facts = checkers::Facts::of(h);
    let mut classes = BTreeMap::new();
    for c in facts.classes().values() {
        *classes.entry(*c).or_insert(0) += 1;
    }
    RunResult {
        scenario: scenario.to_string(),
        design,
        seed,
        hash: h.hash(),
        verdicts,
        classes,
        events: checkers::events(h),
        ops: h.ops.len(),
        sim_ms: h.ops.last().map(|o| o.time_ms).unwrap_or(0),
        rerun_hash: None,
        fault_cells: checkers::fault_states(h),
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct CampaignSpec {
    /// Scenarios.
    pub scenarios: Vec<Scenario>,
    /// First seed.
    pub seed_start: u64,
    /// How many seeds per scenario.
    pub seeds: u64,
    /// Worker threads.
    pub jobs: usize,
    /// Mutant name.
    pub mutant: Option<String>,
    /// Report folder.
    pub out: PathBuf,
    /// Most failing runs written out per (scenario, property).
    pub keep_per_property: usize,
    /// Shrink the first failing seed of each (scenario@design, property) into its run
    /// folder's `schedule.toml`.
    pub shrink: bool,
    /// Run every scenario under this design only (`--agent`), instead of its `designs`.
    pub agent: Option<Design>,
    /// Run every seed twice and compare history hashes (`--check-determinism`).
    pub check_determinism: bool,
    /// The campaign's name (`all-seeds0-200`, see [`campaign_name`]): the report folder's name
    /// under `reports/`, and what `acp-chaos merge` checks shards share.
    pub name: String,
    /// `--shard K/N`: run only the K-th (from 1) of N contiguous, disjoint slices of the seed
    /// range (see [`CampaignSpec::seed_range`]).
    pub shard: Option<(u64, u64)>,
    /// Show progress on stderr (a bar on a terminal, plain lines otherwise).
    pub progress: bool,
    /// Set from outside (Ctrl-C) to stop: runs not started are skipped, and the report covers
    /// the runs done (`interrupted` in the summary).
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// The regression corpus, replayed before the seeds (see [`crate::regression`]).
    pub regressions: Vec<crate::regression::Regression>,
}

impl CampaignSpec {
    /// The seeds this campaign (or its shard) runs: `[first, end)`. Shard K of N takes
    /// `[start + seeds·(K−1)/N, start + seeds·K/N)`, so the N shards cover the range exactly once.
    pub fn seed_range(&self) -> (u64, u64) {
        let slice = |k: u64, n: u64| {
            let off = (u128::from(self.seeds) * u128::from(k) / u128::from(n.max(1))) as u64;
            self.seed_start.saturating_add(off)
        };
        match self.shard {
            Some((k, n)) => (slice(k - 1, n), slice(k, n)),
            None => (self.seed_start, self.seed_start.saturating_add(self.seeds)),
        }
    }

    /// The designs scenario `s` runs under: its list, narrowed to `--agent` and to the designs
    /// the mutant applies to (empty: the scenario does not run).
    pub fn designs_for(&self, s: &Scenario) -> Vec<Design> {
        let base: Vec<Design> = s
            .agent
            .designs
            .iter()
            .copied()
            .filter(|d| self.agent.is_none_or(|a| a == *d))
            .collect();
        let only = self
            .mutant
            .as_deref()
            .and_then(acp_chaos_models::mutant::find)
            .map(|m| m.designs)
            .unwrap_or(&[]);
        base.into_iter()
            .filter(|d| only.is_empty() || only.contains(d))
            .collect()
    }
}

/// One cell of the table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Seeds run.
    pub seeds: u64,
    /// Invalid verdicts.
    pub violations: u64,
    /// Findings.
    pub findings: u64,
    /// Unknown verdicts.
    pub unknown: u64,
    /// First seed with an invalid (else unknown) verdict.
    pub first_failing_seed: Option<u64>,
    /// Parties blamed.
    pub parties: BTreeSet<String>,
}

/// `summary.json`'s format version (documented in `reports/README.md`).
pub const SUMMARY_FORMAT: u32 = 2;

/// A finished campaign: `summary.json` (format [`SUMMARY_FORMAT`], documented field by field in
/// `reports/README.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Summary schema version.
    pub format: u32,
    /// Campaign name (shards of one campaign share it).
    pub name: String,
    /// First seed run.
    pub seed_start: u64,
    /// Seeds run per scenario@design (`seed_start..seed_start + seeds`).
    pub seeds: u64,
    /// `[K, N]` when this is shard K of N; `None` for a whole (or merged) campaign.
    pub shard: Option<(u64, u64)>,
    /// Mutant.
    pub mutant: Option<String>,
    /// Rows (`scenario@design`) in the order they ran (failures are listed in this order).
    pub order: Vec<String>,
    /// Rows whose scenario expects a violation (`expect = "invalid"`) on that design.
    pub expected_invalid: Vec<String>,
    /// scenario → its `sometimes` events, for scenarios held to them (not narrowed by
    /// `--agent` or a mutant).
    pub sometimes: BTreeMap<String, Vec<String>>,
    /// True when Ctrl-C stopped the campaign: the summary covers only the runs done.
    pub interrupted: bool,
    /// The regression corpus replayed first: one outcome per file (a failed one exits 1).
    pub regressions: Vec<crate::regression::Outcome>,
    /// scenario → property → cell.
    pub table: BTreeMap<String, BTreeMap<String, Cell>>,
    /// scenario → class → count.
    pub classes: BTreeMap<String, BTreeMap<Class, u64>>,
    /// scenario → event → seeds in which it happened (coverage).
    pub events: BTreeMap<String, BTreeMap<String, u64>>,
    /// Every run's history hash, as `scenario/seed` → hash (determinism checks compare these).
    pub hashes: BTreeMap<String, String>,
    /// scenario → events that never happened although listed under `sometimes`.
    pub vacuous: BTreeMap<String, Vec<String>>,
    /// The first finding per scenario@design × property (never fails a campaign).
    pub findings: Vec<serde_json::Value>,
    /// `scenario@design` runs that expected a violation and found none.
    pub expectations_unmet: Vec<String>,
    /// Failing runs: repro lines with their verdicts.
    pub failures: Vec<serde_json::Value>,
    /// Runs whose replay gave another history.
    pub nondeterministic: Vec<String>,
    /// Coverage map: fault kind → protocol state at the moment it fired → times, over the
    /// whole campaign (kinds the campaign never fired are absent).
    pub coverage_map: BTreeMap<String, BTreeMap<String, u64>>,
    /// Most failing runs kept as folders per (scenario@design, property).
    pub kept_per_property: usize,
    /// The mutant scoreboard as text, when `acp-chaos mutants` wrote this summary.
    pub scoreboard: Option<String>,
    /// Exit code.
    pub exit_code: i32,
}

/// The one-line repro of a run.
pub fn repro(scenario: &str, design: Design, seed: u64, mutant: Option<&str>) -> String {
    let d = design.as_str();
    match mutant {
        Some(m) => format!("acp-chaos replay {scenario} --seed {seed} --agent {d} --mutant {m}"),
        None => format!("acp-chaos replay {scenario} --seed {seed} --agent {d}"),
    }
}

/// Run the campaign and write the report folder (prepared first, so a bad `--out` fails
/// before any run): `summary.json`, `summary.md`, `junit.xml`, and one folder per kept
/// failing run.
pub fn run(spec: &CampaignSpec) -> anyhow::Result<Summary> {
    use std::sync::atomic::{AtomicU64, Ordering};
    prepare_out(&spec.out)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(spec.jobs.max(1))
        .build()?;
    let (first, end) = spec.seed_range();
    let mut work: Vec<(usize, Design, u64)> = Vec::new();
    for (i, s) in spec.scenarios.iter().enumerate() {
        for d in spec.designs_for(s) {
            work.extend((first..end).map(|seed| (i, d, seed)));
        }
    }
    let mutant = spec.mutant.as_deref();
    // The regression corpus first: minimal schedules that must keep their verdicts.
    let regressions: Vec<crate::regression::Outcome> = pool.install(|| {
        spec.regressions
            .par_iter()
            .map(crate::regression::replay)
            .collect()
    });
    let done = AtomicU64::new(0);
    let failing = AtomicU64::new(0);
    let progress = spec
        .progress
        .then(|| crate::progress::Progress::new(work.len() as u64));
    let stopped = || {
        spec.stop
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    };
    let results: Vec<Option<RunResult>> = pool.install(|| {
        work.par_iter()
            .map(|&(i, d, seed)| {
                if stopped() {
                    return None;
                }
                let s = &spec.scenarios[i];
                let (h, mut r) = run_one(s, seed, mutant, d);
                if spec.check_determinism {
                    let (h2, r2) = run_one(s, seed, mutant, d);
                    if r2.hash != r.hash {
                        // Keep both histories (`-a` first run, `-b` second) for a diff.
                        let line = repro(&s.reference, d, seed, mutant);
                        let keep = |h: &History, r: &RunResult, tag: &str| {
                            let mut r = r.clone();
                            r.scenario = format!("{}-{tag}", r.scenario);
                            write_run(&spec.out, h, &r, &line)
                        };
                        if let Err(e) = keep(&h, &r, "a").and_then(|_| keep(&h2, &r2, "b")) {
                            tracing::warn!("could not keep both histories: {e}");
                        }
                        r.rerun_hash = Some(r2.hash);
                    }
                }
                if r.verdicts.iter().any(|v| v.status == Status::Invalid) {
                    failing.fetch_add(1, Ordering::Relaxed);
                }
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                if let Some(p) = &progress {
                    p.update(n, failing.load(Ordering::Relaxed));
                }
                Some(r)
            })
            .collect()
    });
    let interrupted = results.iter().any(Option::is_none);
    if let Some(p) = &progress {
        p.finish(
            done.load(Ordering::Relaxed),
            failing.load(Ordering::Relaxed),
            interrupted,
        );
    }
    summarize(
        spec,
        results.into_iter().flatten().collect(),
        regressions,
        interrupted,
    )
}

fn reference(spec: &CampaignSpec, name: &str) -> String {
    spec.scenarios
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.reference.clone())
        .unwrap_or_else(|| name.to_string())
}

/// Make the report folder: create it, or clear the report artefacts of an earlier campaign
/// in it (`summary.json`, `summary.md`, `junit.xml`, `<scenario>-<design>-seed<N>/` run
/// folders). A folder holding anything else is refused, and nothing but our own artefacts is
/// ever deleted.
pub fn prepare_out(out: &Path) -> anyhow::Result<()> {
    prepare_folder(out, "an acp-chaos report artefact", |name, path| {
        let run_dir = path.join("history.jsonl").exists() && name.contains("-seed");
        let file = matches!(
            name.trim_end_matches(".tmp"),
            "summary.json" | "summary.md" | "junit.xml"
        );
        file || run_dir
    })
}

/// Create `out`, or empty it of the entries `ours(name, path)` claims; any other entry is
/// refused (named as not being `what`) before anything is deleted.
pub fn prepare_folder(
    out: &Path,
    what: &str,
    ours: impl Fn(&str, &Path) -> bool,
) -> anyhow::Result<()> {
    let io = |e: std::io::Error| anyhow::anyhow!("{}: {e}", out.display());
    if out.exists() {
        let mut mine = Vec::new();
        for e in std::fs::read_dir(out).map_err(io)? {
            let e = e.map_err(io)?;
            let name = e.file_name().to_string_lossy().into_owned();
            if ours(&name, &e.path()) {
                mine.push(e.path());
            } else {
                anyhow::bail!(
                    "{}: holds {name}, which is not {what}; refusing to write the report there",
                    out.display()
                );
            }
        }
        for p in mine {
            if p.is_dir() {
                std::fs::remove_dir_all(&p).map_err(io)?;
            } else {
                std::fs::remove_file(&p).map_err(io)?;
            }
        }
    }
    std::fs::create_dir_all(out).map_err(io)?;
    Ok(())
}

fn summarize(
    spec: &CampaignSpec,
    results: Vec<RunResult>,
    regressions: Vec<crate::regression::Outcome>,
    interrupted: bool,
) -> anyhow::Result<Summary> {
    let mutant = spec.mutant.as_deref();
    let mut table: BTreeMap<String, BTreeMap<String, Cell>> = BTreeMap::new();
    let mut classes: BTreeMap<String, BTreeMap<Class, u64>> = BTreeMap::new();
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

impl Summary {
    /// Derive `vacuous`, `expectations_unmet` and `exit_code` from the counts (also after a
    /// merge of shards, whose counts add up). An interrupted campaign is not held to
    /// `sometimes` or to expected violations: its rows did not all run.
    pub fn decide(&mut self) {
        let mut seen: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (row, ev) in &self.events {
            let scen = row.rsplit_once('@').map(|(s, _)| s).unwrap_or(row);
            seen.entry(scen)
                .or_default()
                .extend(ev.keys().map(String::as_str));
        }
        self.vacuous = self
            .sometimes
            .iter()
            .filter_map(|(scen, want)| {
                let got = seen.get(scen.as_str());
                let missing: Vec<String> = want
                    .iter()
                    .filter(|e| !got.is_some_and(|g| g.contains(e.as_str())))
                    .cloned()
                    .collect();
                // A shard sees a slice of the seeds: `sometimes` is judged on the merge.
                (!missing.is_empty() && !self.interrupted && self.shard.is_none())
                    .then(|| (scen.clone(), missing))
            })
            .collect();
        let violations = |row: &str| -> u64 {
            self.table
                .get(row)
                .map(|r| r.values().map(|c| c.violations).sum())
                .unwrap_or(0)
        };
        self.expectations_unmet = self
            .order
            .iter()
            .filter(|row| {
                !self.interrupted && self.expected_invalid.contains(row) && violations(row) == 0
            })
            .cloned()
            .collect();
        let unexpected = self
            .table
            .keys()
            .any(|row| !self.expected_invalid.contains(row) && violations(row) > 0);
        let unknown = self
            .table
            .values()
            .flat_map(|r| r.values())
            .any(|c| c.unknown > 0);
        let regressed = self.regressions.iter().any(|r| !r.ok);
        self.exit_code = if !self.nondeterministic.is_empty() {
            exit::NONDETERMINISM
        } else if unexpected || regressed || !self.expectations_unmet.is_empty() {
            exit::INVALID
        } else if unknown || !self.vacuous.is_empty() {
            exit::LIVENESS
        } else if self.interrupted {
            exit::INTERRUPTED
        } else {
            exit::VALID
        };
    }
}

/// Write `summary.json`, `summary.md` and `junit.xml` into `out`, each atomically (a temporary
/// file renamed over the old one), so an interrupted write never leaves half a report.
pub fn write_summary(out: &Path, summary: &Summary) -> anyhow::Result<()> {
    write_atomic(
        &out.join("summary.json"),
        &serde_json::to_vec_pretty(summary)?,
    )?;
    write_atomic(
        &out.join("summary.md"),
        crate::report::summary_md(summary).as_bytes(),
    )?;
    write_atomic(
        &out.join("junit.xml"),
        crate::report::junit_xml(summary).as_bytes(),
    )?;
    Ok(())
}

/// Write `bytes` to `path` through `path.tmp` and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(|e| anyhow::anyhow!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(())
}

/// A kept failing run's `report.md` and `report.html`: the shrunk run when there is one (its
/// history also kept as `shrunk.jsonl`), else the run itself, drawn around its witnesses.
/// File names inside a run folder for one property's counterexample.
struct Names<'a> {
    /// `""` for the run's first failing property, `"P12."` for another.
    prefix: &'a str,
}

#[allow(clippy::too_many_arguments)]
fn write_counterexample(
    out: &Path,
    r: &RunResult,
    v: &Verdict,
    line: &str,
    failure: &Value,
    h: &History,
    shrunk: Option<(History, Verdict)>,
    names: Names<'_>,
) -> anyhow::Result<()> {
    let dir = out.join(run_dir_name(r));
    let p = names.prefix;
    let schedule = shrunk
        .as_ref()
        .and_then(|_| std::fs::read_to_string(dir.join(format!("{p}schedule.toml"))).ok());
    let size = |s: &Value| {
        format!(
            "{} faults, {} ops, {} raw probes",
            s["faults"], s["ops"], s["raw"]
        )
    };
    let (drawn, verdict, shrunk_line) = match &shrunk {
        Some((sh, sv)) => {
            let mut buf = Vec::new();
            sh.write_jsonl(&mut buf)?;
            write_atomic(&dir.join(format!("{p}shrunk.jsonl")), &buf)?;
            let s = &failure["shrunk"];
            let replay = s["replay"].as_str().unwrap_or("-").to_string();
            (sh, sv, Some((replay, size(s))))
        }
        None => (h, v, None),
    };
    let c = crate::report::Counterexample {
        scenario: &r.scenario,
        verdict,
        repro: line,
        shrunk: shrunk_line,
        schedule: schedule.as_deref(),
        history: drawn,
    };
    write_atomic(
        &dir.join(format!("{p}report.md")),
        crate::report::counterexample_md(&c).as_bytes(),
    )?;
    write_atomic(
        &dir.join(format!("{p}report.html")),
        crate::report::counterexample_html(&c).as_bytes(),
    )?;
    Ok(())
}

/// Shrink a failing run on `v`'s property, status and party, and write the schedule into its
/// run folder (`schedule.toml`). Returns `{schedule, replay, faults, ops, raw, runs}`, or
/// `None` when the failure does not survive fixing the plan (it always should).
fn shrink_into(
    out: &Path,
    s: &Scenario,
    r: &RunResult,
    v: &Verdict,
    mutant: Option<&str>,
    prefix: &str,
) -> anyhow::Result<Option<(Value, (History, Verdict))>> {
    let plan = Plan::derive(s, r.seed, mutant, r.design);
    let target = crate::shrink::Target {
        property: v.property.clone(),
        status: v.status,
        party: v.party,
    };
    let Ok(shrunk) = crate::shrink::shrink(&plan, &target) else {
        return Ok(None);
    };
    let h = world::run(&shrunk.plan);
    let dir = out.join(run_dir_name(r));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join(format!("{prefix}schedule.toml"));
    let replay = format!("acp-chaos replay --schedule {}", file.display());
    let body = toml::to_string(&shrunk.plan)?;
    write_atomic(
        &file,
        format!(
            "# shrunk from: {}\n# keeps {}: {}\n# replay: {replay}\n{body}",
            repro(&s.reference, r.design, r.seed, mutant),
            v.property,
            shrunk.verdict.message
        )
        .as_bytes(),
    )?;
    let (f, o, w) = shrunk.after;
    Ok(Some((
        json!({"schedule": file.display().to_string(), "replay": replay, "faults": f, "ops": o, "raw": w, "runs": shrunk.runs}),
        (h, shrunk.verdict),
    )))
}

fn run_dir_name(r: &RunResult) -> String {
    format!("{}-{}-seed{}", r.scenario, r.design.as_str(), r.seed)
}

fn write_run(out: &Path, h: &History, r: &RunResult, line: &str) -> anyhow::Result<()> {
    let dir = out.join(run_dir_name(r));
    std::fs::create_dir_all(&dir)?;
    let mut buf = Vec::new();
    h.write_jsonl(&mut buf)?;
    write_atomic(&dir.join("history.jsonl"), &buf)?;
    write_atomic(
        &dir.join("verdicts.json"),
        &serde_json::to_vec_pretty(&r.verdicts)?,
    )?;
    write_atomic(&dir.join("repro.txt"), format!("{line}\n").as_bytes())?;
    Ok(())
}

/// The coverage map as text: fault kind × protocol state at the moment it fired, and the
/// cells never hit for the kinds that fired.
pub fn coverage_text(s: &Summary) -> String {
    if s.coverage_map.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("\n  coverage map (faults fired, by protocol state at that moment):\n");
    out.push_str(&format!("  {:<18}", "fault"));
    for st in checkers::FAULT_STATES {
        out.push_str(&format!(" {st:>19}"));
    }
    out.push('\n');
    let mut never = Vec::new();
    for (kind, cells) in &s.coverage_map {
        out.push_str(&format!("  {kind:<18}"));
        // Only the adapter fills a history; the store's and the remote transport's faults
        // fire only on a cluster: that cell is out of reach of every design.
        let cluster_only = matches!(
            kind.as_str(),
            "crash-store" | "partition-store" | "lose-exchange" | "drop-updates"
        );
        for st in checkers::FAULT_STATES {
            let n = cells.get(st).copied().unwrap_or(0);
            if n == 0 && !(cluster_only && st == "filling-history") {
                never.push(format!("{kind}@{st}"));
            }
            out.push_str(&format!(" {n:>19}"));
        }
        out.push('\n');
    }
    if never.is_empty() {
        out.push_str("  every cell the designs allow was hit (a cluster-only fault never meets a history fill)\n");
    } else {
        out.push_str(&format!("  cells never hit: {}\n", never.join(" ")));
    }
    out
}

/// The table as text: scenario × property.
pub fn table_text(s: &Summary) -> String {
    let mut out = String::new();
    let props: Vec<&str> = CHECKERS.iter().map(|c| c.property).collect();
    let width = s.table.keys().map(|k| k.len()).max().unwrap_or(8).max(8);
    out.push_str(&format!(
        "{:<width$}  {:<5} {:>6} {:>10} {:>8} {:>8}  {}\n",
        "scenario@design",
        "prop",
        "seeds",
        "violations",
        "unknown",
        "findings",
        "first failing seed (party)"
    ));
    for (scen, row) in &s.table {
        for p in &props {
            let Some(c) = row.get(*p) else { continue };
            let first = match c.first_failing_seed {
                Some(seed) => format!(
                    "{seed} ({})",
                    c.parties.iter().cloned().collect::<Vec<_>>().join(",")
                ),
                None => "-".into(),
            };
            out.push_str(&format!(
                "{scen:<width$}  {p:<5} {:>6} {:>10} {:>8} {:>8}  {first}\n",
                c.seeds, c.violations, c.unknown, c.findings
            ));
        }
    }
    out
}

/// A campaign's name, from what it runs: `all-seeds0-200`, `swarm-basic-seeds0-2000-no-dedup`,
/// `rfd-01-...-and-2-more-seeds5-10-stored`. Shards of one campaign share it.
pub fn campaign_name(
    scenarios: &[String],
    seed_start: u64,
    seeds: u64,
    mutant: Option<&str>,
    agent: Option<Design>,
) -> String {
    let stem = |n: &String| {
        Path::new(n)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| n.clone())
    };
    let scope = match scenarios {
        [] => "all".to_string(),
        [one] => stem(one),
        [first, rest @ ..] => format!("{}-and-{}-more", stem(first), rest.len()),
    };
    let mut name = format!(
        "{scope}-seeds{seed_start}-{}",
        seed_start.saturating_add(seeds)
    );
    for part in [mutant, agent.map(|d| d.as_str())].into_iter().flatten() {
        name.push('-');
        name.push_str(part);
    }
    // Keep it a plain folder name whatever a scenario path held.
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `reports/<name>`, or `reports/<name>-shard<K>of<N>` for a shard.
pub fn default_out(name: &str, shard: Option<(u64, u64)>) -> PathBuf {
    let leaf = match shard {
        Some((k, n)) => format!("{name}-shard{k}of{n}"),
        None => name.to_string(),
    };
    Path::new("reports").join(leaf)
}

/// Point `latest` beside `out` (e.g. `reports/latest`) at `out`: a relative symlink on Unix.
/// A real folder there (the layout before campaigns were named) is cleared first, if it holds
/// only report artefacts.
pub fn point_latest(out: &Path) -> anyhow::Result<()> {
    let Some(leaf) = out.file_name() else {
        return Ok(());
    };
    let parent = out.parent().unwrap_or(Path::new("."));
    let latest = parent.join("latest");
    if leaf == "latest" {
        return Ok(());
    }
    match std::fs::symlink_metadata(&latest) {
        Ok(m) if m.file_type().is_symlink() => std::fs::remove_file(&latest)?,
        Ok(m) if m.is_dir() => {
            prepare_out(&latest)?;
            std::fs::remove_dir(&latest)?;
        }
        Ok(_) => anyhow::bail!("{}: not a folder or a link; leaving it", latest.display()),
        Err(_) => {}
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink(leaf, &latest)
        .map_err(|e| anyhow::anyhow!("{}: {e}", latest.display()))?;
    Ok(())
}

/// Read a report folder's `summary.json` (format [`SUMMARY_FORMAT`]).
pub fn read_summary(dir: &Path) -> anyhow::Result<Summary> {
    let file = dir.join("summary.json");
    let text =
        std::fs::read_to_string(&file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    if v["format"] != SUMMARY_FORMAT {
        anyhow::bail!(
            "{}: field `format` is {}, this acp-chaos reads format {SUMMARY_FORMAT}",
            file.display(),
            v["format"]
        );
    }
    serde_json::from_value(v).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))
}

/// Merge the summaries of shards 1..=N of one campaign (read from `dirs`) into `out`: counts
/// add up, the first failing seed is the smallest, the first finding and the shrunk schedule
/// of each (row, property) are the lowest seed's, and the kept run folders (the first
/// `kept_per_property` of each) are copied over. The result equals the summary one unsharded
/// run of the same seeds writes (`order`-sorted, with paths under `out`).
///
/// Errors: shards of different campaigns, formats or mutants, a shard missing or repeated.
pub fn merge(dirs: &[PathBuf], shards: &[Summary], out: &Path) -> anyhow::Result<Summary> {
    let Some(first) = shards.first() else {
        anyhow::bail!("nothing to merge");
    };
    let n = match first.shard {
        Some((_, n)) => n,
        None => anyhow::bail!("{}: not a shard (run with --shard K/N)", dirs[0].display()),
    };
    // Paths as given may end in `/`: compare and rewrite them in one form.
    let dirs: Vec<PathBuf> = dirs.iter().map(|d| d.components().collect()).collect();
    let out: PathBuf = out.components().collect();
    let out = out.as_path();
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    if let Some(d) = dirs.iter().find(|d| same(d, out)) {
        anyhow::bail!(
            "--out {}: that is one of the shards; merge into another folder",
            d.display()
        );
    }
    let mut ks = BTreeSet::new();
    for (d, s) in dirs.iter().zip(shards) {
        let what = |w: &str| anyhow::anyhow!("{}: {w}", d.display());
        if s.name != first.name {
            return Err(what(&format!(
                "campaign `{}`, not `{}`",
                s.name, first.name
            )));
        }
        if s.order != first.order {
            return Err(what(&format!(
                "ran other scenarios or designs than {} (a campaign of the same name over another scenario set)",
                dirs[0].display()
            )));
        }
        if s.mutant != first.mutant || s.kept_per_property != first.kept_per_property {
            return Err(what(
                "another mutant or kept_per_property than the first shard",
            ));
        }
        match s.shard {
            Some((k, m)) if m == n => {
                if !ks.insert(k) {
                    return Err(what(&format!("shard {k}/{n} given twice")));
                }
            }
            _ => return Err(what(&format!("not a shard of {n}"))),
        }
    }
    let missing: Vec<String> = (1..=n)
        .filter(|k| !ks.contains(k))
        .map(|k| k.to_string())
        .collect();
    if !missing.is_empty() {
        anyhow::bail!("shards {} of {n} are missing", missing.join(", "));
    }
    prepare_out(out)?;
    let mut m = first.clone();
    m.shard = None;
    m.seed_start = shards.iter().map(|s| s.seed_start).min().unwrap_or(0);
    m.seeds = shards.iter().map(|s| s.seeds).sum();
    m.interrupted = shards.iter().any(|s| s.interrupted);
    for s in &shards[1..] {
        for row in &s.order {
            if !m.order.contains(row) {
                m.order.push(row.clone());
            }
        }
        for (row, cells) in &s.table {
            let mine = m.table.entry(row.clone()).or_default();
            for (p, c) in cells {
                let t = mine.entry(p.clone()).or_default();
                // The unsharded rule: the first invalid seed, else the first unknown seed.
                t.first_failing_seed = match (t.violations > 0, c.violations > 0) {
                    (true, false) => t.first_failing_seed,
                    (false, true) => c.first_failing_seed,
                    _ => match (t.first_failing_seed, c.first_failing_seed) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    },
                };
                t.seeds += c.seeds;
                t.violations += c.violations;
                t.findings += c.findings;
                t.unknown += c.unknown;
                t.parties.extend(c.parties.iter().cloned());
            }
        }
        for (row, counts) in &s.classes {
            for (c, k) in counts {
                *m.classes
                    .entry(row.clone())
                    .or_default()
                    .entry(*c)
                    .or_default() += k;
            }
        }
        for (row, ev) in &s.events {
            for (e, k) in ev {
                *m.events
                    .entry(row.clone())
                    .or_default()
                    .entry(e.clone())
                    .or_default() += k;
            }
        }
        for (kind, cells) in &s.coverage_map {
            for (st, k) in cells {
                *m.coverage_map
                    .entry(kind.clone())
                    .or_default()
                    .entry(st.clone())
                    .or_default() += k;
            }
        }
        m.hashes
            .extend(s.hashes.iter().map(|(k, v)| (k.clone(), v.clone())));
        m.findings.extend(s.findings.iter().cloned());
        m.failures.extend(s.failures.iter().cloned());
        m.nondeterministic
            .extend(s.nondeterministic.iter().cloned());
        for r in &s.expected_invalid {
            if !m.expected_invalid.contains(r) {
                m.expected_invalid.push(r.clone());
            }
        }
    }
    // Unsharded order: rows as they ran, then seeds, then checkers.
    let row_of = |f: &Value| {
        format!(
            "{}@{}",
            f["scenario"].as_str().unwrap_or(""),
            f["design"].as_str().unwrap_or("")
        )
    };
    let rank = |f: &Value| {
        let row = m
            .order
            .iter()
            .position(|r| *r == row_of(f))
            .unwrap_or(usize::MAX);
        let prop = CHECKERS
            .iter()
            .position(|c| f["property"] == c.property)
            .unwrap_or(usize::MAX);
        (row, f["seed"].as_u64().unwrap_or(0), prop)
    };
    m.findings.sort_by_key(|f| rank(f));
    let mut seen = BTreeSet::new();
    m.findings
        .retain(|f| seen.insert((row_of(f), f["property"].to_string())));
    m.failures.sort_by_key(|f| rank(f));
    let mut count: BTreeMap<(String, String), usize> = BTreeMap::new();
    let shard_of = |seed: u64| {
        dirs.iter()
            .zip(shards)
            .find(|(_, s)| (s.seed_start..s.seed_start + s.seeds).contains(&seed))
            .map(|(d, _)| d)
    };
    for f in &mut m.failures {
        let k = count
            .entry((row_of(f), f["property"].to_string()))
            .or_default();
        let folder = f["folder"].as_str().map(str::to_string);
        let src = f["seed"].as_u64().and_then(shard_of);
        // A shard shrinks its own first failure of a row × property; when that is not the
        // campaign's first, the unsharded run keeps the plain run there: undo the shrink.
        let unshrink = *k > 0 && f["shrunk"].is_object();
        if *k > 0 {
            if let Some(o) = f.as_object_mut() {
                o.shift_remove("shrunk");
            }
        }
        if let (Some(dir), Some(src)) = (&folder, src) {
            if *k < m.kept_per_property {
                copy_run_dir(&src.join(dir), &out.join(dir), src, out)?;
                if unshrink {
                    redraw_unshrunk(&out.join(dir), f)?;
                }
            } else if let Some(o) = f.as_object_mut() {
                o.shift_remove("folder");
                o.shift_remove("report");
            }
        }
        if f["shrunk"].is_object() {
            let dir = format!(
                "{}-{}-seed{}",
                f["scenario"].as_str().unwrap_or(""),
                f["design"].as_str().unwrap_or(""),
                f["seed"]
            );
            let leaf = f["shrunk"]["schedule"]
                .as_str()
                .and_then(|p| Path::new(p).file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "schedule.toml".into());
            let file = out.join(&dir).join(leaf);
            if folder.is_none() {
                if let Some(src) = src {
                    copy_run_dir(&src.join(&dir), &out.join(&dir), src, out)?;
                }
            }
            f["shrunk"]["schedule"] = json!(file.display().to_string());
            f["shrunk"]["replay"] =
                json!(format!("acp-chaos replay --schedule {}", file.display()));
        }
        *k += 1;
    }
    // A shard keeps pages for failures the whole campaign does not keep (its own first five):
    // drop every property's files the merged failures do not point at.
    let mut pages: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &m.failures {
        if let (Some(dir), Some(page)) = (f["folder"].as_str(), f["report"].as_str()) {
            let prefix = page
                .rsplit('/')
                .next()
                .unwrap_or("")
                .trim_end_matches("report.md");
            pages
                .entry(dir.to_string())
                .or_default()
                .insert(prefix.to_string());
        }
    }
    for (dir, keep) in &pages {
        for e in std::fs::read_dir(out.join(dir))? {
            let name = e?.file_name().to_string_lossy().into_owned();
            let prefix = ["report.md", "report.html", "schedule.toml", "shrunk.jsonl"]
                .iter()
                .find_map(|b| name.strip_suffix(b));
            if let Some(p) = prefix {
                if !keep.contains(p) {
                    std::fs::remove_file(out.join(dir).join(&name))?;
                }
            }
        }
    }
    m.decide();
    write_summary(out, &m)?;
    Ok(m)
}

/// In a merged run folder, drop a property's shrink (`{prefix}schedule.toml`,
/// `{prefix}shrunk.jsonl`) and draw its page from the run itself, as the unsharded run does
/// for a failure that is not its row × property's first.
fn redraw_unshrunk(dir: &Path, f: &Value) -> anyhow::Result<()> {
    let page = f["report"].as_str().unwrap_or("report.md");
    let leaf = Path::new(page)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report.md".into());
    let prefix = leaf.trim_end_matches("report.md").to_string();
    for name in ["schedule.toml", "shrunk.jsonl"] {
        let _ = std::fs::remove_file(dir.join(format!("{prefix}{name}")));
    }
    let h = History::read_jsonl(&dir.join("history.jsonl"))?;
    let verdicts: Vec<Verdict> =
        serde_json::from_slice(&std::fs::read(dir.join("verdicts.json"))?)?;
    let Some(v) = verdicts
        .iter()
        .find(|v| f["property"] == v.property.as_str())
    else {
        return Ok(());
    };
    let c = crate::report::Counterexample {
        scenario: f["scenario"].as_str().unwrap_or(""),
        verdict: v,
        repro: f["repro"].as_str().unwrap_or(""),
        shrunk: None,
        schedule: None,
        history: &h,
    };
    write_atomic(
        &dir.join(format!("{prefix}report.md")),
        crate::report::counterexample_md(&c).as_bytes(),
    )?;
    write_atomic(
        &dir.join(format!("{prefix}report.html")),
        crate::report::counterexample_html(&c).as_bytes(),
    )?;
    Ok(())
}

/// Copy one run folder from a shard's report into the merged one, pointing the paths its text
/// files name at the merged folder.
fn copy_run_dir(from: &Path, to: &Path, from_root: &Path, to_root: &Path) -> anyhow::Result<()> {
    let io = |p: &Path, e: std::io::Error| anyhow::anyhow!("{}: {e}", p.display());
    std::fs::create_dir_all(to).map_err(|e| io(to, e))?;
    let (a, b) = (
        format!("{}/", from_root.display()),
        format!("{}/", to_root.display()),
    );
    for e in std::fs::read_dir(from).map_err(|e| io(from, e))? {
        let e = e.map_err(|e| io(from, e))?;
        let p = e.path();
        let Some(name) = p.file_name() else { continue };
        let bytes = std::fs::read(&p).map_err(|e| io(&p, e))?;
        let text_file = matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("toml" | "md" | "html" | "txt")
        );
        let bytes = match String::from_utf8(bytes) {
            Ok(t) if text_file => t.replace(&a, &b).into_bytes(),
            Ok(t) => t.into_bytes(),
            Err(e) => e.into_bytes(),
        };
        write_atomic(&to.join(name), &bytes)?;
    }
    Ok(())
}
