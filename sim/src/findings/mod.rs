//! Findings on the spec: what the correct models do where the rules leave a choice (a MAY), say
//! nothing, or have a consequence a spec editor should see, measured over seeded runs
//! (`acp-chaos findings`; the page is `docs/findings/spec.md`).
//!
//! - [`measure`]: runs a scenario's seeds under every design and folds each history into
//!   per-claim counters ([`Claim`]), keeping the shortest run that shows each claim (its
//!   witness: the fewest ops, then the first design, then the lowest seed).
//! - [`page`]: the Markdown page, each claim with its figures, the command that measures them,
//!   the witness's replay line and sequence diagram, and a suggested wording.
//!
//! Everything is a pure function of the scenario, the seeds and the designs: the page is the
//! same bytes on every machine and with any `--jobs`.

pub mod page;

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::checkers::{agent_view, Status};
use crate::history::{op, process, History};
use crate::models::Design;
use crate::scenario::Scenario;

/// The claims measured, in page order: (id, the rule ids it is about).
pub const CLAIMS: [(&str, &[&str]); 6] = [
    ("stop-withdraws-earlier", &["A6", "C8"]),
    ("cancel-request-effect", &["A5"]),
    ("stop-reaches-other-nodes", &["A6", "A13"]),
    ("forgotten-keys", &["A11", "A16"]),
    ("connection-ends-mid-work", &["X3"]),
    ("resend-before-acceptance", &["X5"]),
];

/// Every counter, in the order the page lists them: each total, then the rows that break it
/// down (which add up to it).
pub const ORDER: &[&str] = &[
    "stops pressed",
    "queued prompts withdrawn by a stop",
    "of them, shown to the user as withdrawn by its user",
    "of them, acknowledged anyway (another attempt inserted)",
    "of them, shown to the user as failed",
    "of them, no outcome at the Client (a probe, or still pending)",
    "user cancels",
    "ended acknowledged: inserted, the cancel had no effect",
    "ended withdrawn: the Agent answered -32800",
    "ended withdrawn before any attempt was sent",
    "ended before the cancel (nothing left to cancel)",
    "ended shown to the user as failed",
    "still pending at the end",
    "held prompts withdrawn on another node than the one that read the stop",
    "runs with a second insertion the rules allow",
    "turns running when their connection ended",
    "of the turns, cancelled (O2 cancel)",
    "of the turns, ran to their end (O2 continue)",
    "of the turns, still running when the run ended, or lost in a crash",
    "prompts held when their connection ended",
    "of the held, kept and inserted after the end (O1 keep)",
    "of the held, dropped unanswered (O1 drop)",
    "of the held, withdrawn by a cancel or close, or still held when the run ended",
    "requests resent on the same connection after a not-accepted failure (X5)",
    "of them, prompts that ended acknowledged",
    "of them, prompts that ended withdrawn",
    "of them, prompts that ended shown to the user as failed",
    "of them, prompts still pending at the end",
    "of them, not a prompt",
];

/// The shortest run that shows a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Witness {
    /// Ops in the run (the first sort key).
    pub ops: usize,
    /// Index of the design in the measured order.
    pub design_index: usize,
    /// Seed.
    pub seed: u64,
    /// The two ops that show it (highlighted in the diagram).
    pub at: (usize, usize),
}

