//! The command line. `acp-chaos` with no subcommand runs the default campaign.
//!
//! Exit codes (every command): 0 valid (findings allowed), 1 invalid, 2 usage or input error,
//! 3 nondeterminism, 4 liveness failure, unknown verdict or vacuous campaign.

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use crate::campaign::{self, CampaignSpec};
use crate::checkers::{self, Status, CHECKERS};
use crate::exit;
use crate::history::{self, History};
use crate::models::{mutant, Design, Point};
use crate::nemesis::FaultKind;
use crate::plan::Plan;
use crate::scenario::{self, Scenario};

/// Deterministic fault-injection simulator for ACP v2 (idempotencyKey, retries, no silent drop).
#[derive(Parser, Debug)]
#[command(name = "acp-chaos", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a campaign: scenarios × seeds (the default command).
    Run(RunArgs),
    /// Re-run one (scenario, seed) and print its plan, history and verdicts.
    Replay(ReplayArgs),
    /// List scenarios, designs, clients, policies, transports, mutants, faults, properties and
    /// `sometimes` events (or one of them: `acp-chaos list faults`).
    List(ListArgs),
    /// Re-run every checker on a stored history (a run folder or a history.jsonl).
    Check {
        /// A run folder (with history.jsonl) or the file itself.
        path: PathBuf,
    },
    /// Measure seeds per second and the overhead over a bare turmoil run.
    Bench(BenchArgs),
    /// The mutant scoreboard: each mutant's median seeds-to-detection under the swarm alone
    /// (no scripted schedule) and under the uniform mix, and their ratio; the mutant × checker
    /// view; and the correct models on the same seeds. Exits 1 when the swarm misses a mutant
    /// within `--seeds` or a correct model has a violation.
    Mutants(MutantsArgs),
    /// Shrink a failing run to a 1-minimal schedule (ddmin over its faults, submissions and raw
    /// probes, at fixed latency) and write it as a schedule file for `replay --schedule`.
    Shrink(ShrinkArgs),
    /// Merge the report folders of a campaign's shards (`run --shard K/N`) into one report,
    /// the same as one unsharded run of the same seeds would write.
    Merge(MergeArgs),
    /// Print every method's retry class and what sending it twice does to the stored Agent.
    Audit {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The retry-class matrix: every method x fault x Client policy over N seeds on the model
    /// Agents (sans-IO), outcome counts per cell and whether each retry class holds. Exits 1
    /// when a stated class is refuted. With --seed, --method, --fault and --policy: one run,
    /// every frame in and out.
    Matrix(MatrixArgs),
    /// Serve a model Agent (stored, in-memory, adapter; a mutant with --mutant) as a real
    /// process: ACP v2 over stdio, its sessions in --store DIR.
    Agent(crate::probe::stdio_agent::AgentArgs),
    /// Probe a real ACP Agent process (`-- COMMAND ARGS...` or --profile) through black-box
    /// traces, N runs each, and judge every run with the checkers: outcome rates, not seeds.
    Probe(crate::probe::ProbeArgs),
}

/// What `acp-chaos list` prints.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListSection {
    /// Scenario files with their rule ids.
    Scenarios,
    /// Agent designs and their retention.
    Designs,
    /// Client kinds.
    Clients,
    /// Agent policies O1, O2, O4.
    Policies,
    /// Transports and topologies.
    Transports,
    /// The mutant zoo.
    Mutants,
    /// Fault kinds and protocol points.
    Faults,
    /// What the swarm draws per seed.
    Swarm,
    /// Properties and their rules.
    Properties,
    /// `sometimes` events.
    Events,
}

#[derive(Args, Debug, Clone)]
struct ListArgs {
    /// Only this section.
    #[arg(value_enum)]
    what: Option<ListSection>,
    #[command(flatten)]
    dir: DirArgs,
}

#[derive(Args, Debug, Clone)]
struct DirArgs {
    /// Folder of scenario files.
    #[arg(long, default_value = "scenarios", env = "ACP_CHAOS_SCENARIOS")]
    scenarios: PathBuf,
}

#[derive(Args, Debug, Clone)]
struct RunArgs {
    /// Scenario names or .toml paths (default: every file in the scenarios folder).
    scenario: Vec<String>,
    /// Seeds per scenario.
    #[arg(long, default_value_t = 200, env = "ACP_CHAOS_SEEDS")]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 0, env = "ACP_CHAOS_SEED")]
    seed_start: u64,
    /// Worker threads (default: the number of cores).
    #[arg(long, env = "ACP_CHAOS_JOBS")]
    jobs: Option<usize>,
    /// Run against a mutant (see `acp-chaos list`).
    #[arg(long, env = "ACP_CHAOS_MUTANT")]
    mutant: Option<String>,
    /// Run every scenario under this Agent design only (default: each scenario's `designs`).
    #[arg(long, value_parser = parse_design, env = "ACP_CHAOS_AGENT")]
    agent: Option<Design>,
    /// Run only the K-th of N disjoint slices of the seed range (`--shard 2/4`), for a CI
    /// matrix or an indexed job; `acp-chaos merge` joins the shards' report folders.
    #[arg(long, value_parser = parse_shard, env = "ACP_CHAOS_SHARD")]
    shard: Option<(u64, u64)>,
    /// No progress bar or progress lines on stderr (`ACP_CHAOS_NO_PROGRESS=1`; `0`, `false`,
    /// `no`, `off` or empty keep them).
    #[arg(long, env = "ACP_CHAOS_NO_PROGRESS", action = clap::ArgAction::SetTrue,
          value_parser = clap::builder::FalseyValueParser::new())]
    no_progress: bool,
    /// Do not replay the regression corpus (`<scenarios>/regressions/*.toml`) first.
    #[arg(long)]
    no_regressions: bool,
    /// Run every seed twice and compare history hashes; a mismatch exits 3 and keeps both
    /// histories (`<scenario>-a-...`, `<scenario>-b-...` in the report folder).
    #[arg(long)]
    check_determinism: bool,
    /// Do not shrink the first failing seed of each (scenario@design, property) (by default
    /// its run folder gets a `schedule.toml`, see `acp-chaos shrink`).
    #[arg(long)]
    no_shrink: bool,
    /// Report folder (default `reports/<campaign name>`, with `reports/latest` pointing at
    /// it).
    #[arg(long, env = "ACP_CHAOS_OUT")]
    out: Option<PathBuf>,
    #[command(flatten)]
    dir: DirArgs,
}

