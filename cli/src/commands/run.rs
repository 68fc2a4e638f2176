//! `acp-chaos run` (and `acp-chaos` with no command): a campaign, scenarios × seeds.

use std::path::PathBuf;

use clap::Args;

use super::args::{check_mutant, jobs, load, parse_design, parse_shard, scenarios_dir, DirArgs};
use super::output::print_summary;
use super::{CliError, Outcome};
use crate::campaign;
use crate::campaign::CampaignSpec;
use acp_chaos::exit;
use acp_chaos::models::Design;
use acp_chaos::plan::Plan;
use acp_chaos::scenario::Scenario;

#[derive(Args, Debug, Clone)]
// `--seeds -1` is read as a value and refused as one, not taken for a flag.
#[command(allow_negative_numbers = true)]
pub struct RunArgs {
    /// Scenario names or .toml paths (default: every file in the scenarios folder).
    pub(super) scenario: Vec<String>,
    /// Seeds per scenario.
    #[arg(long, value_parser = super::args::seed_count, default_value_t = 200, env = "ACP_CHAOS_SEEDS")]
    pub(super) seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 0, env = "ACP_CHAOS_SEED_START")]
    pub(super) seed_start: u64,
    /// Run this one seed of every scenario (the same as `--seed-start N --seeds 1`; it wins
    /// over both). `ACP_CHAOS_SEED=N`, like madsim's and proptest's `*_SEED`, picks the seed
    /// here and in `replay` and `shrink`.
    #[arg(long, env = "ACP_CHAOS_SEED")]
    pub(super) seed: Option<u64>,
    /// Print the whole scenario × property table, how the submissions ended, the coverage
    /// map, every scenario's settings and every failure's first seed (by default the
    /// failures are grouped by what broke; `summary.md` always has everything).
    #[arg(long, short = 'v')]
    pub(super) verbose: bool,
    /// Worker threads (default: the number of cores).
    #[arg(long, env = "ACP_CHAOS_JOBS", value_parser = super::args::parse_jobs)]
    pub(super) jobs: Option<usize>,
    /// Run against a mutant (see `acp-chaos list`).
    #[arg(long, env = "ACP_CHAOS_MUTANT")]
    pub(super) mutant: Option<String>,
    /// Run every scenario under this Agent design only: in-memory, stored, adapter or
    /// cluster (default: each scenario's `designs`).
    #[arg(long, value_parser = parse_design, env = "ACP_CHAOS_AGENT")]
    pub(super) agent: Option<Design>,
    /// Run only the K-th of N disjoint slices of the seed range (`--shard 2/4`), for a CI
    /// matrix or an indexed job; `acp-chaos merge` joins the shards' report folders.
    #[arg(long, value_parser = parse_shard, env = "ACP_CHAOS_SHARD")]
    pub(super) shard: Option<(u64, u64)>,
    /// No progress bar or progress lines on stderr (`ACP_CHAOS_NO_PROGRESS=1`, `true`, `yes`,
    /// `on`; `0`, `false`, `no`, `off` or empty keep them; anything else is refused).
    #[arg(long, env = "ACP_CHAOS_NO_PROGRESS", action = clap::ArgAction::SetTrue,
          value_parser = super::args::parse_switch)]
    pub(super) no_progress: bool,
    /// Do not replay the regression corpus (`<scenarios>/regressions/*.toml`) first.
    #[arg(long)]
    pub(super) no_regressions: bool,
    /// Run every seed twice and compare history hashes; a mismatch exits 3 and keeps both
    /// histories (`<scenario>-a-...`, `<scenario>-b-...` in the report folder).
    #[arg(long)]
    pub(super) check_determinism: bool,
    /// Do not shrink the first failing seed of each (scenario@design, property) (by default
    /// its run folder gets a `schedule.toml`, see `acp-chaos shrink`).
    #[arg(long)]
    pub(super) no_shrink: bool,
    /// Report folder (default `reports/<campaign name>`, with `reports/latest` pointing at
    /// it).
    #[arg(long, env = "ACP_CHAOS_OUT")]
    pub(super) out: Option<PathBuf>,
    #[command(flatten)]
    pub(super) dir: DirArgs,
}