/// One claim's counters (name → count, in name order) and its shortest witness.
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

    /// The counters in the page's order ([`ORDER`]: each total, then its breakdown).
    pub fn ordered(&self) -> Vec<(&'static str, u64)> {
        let rank = |k: &str| ORDER.iter().position(|o| *o == k).unwrap_or(ORDER.len());
        let mut v: Vec<(&'static str, u64)> = self.counts.iter().map(|(k, n)| (*k, *n)).collect();
        v.sort_by_key(|(k, _)| (rank(k), *k));
        v
    }

    /// A counter (0 when never counted).
    pub fn get(&self, counter: &str) -> u64 {
        self.counts.get(counter).copied().unwrap_or(0)
    }

    fn merge(&mut self, o: Claim) {
        for (k, v) in o.counts {
            self.add(k, v);
        }
        self.witness = match (self.witness, o.witness) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// What [`measure`] found: the claims by id, over `runs` runs.
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
    /// Runs (seeds × designs).
    pub runs: u64,
    /// Claim id → counters and witness.
    pub claims: BTreeMap<&'static str, Claim>,
}

/// Run seeds `0..seeds` of `s` under each of its designs on the correct models, on `jobs`
/// threads, and fold every history into the claims.
///
/// Errors: only the thread pool's (the runs themselves cannot fail).
pub fn measure(s: &Scenario, seeds: u64, jobs: usize) -> anyhow::Result<Measured> {
    let designs: Vec<Design> = s.agent.designs.clone();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()?;
    let cells: Vec<(usize, u64)> = (0..designs.len())
        .flat_map(|d| (0..seeds).map(move |seed| (d, seed)))
        .collect();
    let per_run: Vec<BTreeMap<&'static str, Claim>> = pool.install(|| {
        cells
            .par_iter()
            .map(|&(d, seed)| {
                let (h, r) = crate::run::run_one(s, seed, None, designs[d]);
                let forgotten = r
                    .verdicts
                    .iter()
                    .filter(|v| {
                        v.status == Status::Finding && ["P1", "P12"].contains(&v.property.as_str())
                    })
                    .map(|v| {
                        (
                            v.witnesses.first().copied().unwrap_or(0),
                            v.witnesses.last().copied().unwrap_or(0),
                        )
                    })
                    .collect::<Vec<_>>();
                observe(&h, &forgotten, d, seed)
            })
            .collect()
    });
    let mut claims: BTreeMap<&'static str, Claim> = CLAIMS
        .iter()
        .map(|(id, _)| (*id, Claim::default()))
        .collect();
    for run in per_run {
        for (id, c) in run {
            claims.entry(id).or_default().merge(c);
        }
    }
    Ok(Measured {
        retention: None,
        scenario: s.name.clone(),
        seeds,
        runs: seeds * designs.len() as u64,
        designs,
        claims,
    })
}

