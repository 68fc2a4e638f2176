//! `acp-chaos mutants`: how fast the swarm alone (no scripted schedule) catches each mutant,
//! against the uniform mix (every fault kind and optional feature on in every seed), and the
//! exploring modes (exhaustive, lineage, guided).
//!
//! Every column counts the same unit: **runs of one design** up to and including the first
//! that catches the mutant, the fewest over the designs the mutant applies to (within the
//! scenario's designs), median over start seeds. A run *catches* the mutant when its verdict
//! on the mutant's property is invalid and names the mutant's party ([`is_catch`]).
//!
//! For the swarm and the uniform mix, seeds run in order from 0, each under every design,
//! until `catches` seeds have caught it on some design or `seeds` have run; which design
//! caught it on which seed is kept ([`Detection::by_design`]). From a start seed `s`, a design
//! takes the seeds from `s` up to and including the first that catches it on that design,
//! wrapping around the seeds run (so a mutant caught once in 2000 seeds reads as about 1000,
//! not as the distance to that one catch); the cell is the median over every start seed of the
//! fewest over the designs ([`median_fewest_over_designs`]). That fewest is the distance to
//! the first seed that catches it on *some* design, so the figure is also the seeds-to-detection
//! of a seed that runs every design: the two readings are one number, and only its unit's
//! name says which runs it counts. It is measured, not inferred from a rate. For the exploring
//! columns a base seed plays the start seed's part ([`FirstCatch`]).
//!
//! Beside it, the **mutant × checker** view: for each mutant, the share of the swarm seeds run
//! on which each checker's verdict was invalid on some design (a mutant's bug often breaks
//! more than the property it names), and a **baseline**: the correct models on the same
//! scenario and seeds, every checker, which must have no violation (no false positives).

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use crate::campaign;
use acp_chaos::checkers::{Status, Verdict};
use acp_chaos::models::mutant::{Mutant, MUTANTS};
use acp_chaos::models::{Design, Property};
use acp_chaos::scenario::{Mix, Scenario};

/// One mutant under one mix.
#[derive(Debug, Clone, Serialize)]
pub struct Detection {
    /// Seeds run (each under every design of [`MutantRow::designs`]).
    pub seeds: u64,
    /// The seeds that caught it on some design, ascending.
    pub caught: Vec<u64>,
    /// Per design, the seeds that caught it on that design, ascending (every design run is a
    /// key, with no seeds if it never caught it).
    pub by_design: BTreeMap<Design, Vec<u64>>,
    /// Median runs of one design to the first catch, the fewest over the designs per start
    /// seed ([`median_fewest_over_designs`]; `None`: never caught). The same number as the
    /// seeds-to-detection of `caught` (seeds each running every design).
    pub median: Option<f64>,
    /// Per design, its median on that design alone ([`median_to_detection`] of its
    /// `by_design` seeds; `None`: never caught on it). The fewest of these can exceed
    /// `median`: the fastest design differs from one start seed to the next.
    pub design_medians: BTreeMap<Design, Option<f64>>,
    /// Property → seeds run on which its verdict was invalid on some design.
    pub by_checker: BTreeMap<String, u64>,
}

impl Detection {
    /// The detection over seeds `0..seeds` from each design's catching seeds (each ascending,
    /// below `seeds`) and the checker counts.
    pub fn new(
        seeds: u64,
        by_design: BTreeMap<Design, Vec<u64>>,
        by_checker: BTreeMap<String, u64>,
    ) -> Detection {
        let mut caught: Vec<u64> = by_design.values().flatten().copied().collect();
        caught.sort_unstable();
        caught.dedup();
        let lists: Vec<&[u64]> = by_design.values().map(Vec::as_slice).collect();
        Detection {
            seeds,
            median: median_fewest_over_designs(&lists, seeds),
            design_medians: by_design
                .iter()
                .map(|(d, c)| (*d, median_to_detection(c, seeds)))
                .collect(),
            caught,
            by_design,
            by_checker,
        }
    }
}

/// Whether a verdict catches mutant `m`: on its property, naming its party, invalid (or a
/// finding, for a mutant that breaks a SHOULD: [`Mutant::finding`]).
pub fn is_catch(m: &Mutant, v: &Verdict) -> bool {
    let want = if m.finding {
        Status::Finding
    } else {
        Status::Invalid
    };
    m.property == v.property && v.status == want && v.party == Some(m.party)
}