#[derive(Args, Debug, Clone)]
struct MergeArgs {
    /// The shards' report folders (each written by `acp-chaos run --shard K/N`).
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Report folder for the merged campaign (default `reports/<campaign name>`, with
    /// `reports/latest` pointing at it).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn parse_shard(s: &str) -> Result<(u64, u64), String> {
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

#[derive(Args, Debug, Clone)]
struct ReplayArgs {
    /// Scenario name or .toml path.
    #[arg(required_unless_present = "schedule")]
    scenario: Option<String>,
    /// The seed.
    #[arg(long, required_unless_present = "schedule")]
    seed: Option<u64>,
    /// Run a schedule file written by `acp-chaos shrink` instead (every setting, fault and op
    /// explicit).
    #[arg(long, conflicts_with_all = ["scenario", "seed", "mutant", "agent"])]
    schedule: Option<PathBuf>,
    /// The mutant, if the failing run had one.
    #[arg(long)]
    mutant: Option<String>,
    /// Agent design (default: the scenario's first design).
    #[arg(long, value_parser = parse_design)]
    agent: Option<Design>,
    /// Print the history as JSON Lines instead of readable lines.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dir: DirArgs,
}

#[derive(Args, Debug, Clone)]
struct ShrinkArgs {
    /// Scenario name or .toml path.
    scenario: String,
    /// The failing seed.
    #[arg(long)]
    seed: u64,
    /// The mutant, if the failing run had one.
    #[arg(long)]
    mutant: Option<String>,
    /// Agent design (default: the scenario's first design).
    #[arg(long, value_parser = parse_design)]
    agent: Option<Design>,
    /// The property to keep failing (default: the first invalid verdict, else the first
    /// finding).
    #[arg(long)]
    property: Option<String>,
    /// Where to write the schedule (default
    /// `reports/shrunk/<scenario>-<design>-seed<N>[-<mutant>].schedule.toml`).
    #[arg(long, conflicts_with = "save")]
    out: Option<PathBuf>,
    /// Add the shrunk schedule to the regression corpus
    /// (`<scenarios>/regressions/<scenario>-<design>-seed<N>[-<mutant>].toml`, with an
    /// `[expect]` table: the verdict it keeps), which every campaign and `cargo test` replay.
    #[arg(long)]
    save: bool,
    #[command(flatten)]
    dir: DirArgs,
}

#[derive(Args, Debug, Clone)]
struct BenchArgs {
    /// Scenario to measure.
    #[arg(default_value = "swarm-basic")]
    scenario: String,
    /// Seeds.
    #[arg(long, default_value_t = 200)]
    seeds: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Agent design to measure.
    #[arg(long, default_value = "stored", value_parser = parse_design)]
    agent: Design,
    #[command(flatten)]
    dir: DirArgs,
}

#[derive(Args, Debug, Clone)]
struct MutantsArgs {
    /// A `[swarm]` scenario.
    #[arg(default_value = "swarm-basic")]
    scenario: String,
    /// Most seeds per mutant and mix.
    #[arg(long, default_value_t = 2000)]
    seeds: u64,
    /// Stop a mutant's search after this many catching seeds.
    #[arg(long, default_value_t = 20)]
    catches: usize,
    /// Only this mutant.
    #[arg(long)]
    mutant: Option<String>,
    /// Worker threads (default: the number of cores).
    #[arg(long, env = "ACP_CHAOS_JOBS")]
    jobs: Option<usize>,
    /// Also write the rows and the baseline as JSON to this file
    /// (`{"rows": [...], "baseline": {...}}`).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Seeds for the correct-model baseline (default: `--seeds`; 0 skips it).
    #[arg(long)]
    baseline_seeds: Option<u64>,
    /// Also shrink each mutant's first catching swarm seed (`acp-chaos shrink`) and print
    /// how small its schedule gets.
    #[arg(long)]
    shrink: bool,
    #[command(flatten)]
    dir: DirArgs,
}

#[derive(Args, Debug, Clone)]
struct MatrixArgs {
    /// Seeds per cell.
    #[arg(long, default_value_t = 200)]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    seed_start: u64,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Rerun one cell for this seed and print every frame in and out, every record, effect,
    /// crash and Client decision (needs --method, --fault and --policy).
    #[arg(long, requires_all = ["method", "fault", "policy"])]
    seed: Option<u64>,
    /// The cell's method (`session/prompt` or `prompt`, `$/cancel_request`, ...); without
    /// --seed, only that method's rows and verdict.
    #[arg(long, value_parser = parse_method)]
    method: Option<crate::retry_class::matrix::Method>,
    /// The cell's fault (none, request-lost, response-lost, duplicated, duplicated-late,
    /// crash-before-effect, crash-after-effect, one-way-partition).
    #[arg(long, requires = "seed", value_parser = parse_fault)]
    fault: Option<crate::retry_class::matrix::Fault>,
    /// The cell's Client policy (resend-as-is, resend-with-key, do-not-resend).
    #[arg(long, requires = "seed", value_parser = parse_policy)]
    policy: Option<crate::retry_class::matrix::Policy>,
    /// Run against an Agent mutant (see `acp-chaos list mutants`).
    #[arg(long)]
    mutant: Option<String>,
}

fn parse_method(s: &str) -> Result<crate::retry_class::matrix::Method, String> {
    crate::retry_class::matrix::Method::parse(s).ok_or_else(|| {
        let names: Vec<_> = crate::retry_class::matrix::METHODS
            .iter()
            .map(|m| m.method.as_str())
            .collect();
        format!("unknown method `{s}` (known: {})", names.join(", "))
    })
}

fn parse_fault(s: &str) -> Result<crate::retry_class::matrix::Fault, String> {
    crate::retry_class::matrix::Fault::parse(s).ok_or_else(|| {
        let names: Vec<_> = crate::retry_class::matrix::Fault::ALL
            .iter()
            .map(|f| f.as_str())
            .collect();
        format!("unknown fault `{s}` (known: {})", names.join(", "))
    })
}

fn parse_policy(s: &str) -> Result<crate::retry_class::matrix::Policy, String> {
    crate::retry_class::matrix::Policy::parse(s).ok_or_else(|| {
        let names: Vec<_> = crate::retry_class::matrix::Policy::ALL
            .iter()
            .map(|p| p.as_str())
            .collect();
        format!("unknown policy `{s}` (known: {})", names.join(", "))
    })
}

fn parse_design(s: &str) -> Result<Design, String> {
    Design::ALL
        .into_iter()
        .find(|d| d.as_str() == s)
        .ok_or_else(|| {
            let names: Vec<_> = Design::ALL.iter().map(|d| d.as_str()).collect();
            format!("unknown design `{s}` (known: {})", names.join(", "))
        })
}

/// Parse the process arguments and run; returns the exit code.
pub fn main() -> i32 {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                exit::USAGE
            } else {
                exit::VALID
            };
        }
    };
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::USAGE
        }
    }
}