/// One run's contribution to each claim. `forgotten`: the witnesses (first, last) of its P1
/// and P12 findings.
fn observe(
    h: &History,
    forgotten: &[(usize, usize)],
    design_index: usize,
    seed: u64,
) -> BTreeMap<&'static str, Claim> {
    let h = agent_view(h);
    let ops = h.ops.len();
    let witness = |at| Witness {
        ops,
        design_index,
        seed,
        at,
    };
    let mut out: BTreeMap<&'static str, Claim> = BTreeMap::new();
    // The Client's attempts, (conn, id) → submission; each submission's last outcome.
    let mut submission_of: BTreeMap<(u64, String), u64> = BTreeMap::new();
    let mut outcome: BTreeMap<u64, (&'static str, usize)> = BTreeMap::new();
    let mut last_stop: Option<usize> = None;
    // X3: each insertion's connection, running turns by messageId, prompts held by attempt;
    // at the Agent's end of a connection, what was running or held on it, to see how it ended.
    let mut conn_of_message: BTreeMap<String, u64> = BTreeMap::new();
    let mut running: BTreeMap<String, u64> = BTreeMap::new();
    let mut held: BTreeMap<(u64, String), usize> = BTreeMap::new();
    let mut cut_turns: BTreeMap<String, usize> = BTreeMap::new();
    let mut cut_held: BTreeMap<(u64, String), usize> = BTreeMap::new();
    let mut resent: Vec<((u64, String), usize)> = Vec::new();
    let mut cancels: Vec<(u64, usize)> = Vec::new();
    let mut by_stop: Vec<((u64, String), usize, Option<usize>)> = Vec::new();
    for o in &h.ops {
        let v = &o.value;
        let attempt = || (v["conn"].as_u64().unwrap_or(0), v["id"].to_string());
        match (o.process.as_str(), o.f.as_str()) {
            (process::CLIENT, op::ATTEMPT) => {
                if let Some(n) = v["submission"].as_u64() {
                    submission_of.insert(attempt(), n);
                }
            }
            // A proxy rewrote the attempt's id on its own connection to the Agent.
            (process::PROXY, op::FORWARD) if v["method"] == "session/prompt" => {
                let up = (v["up_conn"].as_u64().unwrap_or(0), v["up_id"].to_string());
                if let Some(&n) = submission_of.get(&up) {
                    let down = (
                        v["down_conn"].as_u64().unwrap_or(0),
                        v["down_id"].to_string(),
                    );
                    submission_of.insert(down, n);
                }
            }
            (process::CLIENT, f @ (op::ACK | op::SURFACE | op::WITHDRAWN)) => {
                if let Some(n) = v["submission"].as_u64() {
                    let what = match f {
                        op::ACK => "acknowledged",
                        op::SURFACE => "surfaced",
                        _ if v["local"] == true => "withdrawn before it was sent",
                        _ => "withdrawn",
                    };
                    outcome.insert(n, (what, o.index));
                }
            }
            (process::USER, op::STOP) => {
                out.entry("stop-withdraws-earlier")
                    .or_default()
                    .add("stops pressed", 1);
                last_stop = Some(o.index);
            }
            (process::USER, op::CANCEL) => {
                if let Some(n) = v["submission"].as_u64() {
                    cancels.push((n, o.index));
                }
            }
            (process::AGENT, op::INSERT) => {
                if let (Some(m), Some(c)) = (v["messageId"].as_str(), v["conn"].as_u64()) {
                    conn_of_message.insert(m.to_string(), c);
                }
                if let Some(at) = cut_held.remove(&attempt()) {
                    let c = out.entry("connection-ends-mid-work").or_default();
                    c.add("of the held, kept and inserted after the end (O1 keep)", 1);
                    c.witness.get_or_insert(witness((at, o.index)));
                }
                held.remove(&attempt());
            }
            // A restart ends what the process was running or holding.
            (process::AGENT, op::RECOVER) if o.value["renamed_from"] != "store" => {
                running.clear();
                held.clear();
            }
            (process::AGENT, op::TURN_START) => {
                if let Some(m) = v["messageId"].as_str() {
                    if let Some(&c) = conn_of_message.get(m) {
                        running.insert(m.to_string(), c);
                    }
                }
            }
            (process::AGENT, op::TURN_END) => {
                let m = v["messageId"].as_str().unwrap_or_default();
                running.remove(m);
                if cut_turns.remove(m).is_some() {
                    let c = out.entry("connection-ends-mid-work").or_default();
                    c.add(
                        if v["stopReason"] == "cancelled" {
                            "of the turns, cancelled (O2 cancel)"
                        } else {
                            "of the turns, ran to their end (O2 continue)"
                        },
                        1,
                    );
                }
            }
            (process::AGENT, op::HOLD) => {
                held.insert(attempt(), o.index);
            }
            (process::AGENT, op::RELEASE) => {
                held.remove(&attempt());
            }
            (process::AGENT, op::DROP_HELD) => {
                held.remove(&attempt());
                if cut_held.remove(&attempt()).is_some() {
                    out.entry("connection-ends-mid-work")
                        .or_default()
                        .add("of the held, dropped unanswered (O1 drop)", 1);
                }
            }
            (process::AGENT, "conn-end") => {
                let conn = v["conn"].as_u64().unwrap_or(0);
                let c = out.entry("connection-ends-mid-work").or_default();
                for (m, _) in running.iter().filter(|(_, c)| **c == conn) {
                    if cut_turns.insert(m.clone(), o.index).is_none() {
                        c.add("turns running when their connection ended", 1);
                    }
                }
                for (a, _) in held.iter().filter(|(a, _)| a.0 == conn) {
                    if cut_held.insert(a.clone(), o.index).is_none() {
                        c.add("prompts held when their connection ended", 1);
                    }
                }
            }
            (process::CLIENT, op::RESEND_NOT_ACCEPTED) => resent.push((attempt(), o.index)),
            (process::AGENT, op::WITHDRAW) => {
                match v["by"].as_str() {
                    Some("session/cancel") => by_stop.push((attempt(), o.index, last_stop)),
                    Some("stop") => {
                        by_stop.push((attempt(), o.index, last_stop));
                        let c = out.entry("stop-reaches-other-nodes").or_default();
                        c.add("held prompts withdrawn on another node than the one that read the stop", 1);
                        c.witness = Some(witness((last_stop.unwrap_or(o.index), o.index)));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if !cut_turns.is_empty() || !cut_held.is_empty() {
        let c = out.entry("connection-ends-mid-work").or_default();
        if !cut_turns.is_empty() {
            c.add(
                "of the turns, still running when the run ended, or lost in a crash",
                cut_turns.len() as u64,
            );
        }
        if !cut_held.is_empty() {
            c.add(
                "of the held, withdrawn by a cancel or close, or still held when the run ended",
                cut_held.len() as u64,
            );
        }
    }
    for (a, at, stop) in by_stop {
        let c = out.entry("stop-withdraws-earlier").or_default();
        c.add("queued prompts withdrawn by a stop", 1);
        let what = submission_of
            .get(&a)
            .and_then(|n| outcome.get(n))
            .map(|(w, _)| *w)
            .unwrap_or("");
        c.add(
            match what {
                "withdrawn" => "of them, shown to the user as withdrawn by its user",
                "acknowledged" => "of them, acknowledged anyway (another attempt inserted)",
                "surfaced" => "of them, shown to the user as failed",
                _ => "of them, no outcome at the Client (a probe, or still pending)",
            },
            1,
        );
        c.witness.get_or_insert(witness((stop.unwrap_or(at), at)));
    }
    for (n, at) in cancels {
        let c = out.entry("cancel-request-effect").or_default();
        c.add("user cancels", 1);
        let (what, end) = outcome.get(&n).copied().unwrap_or(("pending", at));
        c.add(
            match what {
                _ if end < at => "ended before the cancel (nothing left to cancel)",
                "acknowledged" => "ended acknowledged: inserted, the cancel had no effect",
                "withdrawn" => "ended withdrawn: the Agent answered -32800",
                "withdrawn before it was sent" => "ended withdrawn before any attempt was sent",
                "surfaced" => "ended shown to the user as failed",
                _ => "still pending at the end",
            },
            1,
        );
        if what == "acknowledged" && end > at {
            c.witness.get_or_insert(witness((at, end)));
        }
    }
    for (a, at) in resent {
        let c = out.entry("resend-before-acceptance").or_default();
        c.add(
            "requests resent on the same connection after a not-accepted failure (X5)",
            1,
        );
        let Some(&n) = submission_of.get(&a) else {
            c.add("of them, not a prompt", 1);
            continue;
        };
        let (what, end) = outcome.get(&n).copied().unwrap_or(("pending", at));
        c.add(
            match what {
                "acknowledged" => "of them, prompts that ended acknowledged",
                "surfaced" => "of them, prompts that ended shown to the user as failed",
                "pending" => "of them, prompts still pending at the end",
                _ => "of them, prompts that ended withdrawn",
            },
            1,
        );
        if what == "acknowledged" {
            c.witness.get_or_insert(witness((at, end)));
        }
    }
    if let Some(&(first, last)) = forgotten.first() {
        let c = out.entry("forgotten-keys").or_default();
        c.add("runs with a second insertion the rules allow", 1);
        c.witness = Some(witness((first, last)));
    }
    out
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
                let (h, res) = crate::run::run_one(&cs, seed, None, design);
                let dup = res
                    .verdicts
                    .iter()
                    .find(|v| v.property == "P1" && v.status == Status::Finding);
                let cell = RetentionCell {
                    submissions: res.classes.values().map(|n| u64::from(*n)).sum(),
                    duplicates: res
                        .classes
                        .get(&crate::checkers::SubmissionClass::Reinserted)
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
                    at: (
                        v.witnesses.first().copied().unwrap_or(0),
                        v.witnesses.last().copied().unwrap_or(0),
                    ),
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