/// One row of the scoreboard.
#[derive(Debug, Clone, Serialize)]
pub struct MutantRow {
    /// Mutant name.
    pub mutant: &'static str,
    /// The property its verdict must fail.
    pub property: Property,
    /// The party that verdict must name.
    pub party: acp_chaos::models::mutant::Party,
    /// Designs run per seed.
    pub designs: Vec<Design>,
    /// Under `mix = "swarm"`.
    pub swarm: Detection,
    /// Under `mix = "uniform"`.
    pub uniform: Detection,
    /// Runs to the first catch exploring exhaustively (every schedule of at most 2 faults
    /// over the trace, in order), lineage-driven, and with the guided swarm.
    pub explore: Option<FirstCatch>,
    /// See `explore`.
    pub lineage: Option<FirstCatch>,
    /// See `explore`.
    pub guided: Option<FirstCatch>,
    /// Runs to the first catch on the mutant's own witness scenario (with the exploring
    /// columns; `None` without them).
    pub witness: Option<WitnessCatch>,
    /// The fewest runs over the row's columns ([`best`]; `None`: no column caught it).
    pub best: Option<Best>,
}

/// Runs to the first catch of a mutant under one way of choosing schedules: for each base
/// seed (the scenario's plan at that seed, its trace for exhaustive and lineage, the guided
/// swarm's first draw), the fewest runs of one design over the designs, and their median.
/// Exhaustive and lineage pass over a trace that lacks what the mutant needs
/// (`explore::needs`) for the next draw (seed + seeds, + 2·seeds, ...), each trace passed over
/// counting one run.
#[derive(Debug, Clone, Serialize)]
pub struct FirstCatch {
    /// Runs to the first catch per base seed, the fewest over the designs (`None`: not within
    /// the budget on any design).
    pub per_seed: Vec<Option<usize>>,
    /// Per design, its runs to the first catch per base seed (`None`: not within the budget).
    pub per_design: BTreeMap<Design, Vec<Option<usize>>>,
    /// Their median (`None`: most seeds did not catch it within the budget).
    pub median: Option<f64>,
    /// Most runs per seed and design.
    pub budget: usize,
}

/// The median of per-seed counts, a miss counting as more than any count.
fn median_of(v: &[Option<usize>]) -> Option<f64> {
    let mut d: Vec<usize> = v.iter().map(|x| x.unwrap_or(usize::MAX)).collect();
    d.sort_unstable();
    let n = d.len();
    if n == 0 {
        return None;
    }
    let (a, b) = if n % 2 == 1 {
        (d[n / 2], d[n / 2])
    } else {
        (d[n / 2 - 1], d[n / 2])
    };
    (b != usize::MAX).then(|| (a + b) as f64 / 2.0)
}

/// The exploring columns: base seeds (0 leaves them out) and runs per seed and design.
#[derive(Debug, Clone, Copy)]
pub struct ExploreColumns {
    /// Base seeds per mutant.
    pub seeds: u64,
    /// Most runs per seed and design.
    pub budget: usize,
}

/// How exploration chooses schedules, for [`first_catch`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// Every schedule of at most 2 faults over the trace, in order.
    Exhaustive,
    /// Lineage-driven fault injection.
    Lineage,
    /// The guided swarm.
    Guided,
}

/// Runs to the first catch of `m` on scenario `s` under `mode`, for base seeds `0..seeds`.
pub fn first_catch(
    s: &Scenario,
    m: &Mutant,
    designs: &[Design],
    mode: Mode,
    seeds: u64,
    budget: usize,
    pool: &rayon::ThreadPool,
) -> FirstCatch {
    let work: Vec<(u64, Design)> = (0..seeds)
        .flat_map(|seed| designs.iter().map(move |d| (seed, *d)))
        .collect();
    let found: Vec<(u64, Option<usize>)> = pool.install(|| {
        work.par_iter()
            .map(|&(seed, d)| {
                (
                    seed,
                    runs_to_catch(s, m, d, mode, seed, seeds, budget, pool),
                )
            })
            .collect()
    });
    // `found` is in `work`'s order: base seed, then design.
    let per_design: BTreeMap<Design, Vec<Option<usize>>> = designs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let runs = found
                .iter()
                .skip(i)
                .step_by(designs.len().max(1))
                .map(|(_, r)| *r);
            (*d, runs.collect())
        })
        .collect();
    let per_seed: Vec<Option<usize>> = (0..seeds)
        .map(|seed| {
            found
                .iter()
                .filter(|(s, _)| *s == seed)
                .filter_map(|(_, r)| *r)
                .min()
        })
        .collect();
    FirstCatch {
        median: median_of(&per_seed),
        per_seed,
        per_design,
        budget,
    }
}

