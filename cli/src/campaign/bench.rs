//! `acp-chaos bench`: seeds per second for a scenario, and the ratio of its wall time to a bare
//! turmoil run with the same hosts, tick and simulated duration. Wall clocks are read here,
//! outside any run, and never reach a history.

use std::time::Duration;

use rayon::prelude::*;

use crate::campaign;
use crate::wall_clock::now;
use acp_chaos::models::Design;
use acp_chaos::plan::Plan;
use acp_chaos::scenario::Scenario;
use acp_chaos::world;

/// Benchmark figures.
#[derive(Debug, serde::Serialize)]
pub struct BenchReport {
    /// Scenario.
    pub scenario: String,
    /// Agent design.
    pub agent: Design,
    /// Seeds run.
    pub seeds: u64,
    /// Worker threads.
    pub jobs: usize,
    /// Wall time, s.
    pub wall_s: f64,
    /// Seeds per second.
    pub seeds_per_s: f64,
    /// Mean simulated time of a run, ms.
    pub sim_ms_mean: f64,
    /// Wall time of the bare turmoil runs with the same hosts, tick and simulated time, s.
    pub bare_wall_s: f64,
    /// wall_s / bare_wall_s.
    pub overhead_ratio: f64,
    /// Seeds per second per worker thread.
    pub seeds_per_s_per_core: f64,
    /// Simulated time over wall time, per worker thread.
    pub sim_to_real_per_core: f64,
    /// Share of the simulated ticks the step loop stepped one by one (the rest it skipped as
    /// idle), 0..1.
    pub ticks_stepped_share: f64,
    /// turmoil steps per run (ticks stepped plus skips).
    pub steps_per_run: f64,
}

/// Run the benchmark.
pub fn measure(
    s: &Scenario,
    seeds: u64,
    jobs: usize,
    agent: Design,
) -> anyhow::Result<BenchReport> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()?;
    let t0 = now();
    let runs: Vec<(u64, world::Steps)> = pool.install(|| {
        (0..seeds)
            .into_par_iter()
            .map(|seed| {
                let _ = world::take_steps();
                let ms = campaign::run_one(s, seed, None, agent).1.sim_ms;
                (ms, world::take_steps())
            })
            .collect()
    });
    let wall = t0.elapsed().as_secs_f64();
    let sims: Vec<u64> = runs.iter().map(|r| r.0).collect();
    let mut steps = world::Steps::default();
    for (_, st) in &runs {
        steps.runs += st.runs;
        steps.sim_ms += st.sim_ms;
        steps.ticks += st.ticks;
        steps.skips += st.skips;
        steps.skipped_ms += st.skipped_ms;
    }
    let cores = jobs.max(1) as f64;
    let t1 = now();
    pool.install(|| {
        sims.par_iter()
            .enumerate()
            .for_each(|(seed, &ms)| bare(s, seed as u64, ms, agent));
    });
    let bare_wall = t1.elapsed().as_secs_f64();
    Ok(BenchReport {
        scenario: s.name.clone(),
        agent,
        seeds,
        jobs,
        wall_s: wall,
        seeds_per_s: seeds as f64 / wall,
        sim_ms_mean: sims.iter().sum::<u64>() as f64 / seeds.max(1) as f64,
        bare_wall_s: bare_wall,
        overhead_ratio: wall / bare_wall.max(1e-9),
        seeds_per_s_per_core: seeds as f64 / wall / cores,
        sim_to_real_per_core: steps.sim_ms as f64 / 1000.0 / wall / cores,
        ticks_stepped_share: steps.ticks as f64 / steps.sim_ms.max(1) as f64,
        steps_per_run: steps.steps() as f64 / steps.runs.max(1) as f64,
    })
}

/// The same hosts, idle, stepped for `sim_ms` at the same tick: the floor a run cannot beat.
fn bare(s: &Scenario, seed: u64, sim_ms: u64, agent: Design) {
    let plan = Plan::derive(s, seed, None, agent);
    let mut sim = world::builder(&plan).build();
    for h in plan.agent_hosts() {
        sim.host(*h, idle_host);
    }
    if plan.cluster() {
        sim.host("store", idle_host);
    }
    for (on, h) in [
        (true, "client"),
        (plan.proxy, "proxy"),
        (plan.watcher, "watcher"),
    ] {
        if on {
            sim.host(h, idle_host);
        }
    }
    while sim.elapsed() < Duration::from_millis(sim_ms) {
        if sim.step().is_err() {
            break;
        }
    }
}

/// A bare host for the benchmark baseline: same hosts and tick, no models.
async fn idle_host() -> turmoil::Result {
    loop {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
}
