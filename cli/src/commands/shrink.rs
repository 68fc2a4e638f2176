//! `acp-chaos shrink`: a failing run to a 1-minimal schedule file, with its report pages.

use std::path::{Path, PathBuf};

use clap::Args;

use super::args::{check_mutant, parse_design, scenarios_dir, DirArgs};
use super::output::{party_str, status_str};
use super::{CliError, Outcome};
use crate::campaign;
use acp_chaos::checkers;
use acp_chaos::exit;
use acp_chaos::models::{mutant, Design};
use acp_chaos::plan::Plan;
use acp_chaos::scenario;

#[derive(Args, Debug, Clone)]
pub(super) struct ShrinkArgs {
    /// Scenario name or .toml path.
    scenario: String,
    /// The failing seed (or `ACP_CHAOS_SEED`; the flag wins).
    #[arg(long)]
    seed: Option<u64>,
    /// The mutant, if the failing run had one.
    #[arg(long)]
    mutant: Option<String>,
    /// Agent design: in-memory, stored, adapter or cluster (default: the scenario's first
    /// design).
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

/// Long on purpose: the command's steps in the order of its output (plan, shrink, schedule file,
/// report pages).
pub(super) fn exec(a: &ShrinkArgs) -> Outcome {
    check_mutant(&a.mutant)?;
    let seed = super::args::seed_or_env(a.seed)?;
    let s = scenario::resolve(&scenarios_dir(&a.dir), &a.scenario)?;
    let design = a
        .agent
        .or(s.agent.designs.first().copied())
        .unwrap_or(Design::Stored);
    let plan = Plan::derive(&s, seed, a.mutant.as_deref(), design);
    super::args::design_fits(&plan, &s)?;
    for l in plan.describe() {
        println!("# {l}");
    }
    let h = acp_chaos::world::run(&plan);
    let verdicts = checkers::check_all(&h);
    // With a mutant and no --property: what catches that mutant, if this run does.
    let of_mutant = a
        .mutant
        .as_deref()
        .and_then(mutant::find)
        .filter(|_| a.property.is_none())
        .map(acp_chaos::explore::shrink::Target::of_mutant)
        .filter(|t| verdicts.iter().any(|v| t.matches(v)));
    let Some(target) = of_mutant
        .or_else(|| acp_chaos::explore::shrink::Target::of(&verdicts, a.property.as_deref()))
    else {
        return Err(CliError::usage(format!(
            "{} seed {} under {} has no invalid verdict or finding{}: nothing to shrink",
            s.reference,
            seed,
            design.as_str(),
            a.property
                .as_deref()
                .map(|p| format!(" on {p}"))
                .unwrap_or_default()
        )));
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
    let leaf = format!(
        "{}-{}-seed{}{}",
        s.name,
        design.as_str(),
        seed,
        a.mutant
            .as_deref()
            .map(|m| format!("-{m}"))
            .unwrap_or_default()
    );
    if let Some(o) = &a.out {
        if o.is_dir() || o.as_os_str().to_string_lossy().ends_with('/') {
            return Err(CliError::usage(format!(
                "--out {}: a folder; give the schedule file's path (e.g. {}/x.schedule.toml)",
                o.display(),
                o.display().to_string().trim_end_matches('/')
            )));
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
    // Before shrinking: a path that cannot be written fails at once.
    super::writable::file(&file, if a.save { "--save" } else { "--out" })?;
    // Wall time of the whole command, outside every run (determinism is about the runs).
    let started = crate::wall_clock::now();
    let out = acp_chaos::explore::shrink::shrink(&plan, &target)?;
    let secs = started.elapsed().as_secs_f64();
    let header = format!(
        "# acp-chaos shrink {} --seed {} --agent {}{}\n# keeps {} {} (party {}): {}\n# replay: acp-chaos replay --schedule {}\n",
        s.reference,
        seed,
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
        let expect = acp_chaos::explore::regression::Expect {
            verdict: target.status,
            property: Some(target.property.clone()),
            party: target.party,
        };
        acp_chaos::explore::regression::file_text(&header, &out.plan, &expect)?
    } else {
        format!("{header}{}", acp_chaos::plan::file::to_toml(&out.plan)?)
    };
    let replaced = file.exists();
    acp_chaos::folders::write_atomic(&file, text.as_bytes())?;
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
        println!("  fault: {}", acp_chaos::nemesis::fault_line(f));
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
    let drawn = acp_chaos::world::run(&out.plan);
    let replay_line = format!("acp-chaos replay --schedule {}", file.display());
    let original = acp_chaos::run::repro(&s.reference, design, seed, a.mutant.as_deref());
    let schedule_text = std::fs::read_to_string(&file)
        .map_err(|e| CliError::usage(format!("{}: {e}", file.display())))?;
    let c = acp_chaos::report::Counterexample {
        scenario: &s.name,
        verdict: &out.verdict,
        repro: &original,
        shrunk: Some((
            replay_line.clone(),
            acp_chaos::summary::shrunk_size(&serde_json::json!({
                "faults": out.after.0, "ops": out.after.1, "raw": out.after.2
            })),
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
    // The page shows the original run's verdict beside the shrunk one, and links the shrunk
    // run's timeline, as a campaign's counterexample page does.
    let timeline = PathBuf::from(format!("{stem}.timeline.html"));
    let mut timelines = Vec::new();
    let leaf_of = |p: &Path| {
        p.file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if campaign::write_timeline(
        &timeline,
        &format!("{leaf} (shrunk, {})", out.verdict.property),
        &drawn,
        std::slice::from_ref(&out.verdict),
    )? {
        timelines.push(("the drawn run".to_string(), leaf_of(&timeline)));
    }
    let extras = acp_chaos::report::PageExtras {
        original: verdicts.iter().find(|v| target.matches(v)).map(|v| (v, &h)),
        timelines,
    };
    acp_chaos::folders::write_atomic(
        &md,
        acp_chaos::report::counterexample_md_with(&c, &extras).as_bytes(),
    )?;
    acp_chaos::folders::write_atomic(
        &html,
        acp_chaos::report::counterexample_html_with(&c, &extras).as_bytes(),
    )?;
    println!(
        "report: {} (sequence diagram; {} self-contained)",
        md.display(),
        html.display()
    );
    println!("replay: {}", crate::launch::runnable(&replay_line));
    Ok(exit::VALID)
}