/// Runs of design `d` to the first catch of `m` under `mode` from base seed `seed` (at most
/// `budget`, counting each draw passed over; exhaustive and lineage pass over to `seed +
/// stride`, `seed + 2·stride`, ...: [`trace_that_shows`]). `None`: not within the budget.
#[allow(clippy::too_many_arguments)]
fn runs_to_catch(
    s: &Scenario,
    m: &Mutant,
    d: Design,
    mode: Mode,
    seed: u64,
    stride: u64,
    budget: usize,
    pool: &rayon::ThreadPool,
) -> Option<usize> {
    let (plan, passed) = if mode == Mode::Guided {
        (acp_chaos::plan::Plan::derive(s, seed, Some(m.name), d), 0)
    } else {
        trace_that_shows(s, m, seed, stride, d, budget)
    };
    let budget = budget - passed;
    let runs = search(s, m, d, mode, &plan, budget, pool);
    runs.filter(|r| *r <= budget).map(|r| r + passed)
}

/// The witness column: runs to the first catch of a mutant on its own witness scenario
/// ([`Mutant::witness`]: a shipped scenario, a design, a seed), exploring exhaustively (at
/// most 2 faults, in order) and lineage-driven, from the registry's one base seed under the
/// registry's design. The same runs and the same catch as the exploring columns (a trace
/// that lacks what the mutant needs passed over for seed + 1, seed + 2, ..., each one run).
#[derive(Debug, Clone, Serialize)]
pub struct WitnessCatch {
    /// The witness scenario's name.
    pub scenario: &'static str,
    /// The witness design (the only one run).
    pub design: Design,
    /// The base seed (the registry's witness seed).
    pub seed: u64,
    /// Runs to the first catch exploring exhaustively (`None`: not within the budget).
    pub exhaustive: Option<usize>,
    /// Runs to the first catch lineage-driven (`None`: not within the budget).
    pub lineage: Option<usize>,
    /// Most runs per mode.
    pub budget: usize,
}

impl WitnessCatch {
    /// The fewer of the two modes' runs and the mode (exhaustive on a tie); `None`: neither
    /// caught it within the budget.
    pub fn best(&self) -> Option<(Mode, usize)> {
        match (self.exhaustive, self.lineage) {
            (Some(x), Some(l)) if l < x => Some((Mode::Lineage, l)),
            (Some(x), _) => Some((Mode::Exhaustive, x)),
            (None, Some(l)) => Some((Mode::Lineage, l)),
            (None, None) => None,
        }
    }
}

/// The witness column of mutant `m` on `s`, its witness scenario (`m.witness.scenario`), at
/// most `budget` runs per mode.
pub fn witness_catch(
    s: &Scenario,
    m: &Mutant,
    budget: usize,
    pool: &rayon::ThreadPool,
) -> WitnessCatch {
    let w = m.witness;
    let run = |mode| runs_to_catch(s, m, w.design, mode, w.seed, 1, budget, pool);
    let (exhaustive, lineage) =
        pool.install(|| rayon::join(|| run(Mode::Exhaustive), || run(Mode::Lineage)));
    WitnessCatch {
        scenario: w.scenario,
        design: w.design,
        seed: w.seed,
        exhaustive,
        lineage,
        budget,
    }
}

/// Exhaustive and lineage explore one trace: a trace that lacks what the mutant needs to show
/// (`explore::needs`: a cancel, a close, a prompt without a key) is passed over for the
/// scenario's next draw (seed + stride: the exploring columns' stride is their number of
/// base seeds, the witness column's 1), as `explore --mutants` tells a user to, each costing
/// its one run. The plan to explore, and how many draws were passed over.
fn trace_that_shows(
    s: &Scenario,
    m: &Mutant,
    seed: u64,
    stride: u64,
    d: Design,
    budget: usize,
) -> (acp_chaos::plan::Plan, usize) {
    use acp_chaos::explore::{exhaustive, needs};
    let mut plan = acp_chaos::plan::Plan::derive(s, seed, Some(m.name), d);
    let mut passed = 0usize;
    while passed + 1 < budget {
        let trace = exhaustive::trace_plan(&plan);
        let h = acp_chaos::world::run(&trace);
        if needs::missing(m.name, &trace, &h).is_empty() {
            break;
        }
        passed += 1;
        let next = seed + stride * passed as u64;
        plan = acp_chaos::plan::Plan::derive(s, next, Some(m.name), d);
    }
    (plan, passed)
}

