//! Each mutant's witness, run: its scenario's first seeds under the mutant on its design
//! ([`acp_chaos::models::Mutant::witness`]). What the failing verdicts of those runs cite is what
//! the rules table says each mutant witnesses ([`acp_chaos::report::witnesses`]): a claim derived
//! from runs, never from a mutant's declared `rules`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;

use super::scoreboard::is_catch;
use acp_chaos::checkers::Status;
use acp_chaos::models::mutant::{Mutant, MUTANTS};
use acp_chaos::run::run_one;
use acp_chaos::scenario::{self, ScenarioError};

pub use acp_chaos::report::witnesses::Shown;

/// Seeds of each witness scenario `acp-chaos list rules` runs (and `docs/rules.md` shows).
pub const WITNESS_SEEDS: u64 = 20;

/// Run every shipped mutant's witness scenario (from `dir`, or the built-in scenarios) over
/// seeds `0..seeds` on `pool`. In the registry's order.
///
/// Errors: a witness scenario that does not load.
pub fn shown(
    dir: &Path,
    seeds: u64,
    pool: &rayon::ThreadPool,
) -> Result<Vec<Shown>, ScenarioError> {
    let mut jobs = Vec::new();
    for m in MUTANTS {
        let s = scenario::resolve(dir, m.witness.scenario)?;
        for seed in 0..seeds {
            jobs.push((m, s.clone(), seed));
        }
    }
    let runs: Vec<(&'static Mutant, bool, BTreeSet<String>)> = pool.install(|| {
        jobs.par_iter()
            .map(|(m, s, seed)| {
                let (_, r) = run_one(s, *seed, Some(m.name), m.witness.design);
                let caught = r.verdicts.iter().any(|v| is_catch(m, v));
                let cited = r
                    .verdicts
                    .iter()
                    .filter(|v| matches!(v.status, Status::Invalid | Status::Finding))
                    .filter(|v| v.party == Some(m.party))
                    .flat_map(|v| v.rules.iter().cloned())
                    .collect();
                (*m, caught, cited)
            })
            .collect()
    });
    let mut out: Vec<Shown> = MUTANTS
        .iter()
        .map(|m| Shown {
            mutant: m,
            seeds,
            caught: 0,
            cited: BTreeMap::new(),
        })
        .collect();
    for (m, caught, cited) in runs {
        let s = out
            .iter_mut()
            .find(|s| s.mutant.name == m.name)
            .expect("every mutant has its row");
        s.caught += u64::from(caught);
        for r in cited {
            *s.cited.entry(r).or_default() += 1;
        }
    }
    Ok(out)
}
