//! `acp-chaos mutants`: the mutant scoreboard and the correct-model baseline.

use std::path::PathBuf;

use clap::Args;

use super::args::{jobs, scenarios_dir, DirArgs};
use super::output::outcome_line;
use super::{CliError, Outcome};
use acp_chaos::exit;
use acp_chaos::models::mutant;
use acp_chaos::plan::Plan;
use acp_chaos::scenario;

#[derive(Args, Debug, Clone)]
// `--seeds -1` is read as a value and refused as one, not taken for a flag.
#[command(allow_negative_numbers = true)]
pub(super) struct MutantsArgs {
    /// A `[swarm]` scenario.
    #[arg(default_value = "swarm-basic")]
    scenario: String,
    /// Most seeds per mutant and mix.
    #[arg(long, value_parser = super::args::seed_count, default_value_t = 2000)]
    seeds: u64,
    /// Stop a mutant's search after this many catching seeds.
    #[arg(long, default_value_t = 20)]
    catches: usize,
    /// Only this mutant.
    #[arg(long)]
    mutant: Option<String>,
    /// Worker threads (default: the number of cores).
    #[arg(long, env = "ACP_CHAOS_JOBS", value_parser = super::args::parse_jobs)]
    jobs: Option<usize>,
    /// Also write the rows and the baseline as JSON to this file
    /// (`{"rows": [...], "baseline": {...}}`).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Seeds for the correct-model baseline (default: `--seeds`; 0 skips it).
    #[arg(long, value_parser = super::args::seed_count)]
    baseline_seeds: Option<u64>,
    /// Base seeds for the exploring columns (explore, lineage, guided: runs to the first
    /// catch); 0 leaves them out, and the witness column (each mutant's own witness scenario,
    /// design and seed) with them.
    #[arg(long, value_parser = super::args::seed_count, default_value_t = 3)]
    explore_seeds: u64,
    /// Most runs per base seed and design in the exploring columns (and per mode in the
    /// witness column).
    #[arg(long, default_value_t = 300)]
    explore_budget: usize,
    /// Also shrink each mutant's first catching swarm seed (`acp-chaos shrink`) and print
    /// how small its schedule gets.
    #[arg(long)]
    shrink: bool,
    /// Report folder of the correct-model baseline, with the scoreboard in its `summary.md`
    /// (default `reports/mutants-<scenario>-seeds<N>`, with `reports/latest` pointing at it).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    dir: DirArgs,
}

