//! `acp-chaos bench`: seeds per second for a scenario, and the ratio of its wall time to a bare
//! turmoil run with the same hosts, tick and simulated duration. Wall clocks are read here,
//! outside any run, and never reach a history.

use std::time::Duration;

use rayon::prelude::*;

use crate::campaign;
use crate::models::Design;
use crate::plan::Plan;
use crate::scenario::Scenario;
use crate::wall_clock::now;
use crate::world;

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
    let sims: Vec<u64> = pool.install(|| {
        (0..seeds)
            .into_par_iter()
            .map(|seed| campaign::run_one(s, seed, None, agent).1.sim_ms)
            .collect()
    });
    let wall = t0.elapsed().as_secs_f64();
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
    })
}

/// The same hosts, idle, stepped for `sim_ms` at the same tick: the floor a run cannot beat.
fn bare(s: &Scenario, seed: u64, sim_ms: u64, agent: Design) {
    let plan = Plan::derive(s, seed, None, agent);
    let mut sim = world::builder(&plan).build();
    for h in plan.agent_hosts() {
        sim.host(*h, crate::world::hosts::idle_host);
    }
    if plan.cluster() {
        sim.host("store", crate::world::hosts::idle_host);
    }
    for (on, h) in [
        (true, "client"),
        (plan.proxy, "proxy"),
        (plan.watcher, "watcher"),
    ] {
        if on {
            sim.host(h, crate::world::hosts::idle_host);
        }
    }
    while sim.elapsed() < Duration::from_millis(sim_ms) {
        if sim.step().is_err() {
            break;
        }
    }
}