/// The run of `mode`'s search (two faults, at most `budget` runs) that first catches mutant
/// `m`, if any: exhaustive and lineage over `plan`, guided drawing from the scenario (its
/// runs' seeds from `plan`'s).
fn search(
    s: &Scenario,
    m: &Mutant,
    d: Design,
    mode: Mode,
    plan: &acp_chaos::plan::Plan,
    budget: usize,
    pool: &rayon::ThreadPool,
) -> Option<usize> {
    use acp_chaos::explore::{exhaustive, guided, lineage, shrink::Target};
    let target = Target::of_mutant(m);
    match mode {
        Mode::Exhaustive => {
            let kinds = exhaustive::default_kinds(plan);
            exhaustive::explore(
                plan,
                &exhaustive::Options {
                    faults: 2,
                    kinds,
                    shard: None,
                    audit: 0,
                    stop_at_first: true,
                    target: Some(target.clone()),
                    budget: Some(budget),
                    merge: Default::default(),
                    orders: false,
                },
                pool,
            )
            .first_catch
        }
        Mode::Lineage => {
            lineage::lineage(
                plan,
                &lineage::Options {
                    faults: 2,
                    budget,
                    stop_at_first: true,
                    target: Some(target.clone()),
                },
            )
            .first_catch
        }
        Mode::Guided => {
            guided::guided(
                s,
                d,
                Some(m.name),
                &guided::Options {
                    runs: budget,
                    // Guided passes no draw over: `plan` is the seed's own.
                    seed_start: plan.seed * 100_000,
                    stop_at_first: true,
                    stop_at_full_coverage: false,
                    target: Some(target.clone()),
                },
                pool,
            )
            .first_catch
        }
    }
}

impl MutantRow {
    /// uniform median / swarm median (above 1: the swarm finds it sooner).
    pub fn ratio(&self) -> Option<f64> {
        Some(self.uniform.median? / self.swarm.median?)
    }
}

/// Seeds from start seed `s` up to and including the first of `caught` (ascending, each below
/// `seeds`), wrapping around the seeds run (`None`: `caught` is empty).
fn to_detection(caught: &[u64], s: u64, seeds: u64) -> Option<u64> {
    let first = *caught.first()?;
    Some(match caught.iter().find(|&&c| c >= s) {
        Some(c) => c - s + 1,
        None => first + seeds - s + 1,
    })
}

/// The median of counts, sorted here (`None`: no counts).
fn median_u64(mut d: Vec<u64>) -> Option<f64> {
    d.sort_unstable();
    let n = d.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(d[n / 2] as f64),
        _ => Some((d[n / 2 - 1] + d[n / 2]) as f64 / 2.0),
    }
}

/// Median seeds-to-detection over start seeds `0..seeds`, wrapping around (see the module
/// doc); `caught` ascending, each below `seeds`.
pub fn median_to_detection(caught: &[u64], seeds: u64) -> Option<f64> {
    median_fewest_over_designs(&[caught], seeds)
}

/// Median runs of one design to the first catch, the fewest over the designs: for each start
/// seed in `0..seeds`, each design's [`median_to_detection`] distance on its own catching
/// seeds (`by_design`, each ascending and below `seeds`; a design that never caught it is left
/// out), the fewest of them, and the median of those over the start seeds, as the exploring
/// columns take the fewest over the designs per base seed ([`FirstCatch`]). `None`: no design
/// caught it.
pub fn median_fewest_over_designs(by_design: &[&[u64]], seeds: u64) -> Option<f64> {
    let fewest: Option<Vec<u64>> = (0..seeds)
        .map(|s| {
            by_design
                .iter()
                .filter_map(|c| to_detection(c, s, seeds))
                .min()
        })
        .collect();
    median_u64(fewest?)
}

