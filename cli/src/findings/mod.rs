//! Findings on the spec: what the correct models do where the rules leave a choice (a MAY), say
//! nothing, or have a consequence a spec editor should see, measured over seeded runs
//! (`acp-chaos findings`; the pages are `docs/findings/spec.md` and the generated part of
//! `docs/findings/retry-classes.md`).
//!
//! - [`measure`]: runs a scenario's seeds under every design (its raw probes left out: every
//!   stop and prompt is a user's), folds each history into per-claim counters ([`Claim`],
//!   each row with the row it is counted out of, [`ROWS`]), keeps the shortest run that shows
//!   each claim's statement, and counts the runs' violations; A5's MAY is measured twice, with
//!   an Agent that honours `$/cancel_request` and one that ignores it;
//! - [`witness`]: each claim's shortest run, shrunk to the fewest faults and submissions that
//!   still show the statement, written as a schedule file, and drawn cut to the ops it names;
//! - [`matrix`]: what the retry-class matrix shows a spec editor, and the generated part of
//!   the retry-classes page;
//! - [`page`]: the Markdown page.
//!
//! Everything is a pure function of the scenario, the seeds and the designs: the page is the
//! same bytes on every machine and with any `--jobs` (a test regenerates it).

pub mod matrix;
mod observe;
pub mod page;
pub mod witness;

use std::collections::BTreeMap;

use rayon::prelude::*;

use acp_chaos::checkers::Status;
use acp_chaos::history::{op, process};
use acp_chaos::models::{CancelRequest, Design};
use acp_chaos::plan::Plan;
use acp_chaos::scenario::Scenario;

/// The claims measured, in page order: (id, the rule ids it is about).
pub const CLAIMS: [(&str, &[&str]); 8] = [
    ("stop-withdraws-earlier", &["A6", "C8"]),
    ("cancel-request-effect", &["A5"]),
    ("stop-reaches-other-nodes", &["A6", "A13"]),
    ("forgotten-keys", &["A11", "A16"]),
    ("connection-ends-mid-work", &["X3"]),
    ("resend-before-acceptance", &["X5"]),
    ("late-copy-undoes-next-op", &["R1"]),
    ("unkeyed-held-prompt-twice", &["C9", "K1"]),
];

