//! A campaign: every scenario × a seed range, in parallel across seeds (one simulation per
//! thread: `Sim` is `!Send`), then a table, a `summary.json` and one folder per failing run.

pub mod bench;
mod counterexample;
pub mod folders;
pub mod merge;
pub mod progress;
pub mod scoreboard;
mod summarize;

use std::path::PathBuf;

use acp_chaos_models::Design;
use rayon::prelude::*;

pub use folders::{
    campaign_name, default_out, point_latest, prepare_folder, prepare_out, write_atomic,
    write_summary,
};
pub use merge::merge;

use crate::checkers::Status;
use crate::history::History;
use crate::run::{repro, run_one, RunResult};
use crate::scenario::Scenario;
use crate::summary::Summary;
use counterexample::write_run;
use summarize::summarize;

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
    /// The regression corpus, replayed before the seeds (see [`crate::explore::regression`]).
    pub regressions: Vec<crate::explore::regression::Regression>,
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
    let regressions: Vec<crate::explore::regression::Outcome> = pool.install(|| {
        spec.regressions
            .par_iter()
            .map(crate::explore::regression::replay)
            .collect()
    });
    let done = AtomicU64::new(0);
    let failing = AtomicU64::new(0);
    let progress = spec
        .progress
        .then(|| progress::Progress::new(work.len() as u64));
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

pub(super) fn reference(spec: &CampaignSpec, name: &str) -> String {
    spec.scenarios
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.reference.clone())
        .unwrap_or_else(|| name.to_string())
}