/// Run parsed arguments (tests call this with `Cli::try_parse_from`).
pub fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    match cli.cmd {
        None => run(&cli.run),
        Some(Cmd::Run(a)) => run(&a),
        Some(Cmd::Replay(a)) => replay(&a).map(|(code, _)| code),
        Some(Cmd::List(l)) => list(l.what, &l.dir),
        Some(Cmd::Check { path }) => check_stored(&path),
        Some(Cmd::Bench(b)) => bench(&b),
        Some(Cmd::Mutants(a)) => mutants(&a),
        Some(Cmd::Shrink(a)) => shrink(&a),
        Some(Cmd::Matrix(a)) => matrix(&a),
        Some(Cmd::Merge(a)) => merge(&a),
        Some(Cmd::Agent(a)) => Ok(crate::probe::stdio_agent::main(&a)),
        Some(Cmd::Probe(a)) => Ok(crate::probe::main(&a)),
        Some(Cmd::Audit { json }) => {
            let rows = crate::retry_class::audit::audit();
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                print!("{}", crate::retry_class::audit::table_text(&rows));
            }
            Ok(if rows.iter().all(|r| r.consistent) {
                exit::VALID
            } else {
                exit::INVALID
            })
        }
    }
}

/// Parse and run a repro line such as `acp-chaos replay S --seed N --mutant M`; returns the
/// exit code and the history hash. Used by tests to round-trip printed repro lines.
pub fn replay_line(line: &str, scenarios: &Path) -> anyhow::Result<(i32, String)> {
    let mut args: Vec<String> = line.split_whitespace().map(String::from).collect();
    args.push("--scenarios".into());
    args.push(scenarios.display().to_string());
    let cli = Cli::try_parse_from(args)?;
    match cli.cmd {
        Some(Cmd::Replay(a)) => replay(&a),
        _ => anyhow::bail!("not a replay line: {line}"),
    }
}

fn scenarios_dir(d: &DirArgs) -> PathBuf {
    if d.scenarios.exists() || d.scenarios.is_absolute() {
        return d.scenarios.clone();
    }
    // Run from elsewhere in the workspace: fall back to the repo's scenarios folder.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(&d.scenarios);
    if repo.exists() {
        repo
    } else {
        d.scenarios.clone()
    }
}

fn check_mutant(m: &Option<String>) -> anyhow::Result<()> {
    if let Some(name) = m {
        if mutant::find(name).is_none() {
            let names: Vec<_> = mutant::MUTANTS.iter().map(|m| m.name).collect();
            anyhow::bail!("unknown mutant `{name}` (known: {})", names.join(", "));
        }
    }
    Ok(())
}

fn load(d: &DirArgs, names: &[String]) -> Result<Vec<Scenario>, scenario::ScenarioError> {
    let dir = scenarios_dir(d);
    if names.is_empty() {
        scenario::load_dir(&dir)
    } else {
        names.iter().map(|n| scenario::resolve(&dir, n)).collect()
    }
}