/// Every claim with the rule ids it is about: [`CLAIMS`], then [`RETENTION_CLAIM`] (the rules
/// table of `acp-chaos list rules` names them beside each rule).
pub fn claims() -> Vec<(&'static str, &'static [&'static str])> {
    CLAIMS.into_iter().chain([RETENTION_CLAIM]).collect()
}

/// What a count is counted out of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Of {
    /// Every run measured.
    Runs,
    /// The runs of one design.
    Design(Design),
    /// Another row of the same claim.
    Row(&'static str),
    /// Nothing: a total of its own (e.g. submissions, the denominator of rows below).
    Total,
}

/// Every row of every claim, in page order: (claim, row, what it is counted out of).
pub const ROWS: &[(&str, &str, Of)] = &[
    ("stop-withdraws-earlier", "user stops", Of::Runs),
    (
        "stop-withdraws-earlier",
        "user stops the Client wrote as session/cancel",
        Of::Row("user stops"),
    ),
    (
        "stop-withdraws-earlier",
        "of them, read by the Agent while a prompt of the session was held",
        Of::Row("user stops the Client wrote as session/cancel"),
    ),
    (
        "stop-withdraws-earlier",
        "queued prompts those stops withdrew",
        Of::Total,
    ),
    (
        "stop-withdraws-earlier",
        "of the withdrawn, shown to the user as withdrawn by its user",
        Of::Row("queued prompts those stops withdrew"),
    ),
    (
        "stop-withdraws-earlier",
        "of the withdrawn, acknowledged anyway (another attempt inserted)",
        Of::Row("queued prompts those stops withdrew"),
    ),
    (
        "stop-withdraws-earlier",
        "of the withdrawn, shown to the user as failed",
        Of::Row("queued prompts those stops withdrew"),
    ),
    (
        "stop-withdraws-earlier",
        "of the withdrawn, still pending at the end",
        Of::Row("queued prompts those stops withdrew"),
    ),
    (
        "cancel-request-effect",
        "user cancels of a submission",
        Of::Runs,
    ),
    (
        "cancel-request-effect",
        "of them, written as $/cancel_request",
        Of::Row("user cancels of a submission"),
    ),
    (
        "cancel-request-effect",
        "of those, read by the Agent while the prompt they name was held",
        Of::Row("of them, written as $/cancel_request"),
    ),
    (
        "cancel-request-effect",
        "of the held, withdrawn (-32800, nothing inserted)",
        Of::Row("of those, read by the Agent while the prompt they name was held"),
    ),
    (
        "cancel-request-effect",
        "of the held, inserted in turn and answered with its messageId",
        Of::Row("of those, read by the Agent while the prompt they name was held"),
    ),
    (
        "cancel-request-effect",
        "of the held, neither (a crash or a close first)",
        Of::Row("of those, read by the Agent while the prompt they name was held"),
    ),
    (
        "stop-reaches-other-nodes",
        "stops recorded at the store",
        Of::Design(Design::Cluster),
    ),
    (
        "stop-reaches-other-nodes",
        "held prompts withdrawn on another node than the one that read the stop",
        Of::Row("stops recorded at the store"),
    ),
    (
        "forgotten-keys",
        "runs with a second insertion the rules allow",
        Of::Runs,
    ),
    ("forgotten-keys", "submissions", Of::Total),
    (
        "forgotten-keys",
        "submissions inserted a second time, as the rules allow",
        Of::Row("submissions"),
    ),
    (
        "connection-ends-mid-work",
        "connections the Agent saw end",
        Of::Runs,
    ),
    (
        "connection-ends-mid-work",
        "turns running when their connection ended",
        Of::Row("connections the Agent saw end"),
    ),
    (
        "connection-ends-mid-work",
        "of the turns, under O2 cancel",
        Of::Row("turns running when their connection ended"),
    ),
    (
        "connection-ends-mid-work",
        "of the turns, under O2 continue",
        Of::Row("turns running when their connection ended"),
    ),
    (
        "connection-ends-mid-work",
        "of the turns, cancelled",
        Of::Row("turns running when their connection ended"),
    ),
    (
        "connection-ends-mid-work",
        "of the turns, ran to their end",
        Of::Row("turns running when their connection ended"),
    ),
    (
        "connection-ends-mid-work",
        "of the turns, still running at the end, or lost in a crash",
        Of::Row("turns running when their connection ended"),
    ),
    (
        "connection-ends-mid-work",
        "prompts held when their connection ended",
        Of::Row("connections the Agent saw end"),
    ),
    (
        "connection-ends-mid-work",
        "of the held, under O1 keep",
        Of::Row("prompts held when their connection ended"),
    ),
    (
        "connection-ends-mid-work",
        "of the held, under O1 drop",
        Of::Row("prompts held when their connection ended"),
    ),
    (
        "connection-ends-mid-work",
        "of the held, kept and inserted after the end",
        Of::Row("prompts held when their connection ended"),
    ),
    (
        "connection-ends-mid-work",
        "of the held, dropped unanswered",
        Of::Row("prompts held when their connection ended"),
    ),
    (
        "connection-ends-mid-work",
        "of the held, withdrawn by a cancel or close, or still held at the end",
        Of::Row("prompts held when their connection ended"),
    ),
    (
        "resend-before-acceptance",
        "requests the remote transport refused before acceptance",
        Of::Design(Design::Cluster),
    ),
    (
        "resend-before-acceptance",
        "of them, resent on the same connection (X5)",
        Of::Row("requests the remote transport refused before acceptance"),
    ),
    (
        "resend-before-acceptance",
        "of the resent, prompts that ended acknowledged",
        Of::Row("of them, resent on the same connection (X5)"),
    ),
    (
        "resend-before-acceptance",
        "of the resent, prompts that ended withdrawn",
        Of::Row("of them, resent on the same connection (X5)"),
    ),
    (
        "resend-before-acceptance",
        "of the resent, prompts that ended shown to the user as failed",
        Of::Row("of them, resent on the same connection (X5)"),
    ),
    (
        "resend-before-acceptance",
        "of the resent, prompts still pending at the end",
        Of::Row("of them, resent on the same connection (X5)"),
    ),
    (
        "resend-before-acceptance",
        "of the resent, not a prompt",
        Of::Row("of them, resent on the same connection (X5)"),
    ),
];

/// The shortest run that shows a claim's statement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Witness {
    /// Ops in the run (the first sort key).
    pub ops: usize,
    /// Index of the design in the measured order.
    pub design_index: usize,
    /// Seed.
    pub seed: u64,
    /// The ops that show the statement (what its diagram draws).
    pub named: Vec<usize>,
}

