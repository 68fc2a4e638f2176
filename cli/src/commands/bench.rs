//! `acp-chaos bench`: seeds per second and the overhead over a bare turmoil run; with
//! `--rounds` the median of several; with `--vs BINARY` this build against another, in pairs.

use std::path::PathBuf;

use clap::Args;

use super::args::{parse_design, scenarios_dir, DirArgs};
use super::{CliError, Outcome};
use crate::campaign::paired::{self, median, spread};
use acp_chaos::exit;
use acp_chaos::models::Design;
use acp_chaos::scenario;

#[derive(Args, Debug, Clone)]
// `--seeds -1` is read as a value and refused as one, not taken for a flag.
#[command(allow_negative_numbers = true)]
pub(super) struct BenchArgs {
    /// Scenario to measure.
    #[arg(default_value = "swarm-basic")]
    scenario: String,
    /// Seeds.
    #[arg(long, value_parser = super::args::seed_count, default_value_t = 200)]
    seeds: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 1, value_parser = super::args::parse_jobs)]
    jobs: usize,
    /// Agent design to measure.
    #[arg(long, default_value = "stored", value_parser = parse_design)]
    agent: Design,
    /// Measure this many times and report the median (with `--vs`: this many pairs).
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Another acp-chaos binary (e.g. an older build) to measure against this one: each round
    /// runs both builds' `bench` with the same arguments, the order alternating, and reports
    /// the median ratio of their seeds/s.
    #[arg(long, value_name = "BINARY")]
    vs: Option<PathBuf>,
    #[command(flatten)]
    dir: DirArgs,
}

/// The most rounds one `bench` takes (each is a full measurement; with `--vs`, two).
const ROUNDS_MAX: usize = 1000;

pub(super) fn exec(b: &BenchArgs) -> Outcome {
    if b.seeds == 0 || b.jobs == 0 {
        return Err(CliError::usage(
            "--seeds and --jobs must be at least 1".to_string(),
        ));
    }
    if b.rounds == 0 || b.rounds > ROUNDS_MAX {
        return Err(CliError::usage(format!(
            "--rounds must be at least 1 and at most {ROUNDS_MAX}"
        )));
    }
    super::args::check_seeds(b.seeds)?;
    let dir = scenarios_dir(&b.dir);
    let s = scenario::resolve(&dir, &b.scenario)?;
    let jobs = super::args::jobs(Some(b.jobs), b.seeds);
    if let Some(other) = &b.vs {
        return vs(b, other, &dir, jobs);
    }
    let (mut per_core, mut sim_to_real, mut seeds_per_s) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..b.rounds {
        let r = crate::campaign::bench::measure(&s, b.seeds, jobs, b.agent)?;
        print_one(&r)?;
        per_core.push(r.seeds_per_s_per_core);
        seeds_per_s.push(r.seeds_per_s);
        sim_to_real.push(r.sim_to_real_per_core);
    }
    if b.rounds > 1 {
        let (m, sr) = (median(&per_core), median(&sim_to_real));
        let (lo, hi) = spread(&per_core);
        println!(
            "median of {} rounds: {m:.0} seeds/s per core (min {lo:.0}, max {hi:.0}), simulated:real {sr:.0}x per core",
            b.rounds,
        );
        println!(
            "{}",
            serde_json::json!({
                "scenario": s.name, "agent": b.agent, "seeds": b.seeds, "jobs": jobs,
                "rounds": b.rounds, "seeds_per_s": median(&seeds_per_s),
                "seeds_per_s_per_core": m, "sim_to_real_per_core": sr,
                "seeds_per_s_per_core_rounds": per_core,
                "sim_to_real_per_core_rounds": sim_to_real,
            })
        );
    }
    Ok(exit::VALID)
}

/// One measurement's two lines and its JSON line.
fn print_one(r: &crate::campaign::bench::BenchReport) -> Result<(), CliError> {
    println!(
        "bench {}@{}: {} seeds, jobs={}: {:.2} s wall, {:.0} seeds/s, mean {:.0} ms simulated per run; bare turmoil (same hosts, tick, simulated time): {:.2} s; overhead x{:.1}",
        r.scenario, r.agent.as_str(), r.seeds, r.jobs, r.wall_s, r.seeds_per_s, r.sim_ms_mean, r.bare_wall_s, r.overhead_ratio
    );
    println!(
        "  per core: {:.0} seeds/s, simulated:real {:.0}x; ticks stepped one by one {:.1}% (the rest skipped as idle), {:.0} turmoil steps per run; ratio to the bare stepping floor x{:.2}",
        r.seeds_per_s_per_core,
        r.sim_to_real_per_core,
        100.0 * r.ticks_stepped_share,
        r.steps_per_run,
        r.overhead_ratio
    );
    println!("{}", serde_json::to_string(&r)?);
    Ok(())
}

/// `--vs BINARY`: pairs of child processes, this build and the other, order alternating.
fn vs(b: &BenchArgs, other: &std::path::Path, dir: &std::path::Path, jobs: usize) -> Outcome {
    // The file checked is the file run: a bare name is not looked up on `PATH`, where an
    // installed acp-chaos would be measured instead.
    let other = &std::path::absolute(other)?;
    if !other.is_file() {
        let why = if other.exists() {
            "not a file"
        } else {
            "no such file"
        };
        return Err(CliError::usage(format!(
            "--vs {}: {why} (give the path of another acp-chaos binary)",
            other.display()
        )));
    }
    let this = std::env::current_exe()?;
    if std::fs::canonicalize(&this).ok() == std::fs::canonicalize(other).ok() {
        // Worth measuring (it shows the machine's noise), but not to be read as a speed-up.
        println!("note: --vs names this binary: every ratio measures the machine's noise alone");
    }
    // Both builds read the same scenario files, wherever they were launched from.
    let dir = std::path::absolute(dir)?;
    let args: Vec<String> = vec![
        b.scenario.clone(),
        "--seeds".into(),
        b.seeds.to_string(),
        "--jobs".into(),
        jobs.to_string(),
        "--agent".into(),
        b.agent.as_str().into(),
        "--scenarios".into(),
        dir.display().to_string(),
    ];
    println!(
        "bench {}@{} --vs {}: {} of {} seeds, jobs={jobs}, each round both builds, the order alternating",
        b.scenario,
        b.agent.as_str(),
        other.display(),
        if b.rounds == 1 { "1 round".to_string() } else { format!("{} rounds", b.rounds) },
        b.seeds
    );
    let r = paired::compare(&this, other, &args, b.rounds, |round, x, y| {
        let first = if paired::this_first(round) {
            "this"
        } else {
            "other"
        };
        println!(
            "  round {}: this {:.0} seeds/s per core, other {:.0}, ratio {:.3} ({first} first)",
            round + 1,
            x.0,
            y.0,
            x.0 / y.0
        );
    })?;
    println!(
        "median: this {:.0} seeds/s per core, other {:.0}; ratio this/other {:.3} (min {:.3}, max {:.3}, {} rounds)",
        r.this_median,
        r.other_median,
        r.ratio_median,
        r.ratio_min,
        r.ratio_max,
        b.rounds
    );
    println!("{}", serde_json::to_string(&r)?);
    Ok(exit::VALID)
}