fn run(a: &RunArgs) -> anyhow::Result<i32> {
    check_mutant(&a.mutant)?;
    if a.seeds == 0 {
        anyhow::bail!("--seeds must be at least 1");
    }
    if a.jobs == Some(0) {
        anyhow::bail!("--jobs must be at least 1");
    }
    if a.seed_start.checked_add(a.seeds).is_none() {
        anyhow::bail!("--seed-start + --seeds must stay below 2^64");
    }
    // The same scenario named twice runs once.
    let mut names = a.scenario.clone();
    let mut seen = std::collections::BTreeSet::new();
    names.retain(|n| seen.insert(n.clone()));
    let scenarios = match load(&a.dir, &names) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit::USAGE);
        }
    };
    if scenarios.is_empty() {
        eprintln!(
            "error: no scenarios found in {}",
            scenarios_dir(&a.dir).display()
        );
        return Ok(exit::USAGE);
    }
    let jobs = a.jobs.unwrap_or_else(num_cpus_or_one);
    if let Some((_, n)) = a.shard {
        if n > a.seeds {
            anyhow::bail!("--shard ?/{n}: more shards than the {} seeds", a.seeds);
        }
    }
    let name = campaign::campaign_name(&names, a.seed_start, a.seeds, a.mutant.as_deref(), a.agent);
    let (out, default_out) = match &a.out {
        Some(o) => (o.clone(), false),
        None => (campaign::default_out(&name, a.shard), true),
    };
    // Ctrl-C: the first stops the campaign (runs in flight finish, the report is written);
    // a second exits at once.
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
    // A scenario runs under the designs it lists, narrowed by --agent and the mutant.
    let mut spec = CampaignSpec {
        scenarios: Vec::new(),
        seed_start: a.seed_start,
        seeds: a.seeds,
        jobs,
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
            crate::explore::regression::load_dir(&scenarios_dir(&a.dir).join("regressions"))?;
    }
    let (scenarios, skipped): (Vec<_>, Vec<_>) = scenarios
        .into_iter()
        .partition(|s| !spec.designs_for(s).is_empty());
    if scenarios.is_empty() {
        eprintln!(
            "error: nothing to run: no scenario lists {}{}",
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
        );
        return Ok(exit::USAGE);
    }
    // VOPR style: the seed range and every derived setting first.
    let (first, end) = spec.seed_range();
    println!(
        "acp-chaos campaign {}: seeds {first}..{end} ({} per scenario{}) x {} scenarios, mutant={}, jobs={}",
        spec.name,
        end - first,
        a.shard
            .map(|(k, n)| format!(", shard {k}/{n} of seeds {}..{}", a.seed_start, a.seed_start + a.seeds))
            .unwrap_or_default(),
        scenarios.len(),
        a.mutant.as_deref().unwrap_or("none"),
        jobs
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
    spec.scenarios = scenarios;
    let spec = spec;
    if !spec.regressions.is_empty() {
        println!(
            "  regression corpus: {} schedules in {}, replayed first",
            spec.regressions.len(),
            scenarios_dir(&a.dir).join("regressions").display()
        );
    }
    for s in &spec.scenarios {
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
    let summary = campaign::run(&spec)?;
    if default_out {
        campaign::point_latest(&out)?;
    }
    print_summary(&summary, &out);
    Ok(summary.exit_code)
}

/// `acp-chaos merge DIR...`: join shard reports.
fn merge(a: &MergeArgs) -> anyhow::Result<i32> {
    let summaries = a
        .dirs
        .iter()
        .map(|d| crate::summary::read_summary(d))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let name = summaries
        .first()
        .map(|s| s.name.clone())
        .unwrap_or_default();
    let (out, default_out) = match &a.out {
        Some(o) => (o.clone(), false),
        None => (campaign::default_out(&name, None), true),
    };
    let summary = campaign::merge(&a.dirs, &summaries, &out)?;
    if default_out {
        campaign::point_latest(&out)?;
    }
    println!(
        "merged {} shards of campaign {}: seeds {}..{}",
        a.dirs.len(),
        summary.name,
        summary.seed_start,
        summary.seed_start + summary.seeds
    );
    print_summary(&summary, &out);
    Ok(summary.exit_code)
}

fn print_summary(summary: &crate::summary::Summary, out: &Path) {
    println!();
    print!("{}", crate::report::table_text(summary));
    println!();
    for (scen, counts) in &summary.classes {
        let parts: Vec<String> = counts
            .iter()
            .map(|(c, n)| format!("{c:?}={n}").to_lowercase())
            .collect();
        println!("  submissions {scen}: {}", parts.join(" "));
    }
    for (scen, ev) in &summary.events {
        let parts: Vec<String> = ev.iter().map(|(e, n)| format!("{e}={n}")).collect();
        println!("  coverage {scen} (seeds with): {}", parts.join(" "));
    }
    for k in &summary.expectations_unmet {
        println!(
            "EXPECTED a violation in {k} (the scenario says `expect = \"invalid\"`), found none"
        );
    }
    print!("{}", crate::report::coverage_text(summary));
    for (scen, missing) in &summary.vacuous {
        println!("VACUOUS {scen}: never happened: {}", missing.join(", "));
    }
    let mut shown = std::collections::BTreeSet::new();
    for f in &summary.failures {
        let key = (
            f["scenario"].to_string(),
            f["design"].to_string(),
            f["property"].to_string(),
        );
        if shown.insert(key) {
            println!("FAIL {}", outcome_line(f, true));
        }
    }
    for f in &summary.findings {
        println!("finding {}", outcome_line(f, false));
    }
    for l in &summary.nondeterministic {
        println!("NONDETERMINISM: {l} gave two different histories");
    }
    let held = summary.regressions.iter().filter(|r| r.ok).count();
    if !summary.regressions.is_empty() {
        println!("regressions: {held} of {} hold", summary.regressions.len());
    }
    for r in summary.regressions.iter().filter(|r| !r.ok) {
        println!(
            "REGRESSION {}: expected {}, got {}\n  repro: {}",
            r.file, r.expect, r.got, r.replay
        );
    }
    if summary.interrupted {
        println!("INTERRUPTED: the report covers only the runs done before Ctrl-C");
    }
    println!(
        "report: {}/summary.md (summary.json, junit.xml)  exit {}",
        out.display(),
        summary.exit_code
    );
}

/// One failure or finding of `summary.json` as two lines: what, then its repro command.
fn outcome_line(f: &serde_json::Value, with_party: bool) -> String {
    let text = |k: &str| f[k].as_str().unwrap_or("-").to_string();
    let rules: Vec<&str> = f["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str())
        .collect();
    let what = if with_party {
        format!(
            "{} (party {}, rules {})",
            text("status"),
            text("party"),
            rules.join(" ")
        )
    } else {
        format!("(rules {})", rules.join(" "))
    };
    let shrunk = if f["shrunk"].is_object() {
        let s = &f["shrunk"];
        format!(
            "\n  shrunk to {} faults, {} ops, {} raw probes in {} runs: {}",
            s["faults"],
            s["ops"],
            s["raw"],
            s["runs"],
            s["replay"].as_str().unwrap_or("-")
        )
    } else {
        String::new()
    };
    format!(
        "{} [{}] {} {what}: {}\n  repro: {}{shrunk}",
        text("scenario"),
        text("design"),
        text("property"),
        text("message"),
        text("repro")
    )
}

fn replay(a: &ReplayArgs) -> anyhow::Result<(i32, String)> {
    check_mutant(&a.mutant)?;
    let plan = if let Some(path) = &a.schedule {
        match load_schedule(path) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok((exit::USAGE, String::new()));
            }
        }
    } else {
        let name = a.scenario.as_deref().unwrap_or_default();
        let s = match scenario::resolve(&scenarios_dir(&a.dir), name) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok((exit::USAGE, String::new()));
            }
        };
        let design = a
            .agent
            .or(s.agent.designs.first().copied())
            .unwrap_or(Design::Stored);
        Plan::derive(&s, a.seed.unwrap_or_default(), a.mutant.as_deref(), design)
    };
    for l in plan.describe() {
        if a.json {
            eprintln!("# {l}");
        } else {
            println!("# {l}");
        }
    }
    let h = crate::world::run(&plan);
    let r = crate::run::result_of(&plan.scenario, plan.agent.design, plan.seed, &h);
    if a.json {
        let mut out = std::io::stdout().lock();
        h.write_jsonl(&mut out)?;
    } else {
        for op in &h.ops {
            println!("{}", history::describe(op));
        }
    }
    let code = print_verdicts(&r.verdicts, a.json);
    let applied = h
        .ops
        .iter()
        .find(|o| o.process == "nemesis" && o.f == "heal")
        .map(|o| {
            let kinds: Vec<String> = o.value["applied"]
                .as_object()
                .map(|m| m.iter().map(|(k, n)| format!("{k} {n}")).collect())
                .unwrap_or_default();
            format!(
                "; faults applied {} of {} planned ({})",
                o.value["applied"]
                    .as_object()
                    .map_or(0, |m| m.values().filter_map(|n| n.as_u64()).sum::<u64>()),
                o.value["planned"],
                kinds.join(", ")
            )
        })
        .unwrap_or_default();
    let line = format!(
        "history hash {}  ({} ops, {} ms simulated{applied})",
        r.hash, r.ops, r.sim_ms
    );
    if a.json {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
    Ok((code, r.hash))
}

