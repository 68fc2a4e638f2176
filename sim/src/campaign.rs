//! A campaign: every scenario × a seed range, in parallel across seeds (one simulation per
//! thread: `Sim` is `!Send`), then a table, a `summary.json` and one folder per failing run.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};

use crate::check::{self, Class, Status, Verdict, CHECKERS};
use crate::history::History;
use crate::plan::Plan;
use crate::scenario::{Expect, Scenario};
use crate::world;
use acp_chaos_models::Design;

/// Exit codes, one table for every command.
pub mod exit {
    /// Every property valid (findings allowed).
    pub const VALID: i32 = 0;
    /// Some MUST broken.
    pub const INVALID: i32 = 1;
    /// Usage or input error (bad flag, malformed scenario file).
    pub const USAGE: i32 = 2;
    /// The same run gave two different histories.
    pub const NONDETERMINISM: i32 = 3;
    /// Liveness failure, unknown verdict, or a vacuous campaign.
    pub const LIVENESS: i32 = 4;
}

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
    let verdicts = check::check_all(h);
    let facts = check::Facts::of(h);
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
        events: check::events(h),
        ops: h.ops.len(),
        sim_ms: h.ops.last().map(|o| o.time_ms).unwrap_or(0),
        rerun_hash: None,
        fault_cells: check::fault_states(h),
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
}

impl CampaignSpec {
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
#[derive(Debug, Clone, Default, Serialize)]
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

/// A finished campaign.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Summary schema version.
    pub format: u32,
    /// Seeds.
    pub seed_start: u64,
    /// Seeds per scenario.
    pub seeds: u64,
    /// Mutant.
    pub mutant: Option<String>,
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
/// before any run).
pub fn run(spec: &CampaignSpec) -> anyhow::Result<Summary> {
    prepare_out(&spec.out)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(spec.jobs.max(1))
        .build()?;
    let mut work: Vec<(usize, Design, u64)> = Vec::new();
    for (i, s) in spec.scenarios.iter().enumerate() {
        for d in spec.designs_for(s) {
            work.extend((0..spec.seeds).map(|k| (i, d, spec.seed_start.saturating_add(k))));
        }
    }
    let mutant = spec.mutant.as_deref();
    let results: Vec<RunResult> = pool.install(|| {
        work.par_iter()
            .map(|&(i, d, seed)| {
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
                r
            })
            .collect()
    });
    summarize(spec, results)
}

fn reference(spec: &CampaignSpec, name: &str) -> String {
    spec.scenarios
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.reference.clone())
        .unwrap_or_else(|| name.to_string())
}