/// One seed under every design: the designs (in `designs`' order) whose run catches `m`, and
/// the properties invalid on some design.
fn catches(s: &Scenario, m: &Mutant, designs: &[Design], seed: u64) -> (Vec<Design>, Vec<String>) {
    let mut caught = Vec::new();
    let mut invalid: Vec<String> = Vec::new();
    for &d in designs {
        let (_, r) = campaign::run_one(s, seed, Some(m.name), d);
        if r.verdicts.iter().any(|v| is_catch(m, v)) {
            caught.push(d);
        }
        for v in r.verdicts.iter().filter(|v| v.status == Status::Invalid) {
            if !invalid.contains(&v.property) {
                invalid.push(v.property.clone());
            }
        }
    }
    (caught, invalid)
}

/// Seeds in order until `want` seeds caught it on some design or `seeds` run; parallel in
/// batches of `batch`.
fn detect(s: &Scenario, m: &Mutant, designs: &[Design], seeds: u64, want: usize) -> Detection {
    let batch = 32u64;
    let mut caught = Vec::new();
    let mut per_seed: Vec<(u64, Vec<Design>, Vec<String>)> = Vec::new();
    let mut next = 0u64;
    while next < seeds && caught.len() < want {
        let end = (next + batch).min(seeds);
        let results: Vec<(u64, Vec<Design>, Vec<String>)> = (next..end)
            .into_par_iter()
            .map(|seed| {
                let (c, inv) = catches(s, m, designs, seed);
                (seed, c, inv)
            })
            .collect();
        for (seed, c, inv) in results {
            if !c.is_empty() {
                caught.push(seed);
            }
            per_seed.push((seed, c, inv));
        }
        next = end;
    }
    // A batch can overshoot `want`: keep the first `want` and count seeds up to the last kept.
    caught.truncate(want);
    let run = if caught.len() == want {
        caught.last().map_or(next, |l| l + 1)
    } else {
        next
    };
    let mut by_checker: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_design: BTreeMap<Design, Vec<u64>> =
        designs.iter().map(|d| (*d, Vec::new())).collect();
    for (seed, c, inv) in per_seed.iter().filter(|(seed, _, _)| *seed < run) {
        for p in inv {
            *by_checker.entry(p.clone()).or_default() += 1;
        }
        for d in c {
            by_design.entry(*d).or_default().push(*seed);
        }
    }
    Detection::new(run, by_design, by_checker)
}

/// The scoreboard for every mutant (or one) on a `[swarm]` scenario, each mutant's witness
/// scenario loaded from `dir` (or the built-in scenarios); `on_row` sees each row as it is
/// done.
#[allow(clippy::too_many_arguments)]
pub fn score(
    s: &Scenario,
    dir: &std::path::Path,
    only: Option<&str>,
    seeds: u64,
    want: usize,
    jobs: usize,
    explore: ExploreColumns,
    on_row: &mut dyn FnMut(&MutantRow),
) -> anyhow::Result<Vec<MutantRow>> {
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
        let explored = |mode| {
            (explore.seeds > 0).then(|| {
                first_catch(
                    &swarm,
                    m,
                    &designs,
                    mode,
                    explore.seeds,
                    explore.budget,
                    &pool,
                )
            })
        };
        let witness = if explore.seeds > 0 {
            let ws = acp_chaos::scenario::resolve(dir, m.witness.scenario)?;
            Some(witness_catch(&ws, m, explore.budget, &pool))
        } else {
            None
        };
        let mut row = MutantRow {
            mutant: m.name,
            property: m.property,
            party: m.party,
            explore: explored(Mode::Exhaustive),
            lineage: explored(Mode::Lineage),
            guided: explored(Mode::Guided),
            witness,
            best: None,
            designs,
            swarm: sw,
            uniform: un,
        };
        row.best = best(&row, &s.name);
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// The correct models on the scenario's swarm seeds: every non-valid verdict that is not a
/// finding is a false positive (or a model bug).
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    /// Seeds run (each under every design of the scenario).
    pub seeds: u64,
    /// Designs run.
    pub designs: Vec<Design>,
    /// Violations and unknown verdicts: `summary.json` failure objects (`scenario`, `design`,
    /// `seed`, `property`, `status`, `party`, `rules`, `message`, `repro`, ...).
    pub violations: Vec<serde_json::Value>,
    /// The baseline campaign's report folder (its `summary.md` also holds the scoreboard).
    pub report: std::path::PathBuf,
}