/// Read a schedule file (a plan as TOML, written by `acp-chaos shrink`).
fn load_schedule(path: &Path) -> anyhow::Result<Plan> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let plan: Plan = toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        match line {
            Some(l) => anyhow::anyhow!("{}:{l}: {}", path.display(), e.message()),
            None => anyhow::anyhow!("{}: {}", path.display(), e.message()),
        }
    })?;
    if let Some(e) = plan.check() {
        anyhow::bail!("{}: field `{e}", path.display());
    }
    Ok(plan)
}

fn status_str(s: Status) -> String {
    format!("{s:?}").to_lowercase()
}

fn party_str(p: Option<crate::models::Party>) -> String {
    p.map_or("none".into(), |p| format!("{p:?}").to_lowercase())
}

fn shrink(a: &ShrinkArgs) -> anyhow::Result<i32> {
    check_mutant(&a.mutant)?;
    let s = match scenario::resolve(&scenarios_dir(&a.dir), &a.scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit::USAGE);
        }
    };
    let design = a
        .agent
        .or(s.agent.designs.first().copied())
        .unwrap_or(Design::Stored);
    if i64::try_from(a.seed).is_err() {
        eprintln!(
            "error: --seed: a schedule file keeps the seed as a TOML integer, at most 2^63 - 1"
        );
        return Ok(exit::USAGE);
    }
    let plan = Plan::derive(&s, a.seed, a.mutant.as_deref(), design);
    for l in plan.describe() {
        println!("# {l}");
    }
    let h = crate::world::run(&plan);
    let verdicts = checkers::check_all(&h);
    // With a mutant and no --property: what catches that mutant, if this run does.
    let of_mutant = a
        .mutant
        .as_deref()
        .and_then(mutant::find)
        .filter(|_| a.property.is_none())
        .map(crate::explore::shrink::Target::of_mutant)
        .filter(|t| verdicts.iter().any(|v| t.matches(v)));
    let Some(target) =
        of_mutant.or_else(|| crate::explore::shrink::Target::of(&verdicts, a.property.as_deref()))
    else {
        eprintln!(
            "error: {} seed {} under {} has no invalid verdict or finding{}: nothing to shrink",
            s.reference,
            a.seed,
            design.as_str(),
            a.property
                .as_deref()
                .map(|p| format!(" on {p}"))
                .unwrap_or_default()
        );
        return Ok(exit::USAGE);
    };
    println!(
        "shrinking: {} {} (party {}); {} faults, {} submissions, {} raw probes",
        target.property,
        status_str(target.status),
        party_str(target.party),
        plan.faults.len(),
        plan.workload.len(),
        plan.raw.len()
    );
    // Wall time of the whole command, outside every run (determinism is about the runs).
    let started = crate::wall_clock::now();
    let out = crate::explore::shrink::shrink(&plan, &target)?;
    let secs = started.elapsed().as_secs_f64();
    let leaf = format!(
        "{}-{}-seed{}{}",
        s.name,
        design.as_str(),
        a.seed,
        a.mutant
            .as_deref()
            .map(|m| format!("-{m}"))
            .unwrap_or_default()
    );
    if let Some(o) = &a.out {
        if o.is_dir() || o.as_os_str().to_string_lossy().ends_with('/') {
            eprintln!(
                "error: --out {}: a folder; give the schedule file's path (e.g. {}/x.schedule.toml)",
                o.display(),
                o.display().to_string().trim_end_matches('/')
            );
            return Ok(exit::USAGE);
        }
    }
    let file = if a.save {
        scenarios_dir(&a.dir)
            .join("regressions")
            .join(format!("{leaf}.toml"))
    } else {
        a.out.clone().unwrap_or_else(|| {
            PathBuf::from("reports/shrunk").join(format!("{leaf}.schedule.toml"))
        })
    };
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let header = format!(
        "# acp-chaos shrink {} --seed {} --agent {}{}\n# keeps {} {} (party {}): {}\n# replay: acp-chaos replay --schedule {}\n",
        s.reference,
        a.seed,
        design.as_str(),
        a.mutant
            .as_deref()
            .map(|m| format!(" --mutant {m}"))
            .unwrap_or_default(),
        target.property,
        status_str(target.status),
        party_str(target.party),
        out.verdict.message,
        file.display()
    );
    let text = if a.save {
        let expect = crate::explore::regression::Expect {
            verdict: target.status,
            property: Some(target.property.clone()),
            party: target.party,
        };
        crate::explore::regression::file_text(&header, &out.plan, &expect)?
    } else {
        format!("{header}{}", toml::to_string(&out.plan)?)
    };
    let replaced = file.exists();
    campaign::write_atomic(&file, text.as_bytes())?;
    println!(
        "shrunk in {} runs ({secs:.1} s): faults {} -> {}, submissions {} -> {}, raw probes {} -> {}; latency {}",
        out.runs,
        out.before.0,
        out.after.0,
        out.before.1,
        out.after.1,
        out.before.2,
        out.after.2,
        out.latency_ms
            .map(|l| format!("fixed at {l} ms"))
            .unwrap_or_else(|| "not fixed (no fixed value failed)".into())
    );
    for f in &out.plan.faults {
        println!("  fault: {}", crate::nemesis::fault_line(f));
    }
    for w in &out.plan.workload {
        println!("  op: {}", serde_json::to_string(w)?);
    }
    for r in &out.plan.raw {
        println!("  raw: {}", serde_json::to_string(r)?);
    }
    println!(
        "verdict {} {} (party {}): {}",
        out.verdict.property,
        status_str(out.verdict.status),
        party_str(out.verdict.party),
        out.verdict.message
    );
    println!(
        "schedule: {}{}",
        file.display(),
        if replaced {
            " (replaced the file that was there)"
        } else {
            ""
        }
    );
    // The shrunk run drawn: report.md (Mermaid) and report.html (inline SVG) beside it.
    let drawn = crate::world::run(&out.plan);
    let replay_line = format!("acp-chaos replay --schedule {}", file.display());
    let original = crate::run::repro(&s.reference, design, a.seed, a.mutant.as_deref());
    let schedule_text = std::fs::read_to_string(&file)?;
    let c = crate::report::Counterexample {
        scenario: &s.name,
        verdict: &out.verdict,
        repro: &original,
        shrunk: Some((
            replay_line.clone(),
            format!(
                "{} faults, {} ops, {} raw probes",
                out.after.0, out.after.1, out.after.2
            ),
        )),
        schedule: Some(&schedule_text),
        history: &drawn,
    };
    // Reports never go into the corpus folder.
    let stem = if a.save {
        format!("reports/shrunk/{leaf}")
    } else {
        let f = file.to_string_lossy();
        f.strip_suffix(".schedule.toml")
            .or_else(|| f.strip_suffix(".toml"))
            .unwrap_or(&f)
            .to_string()
    };
    std::fs::create_dir_all(Path::new(&stem).parent().unwrap_or(Path::new(".")))?;
    let md = PathBuf::from(format!("{stem}.report.md"));
    let html = PathBuf::from(format!("{stem}.report.html"));
    campaign::write_atomic(&md, crate::report::counterexample_md(&c).as_bytes())?;
    campaign::write_atomic(&html, crate::report::counterexample_html(&c).as_bytes())?;
    println!(
        "report: {} (sequence diagram; {} self-contained)",
        md.display(),
        html.display()
    );
    println!("replay: {replay_line}");
    Ok(exit::VALID)
}

