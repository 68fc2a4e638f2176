//! `acp-chaos replay`: re-run one (scenario, seed), or a schedule file, and print its plan,
//! history and verdicts.

use std::path::PathBuf;

use clap::Args;

use super::args::{check_mutant, parse_design, scenarios_dir, DirArgs};
use super::output::print_verdicts;
use super::CliError;
use acp_chaos::history::{self, op, process};
use acp_chaos::models::Design;
use acp_chaos::plan::Plan;
use acp_chaos::scenario;

#[derive(Args, Debug, Clone)]
pub(super) struct ReplayArgs {
    /// Scenario name or .toml path.
    #[arg(required_unless_present = "schedule")]
    scenario: Option<String>,
    /// The seed (or `ACP_CHAOS_SEED`; the flag wins).
    #[arg(long)]
    seed: Option<u64>,
    /// Run a schedule file written by `acp-chaos shrink` instead (every setting, fault and op
    /// explicit).
    #[arg(long, conflicts_with_all = ["scenario", "seed", "mutant", "agent"])]
    schedule: Option<PathBuf>,
    /// The mutant, if the failing run had one.
    #[arg(long)]
    mutant: Option<String>,
    /// Agent design: in-memory, stored, adapter or cluster (default: the scenario's first
    /// design).
    #[arg(long, value_parser = parse_design)]
    agent: Option<Design>,
    /// Print the history as JSON Lines instead of readable lines.
    #[arg(long)]
    json: bool,
    /// Also write this run's plan as a schedule file (every setting, fault and op explicit,
    /// as `shrink` writes one, unshrunk): the start of a regression file for a run a sweep
    /// found. Written before the run, so a run that fails still leaves it.
    #[arg(long, value_name = "FILE")]
    save_schedule: Option<PathBuf>,
    #[command(flatten)]
    dir: DirArgs,
}

pub(super) fn exec(a: &ReplayArgs) -> Result<(i32, String), CliError> {
    check_mutant(&a.mutant)?;
    let plan = if let Some(path) = &a.schedule {
        Plan::load(path)?
    } else {
        let name = a.scenario.as_deref().unwrap_or_default();
        let s = scenario::resolve(&scenarios_dir(&a.dir), name)?;
        let design = a
            .agent
            .or(s.agent.designs.first().copied())
            .unwrap_or(Design::Stored);
        let seed = super::args::seed_or_env(a.seed)?;
        let plan = Plan::derive(&s, seed, a.mutant.as_deref(), design);
        super::args::design_fits(&plan, &s)?;
        plan
    };
    for l in plan.describe() {
        if a.json {
            eprintln!("# {l}");
        } else {
            println!("# {l}");
        }
    }
    if let Some(file) = &a.save_schedule {
        let header = format!(
            "# the plan of: acp-chaos replay {} --seed {} --agent {}{}\n",
            plan.scenario,
            plan.seed,
            plan.agent.design.as_str(),
            plan.mutant
                .as_deref()
                .map_or(String::new(), |m| format!(" --mutant {m}"))
        );
        let text = format!("{header}{}", acp_chaos::plan::file::to_toml(&plan)?);
        acp_chaos::folders::write_atomic(file, text.as_bytes())
            .map_err(|e| CliError::usage(format!("{}: {e:#}", file.display())))?;
    }
    let h = acp_chaos::world::run(&plan);
    let r = acp_chaos::run::result_of(&plan.scenario, plan.agent.design, plan.seed, &h);
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
        .find(|o| o.process == process::NEMESIS && o.f == op::HEAL)
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