/// Run the correct models on `seeds` swarm seeds of `s` under every design, as a campaign
/// named `name` reported into `out` (failures shrunk, as in any campaign), its `summary.md`
/// carrying `scoreboard`. Returns the baseline, the summary, and what could not be written
/// (the report is then missing, the verdicts are not).
pub fn baseline(
    s: &Scenario,
    seeds: u64,
    jobs: usize,
    name: &str,
    out: &std::path::Path,
    scoreboard: Option<String>,
) -> anyhow::Result<(Baseline, campaign::Summary, Option<String>)> {
    let mut swarm = s.clone();
    if let Some(sw) = swarm.swarm.as_mut() {
        sw.mix = Mix::Swarm;
    }
    let designs = s.agent.designs.clone();
    let spec = campaign::CampaignSpec {
        scenarios: vec![swarm],
        seed_start: 0,
        seeds,
        jobs,
        mutant: None,
        out: out.to_path_buf(),
        keep_per_property: 5,
        shrink: true,
        agent: None,
        check_determinism: false,
        name: name.to_string(),
        shard: None,
        progress: true,
        stop: None,
        regressions: Vec::new(),
    };
    let (summary, unwritten) = match campaign::run_with(&spec, |m| m.scoreboard = scoreboard) {
        Ok(m) => (m, None),
        Err(e) => match e.downcast::<campaign::ReportUnwritten>() {
            Ok(u) => (*u.summary, Some(u.what)),
            Err(e) => return Err(e),
        },
    };
    Ok((
        Baseline {
            seeds,
            designs,
            violations: summary.failures.clone(),
            report: out.to_path_buf(),
        },
        summary,
        unwritten,
    ))
}

/// The mutant × checker view: per mutant, the share of swarm seeds run on which each checker
/// was invalid (a `*` marks the property the mutant names).
pub fn checker_table(rows: &[MutantRow]) -> String {
    let mut props: Vec<String> = rows
        .iter()
        .flat_map(|r| r.swarm.by_checker.keys().cloned())
        .chain(rows.iter().map(|r| r.property.to_string()))
        .collect();
    // By number, then name: P4 and X4 share a number, and `dedup` only drops neighbours.
    props.sort_by(|a, b| {
        let n = |p: &String| p[1..].parse::<u32>().unwrap_or(0);
        n(a).cmp(&n(b)).then_with(|| a.cmp(b))
    });
    props.dedup();
    let mut out = format!("{:<32}", "mutant \\ checker");
    for p in &props {
        out.push_str(&format!(" {p:>6}"));
    }
    out.push('\n');
    for r in rows {
        out.push_str(&format!("{:<32}", r.mutant));
        for p in &props {
            let n = r.swarm.by_checker.get(p).copied().unwrap_or(0);
            let own = r.property == *p;
            let cell = if r.swarm.seeds == 0 || (n == 0 && !own) {
                ".".to_string()
            } else {
                // A finding-level mutant's own catches are findings, not invalid verdicts.
                let n = if own {
                    n.max(r.swarm.caught.len() as u64)
                } else {
                    n
                };
                let pct = 100.0 * n as f64 / r.swarm.seeds as f64;
                if n > 0 && pct < 1.0 {
                    format!("{pct:.1}%")
                } else {
                    format!("{pct:.0}%")
                }
            };
            let cell = if own { format!("{cell}*") } else { cell };
            out.push_str(&format!(" {cell:>6}"));
        }
        out.push('\n');
    }
    out
}

/// The width of an exploring cell: the median (with `.5` when the base seeds are even), then
/// each base seed's runs in brackets ([`first_catch_cell`]); at least the column's name.
fn explore_width(cols: ExploreColumns) -> usize {
    let n = cols.seeds as usize;
    let d = cols.budget.max(1).to_string().len();
    let median = d + if n.is_multiple_of(2) { 2 } else { 0 };
    (median + 2 + n * d + n.saturating_sub(1) + 1).max("explore".len())
}

/// The width of the witness cell: the budget's runs and the mode's letter (`300 l`); at least
/// the column's name.
fn witness_width(cols: ExploreColumns) -> usize {
    (cols.budget.max(1).to_string().len() + 2).max("witness".len())
}

/// A row's line (the header's too): the swarm and uniform columns, then the exploring ones
/// and the witness column unless `cols.seeds` is 0.
fn line(cols: ExploreColumns, cells: [&str; 10]) -> String {
    let mut out = format!(
        "{:<32} {:<5} {:<13} {:>16} {:>16} {:>8}",
        cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]
    );
    if cols.seeds > 0 {
        let w = explore_width(cols);
        for c in &cells[6..9] {
            out.push_str(&format!(" {c:>w$}"));
        }
        let w = witness_width(cols);
        out.push_str(&format!(" {:>w$}", cells[9]));
    }
    out.push('\n');
    out
}

