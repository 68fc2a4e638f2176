//! `acp-chaos bench`: seeds per second and the overhead over a bare turmoil run.

use clap::Args;

use super::args::{parse_design, scenarios_dir, DirArgs};
use super::{CliError, Outcome};
use crate::exit;
use crate::models::Design;
use crate::scenario;

#[derive(Args, Debug, Clone)]
pub(super) struct BenchArgs {
    /// Scenario to measure.
    #[arg(default_value = "swarm-basic")]
    scenario: String,
    /// Seeds.
    #[arg(long, default_value_t = 200)]
    seeds: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 1, value_parser = super::args::parse_jobs)]
    jobs: usize,
    /// Agent design to measure.
    #[arg(long, default_value = "stored", value_parser = parse_design)]
    agent: Design,
    #[command(flatten)]
    dir: DirArgs,
}

pub(super) fn exec(b: &BenchArgs) -> Outcome {
    if b.seeds == 0 || b.jobs == 0 {
        return Err(CliError::usage(
            "--seeds and --jobs must be at least 1".to_string(),
        ));
    }
    super::args::check_seeds(b.seeds)?;
    let s = scenario::resolve(&scenarios_dir(&b.dir), &b.scenario)?;
    let jobs = super::args::jobs(Some(b.jobs), b.seeds);
    let r = crate::campaign::bench::measure(&s, b.seeds, jobs, b.agent)?;
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
    Ok(exit::VALID)
}