/// One claim's counters (row → count) and its shortest witness.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Claim {
    /// Counters.
    pub counts: BTreeMap<&'static str, u64>,
    /// The shortest run that shows it, if any did.
    pub witness: Option<Witness>,
}

impl Claim {
    fn add(&mut self, counter: &'static str, n: u64) {
        *self.counts.entry(counter).or_default() += n;
    }

    /// A counter (0 when never counted).
    pub fn get(&self, counter: &str) -> u64 {
        self.counts.get(counter).copied().unwrap_or(0)
    }

    fn merge(&mut self, o: Claim) {
        for (k, v) in o.counts {
            self.add(k, v);
        }
        self.witness = match (self.witness.take(), o.witness) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// One measurement of a scenario: the claims by id, over `runs` runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Measurement {
    /// Claim id → counters and witness.
    pub claims: BTreeMap<&'static str, Claim>,
    /// Runs made.
    pub runs: u64,
    /// Runs per design.
    pub runs_of: BTreeMap<Design, u64>,
    /// Invalid verdicts in those runs (the correct models: none expected).
    pub violations: u64,
    /// Unknown verdicts in those runs.
    pub unknown: u64,
}

/// What [`measure`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The retention table ([`measure_retention`]), when it was measured too.
    pub retention: Option<RetentionTable>,
    /// Scenario name.
    pub scenario: String,
    /// Seeds `0..seeds` per design.
    pub seeds: u64,
    /// Designs, in the order they ran.
    pub designs: Vec<Design>,
    /// Runs (seeds × designs) of the scenario as drawn, its Agent honouring
    /// `$/cancel_request`.
    pub runs: u64,
    /// Every claim, from those runs.
    pub main: Measurement,
    /// The same seeds with an Agent that takes A5's MAY and ignores `$/cancel_request`.
    pub ignoring: Measurement,
    /// The retry-class matrix's observations ([`matrix::Observed`]), when measured.
    pub matrix: Option<matrix::Observed>,
}

impl Measured {
    /// The claims of the main runs.
    pub fn claims(&self) -> &BTreeMap<&'static str, Claim> {
        &self.main.claims
    }
}

/// The plan a findings run makes for (`s`, `seed`, `design`): the scenario's, without its raw
/// probes (every stop and prompt a user's: a probe's `session/cancel` is not a stop anyone
/// pressed), and with A5's MAY as given.
pub fn plan_of(s: &Scenario, seed: u64, design: Design, cancel: CancelRequest) -> Plan {
    let mut p = Plan::derive(s, seed, None, design);
    p.raw.clear();
    p.agent.cancel_request = cancel;
    p
}

/// Run seeds `0..seeds` of `s` under each of its designs on the correct models, on `jobs`
/// threads, once with an Agent that honours `$/cancel_request` and once with one that
/// ignores it, and fold every history into the claims.
///
/// Errors: only the thread pool's (the runs themselves cannot fail).
pub fn measure(s: &Scenario, seeds: u64, jobs: usize) -> anyhow::Result<Measured> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()?;
    let designs: Vec<Design> = s.agent.designs.clone();
    let main = measure_with(s, seeds, &designs, CancelRequest::Honour, &pool);
    let ignoring = measure_with(s, seeds, &designs, CancelRequest::Ignore, &pool);
    Ok(Measured {
        retention: None,
        scenario: s.name.clone(),
        seeds,
        runs: seeds * designs.len() as u64,
        designs,
        main,
        ignoring,
        matrix: None,
    })
}