/// Long on purpose: the command's steps in the order of its output (checks, the settings of every
/// scenario, the campaign, the summary).
pub(super) fn exec(a: &RunArgs) -> Outcome {
    Ok(campaign(a)?.exit_code)
}

/// Run the campaign `a` names and print its settings and summary; returns the summary.
pub(super) fn campaign(a: &RunArgs) -> Result<acp_chaos::summary::Summary, CliError> {
    let a = &checked(a)?;
    let (names, scenarios) = scenarios_of(a)?;
    if let Some((_, n)) = a.shard {
        if n > a.seeds {
            return Err(CliError::usage(format!(
                "--shard ?/{n}: more shards than the {} seeds",
                a.seeds
            )));
        }
    }
    let name = acp_chaos::folders::campaign_name(
        &names,
        a.seed_start,
        a.seeds,
        a.mutant.as_deref(),
        a.agent,
    );
    let (out, default_out) = match &a.out {
        Some(o) => (o.clone(), false),
        None => (acp_chaos::folders::default_out(&name, a.shard), true),
    };
    super::writable::report_folder(&out, "--out")?;
    let stop = stop_on_ctrl_c();
    // A scenario runs under the designs it lists, narrowed by --agent and the mutant.
    let mut spec = CampaignSpec {
        scenarios: Vec::new(),
        seed_start: a.seed_start,
        seeds: a.seeds,
        jobs: 1,
        mutant: a.mutant.clone(),
        out: out.clone(),
        keep_per_property: 5,
        shrink: !a.no_shrink,
        agent: a.agent,
        check_determinism: a.check_determinism,
        name,
        shard: a.shard,
        progress: !a.no_progress,
        stop: Some(stop),
        regressions: Vec::new(),
    };
    if !a.no_regressions {
        spec.regressions =
            acp_chaos::explore::regression::load_dir(&scenarios_dir(&a.dir).join("regressions"))?;
    }
    let (scenarios, skipped): (Vec<_>, Vec<_>) = scenarios
        .into_iter()
        .partition(|s| !spec.designs_for(s).is_empty());
    if scenarios.is_empty() {
        return Err(nothing_to_run(a));
    }
    // VOPR style: the seed range and every derived setting first.
    let (first, end) = spec.seed_range();
    let runs: u64 = scenarios
        .iter()
        .map(|s| spec.designs_for(s).len() as u64)
        .sum::<u64>()
        .saturating_mul(end - first);
    let jobs = jobs(a.jobs, runs);
    spec.jobs = jobs;
    spec.scenarios = scenarios;
    let spec = spec;
    print_settings(a, &spec, &skipped, runs);
    let summary = match campaign::run(&spec) {
        Ok(s) => s,
        Err(e) => match e.downcast::<campaign::ReportUnwritten>() {
            Ok(u) => {
                // The verdict stands: print it, then say what is missing.
                print_summary(&u.summary, &out, false, a.verbose);
                return Err(CliError::unwritten(&u.what, &out, u.summary.exit_code));
            }
            Err(e) => return Err(e.into()),
        },
    };
    if default_out {
        acp_chaos::folders::point_latest(&out)?;
    }
    print_summary(&summary, &out, true, a.verbose);
    Ok(summary)
}

/// `a` with `--seed` as a one-seed range, its settings checked.
fn checked(a: &RunArgs) -> Result<RunArgs, CliError> {
    let mut a = a.clone();
    if let Some(seed) = a.seed {
        // A campaign's seeds are `start..start + seeds`, an end past u64 for this one seed.
        if seed == u64::MAX {
            return Err(CliError::usage(format!(
                "--seed {seed}: the last seed a campaign runs is {} (its range of seeds ends \
                 below 2^64); `acp-chaos replay SCENARIO --seed {seed}` runs this one",
                u64::MAX - 1
            )));
        }
        (a.seed_start, a.seeds) = (seed, 1);
    }
    check_mutant(&a.mutant)?;
    super::args::check_seeds(a.seeds)?;
    if a.jobs == Some(0) {
        return Err(CliError::usage("--jobs must be at least 1".to_string()));
    }
    if a.seed_start.checked_add(a.seeds).is_none() {
        return Err(CliError::usage(format!(
            "--seed-start {}: with {} seeds per scenario the range would end past 2^64; the \
             largest start for {} seeds is {}",
            a.seed_start,
            a.seeds,
            a.seeds,
            u64::MAX - a.seeds
        )));
    }
    Ok(a)
}

