//! What several commands share: the scenarios folder, the shard and design parsers, the
//! mutant check, the default number of worker threads.

use std::path::PathBuf;

use clap::Args;

use super::CliError;
use acp_chaos::bounds;
use acp_chaos::models::{mutant, Design};
use acp_chaos::scenario::{self, Scenario};

#[derive(Args, Debug, Clone)]
pub struct DirArgs {
    /// Folder of scenario files (default: `./scenarios` when there is one, else the
    /// built-in scenarios).
    #[arg(long, env = "ACP_CHAOS_SCENARIOS")]
    pub(super) scenarios: Option<PathBuf>,
}

pub(super) fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("`{s}`: expected K/N with 1 <= K <= N (e.g. 2/4)");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// `--audit-pruning`: a number of pruned schedules, or `all` (every one: `usize::MAX`).
pub(super) fn parse_audit(s: &str) -> Result<usize, String> {
    if s == "all" {
        return Ok(usize::MAX);
    }
    s.trim()
        .parse()
        .map_err(|_| format!("`{s}`: expected a number of pruned schedules or `all`"))
}

pub(super) fn parse_design(s: &str) -> Result<Design, String> {
    Design::ALL
        .into_iter()
        .find(|d| d.as_str() == s)
        .ok_or_else(|| {
            let names: Vec<_> = Design::ALL.iter().map(|d| d.as_str()).collect();
            format!("unknown design `{s}` (known: {})", names.join(", "))
        })
}

pub fn scenarios_dir(d: &DirArgs) -> PathBuf {
    acp_chaos::scenario::find_dir(d.scenarios.as_deref())
}

pub(super) fn check_mutant(m: &Option<String>) -> Result<(), CliError> {
    if let Some(name) = m {
        if mutant::find(name).is_none() {
            let names: Vec<_> = mutant::MUTANTS.iter().map(|m| m.name).collect();
            return Err(CliError::usage(format!(
                "unknown mutant `{name}` (known: {})",
                names.join(", ")
            )));
        }
    }
    Ok(())
}

pub fn load(d: &DirArgs, names: &[String]) -> Result<Vec<Scenario>, scenario::ScenarioError> {
    let dir = scenarios_dir(d);
    if names.is_empty() {
        scenario::load_dir(&dir)
    } else {
        names.iter().map(|n| scenario::resolve(&dir, n)).collect()
    }
}

/// Most seeds one command runs per scenario ([`bounds::SEEDS`]).
pub(super) const SEEDS_MAX: u64 = bounds::SEEDS.max;

/// A count of seeds for clap: a whole number (each command checks its own least and most,
/// e.g. [`check_seeds`]); anything else (`-1`, `2.5`, `ten`) is refused
/// saying what a count is, where clap alone would say "invalid digit found in string".
pub(super) fn seed_count(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("a count of seeds is a whole number (got `{s}`)"))
}

/// `--seeds N`, refused outside [`bounds::SEEDS`] with what to do instead.
pub(super) fn check_seeds(seeds: u64) -> Result<(), CliError> {
    if seeds == 0 {
        return Err(CliError::usage("--seeds must be at least 1".to_string()));
    }
    if seeds > SEEDS_MAX {
        return Err(CliError::usage(format!(
            "--seeds {seeds}: at most {SEEDS_MAX} per scenario in one command (run a larger range \
             as several commands, each from its own --seed-start)"
        )));
    }
    Ok(())
}

/// `--jobs N` (and `ACP_CHAOS_JOBS`) for clap: a whole number in [`bounds::JOBS`]; more
/// than the cores or the work is capped later ([`jobs`]), an absurd number is refused here.
pub(super) fn parse_jobs(s: &str) -> Result<usize, String> {
    let n: u64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number of worker threads"))?;
    match bounds::JOBS.check(n) {
        Some(rule) => Err(format!("{n}: {rule} worker threads")),
        None => Ok(n as usize),
    }
}

/// The worker threads for `--jobs` (`None`: the number of cores), for `work` runs (or
/// `u64::MAX` when the command does not know its work up front): capped at the machine's
/// cores and at the work, with a note on stderr when a requested number is capped, since the
/// simulator is CPU-bound and its results do not depend on the number of threads.
pub(super) fn jobs(requested: Option<usize>, work: u64) -> usize {
    let cores = num_cpus_or_one();
    let work = usize::try_from(work.max(1)).unwrap_or(usize::MAX);
    let cap = cores.min(work);
    match requested {
        Some(n) if n > cores => {
            eprintln!(
                "acp-chaos: --jobs {n} is more than this machine's {cores} cores: using {cap} \
                 (results do not depend on --jobs)"
            );
            cap
        }
        Some(n) if n > work => {
            eprintln!(
                "acp-chaos: --jobs {n} is more than the {work} runs to do: using {cap} \
                 (results do not depend on --jobs)"
            );
            cap
        }
        Some(n) => n,
        None => cap,
    }
}

/// An on/off value for a switch's variable (`ACP_CHAOS_NO_PROGRESS`): `1`, `true`, `yes`,
/// `on` or `0`, `false`, `no`, `off` (any case); anything else is refused, saying so.
pub(super) fn parse_switch(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "y" => Ok(true),
        "0" | "false" | "no" | "off" | "n" | "" => Ok(false),
        _ => Err(format!(
            "`{s}` is neither on (1, true, yes, on) nor off (0, false, no, off)"
        )),
    }
}

/// Worker threads by default: the number of cores.
pub(super) fn num_cpus_or_one() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// The seed a one-run command (`replay`, `shrink`) runs: `--seed`, else `ACP_CHAOS_SEED`
/// (empty is unset), like madsim's `MADSIM_TEST_SEED` and proptest's seed variables.
///
/// Errors (exit 2): neither is given, or the variable is not a whole number below 2^64.
pub(super) fn seed_or_env(flag: Option<u64>) -> Result<u64, CliError> {
    if let Some(seed) = flag {
        return Ok(seed);
    }
    match std::env::var("ACP_CHAOS_SEED") {
        Ok(v) if !v.trim().is_empty() => v.trim().parse().map_err(|_| {
            CliError::usage(format!(
                "ACP_CHAOS_SEED={v}: not a seed (a whole number 0..2^64); unset it or pass --seed"
            ))
        }),
        _ => Err(CliError::usage(
            "--seed N is required (or set ACP_CHAOS_SEED=N), or give --schedule FILE for replay"
                .to_string(),
        )),
    }
}

/// Refuses a plan derived under an `--agent` design its scenario's faults cannot run under (a
/// cluster-only fault under `stored`, a disk fault under `cluster`): what such a run would
/// write as a schedule file, `replay --schedule` would refuse ([`Plan::check`]).
///
/// Errors: exit 2, naming the design, the fault and the scenario's designs.
pub(super) fn design_fits(plan: &acp_chaos::plan::Plan, s: &Scenario) -> Result<(), CliError> {
    let Some(e) = plan.check() else {
        return Ok(());
    };
    let designs: Vec<&str> = s.agent.designs.iter().map(|d| d.as_str()).collect();
    Err(CliError::usage(format!(
        "--agent {}: {} cannot run under it ({}); its designs: {}",
        plan.agent.design.as_str(),
        s.reference,
        e.replacen('`', "", 1),
        designs.join(", ")
    )))
}