fn print_verdicts(vs: &[checkers::Verdict], to_stderr: bool) -> i32 {
    let say = |l: String| {
        if to_stderr {
            eprintln!("{l}")
        } else {
            println!("{l}")
        }
    };
    let mut code = exit::VALID;
    for v in vs {
        let title = CHECKERS
            .iter()
            .find(|c| c.property == v.property)
            .map(|c| c.title)
            .unwrap_or("");
        let status = format!("{:?}", v.status).to_lowercase();
        if v.status == Status::Valid {
            say(format!("verdict {} {title}: valid", v.property));
        } else {
            say(format!(
                "verdict {} {title}: {status} (party {}, rules {}, witnesses {:?}, fault op {}): {}",
                v.property,
                v.party.map(|p| format!("{p:?}").to_lowercase()).unwrap_or_else(|| "-".into()),
                v.rules.join(" "),
                v.witnesses,
                v.fault.map(|f| f.to_string()).unwrap_or_else(|| "-".into()),
                v.message
            ));
        }
        code = match (code, v.status) {
            (_, Status::Invalid) => exit::INVALID,
            (exit::VALID, Status::Unknown) => exit::LIVENESS,
            (c, _) => c,
        };
    }
    code
}

fn list(what: Option<ListSection>, d: &DirArgs) -> anyhow::Result<i32> {
    let want = |w: ListSection| what.is_none_or(|x| x == w);
    if want(ListSection::Scenarios) {
        println!("scenarios ({}):", scenarios_dir(d).display());
        match scenario::load_dir(&scenarios_dir(d)) {
            Ok(ss) => {
                for s in ss {
                    println!("  {:<44} [{}] {}", s.name, s.rules.join(" "), s.summary);
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(exit::USAGE);
            }
        }
    }
    if want(ListSection::Designs) {
        println!("agent designs (--agent, scenario `designs`):");
        for d in Design::ALL {
            println!("  {:<10} {}", d.as_str(), d.summary());
        }
    }
    if want(ListSection::Clients) {
        println!("clients (scenario [client] kind):");
        for k in acp_chaos_models::ClientKind::ALL {
            println!("  {:<14} {}", k.as_str(), k.summary());
        }
        println!("  {:<14} resumes the user's session with replay, watches, lists; never prompts ([topology] watcher)", "watcher");
    }
    if want(ListSection::Policies) {
        println!("policies (scenario [agent], each pinned or `seeded`):\n  o1 keep|drop      held prompts when their connection ends\n  o2 continue|cancel foreground work when its connection ends\n  o4 hold|steer     prompts that arrive during a turn");
    }
    if want(ListSection::Transports) {
        println!("transports and topology (scenario [topology]; the design picks the transport):\n  stdio-like  in-memory, stored, adapter: one stream connection to the one Agent process at a time; after the Agent dies the Client starts over (reconnect, initialize, resume)\n  remote      cluster: every connection names its logical connection (the remote transport's connection id) and is routed to any of `nodes` nodes (seeded); sessions stay active on the logical connection across connections and nodes (X2); nodes share one store host over datagrams\n  proxy       client -> proxy -> agent; the proxy rewrites JSON-RPC ids and maps $/cancel_request (X1)\n  watcher     a second Client resumes the session with replay and watches it (A8)");
    }
    if want(ListSection::Mutants) {
        println!("mutants:");
        for m in mutant::MUTANTS {
            println!(
                "  {:<30} {:<6} breaks {:<12} caught by {} ({:?}): {}",
                m.name,
                match m.kind {
                    mutant::MutantKind::Agent(_) => "agent",
                    mutant::MutantKind::Client(_) => "client",
                    mutant::MutantKind::Proxy(_) => "proxy",
                },
                m.rules.join(" "),
                m.property,
                m.party,
                m.summary
            );
        }
    }
    if want(ListSection::Faults) {
        println!("faults:");
        for k in FaultKind::ALL {
            println!("  {:<16} {}", k.as_str(), k.summary());
        }
        println!(
            "  protocol points for crash-agent: {}\n  protocol point of the cluster store (crash-store, partition-store): {}",
            Point::AGENT.map(|p| p.as_str()).join(", "),
            Point::AfterStoreWrite.as_str()
        );
    }
    if want(ListSection::Swarm) {
        println!("swarm ([swarm] scenarios; each from its own stream, drawn only when the file does not set it):");
        println!("  fault kinds      each listed kind on in 3 seeds of 5 (mix = \"uniform\": always), 1 to per_kind_max of it");
        println!("  agent.o1/o2/o4   when set to \"seeded\"");
        println!("  disk.block_size  torn writes of 8 to 64-byte blocks in 1 seed of 2");
        for (name, what) in crate::plan::DRAWN {
            println!("  {name:<24} {what}");
        }
    }
    if want(ListSection::Properties) {
        println!("properties:");
        for c in CHECKERS {
            println!(
                "  {:<4} {:<16} rules {}",
                c.property,
                c.title,
                c.rules.join(" ")
            );
        }
    }
    if want(ListSection::Events) {
        println!("sometimes events:");
        for (n, d) in scenario::EVENTS {
            println!("  {n:<16} {d}");
        }
    }
    Ok(exit::VALID)
}

fn check_stored(path: &Path) -> anyhow::Result<i32> {
    let file = if path.is_dir() {
        path.join("history.jsonl")
    } else {
        path.to_path_buf()
    };
    let h = match History::read_jsonl(&file) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(exit::USAGE);
        }
    };
    println!(
        "# {} seed {} mutant {}",
        h.header["scenario"], h.header["seed"], h.header["mutant"]
    );
    let vs = checkers::check_all(&h);
    let code = print_verdicts(&vs, false);
    println!("history hash {}", h.hash());
    Ok(code)
}