/// The scenarios `a` names (each once), loaded; refused when there are none.
fn scenarios_of(a: &RunArgs) -> Result<(Vec<String>, Vec<Scenario>), CliError> {
    // The same scenario named twice runs once.
    let mut names = a.scenario.clone();
    let mut seen = std::collections::BTreeSet::new();
    names.retain(|n| seen.insert(n.clone()));
    let scenarios = load(&a.dir, &names)?;
    if scenarios.is_empty() {
        return Err(CliError::usage(format!(
            "no scenarios found in {}",
            scenarios_dir(&a.dir).display()
        )));
    }
    Ok((names, scenarios))
}

/// Ctrl-C: the first stops the campaign (runs in flight finish, the report is written); a
/// second exits at once.
fn stop_on_ctrl_c() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, std::sync::atomic::Ordering::SeqCst) {
                std::process::exit(exit::INTERRUPTED);
            }
            eprintln!("\nCtrl-C: stopping after the runs in flight (again to quit at once)");
        });
    }
    stop
}

/// Why no scenario runs: none lists `--agent`'s design, or the designs the mutant applies to.
fn nothing_to_run(a: &RunArgs) -> CliError {
    CliError::usage(format!(
        "nothing to run: no scenario lists {}{}",
        a.agent
            .map(|d| format!("design `{}`", d.as_str()))
            .unwrap_or_else(|| "a design".into()),
        a.mutant
            .as_deref()
            .and_then(acp_chaos_models::mutant::find)
            .filter(|m| !m.designs.is_empty())
            .map(|m| format!(
                " that mutant `{}` applies to ({})",
                m.name,
                m.designs
                    .iter()
                    .map(|d| d.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .unwrap_or_default()
    ))
}

/// VOPR style: the seed range and every derived setting, before the first run.
fn print_settings(a: &RunArgs, spec: &CampaignSpec, skipped: &[Scenario], runs: u64) {
    let (first, end) = spec.seed_range();
    println!(
        "acp-chaos campaign {}: seeds {first}..{end} ({} per scenario{}) x {} scenarios, mutant={}, jobs={}",
        spec.name,
        end - first,
        a.shard
            .map(|(k, n)| format!(", shard {k}/{n} of seeds {}..{}", a.seed_start, a.seed_start + a.seeds))
            .unwrap_or_default(),
        spec.scenarios.len(),
        a.mutant.as_deref().unwrap_or("none"),
        spec.jobs
    );
    if !skipped.is_empty() {
        println!(
            "  not run (their designs exclude --agent or the mutant's): {}",
            skipped
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !spec.regressions.is_empty() {
        println!(
            "  regression corpus: {} schedules in {}, replayed first",
            spec.regressions.len(),
            scenarios_dir(&a.dir).join("regressions").display()
        );
    }
    if !a.verbose {
        let rows: usize = spec
            .scenarios
            .iter()
            .map(|s| spec.designs_for(s).len())
            .sum();
        println!(
            "  {} scenario@design rows x {} seeds = {runs} runs (--verbose lists every scenario's settings)",
            rows,
            end - first
        );
    }
    for s in spec.scenarios.iter().filter(|_| a.verbose) {
        let designs = spec.designs_for(s);
        let Some(&d0) = designs.first() else { continue };
        let p = Plan::derive(s, a.seed_start, a.mutant.as_deref(), d0);
        let how = if s.swarm.is_some() {
            "swarm (faults drawn per seed)".to_string()
        } else {
            format!("{} scripted faults", s.faults.len())
        };
        println!(
            "  {:<44} designs {}: {} submissions, o1={} o4={}, {}, rules {}",
            s.name,
            designs
                .iter()
                .map(|d| d.as_str())
                .collect::<Vec<_>>()
                .join(","),
            p.workload.len(),
            s.agent.o1,
            s.agent.o4,
            how,
            s.rules.join(" ")
        );
    }
}
