//! `summary.json`: a finished campaign (format [`SUMMARY_FORMAT`], documented field by field in
//! `reports/README.md`), what `acp-chaos merge` and `acp-chaos check` read back, and how its
//! exit code follows from its counts ([`Summary::decide`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checkers::SubmissionClass;
use crate::exit;

mod groups;
mod hashes;
pub mod regression;

pub use groups::{campaign_failures, failure_groups, FailureGroup};
pub use hashes::{lex_order, HashLogWriter, Hashes};

/// One cell of the table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
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
    /// Simulated milliseconds the runs counted here span, summed (their last op's time):
    /// `junit.xml`'s `time` (deterministic, unlike wall time). 0 in summaries written before it.
    #[serde(default)]
    pub sim_ms: u64,
}

impl Tally {
    /// The cell's marks as the tables show them, each only when nonzero: violations `✗N`,
    /// unknown verdicts `?N`, findings `fN` (`summary.md`, `summary.html`).
    pub fn marks(&self) -> Vec<String> {
        [
            ("✗", self.violations),
            ("?", self.unknown),
            ("f", self.findings),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(mark, n)| format!("{mark}{n}"))
        .collect()
    }
}

/// Most failing verdicts `failures` lists per `scenario@design`, property and status (the
/// rest are counted in `failures_omitted`): a campaign's summary stays small whatever the
/// seeds.
pub const FAILURES_LISTED: usize = 5;

/// The key of a failure's group in `failures_omitted`: `scenario@design property status`.
pub fn failure_group(f: &Value) -> String {
    format!(
        "{}@{} {} {}",
        f["scenario"].as_str().unwrap_or(""),
        f["design"].as_str().unwrap_or(""),
        f["property"].as_str().unwrap_or(""),
        f["status"].as_str().unwrap_or("")
    )
}

/// A shrunk failure's size, from its `shrunk` object in `summary.json` (`faults`, `ops`: the
/// workload's ops, `raw`: raw probes): `1 fault, 2 workload ops, 0 raw probes`.
pub fn shrunk_size(shrunk: &Value) -> String {
    let n = |k: &str| shrunk[k].as_u64().unwrap_or(0);
    let of = |k: &str, one: &str, many: &str| {
        let v = n(k);
        format!("{v} {}", if v == 1 { one } else { many })
    };
    format!(
        "{}, {}, {}",
        of("faults", "fault", "faults"),
        of("ops", "workload op", "workload ops"),
        of("raw", "raw probe", "raw probes")
    )
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
    pub regressions: Vec<regression::Outcome>,
    /// scenario → property → cell.
    pub table: BTreeMap<String, BTreeMap<String, Tally>>,
    /// scenario → class → count.
    pub classes: BTreeMap<String, BTreeMap<SubmissionClass, u64>>,
    /// scenario → event → seeds in which it happened (coverage).
    pub events: BTreeMap<String, BTreeMap<String, u64>>,
    /// Every run's history hash, as `scenario/seed` → hash (determinism checks compare these).
    pub hashes: Hashes,
    /// scenario → events that never happened although listed under `sometimes`.
    pub vacuous: BTreeMap<String, Vec<String>>,
    /// The first finding per scenario@design × property (never fails a campaign).
    pub findings: Vec<serde_json::Value>,
    /// `scenario@design` runs that expected a violation and found none.
    pub expectations_unmet: Vec<String>,
    /// Failing runs: repro lines with their verdicts; at most [`FAILURES_LISTED`] (or
    /// `kept_per_property`, if more) per `scenario@design`, property and status, in the order
    /// they ran. The table counts every one.
    pub failures: Vec<serde_json::Value>,
    /// Failing verdicts counted but not listed in `failures`, by `scenario@design property
    /// status` (absent: none left out).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failures_omitted: BTreeMap<String, u64>,
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

impl Summary {
    /// The seeds it ran, for a page: `0..200 (200 per scenario@design)`, with `, shard K/N`
    /// for a shard.
    pub fn seed_range(&self) -> String {
        format!(
            "{}..{} ({} per scenario@design){}",
            self.seed_start,
            self.seed_start.saturating_add(self.seeds),
            self.seeds,
            self.shard
                .as_ref()
                .map(|(k, n)| format!(", shard {k}/{n}"))
                .unwrap_or_default()
        )
    }

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

/// Read a report folder's `summary.json` (format [`SUMMARY_FORMAT`]).
pub fn read_summary(dir: &Path) -> anyhow::Result<Summary> {
    read_summary_file(&dir.join("summary.json"))
}

/// Read a campaign's `summary.json` file (format [`SUMMARY_FORMAT`]). Errors name the file:
/// unreadable, not JSON, another format, or a field missing or of the wrong type.
pub fn read_summary_file(file: &Path) -> anyhow::Result<Summary> {
    let text =
        std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
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