fn bench(b: &BenchArgs) -> anyhow::Result<i32> {
    if b.seeds == 0 || b.jobs == 0 {
        anyhow::bail!("--seeds and --jobs must be at least 1");
    }
    let s = match scenario::resolve(&scenarios_dir(&b.dir), &b.scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit::USAGE);
        }
    };
    let r = crate::campaign::bench::run(&s, b.seeds, b.jobs, b.agent)?;
    println!(
        "bench {}@{}: {} seeds, jobs={}: {:.2} s wall, {:.0} seeds/s, mean {:.0} ms simulated per run; bare turmoil (same hosts, tick, simulated time): {:.2} s; overhead x{:.1}",
        r.scenario, r.agent.as_str(), r.seeds, r.jobs, r.wall_s, r.seeds_per_s, r.sim_ms_mean, r.bare_wall_s, r.overhead_ratio
    );
    println!("{}", serde_json::to_string(&r)?);
    Ok(exit::VALID)
}

fn mutants(a: &MutantsArgs) -> anyhow::Result<i32> {
    if a.seeds == 0 || a.catches == 0 || a.jobs == Some(0) {
        eprintln!("error: --seeds, --catches and --jobs must be at least 1");
        return Ok(exit::USAGE);
    }
    if let Some(m) = &a.mutant {
        if mutant::find(m).is_none() {
            eprintln!("error: unknown mutant `{m}` (see `acp-chaos list mutants`)");
            return Ok(exit::USAGE);
        }
    }
    let s = match scenario::resolve(&scenarios_dir(&a.dir), &a.scenario) {
        Ok(s) if s.swarm.is_some() => s,
        Ok(s) => {
            eprintln!(
                "error: {}: the scoreboard needs a [swarm] scenario",
                s.reference
            );
            return Ok(exit::USAGE);
        }
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit::USAGE);
        }
    };
    let jobs = a.jobs.unwrap_or_else(num_cpus_or_one);
    if let Some(p) = &a.json {
        // Fail before the run, not after it.
        if let Err(e) = std::fs::write(p, "[]") {
            eprintln!("error: --json {}: {e}", p.display());
            return Ok(exit::USAGE);
        }
    }
    println!(
        "acp-chaos mutants: scenario={} seeds<={} catches={} jobs={} (each seed runs every design the mutant applies to)",
        s.reference, a.seeds, a.catches, jobs
    );
    print!("{}", crate::campaign::scoreboard::header());
    let rows = crate::campaign::scoreboard::run(
        &s,
        a.mutant.as_deref(),
        a.seeds,
        a.catches,
        jobs,
        &mut |r| {
            print!(
                "{}",
                crate::campaign::scoreboard::table(std::slice::from_ref(r))
            );
        },
    )?;
    println!("median = seeds run from a start seed up to and including the first catch (wrapping around the seeds run), over every start seed; (catches/seeds run)");
    let skipped: Vec<&str> = mutant::MUTANTS
        .iter()
        .filter(|m| a.mutant.as_deref().is_none_or(|o| o == m.name))
        .filter(|m| !rows.iter().any(|r| r.mutant == m.name))
        .map(|m| m.name)
        .collect();
    if !skipped.is_empty() {
        println!(
            "not run (no design of {} that the mutant applies to): {}",
            s.reference,
            skipped.join(", ")
        );
    }
    if rows.is_empty() {
        eprintln!("error: nothing to run");
        return Ok(exit::USAGE);
    }
    let mut ratios: Vec<f64> = rows.iter().filter_map(|r| r.ratio()).collect();
    if !ratios.is_empty() {
        ratios.sort_by(f64::total_cmp);
        let n = ratios.len();
        let median = if n % 2 == 1 {
            ratios[n / 2]
        } else {
            (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
        };
        println!("ratio uniform/swarm: median {median:.2} over {n} mutants caught by both");
    }
    println!();
    println!("mutant × checker: share of the swarm seeds run on which the checker was invalid on some design (* the property the mutant names; a finding-level mutant's own cell counts its findings)");
    print!("{}", crate::campaign::scoreboard::checker_table(&rows));
    if a.shrink {
        println!();
        println!("shrunk: each mutant's first catching swarm seed, on the first design that catches it (faults, submissions, raw probes before -> after; simulated runs)");
        for r in &rows {
            let Some(&seed) = r.swarm.caught.first() else {
                continue;
            };
            let m = mutant::find(r.mutant).expect("rows name shipped mutants");
            let mut swarm = s.clone();
            if let Some(sw) = swarm.swarm.as_mut() {
                sw.mix = crate::scenario::Mix::Swarm;
            }
            let target = crate::explore::shrink::Target::of_mutant(m);
            for &d in &r.designs {
                let plan = Plan::derive(&swarm, seed, Some(m.name), d);
                if crate::explore::shrink::failing(&plan, &target).is_none() {
                    continue;
                }
                let out = crate::explore::shrink::shrink(&plan, &target)?;
                let (b, a2) = (out.before, out.after);
                println!(
                    "  {:<32} seed {seed:<5} {:<9} {}/{}/{} -> {}/{}/{} ({} units) in {} runs",
                    r.mutant,
                    d.as_str(),
                    b.0,
                    b.1,
                    b.2,
                    a2.0,
                    a2.1,
                    a2.2,
                    a2.0 + a2.1 + a2.2,
                    out.runs
                );
                break;
            }
        }
    }
    let base_seeds = a.baseline_seeds.unwrap_or(a.seeds);
    // The baseline is a campaign of the correct models; its report carries the scoreboard.
    let name = format!("mutants-{}-seeds{}", s.name, a.seeds);
    let out = campaign::default_out(&name, None);
    let (base, mut summary) =
        crate::campaign::scoreboard::baseline(&s, base_seeds, jobs, &name, &out)?;
    summary.scoreboard = Some(format!(
        "{}{}\nmutant × checker (share of swarm seeds on which the checker was invalid):\n{}",
        crate::campaign::scoreboard::header(),
        crate::campaign::scoreboard::table(&rows),
        crate::campaign::scoreboard::checker_table(&rows)
    ));
    campaign::write_summary(&out, &summary)?;
    campaign::point_latest(&out)?;
    println!();
    let designs: Vec<&str> = base.designs.iter().map(|d| d.as_str()).collect();
    println!(
        "correct models (no mutant), swarm seeds 0..{} × {}: {} violations or unknown verdicts",
        base.seeds,
        designs.join(","),
        base.violations.len()
    );
    for f in base.violations.iter().take(10) {
        println!("  {}", outcome_line(f, true));
    }
    println!(
        "report: {}/summary.md (scoreboard and baseline)",
        out.display()
    );
    if let Some(p) = &a.json {
        let doc = serde_json::json!({"rows": rows, "baseline": base});
        std::fs::write(p, serde_json::to_string_pretty(&doc)?)?;
    }
    let missed: Vec<&str> = rows
        .iter()
        .filter(|r| r.swarm.caught.is_empty())
        .map(|r| r.mutant)
        .collect();
    let mut code = exit::VALID;
    if missed.is_empty() {
        println!("every mutant caught by the swarm alone");
    } else {
        println!(
            "not caught by the swarm within {} seeds: {}",
            a.seeds,
            missed.join(", ")
        );
        code = exit::INVALID;
    }
    if !base.violations.is_empty() {
        println!("the correct models have violations or unknown verdicts: false positives, model bugs or a liveness bound too short");
        code = exit::INVALID;
    }
    Ok(code)
}