/// The unit every column counts, one line (above the table's column names, and the first line
/// of [`legend`]).
pub const UNIT: &str = "unit: runs of one design, up to and including the first that catches the mutant; each cell the fewest over the designs the mutant applies to, median over start seeds";

/// What the witness column counts, after [`UNIT`] on the header's first line (with the
/// exploring columns).
pub const WITNESS_UNIT: &str = "; witness: on the mutant's own witness scenario, design and seed (one run each, no fewest, no median), x exhaustive, l lineage";

/// The table's header: the unit ([`UNIT`], and [`WITNESS_UNIT`] with the exploring columns)
/// and the column names.
pub fn header(cols: ExploreColumns) -> String {
    let witness = if cols.seeds > 0 { WITNESS_UNIT } else { "" };
    format!(
        "{UNIT}{witness}\n{}",
        line(
            cols,
            [
                "mutant", "prop", "party", "swarm", "uniform", "ratio", "explore", "lineage",
                "guided", "witness"
            ]
        )
    )
}

/// What the table's cells say, under it: the unit and how each column gets it.
pub fn legend(cols: ExploreColumns) -> String {
    let mut out = format!(
        "{UNIT} (a catch: a verdict on the mutant's property, invalid, naming its party)\n"
    );
    out.push_str("swarm, uniform: start seeds = every seed run, wrapping around; the fewest over the designs from a start seed is the seeds up to the first that catches it on some design, so the same number counts seeds that each run every design; (catches/seeds run): seeds that caught it on some design / seeds run; ratio: uniform / swarm\n");
    if cols.seeds > 0 {
        out.push_str(&format!("explore, lineage, guided: start seeds = base seeds 0..{}, each one's fewest in brackets (-: not within {} runs on any design; the fault-free trace's run counts as one); explore places every fault of at most 2 over the trace in order, lineage cuts what each good outcome depended on, guided steers the swarm by coverage\n", cols.seeds, cols.budget));
        out.push_str(&format!("witness: runs to the first catch on the mutant's witness scenario (the registry's; --json names it) under its witness design from its one base seed (the registry's witness seed; a trace without what the mutant needs passed over for seed+1, seed+2, ...), exploring exhaustively (at most 2 faults, in order) and lineage-driven, at most {} runs each: the fewer of the two and its mode, x exhaustive, l lineage (exhaustive on a tie; -: neither within {} runs); one design and one seed, so no fewest and no median\n", cols.budget, cols.budget));
    }
    out.push_str(
        "each design's own catches and medians: --json (by_design, design_medians, per_design)\n",
    );
    out
}

/// A swarm or uniform cell: the median, then (catches/seeds run).
fn detection_cell(d: &Detection) -> String {
    match d.median {
        Some(m) => format!("{m} ({}/{})", d.caught.len(), d.seeds),
        None => format!("- (0/{})", d.seeds),
    }
}

/// An exploring cell: the median over the base seeds, then each base seed's runs in brackets
/// (`-`: not within the budget), e.g. `8 [8,9,7]`.
pub fn first_catch_cell(f: &FirstCatch) -> String {
    let runs = |r: &Option<usize>| r.map_or("-".to_string(), |r| r.to_string());
    let seeds: Vec<String> = f.per_seed.iter().map(runs).collect();
    let median = f.median.map_or("-".to_string(), |m| m.to_string());
    format!("{median} [{}]", seeds.join(","))
}

/// The scoreboard's rows as table lines (after [`header`] with the same `cols`).
pub fn table(rows: &[MutantRow], cols: ExploreColumns) -> String {
    let mut out = String::new();
    let explored = |f: &Option<FirstCatch>| f.as_ref().map_or(String::new(), first_catch_cell);
    for r in rows {
        let party = format!("{:?}", r.party).to_lowercase();
        let ratio = r.ratio().map_or("-".to_string(), |x| format!("{x:.2}"));
        let (sw, un) = (detection_cell(&r.swarm), detection_cell(&r.uniform));
        let (ex, li, gu) = (
            explored(&r.explore),
            explored(&r.lineage),
            explored(&r.guided),
        );
        let wi = r.witness.as_ref().map_or(String::new(), witness_cell);
        out.push_str(&line(
            cols,
            [
                r.mutant,
                &r.property.to_string(),
                &party,
                &sw,
                &un,
                &ratio,
                &ex,
                &li,
                &gu,
                &wi,
            ],
        ));
    }
    out
}