/// Long on purpose: the command's steps in the order of its output (scoreboard, checker table,
/// shrinks, baseline, report).
pub(super) fn exec(a: &MutantsArgs) -> Outcome {
    if a.seeds == 0 || a.catches == 0 || a.jobs == Some(0) {
        return Err(CliError::usage(
            "--seeds, --catches and --jobs must be at least 1".to_string(),
        ));
    }
    super::args::check_seeds(a.seeds)?;
    if let Some(b) = a.baseline_seeds.filter(|b| *b > super::args::SEEDS_MAX) {
        return Err(CliError::usage(format!(
            "--baseline-seeds {b}: at most {}",
            super::args::SEEDS_MAX
        )));
    }
    if let Some(m) = &a.mutant {
        if mutant::find(m).is_none() {
            return Err(CliError::usage(format!(
                "unknown mutant `{m}` (see `acp-chaos list mutants`)"
            )));
        }
    }
    let s = match scenario::resolve(&scenarios_dir(&a.dir), &a.scenario) {
        Ok(s) if s.swarm.is_some() => s,
        Ok(s) => {
            return Err(CliError::usage(format!(
                "{}: the scoreboard needs a [swarm] scenario",
                s.reference
            )));
        }
        Err(e) => return Err(e.into()),
    };
    // The baseline is a campaign of the correct models; its report carries the scoreboard.
    let name = format!("mutants-{}-seeds{}", s.name, a.seeds);
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| acp_chaos::folders::default_out(&name, None));
    // Before the scoreboard's minutes of runs.
    super::writable::report_folder(&out, "--out")?;
    let jobs = jobs(a.jobs, u64::MAX);
    if let Some(p) = &a.json {
        // Fail before the run, not after it.
        if let Err(e) = std::fs::write(p, "[]") {
            return Err(CliError::usage(format!("--json {}: {e}", p.display())));
        }
    }
    println!(
        "acp-chaos mutants: scenario={} seeds<={} catches={} jobs={} (each seed runs every design the mutant applies to)",
        s.reference, a.seeds, a.catches, jobs
    );
    let cols = crate::campaign::scoreboard::ExploreColumns {
        seeds: a.explore_seeds,
        budget: a.explore_budget,
    };
    print!("{}", crate::campaign::scoreboard::header(cols));
    let rows = crate::campaign::scoreboard::score(
        &s,
        &scenarios_dir(&a.dir),
        a.mutant.as_deref(),
        a.seeds,
        a.catches,
        jobs,
        cols,
        &mut |r| {
            print!(
                "{}",
                crate::campaign::scoreboard::table(std::slice::from_ref(r), cols)
            );
        },
    )?;
    print!("{}", crate::campaign::scoreboard::legend(cols));
    print!("{}", crate::campaign::scoreboard::best_lines(&rows));
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
        return Err(CliError::usage("nothing to run".to_string()));
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
                sw.mix = acp_chaos::scenario::Mix::Swarm;
            }
            let target = acp_chaos::explore::shrink::Target::of_mutant(m);
            for &d in &r.designs {
                let plan = Plan::derive(&swarm, seed, Some(m.name), d);
                if acp_chaos::explore::shrink::failing(&plan, &target).is_none() {
                    continue;
                }
                let out = acp_chaos::explore::shrink::shrink(&plan, &target)?;
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
    let scoreboard = format!(
        "{}{}{}{}\nmutant × checker (share of swarm seeds on which the checker was invalid):\n{}",
        crate::campaign::scoreboard::header(cols),
        crate::campaign::scoreboard::table(&rows, cols),
        crate::campaign::scoreboard::legend(cols),
        crate::campaign::scoreboard::best_lines(&rows),
        crate::campaign::scoreboard::checker_table(&rows)
    );
    let (base, _, unwritten) =
        crate::campaign::scoreboard::baseline(&s, base_seeds, jobs, &name, &out, Some(scoreboard))?;
    if a.out.is_none() && unwritten.is_none() {
        acp_chaos::folders::point_latest(&out)?;
    }
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
    match &unwritten {
        None => println!(
            "report: {}/summary.md (scoreboard and baseline)",
            out.display()
        ),
        Some(_) => println!("report: not written (see the error on stderr)"),
    }
    if let Some(p) = &a.json {
        let doc = serde_json::json!({"rows": rows, "baseline": base});
        std::fs::write(p, serde_json::to_string_pretty(&doc)?)?;
    }
    // A mutant whose window the swarm reaches only now and then (`swarm_finds: false`) has its
    // own scenario and a pinned swarm seed in the tests: missing it here is a figure, not a
    // failure. One the swarm should reach within 40 seeds is a failure.
    let rare = |m: &str| acp_chaos_models::mutant::find(m).is_some_and(|x| !x.swarm_finds);
    let (missed_rare, missed): (Vec<&str>, Vec<&str>) = rows
        .iter()
        .filter(|r| r.swarm.caught.is_empty())
        .map(|r| r.mutant)
        .partition(|m| rare(m));
    let mut code = exit::VALID;
    if !missed_rare.is_empty() {
        println!(
            "rare windows, not caught by the swarm within {} seeds (each has its own scenario, docs/mutants.md): {}",
            a.seeds,
            missed_rare.join(", ")
        );
    }
    if missed.is_empty() {
        println!("every mutant the swarm reaches within 40 seeds caught by the swarm alone");
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
    if let Some(what) = unwritten {
        return Err(CliError::unwritten(&what, &out, code));
    }
    Ok(code)
}