fn matrix(a: &MatrixArgs) -> anyhow::Result<i32> {
    use crate::retry_class::matrix;
    let mutant = match a.mutant.as_deref().map(|n| (n, mutant::find(n))) {
        None => None,
        Some((_, Some(m))) => match m.kind {
            mutant::MutantKind::Agent(x) => Some(x),
            _ => {
                eprintln!(
                    "error: `{}` is not an Agent mutant; the matrix drives the model Agents only",
                    m.name
                );
                return Ok(exit::USAGE);
            }
        },
        Some((n, None)) => {
            eprintln!("error: unknown mutant `{n}` (see `acp-chaos list mutants`)");
            return Ok(exit::USAGE);
        }
    };
    if let (Some(seed), Some(m), Some(f), Some(p)) = (a.seed, a.method, a.fault, a.policy) {
        if let Some(why) = matrix::not_applicable(m, f, p) {
            eprintln!(
                "error: {} x {} x {} is not run: {why}",
                m.as_str(),
                f.as_str(),
                p.as_str()
            );
            return Ok(exit::USAGE);
        }
        let r = matrix::run_one(m, f, p, seed, mutant, true);
        if a.json {
            println!("{}", serde_json::to_string_pretty(&r)?);
        } else {
            for l in &r.log {
                println!("{l}");
            }
        }
        return Ok(exit::VALID);
    }
    if a.seeds == 0 || a.seed_start.checked_add(a.seeds).is_none() {
        eprintln!("error: --seeds must be at least 1 and --seed-start + --seeds below 2^64");
        return Ok(exit::USAGE);
    }
    let mx = matrix::run(&matrix::Spec {
        seed_start: a.seed_start,
        seeds: a.seeds,
        mutant,
        mutant_name: a.mutant.clone(),
        only: a.method,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&mx)?);
    } else {
        print!("{}", matrix::table_text(&mx));
    }
    Ok(mx.exit)
}

/// Worker threads by default: the number of cores.
fn num_cpus_or_one() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