fn measure_with(
    s: &Scenario,
    seeds: u64,
    designs: &[Design],
    cancel: CancelRequest,
    pool: &rayon::ThreadPool,
) -> Measurement {
    let cells: Vec<(usize, u64)> = (0..designs.len())
        .flat_map(|d| (0..seeds).map(move |seed| (d, seed)))
        .collect();
    let per_run: Vec<(observe::Seen, u64, u64, usize)> = pool.install(|| {
        cells
            .par_iter()
            .map(|&(d, seed)| {
                let plan = plan_of(s, seed, designs[d], cancel);
                let h = acp_chaos::world::run(&plan);
                let r = acp_chaos::run::result_of(&s.name, designs[d], seed, &h);
                let count =
                    |st: Status| r.verdicts.iter().filter(|v| v.status == st).count() as u64;
                let seen = observe::observe(&h, &r.verdicts, &r.classes);
                (
                    seen,
                    count(Status::Invalid),
                    count(Status::Unknown),
                    h.ops.len(),
                )
            })
            .collect()
    });
    let mut m = Measurement::default();
    for (&(d, seed), (seen, invalid, unknown, ops)) in cells.iter().zip(per_run) {
        m.runs += 1;
        *m.runs_of.entry(designs[d]).or_default() += 1;
        m.violations += invalid;
        m.unknown += unknown;
        for (id, (mut c, named)) in seen {
            c.witness = named.map(|named| Witness {
                ops,
                design_index: d,
                seed,
                named,
            });
            m.claims.entry(id).or_default().merge(c);
        }
    }
    m
}

/// Everything `acp-chaos findings` writes, made in memory: the measurement, the findings page
/// with its witness schedule files, and the retry-classes page's generated block.
#[derive(Debug, Clone)]
pub struct Generated {
    /// What was measured.
    pub measured: Measured,
    /// The page and the witness files.
    pub rendered: page::Rendered,
    /// The block between the retry-classes page's markers ([`matrix::with_block`]).
    pub retry_classes: String,
}

/// Measure `scenario` (from `dir`, or the built-in scenarios) over seeds `0..seeds` per design,
/// the retention table (when `dir` has its scenario) and the retry-class matrix, on `jobs`
/// threads, and render the pages; `witnesses` is the folder the page's replay lines name for
/// the witness files. The same inputs give the same bytes on every machine.
///
/// Errors: a scenario that does not load; the thread pool's.
pub fn generate(
    dir: &std::path::Path,
    scenario: &str,
    seeds: u64,
    jobs: usize,
    witnesses: &str,
) -> anyhow::Result<Generated> {
    let s = acp_chaos::scenario::resolve(dir, scenario)?;
    let mut m = measure(&s, seeds, jobs)?;
    let rs = acp_chaos::scenario::resolve(dir, RETENTION_SCENARIO).ok();
    if let Some(rs) = &rs {
        m.retention = Some(measure_retention(rs, RETENTION_SEEDS, jobs)?);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()?;
    let mx = pool.install(|| {
        acp_chaos::retry_class::matrix::sweep(&acp_chaos::retry_class::matrix::Spec {
            seed_start: 0,
            seeds: matrix::SEEDS,
            mutant: None,
            mutant_name: None,
            only: None,
        })
    });
    m.matrix = Some(matrix::observe(&mx));
    let command = format!("acp-chaos findings {scenario} --seeds {seeds}");
    let rendered = page::markdown(&m, &s, rs.as_ref(), &command, witnesses);
    Ok(Generated {
        measured: m,
        rendered,
        retry_classes: matrix::retry_classes_md(&mx, matrix::COMMAND),
    })
}

/// The retention table's claim: (id, the rule ids it is about), listed beside [`CLAIMS`] by
/// `acp-chaos list rules`.
pub const RETENTION_CLAIM: (&str, &[&str]) = ("retention-window", &["A16", "C7"]);

/// The scenario the retention table is measured on (A16 against C7).
pub const RETENTION_SCENARIO: &str = "retention-01-resend-after-window";

/// Seeds per cell of the retention table (`0..N`).
pub const RETENTION_SEEDS: u64 = 100;

/// The retention table's rows, the Agent's retention: (label, design, window in simulated ms,
/// 0 for none).
pub const RETENTION_ROWS: [(&str, Design, u64); 6] = [
    ("durable (`stored`, no window)", Design::Stored, 0),
    (
        "process (`in-memory`, no window, no restart)",
        Design::InMemory,
        0,
    ),
    ("`stored`, window 250 ms", Design::Stored, 250),
    ("`stored`, window 500 ms", Design::Stored, 500),
    ("`stored`, window 1000 ms", Design::Stored, 1000),
    ("`stored`, window 2000 ms", Design::Stored, 2000),
];

/// The retention table's columns: the Client's staleness limit (`[client] stale_ms`, 0: none).
pub const STALE_COLUMNS: [u64; 5] = [0, 250, 500, 1000, 2000];

/// One cell of the retention table: what `seeds` runs of one (retention, staleness limit) did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionCell {
    /// Submissions in the cell's runs.
    pub submissions: u64,
    /// Submissions the Agent inserted a second time after it had let the first go (P1's A16
    /// findings: a discard, or a loss the retention allows).
    pub duplicates: u64,
    /// Submissions shown to the user instead of resent (C7: older than the staleness limit).
    pub stale_shown: u64,
    /// Runs with a violation (any property invalid): none is expected.
    pub invalid_runs: u64,
}

