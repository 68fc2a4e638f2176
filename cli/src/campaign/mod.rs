//! A campaign: every scenario × a seed range, in parallel across seeds (one simulation per
//! thread: `Sim` is `!Send`), then a table, a `summary.json` and one folder per failing run.

pub mod bench;
mod counterexample;
pub mod merge;
pub mod paired;
pub(crate) mod progress;
pub mod scoreboard;
pub(crate) mod staging;
mod summarize;
mod unwritten;
pub mod witness;

use std::path::{Path, PathBuf};

use acp_chaos_models::Design;
use rayon::prelude::*;

pub(crate) use counterexample::write_timeline;
pub use merge::merge;
pub use staging::{Staging, MARKER};
pub use unwritten::ReportUnwritten;

use acp_chaos::checkers::Status;
use acp_chaos::folders::{is_artefact, write_atomic};
use acp_chaos::history::History;
use acp_chaos::run::{repro, run_one, RunResult};
use acp_chaos::scenario::Scenario;
use acp_chaos::summary::{HashLogWriter, Summary};
use counterexample::write_run;
use summarize::Summarizer;

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
    /// The campaign's name (`all-seeds0-200`, see [`acp_chaos::folders::campaign_name`]): the report folder's name
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
    /// The regression corpus, replayed before the seeds (see [`acp_chaos::explore::regression`]).
    pub regressions: Vec<acp_chaos::explore::regression::Regression>,
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

/// Run the campaign and write the report folder: `summary.json`, `summary.md`, `junit.xml`,
/// and one folder per kept failing run. The report is written into a fresh folder beside `out`
/// (`<out>.partial/`, checked first, so a bad `--out` fails before any run) that replaces `out`
/// only once complete (see [`Staging`]). Runs are folded into the summary as they finish, a
/// batch at a time, so memory does not grow with the seeds.
///
/// A report that cannot be written (a full disk) is the error [`ReportUnwritten`], which
/// carries the summary: the verdict is not lost.
pub fn run(spec: &CampaignSpec) -> anyhow::Result<Summary> {
    run_with(spec, |_| {})
}

/// [`run`], with `finish` applied to the summary before it is written (the mutant scoreboard
/// adds its table).
pub fn run_with(spec: &CampaignSpec, finish: impl FnOnce(&mut Summary)) -> anyhow::Result<Summary> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let staging = Staging::begin(&spec.out, &is_artefact)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(spec.jobs.max(1))
        .build()?;
    let (first, end) = spec.seed_range();
    let per_row = end - first;
    let pairs: Vec<(usize, Design)> = spec
        .scenarios
        .iter()
        .enumerate()
        .flat_map(|(i, s)| spec.designs_for(s).into_iter().map(move |d| (i, d)))
        .collect();
    let total = pairs.len() as u64 * per_row;
    // The regression corpus first: minimal schedules that must keep their verdicts.
    let regressions: Vec<acp_chaos::explore::regression::Outcome> = pool.install(|| {
        spec.regressions
            .par_iter()
            .map(acp_chaos::explore::regression::replay)
            .collect()
    });
    let done = AtomicU64::new(0);
    let failing = AtomicU64::new(0);
    let progress = spec.progress.then(|| progress::Progress::new(total));
    let stopped = || {
        spec.stop
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    };
    let hashes = HashLogWriter::create(staging.dir(), summarize::rows(spec, &pairs))?;
    let mut tables = Summarizer::new(spec, staging.dir(), staging.out(), hashes);
    let mut interrupted = false;
    // A batch runs in parallel, then is added in order: only one batch of results is held.
    let batch = (spec.jobs.max(1) as u64 * 512).min(16_384);
    let mut next = 0u64;
    while next < total {
        let upto = (next + batch).min(total);
        let results: Vec<Option<RunResult>> = pool.install(|| {
            (next..upto)
                .into_par_iter()
                .map(|k| {
                    if stopped() {
                        return None;
                    }
                    let (i, d) = pairs[(k / per_row) as usize];
                    let seed = first + k % per_row;
                    let s = &spec.scenarios[i];
                    let r = run_seed(spec, staging.dir(), s, seed, d);
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
        for r in results {
            interrupted |= r.is_none();
            tables.add(r);
        }
        next = upto;
    }
    if let Some(p) = &progress {
        p.finish(
            done.load(Ordering::Relaxed),
            failing.load(Ordering::Relaxed),
            interrupted,
        );
    }
    let (mut summary, error) = tables.finish(regressions, interrupted);
    finish(&mut summary);
    commit(staging, summary, error)
}

/// One run of scenario `s` on `seed` under design `d`; with `--check-determinism` run again,
/// and when the two hashes differ both histories kept in `dir` (`-a` the first run, `-b` the
/// second) and the second hash noted.
fn run_seed(spec: &CampaignSpec, dir: &Path, s: &Scenario, seed: u64, d: Design) -> RunResult {
    let mutant = spec.mutant.as_deref();
    let (h, mut r) = run_one(s, seed, mutant, d);
    if spec.check_determinism {
        let (h2, r2) = run_one(s, seed, mutant, d);
        if r2.hash != r.hash {
            // Keep both histories (`-a` first run, `-b` second) for a diff.
            let line = repro(&s.reference, d, seed, mutant);
            let keep = |h: &History, r: &RunResult, tag: &str| {
                let mut r = r.clone();
                r.scenario = format!("{}-{tag}", r.scenario);
                write_run(dir, h, &r, &line, true)
            };
            if let Err(e) = keep(&h, &r, "a").and_then(|_| keep(&h2, &r2, "b")) {
                tracing::warn!("could not keep both histories: {e}");
            }
            r.rerun_hash = Some(r2.hash);
        }
    }
    r
}

/// Write `summary.json` into the staging folder and move the report into place, unless
/// writing the tables already failed (`error`); the summary, or the report left unwritten
/// with it.
fn commit(
    staging: Staging,
    summary: Summary,
    mut error: Option<String>,
) -> anyhow::Result<Summary> {
    if error.is_none() {
        if let Err(e) = write_summary(staging.dir(), &summary) {
            error = Some(format!("{e:#}"));
        }
    }
    if error.is_none() {
        if let Err(e) = staging.commit(&is_artefact) {
            error = Some(format!("{e:#}"));
        }
    }
    match error {
        None => Ok(summary),
        Some(what) => Err(ReportUnwritten {
            summary: Box::new(summary),
            what,
        }
        .into()),
    }
}

pub(super) fn reference(spec: &CampaignSpec, name: &str) -> String {
    spec.scenarios
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.reference.clone())
        .unwrap_or_else(|| name.to_string())
}

/// Write `summary.json`, `summary.md`, `summary.html` and `junit.xml` into `out`, each atomically (a temporary
/// file renamed over the old one), so an interrupted write never leaves half a report.
pub fn write_summary(out: &Path, summary: &Summary) -> anyhow::Result<()> {
    write_atomic(
        &out.join("summary.json"),
        &serde_json::to_vec_pretty(summary)?,
    )?;
    write_atomic(
        &out.join("summary.md"),
        acp_chaos::report::summary_md(summary).as_bytes(),
    )?;
    write_atomic(
        &out.join("summary.html"),
        acp_chaos::report::summary_html(summary).as_bytes(),
    )?;
    write_atomic(
        &out.join("junit.xml"),
        acp_chaos::report::junit_xml(summary).as_bytes(),
    )?;
    Ok(())
}