/// Make the report folder: create it, or clear the report artefacts of an earlier campaign
/// in it (`summary.json`, `<scenario>-<design>-seed<N>/` run folders). A folder holding
/// anything else is refused, and nothing but our own artefacts is ever deleted.
pub fn prepare_out(out: &Path) -> anyhow::Result<()> {
    let io = |e: std::io::Error| anyhow::anyhow!("{}: {e}", out.display());
    if out.exists() {
        let mut ours = Vec::new();
        for e in std::fs::read_dir(out).map_err(io)? {
            let e = e.map_err(io)?;
            let name = e.file_name().to_string_lossy().into_owned();
            let run_dir = e.path().join("history.jsonl").exists() && name.contains("-seed");
            if name == "summary.json" || name == "summary.json.tmp" || run_dir {
                ours.push(e.path());
            } else {
                anyhow::bail!(
                    "{}: holds {name}, which is not an acp-chaos report artefact; refusing to write the report there",
                    out.display()
                );
            }
        }
        for p in ours {
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

fn summarize(spec: &CampaignSpec, results: Vec<RunResult>) -> anyhow::Result<Summary> {
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
    for r in &results {
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
                if *k == 0 && v.status == Status::Invalid && spec.shrink {
                    // The first failing seed of each (scenario@design, property): shrink it.
                    let s = spec
                        .scenarios
                        .iter()
                        .find(|s| s.name == r.scenario)
                        .expect("scenario ran");
                    if let Some(shrunk) = shrink_into(&spec.out, s, r, v, mutant)? {
                        failure["shrunk"] = shrunk;
                    }
                }
                failures.push(failure);
                if *k < spec.keep_per_property {
                    *k += 1;
                    // Re-run it: the report's history comes from the replay, and a different
                    // hash is nondeterminism (exit 3).
                    let s = spec
                        .scenarios
                        .iter()
                        .find(|s| s.name == r.scenario)
                        .expect("scenario ran");
                    let (h, again) = run_one(s, r.seed, mutant, r.design);
                    if again.hash != r.hash {
                        nondeterministic.push(line.clone());
                    }
                    write_run(&spec.out, &h, &again, &line)?;
                }
            }
        }
    }
    let mut vacuous = BTreeMap::new();
    for s in &spec.scenarios {
        let got = seen.get(&s.name).cloned().unwrap_or_default();
        let missing: Vec<String> = s
            .sometimes
            .iter()
            .filter(|e| !got.contains(e.as_str()))
            .cloned()
            .collect();
        // `sometimes` speaks for the scenario's whole design list; a run narrowed by --agent
        // (or a mutant) cannot be held to it.
        let whole = spec.designs_for(s).len() == s.agent.designs.len();
        if !missing.is_empty() && mutant.is_none() && whole {
            vacuous.insert(s.name.clone(), missing);
        }
    }
    // A scenario states its expected verdict per design; with a mutant every violation counts.
    let mut unexpected = false;
    let mut expectations_unmet = Vec::new();
    for s in &spec.scenarios {
        for d in spec.designs_for(s) {
            let key = format!("{}@{}", s.name, d.as_str());
            let violations: u64 = table
                .get(&key)
                .map(|r| r.values().map(|c| c.violations).sum())
                .unwrap_or(0);
            let expect = if mutant.is_some() {
                Expect::Valid
            } else {
                s.expect_for(d)
            };
            match expect {
                Expect::Valid if violations > 0 => unexpected = true,
                Expect::Invalid if violations == 0 => expectations_unmet.push(key),
                _ => {}
            }
        }
    }
    let any = |st: Status| {
        table.values().flat_map(|r| r.values()).any(|c| match st {
            Status::Invalid => c.violations > 0,
            _ => c.unknown > 0,
        })
    };
    let _ = any(Status::Invalid);
    let exit_code = if !nondeterministic.is_empty() {
        exit::NONDETERMINISM
    } else if unexpected || !expectations_unmet.is_empty() {
        exit::INVALID
    } else if any(Status::Unknown) || !vacuous.is_empty() {
        exit::LIVENESS
    } else {
        exit::VALID
    };
    let summary = Summary {
        format: 1,
        seed_start: spec.seed_start,
        seeds: spec.seeds,
        mutant: spec.mutant.clone(),
        table,
        classes,
        events,
        hashes,
        vacuous,
        expectations_unmet,
        findings,
        failures,
        nondeterministic,
        coverage_map,
        exit_code,
    };
    let tmp = spec.out.join("summary.json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&summary)?)?;
    std::fs::rename(&tmp, spec.out.join("summary.json"))?;
    Ok(summary)
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
) -> anyhow::Result<Option<Value>> {
    let plan = Plan::derive(s, r.seed, mutant, r.design);
    let target = crate::shrink::Target {
        property: v.property.clone(),
        status: v.status,
        party: v.party,
    };
    let Ok(shrunk) = crate::shrink::shrink(&plan, &target) else {
        return Ok(None);
    };
    let dir = out.join(run_dir_name(r));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("schedule.toml");
    let replay = format!("acp-chaos replay --schedule {}", file.display());
    let body = toml::to_string(&shrunk.plan)?;
    std::fs::write(
        &file,
        format!(
            "# shrunk from: {}\n# keeps {}: {}\n# replay: {replay}\n{body}",
            repro(&s.reference, r.design, r.seed, mutant),
            v.property,
            shrunk.verdict.message
        ),
    )?;
    let (f, o, w) = shrunk.after;
    Ok(Some(
        json!({"schedule": file.display().to_string(), "replay": replay, "faults": f, "ops": o, "raw": w, "runs": shrunk.runs}),
    ))
}

fn run_dir_name(r: &RunResult) -> String {
    format!("{}-{}-seed{}", r.scenario, r.design.as_str(), r.seed)
}

fn write_run(out: &Path, h: &History, r: &RunResult, line: &str) -> anyhow::Result<()> {
    let dir = out.join(run_dir_name(r));
    std::fs::create_dir_all(&dir)?;
    let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("history.jsonl"))?);
    h.write_jsonl(&mut f)?;
    f.flush()?;
    std::fs::write(
        dir.join("verdicts.json"),
        serde_json::to_vec_pretty(&r.verdicts)?,
    )?;
    std::fs::write(dir.join("repro.txt"), format!("{line}\n"))?;
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
    for st in check::FAULT_STATES {
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
        for st in check::FAULT_STATES {
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