/// The retention table: duplicates against (Agent retention, Client staleness limit).
#[derive(Debug, Clone, PartialEq)]
pub struct RetentionTable {
    /// Scenario name.
    pub scenario: String,
    /// Seeds `0..seeds` per cell.
    pub seeds: u64,
    /// Cells, row by row ([`RETENTION_ROWS`] × [`STALE_COLUMNS`]).
    pub cells: Vec<Vec<RetentionCell>>,
    /// The shortest run of the scenario as written (its own window and staleness limit, design
    /// `stored`) with a second insertion, if its cell is in the table.
    pub witness: Option<Witness>,
}

/// Run seeds `0..seeds` of `s` (the retention scenario) for every cell of the retention table,
/// each with the cell's design, `[agent] retention_ms` and `[client] stale_ms` set over the
/// file's, on `jobs` threads.
///
/// Errors: only the thread pool's.
pub fn measure_retention(s: &Scenario, seeds: u64, jobs: usize) -> anyhow::Result<RetentionTable> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()?;
    let cells: Vec<(usize, usize, u64)> = (0..RETENTION_ROWS.len())
        .flat_map(|r| {
            (0..STALE_COLUMNS.len()).flat_map(move |c| (0..seeds).map(move |seed| (r, c, seed)))
        })
        .collect();
    let own = |r: usize, c: usize| {
        let (_, design, window) = RETENTION_ROWS[r];
        design == Design::Stored
            && window == s.agent.retention_ms
            && STALE_COLUMNS[c] == s.client.stale_ms
    };
    let runs: Vec<(usize, usize, RetentionCell, Option<Witness>)> = pool.install(|| {
        cells
            .par_iter()
            .map(|&(r, c, seed)| {
                let (_, design, window) = RETENTION_ROWS[r];
                let mut cs = s.clone();
                cs.agent.designs = vec![design];
                cs.agent.retention_ms = window;
                cs.client.stale_ms = STALE_COLUMNS[c];
                let (h, res) = acp_chaos::run::run_one(&cs, seed, None, design);
                let dup = res
                    .verdicts
                    .iter()
                    .find(|v| v.property == "P1" && v.status == Status::Finding);
                let cell = RetentionCell {
                    submissions: res.classes.values().map(|n| u64::from(*n)).sum(),
                    duplicates: res
                        .classes
                        .get(&acp_chaos::checkers::SubmissionClass::Reinserted)
                        .map_or(0, |n| u64::from(*n)),
                    stale_shown: h
                        .ops
                        .iter()
                        .filter(|o| {
                            o.process == process::CLIENT
                                && o.f == op::SURFACE
                                && o.value["error"]["reason"] == "stale"
                        })
                        .count() as u64,
                    invalid_runs: u64::from(
                        res.verdicts.iter().any(|v| v.status == Status::Invalid),
                    ),
                };
                let witness = dup.filter(|_| own(r, c)).map(|v| Witness {
                    ops: h.ops.len(),
                    design_index: r,
                    seed,
                    named: v.witnesses.clone(),
                });
                (r, c, cell, witness)
            })
            .collect()
    });
    let mut table = vec![vec![RetentionCell::default(); STALE_COLUMNS.len()]; RETENTION_ROWS.len()];
    let mut witness: Option<Witness> = None;
    for (r, c, cell, w) in runs {
        let t = &mut table[r][c];
        t.submissions += cell.submissions;
        t.duplicates += cell.duplicates;
        t.stale_shown += cell.stale_shown;
        t.invalid_runs += cell.invalid_runs;
        witness = match (witness, w) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    Ok(RetentionTable {
        scenario: s.name.clone(),
        seeds,
        cells: table,
        witness,
    })
}