/// A witness cell: the fewer runs of the two modes and the mode's letter (`1 x`: exhaustive,
/// `9 l`: lineage), `-` when neither caught it within the budget.
pub fn witness_cell(w: &WitnessCatch) -> String {
    match w.best() {
        Some((Mode::Exhaustive, n)) => format!("{n} x"),
        Some((Mode::Lineage, n)) => format!("{n} l"),
        Some((Mode::Guided, n)) => format!("{n} g"),
        None => "-".to_string(),
    }
}

/// A row's fastest column ([`best`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Best {
    /// The column: `swarm`, `uniform`, `explore`, `lineage`, `guided` or `witness`.
    pub column: &'static str,
    /// The mode that caught it: `swarm`, `uniform`, `exhaustive`, `lineage` or `guided`.
    pub mode: &'static str,
    /// The scenario it ran on: the scoreboard's, or the mutant's witness scenario.
    pub scenario: String,
    /// The column's runs: a median over start seeds, or the witness column's one seed's runs.
    pub runs: f64,
}

/// Runs a row's best column must not exceed for the mutant to count as caught in the summary
/// line ([`best_lines`]).
pub const WITHIN: f64 = 20.0;

/// A row's fastest column: the fewest runs over its cells (swarm, uniform, explore, lineage,
/// guided on `scenario`, the scoreboard's; witness on the mutant's witness scenario), the
/// first in that order on a tie. `None`: no column caught it.
pub fn best(r: &MutantRow, scenario: &str) -> Option<Best> {
    let here = |column, mode, runs: Option<f64>| {
        runs.map(|runs| Best {
            column,
            mode,
            scenario: scenario.to_string(),
            runs,
        })
    };
    let explored = |f: &Option<FirstCatch>| f.as_ref().and_then(|f| f.median);
    let witness = r.witness.as_ref().and_then(|w| {
        let (mode, n) = w.best()?;
        Some(Best {
            column: "witness",
            mode: match mode {
                Mode::Exhaustive => "exhaustive",
                Mode::Lineage => "lineage",
                Mode::Guided => "guided",
            },
            scenario: w.scenario.to_string(),
            runs: n as f64,
        })
    });
    [
        here("swarm", "swarm", r.swarm.median),
        here("uniform", "uniform", r.uniform.median),
        here("explore", "exhaustive", explored(&r.explore)),
        here("lineage", "lineage", explored(&r.lineage)),
        here("guided", "guided", explored(&r.guided)),
        witness,
    ]
    .into_iter()
    .flatten()
    .fold(None, |b: Option<Best>, c| match b {
        Some(b) if b.runs <= c.runs => Some(b),
        _ => Some(c),
    })
}

/// Under the table: each row's fastest column ([`MutantRow::best`]: its runs, mode, scenario
/// and column), then how many rows it catches in at most [`WITHIN`] runs.
pub fn best_lines(rows: &[MutantRow]) -> String {
    let mut out = String::from(
        "best: each mutant's fewest runs over its columns (the column's cell: a median, or the witness column's one seed), the mode and the scenario it ran on\n",
    );
    for r in rows {
        match &r.best {
            Some(b) => out.push_str(&format!(
                "  {:<32} {:>7} {:<10} {} ({})\n",
                r.mutant, b.runs, b.mode, b.scenario, b.column
            )),
            None => out.push_str(&format!("  {:<32} {:>7}\n", r.mutant, "-")),
        }
    }
    let within: Vec<&MutantRow> = rows
        .iter()
        .filter(|r| r.best.as_ref().is_some_and(|b| b.runs <= WITHIN))
        .collect();
    out.push_str(&format!(
        "{} of {} mutants caught in <= {WITHIN} runs by some mode\n",
        within.len(),
        rows.len()
    ));
    let beyond: Vec<&str> = rows
        .iter()
        .filter(|r| !within.iter().any(|w| w.mutant == r.mutant))
        .map(|r| r.mutant)
        .collect();
    if !beyond.is_empty() {
        out.push_str(&format!(
            "not in <= {WITHIN} runs by any mode: {}\n",
            beyond.join(", ")
        ));
    }
    out
}
