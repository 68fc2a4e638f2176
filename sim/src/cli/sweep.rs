//! `acp-chaos sweep`: the false-positive sweep. Every scenario under every design it lists, on
//! the correct models, on seeds far outside the ones the tests and the default campaign run:
//! a checker that is too strict shows up here as a violation or an unknown.

use std::path::PathBuf;

use clap::Args;

use super::args::{load, scenarios_dir, DirArgs};
use super::run::{campaign, RunArgs};
use super::{CliError, Outcome};
use crate::exit;

#[derive(Args, Debug, Clone)]
pub(super) struct SweepArgs {
    /// Seeds per scripted scenario@design.
    #[arg(long, default_value_t = 1_000)]
    seeds: u64,
    /// First seed of the scripted scenarios (the default campaign and the tests run 0..200).
    #[arg(long, default_value_t = 10_000)]
    seed_start: u64,
    /// Seeds per swarm scenario@design (`[swarm]`: faults drawn per seed).
    #[arg(long, default_value_t = 10_000)]
    swarm_seeds: u64,
    /// First seed of the swarm scenarios.
    #[arg(long, default_value_t = 100_000)]
    swarm_seed_start: u64,
    /// Worker threads (default: the number of cores).
    #[arg(long, env = "ACP_CHAOS_JOBS", value_parser = super::args::parse_jobs)]
    jobs: Option<usize>,
    /// Report folder: `scripted/` and `swarm/` inside it (default `reports/sweep`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// No progress bar or progress lines on stderr.
    #[arg(long)]
    no_progress: bool,
    #[command(flatten)]
    dir: DirArgs,
}

/// Two campaigns (scripted scenarios, then swarm scenarios), no regression corpus; exits with
/// the worse of their codes (130 if Ctrl-C stopped it, then 1 before 4: a violation is the
/// point of a sweep).
pub(super) fn exec(a: &SweepArgs) -> Outcome {
    // Every flag checked under its own name before any run.
    for (flag, start_flag, start, seeds) in [
        ("--seeds", "--seed-start", a.seed_start, a.seeds),
        (
            "--swarm-seeds",
            "--swarm-seed-start",
            a.swarm_seed_start,
            a.swarm_seeds,
        ),
    ] {
        super::args::check_seeds(seeds).map_err(|e| {
            CliError::usage(
                e.to_string()
                    .replace("--seeds", flag)
                    .replace("--seed-start", start_flag),
            )
        })?;
        if start.checked_add(seeds).is_none() {
            return Err(CliError::usage(format!(
                "{start_flag} {start}: with {seeds} seeds ({flag}) the range would end past \
                 2^64; the largest start for {seeds} seeds is {}",
                u64::MAX - seeds
            )));
        }
    }
    if a.jobs == Some(0) {
        return Err(CliError::usage("--jobs must be at least 1".to_string()));
    }
    let all = load(&a.dir, &[])?;
    let (swarm, scripted): (Vec<_>, Vec<_>) = all.iter().partition(|s| s.swarm.is_some());
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("reports/sweep"));
    super::writable::into_folder(&out, "--out")?;
    let mut parts = Vec::new();
    for (kind, list, start, seeds) in [
        ("scripted", scripted, a.seed_start, a.seeds),
        ("swarm", swarm, a.swarm_seed_start, a.swarm_seeds),
    ] {
        if list.is_empty() {
            continue;
        }
        let args = RunArgs {
            scenario: list.iter().map(|s| s.name.clone()).collect(),
            seeds,
            seed_start: start,
            seed: None,
            verbose: false,
            jobs: a.jobs,
            mutant: None,
            agent: None,
            shard: None,
            no_progress: a.no_progress,
            no_regressions: true,
            check_determinism: false,
            no_shrink: false,
            out: Some(out.join(kind)),
            dir: a.dir.clone(),
        };
        let s = campaign(&args)?;
        let (mut runs, mut violations, mut unknown, mut findings) = (0, 0, 0, 0);
        for cells in s.table.values() {
            // Every property of a row ran on the same seeds: count a row's runs once.
            runs += cells.values().map(|t| t.seeds).max().unwrap_or(0);
            for t in cells.values() {
                violations += t.violations;
                unknown += t.unknown;
                findings += t.findings;
            }
        }
        parts.push((
            kind,
            start,
            seeds,
            runs,
            violations,
            unknown,
            findings,
            s.exit_code,
        ));
        if s.interrupted {
            // Ctrl-C stopped this campaign: the next one does not start.
            break;
        }
    }
    if parts.is_empty() {
        return Err(CliError::usage(format!(
            "no scenarios found in {}",
            scenarios_dir(&a.dir).display()
        )));
    }
    println!();
    for (kind, start, seeds, runs, violations, unknown, findings, code) in &parts {
        println!(
            "sweep {kind}: seeds {start}..{} per scenario@design, {runs} runs: {violations} violations, {unknown} unknown, {findings} findings (exit {code})",
            start + seeds
        );
    }
    let codes: Vec<i32> = parts.iter().map(|p| p.7).collect();
    Ok(if codes.contains(&exit::INTERRUPTED) {
        exit::INTERRUPTED
    } else if codes.contains(&exit::INVALID) {
        exit::INVALID
    } else {
        codes.into_iter().max().unwrap_or(exit::VALID)
    })
}
