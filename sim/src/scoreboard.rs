//! `acp-chaos mutants`: how fast the swarm alone (no scripted schedule) catches each mutant,
//! against the uniform mix (every fault kind and optional feature on in every seed).
//!
//! For each mutant and mix, seeds run in order from 0 (each seed under every design the mutant
//! applies to, within the scenario's designs) until `catches` seeds have caught it or `seeds`
//! have run. A seed *catches* the mutant when some design's verdict on the mutant's property is
//! invalid and names the mutant's party. **Seeds-to-detection** from a start seed `s` is the
//! number of seeds run from `s` up to and including the first catching seed, wrapping around
//! the seeds run (so a mutant caught once in 2000 seeds reads as about 1000, not as the
//! distance to that one catch); the table gives its median over every start seed run. It is
//! measured, not inferred from a rate.

use rayon::prelude::*;
use serde::Serialize;

use crate::campaign;
use crate::check::Status;
use crate::models::mutant::{Mutant, MUTANTS};
use crate::models::Design;
use crate::scenario::{Mix, Scenario};

/// One mutant under one mix.
#[derive(Debug, Clone, Serialize)]
pub struct Detection {
    /// Seeds run.
    pub seeds: u64,
    /// The catching seeds, ascending.
    pub caught: Vec<u64>,
    /// Median seeds-to-detection (`None`: never caught).
    pub median: Option<f64>,
}

/// One row of the scoreboard.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Mutant name.
    pub mutant: &'static str,
    /// The property its verdict must fail.
    pub property: &'static str,
    /// The party that verdict must name.
    pub party: crate::models::mutant::Party,
    /// Designs run per seed.
    pub designs: Vec<Design>,
    /// Under `mix = "swarm"`.
    pub swarm: Detection,
    /// Under `mix = "uniform"`.
    pub uniform: Detection,
}

impl Row {
    /// uniform median / swarm median (above 1: the swarm finds it sooner).
    pub fn ratio(&self) -> Option<f64> {
        Some(self.uniform.median? / self.swarm.median?)
    }
}

/// Median seeds-to-detection over start seeds `0..seeds`, wrapping around (see the module
/// doc); `caught` ascending, each below `seeds`.
pub fn median_to_detection(caught: &[u64], seeds: u64) -> Option<f64> {
    let first = *caught.first()?;
    let mut d: Vec<u64> = (0..seeds)
        .map(|s| match caught.iter().find(|&&c| c >= s) {
            Some(c) => c - s + 1,
            None => first + seeds - s + 1,
        })
        .collect();
    d.sort_unstable();
    let n = d.len();
    Some(if n % 2 == 1 {
        d[n / 2] as f64
    } else {
        (d[n / 2 - 1] + d[n / 2]) as f64 / 2.0
    })
}

fn catches(s: &Scenario, m: &Mutant, designs: &[Design], seed: u64) -> bool {
    designs.iter().any(|&d| {
        let (_, r) = campaign::run_one(s, seed, Some(m.name), d);
        r.verdicts.iter().any(|v| {
            v.property == m.property && v.status == Status::Invalid && v.party == Some(m.party)
        })
    })
}

/// Seeds in order until `want` catches or `seeds` run; parallel in batches of `batch`.
fn detect(s: &Scenario, m: &Mutant, designs: &[Design], seeds: u64, want: usize) -> Detection {
    let batch = 32u64;
    let mut caught = Vec::new();
    let mut next = 0u64;
    while next < seeds && caught.len() < want {
        let end = (next + batch).min(seeds);
        let hits: Vec<u64> = (next..end)
            .into_par_iter()
            .filter(|&seed| catches(s, m, designs, seed))
            .collect();
        caught.extend(hits);
        next = end;
    }
    // A batch can overshoot `want`: keep the first `want` and count seeds up to the last kept.
    caught.truncate(want);
    let run = if caught.len() == want {
        caught.last().map_or(next, |l| l + 1)
    } else {
        next
    };
    Detection {
        seeds: run,
        median: median_to_detection(&caught, run),
        caught,
    }
}

/// The scoreboard for every mutant (or one) on a `[swarm]` scenario; `on_row` sees each row as
/// it is done.
pub fn run(
    s: &Scenario,
    only: Option<&str>,
    seeds: u64,
    want: usize,
    jobs: usize,
    on_row: &mut dyn FnMut(&Row),
) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(
        s.swarm.is_some(),
        "{}: the scoreboard needs a [swarm] scenario (scripted faults are not the swarm)",
        s.reference
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()?;
    let mut uniform = s.clone();
    if let Some(sw) = uniform.swarm.as_mut() {
        sw.mix = Mix::Uniform;
    }
    let mut swarm = s.clone();
    if let Some(sw) = swarm.swarm.as_mut() {
        sw.mix = Mix::Swarm;
    }
    let mut rows = Vec::new();
    for m in MUTANTS.iter().filter(|m| only.is_none_or(|o| o == m.name)) {
        let designs: Vec<Design> = s
            .agent
            .designs
            .iter()
            .copied()
            .filter(|d| m.designs.is_empty() || m.designs.contains(d))
            .collect();
        if designs.is_empty() {
            continue;
        }
        let (sw, un) = pool.install(|| {
            (
                detect(&swarm, m, &designs, seeds, want),
                detect(&uniform, m, &designs, seeds, want),
            )
        });
        let row = Row {
            mutant: m.name,
            property: m.property,
            party: m.party,
            designs,
            swarm: sw,
            uniform: un,
        };
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// The table's header line.
pub fn header() -> String {
    format!(
        "{:<32} {:<5} {:<13} {:>14} {:>14} {:>8}\n",
        "mutant", "prop", "party", "swarm median", "uniform median", "ratio"
    )
}

/// The scoreboard's rows as table lines (after [`header`]).
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    let cell = |d: &Detection| match d.median {
        Some(m) => format!("{m} ({}/{})", d.caught.len(), d.seeds),
        None => format!("- (0/{})", d.seeds),
    };
    for r in rows {
        out.push_str(&format!(
            "{:<32} {:<5} {:<13} {:>14} {:>14} {:>8}\n",
            r.mutant,
            r.property,
            format!("{:?}", r.party).to_lowercase(),
            cell(&r.swarm),
            cell(&r.uniform),
            r.ratio().map_or("-".to_string(), |x| format!("{x:.2}")),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::median_to_detection;

    #[test]
    fn median_counts_seeds_up_to_and_including_the_catch() {
        assert_eq!(median_to_detection(&[], 10), None);
        // Caught on seed 0 of 1.
        assert_eq!(median_to_detection(&[0], 1), Some(1.0));
        // Caught on seed 3 of 4: from starts 0..=3 it takes 4, 3, 2, 1 seeds.
        assert_eq!(median_to_detection(&[3], 4), Some(2.5));
        // Caught on seed 1 of 4: starts 0, 1, 2, 3 take 2, 1, 4 (wrapping), 3.
        assert_eq!(median_to_detection(&[1], 4), Some(2.5));
        // Every seed catches.
        assert_eq!(median_to_detection(&[0, 1, 2, 3, 4], 5), Some(1.0));
    }
}
