//! A probe's outcomes and report: one outcome per run, rates per trace × property, retry
//! commands, and the report folder (`summary.md`, `summary.json`, run folders).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use super::{properties, ProbeArgs};
use crate::probe::target::shell_quote;
use crate::probe::Target;
use acp_chaos::checkers::{Status, Verdict};
use acp_chaos::folders::write_atomic;
use acp_chaos::history::History;
use acp_chaos::models::{Party, Retention};

/// How an aborted run's undecided verdicts begin.
pub const INCOMPLETE: &str = "the trace did not complete: ";

/// One run's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct RunOutcome {
    /// Trace name.
    pub trace: String,
    /// Run index within the trace, from 0.
    pub run: u32,
    /// The kill delay of this run, if the trace kills.
    pub delay_ms: Option<u64>,
    /// The point it killed at (after which the delay ran), if the trace kills.
    pub kill_point: Option<String>,
    /// Wall time of the run, ms.
    pub wall_ms: u64,
    /// One verdict per reported property ([`PROPERTIES`]).
    pub verdicts: Vec<Verdict>,
    /// Why the trace stopped early, if it did.
    pub aborted: Option<String>,
    /// What never came, and other remarks.
    pub notes: Vec<String>,
    /// Timing windows aimed at: (name, hit).
    pub windows: Vec<(String, bool)>,
    /// Folder kept for this run (a failing one), relative to the report folder.
    pub folder: Option<String>,
    /// Number of ops in its history.
    pub ops: usize,
}

/// Counts of one trace × property.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TraceTally {
    /// Runs judged.
    pub runs: u32,
    /// Valid runs.
    pub valid: u32,
    /// Runs with a finding (valid otherwise).
    pub finding: u32,
    /// Runs where a MUST broke.
    pub invalid: u32,
    /// Runs that could not be decided.
    pub unknown: u32,
    /// Of the unknown runs, those where the check judged nothing (vacuous: e.g. no
    /// `session/resume` with replay was answered, so X4 had no resume to judge).
    pub vacuous: u32,
}

impl TraceTally {
    /// Count one run's verdict: a finding is also valid; an unknown that judged nothing is
    /// also vacuous.
    pub(super) fn count(&mut self, v: &Verdict) {
        self.runs += 1;
        match v.status {
            Status::Valid => self.valid += 1,
            Status::Finding => {
                self.valid += 1;
                self.finding += 1;
            }
            Status::Invalid => self.invalid += 1,
            Status::Unknown => {
                self.unknown += 1;
                if v.message
                    .starts_with(acp_chaos::checkers::black_box::VACUOUS)
                {
                    self.vacuous += 1;
                }
            }
        }
    }
}

/// One failing run × property, with its timing and the command that retries it.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// Trace.
    pub trace: String,
    /// Run index.
    pub run: u32,
    /// Kill delay of the run.
    pub delay_ms: Option<u64>,
    /// Kill point of the run.
    pub kill_point: Option<String>,
    /// The verdict.
    pub verdict: Verdict,
    /// Wall ms (since the run started) of its first witness op.
    pub at_ms: Option<u64>,
    /// Wall time of the run, ms.
    pub wall_ms: u64,
    /// Run folder, relative to the report folder.
    pub folder: Option<String>,
    /// A command that runs this trace again (same delay) to measure its rate.
    pub retry: String,
}

/// The probe's `summary.json` (format 1).
#[derive(Debug, Clone, Serialize)]
pub struct ProbeSummary {
    /// Format version.
    pub format: u32,
    /// Always false: a real process does not replay.
    pub deterministic: bool,
    /// The Agent's name.
    pub agent: String,
    /// The launch target.
    pub target: Target,
    /// Runs per trace.
    pub repeat: u32,
    /// Bound of every wait, ms.
    pub timeout_ms: u64,
    /// Traces run, in order.
    pub traces: Vec<String>,
    /// trace → property → counts.
    pub table: BTreeMap<String, BTreeMap<String, TraceTally>>,
    /// trace → window → (runs that hit it, runs).
    pub windows: BTreeMap<String, BTreeMap<String, (u32, u32)>>,
    /// trace → remark → runs it was made in.
    pub notes: BTreeMap<String, BTreeMap<String, u32>>,
    /// Traces not run, with the reason (the command is not an ACP agent).
    pub not_run: BTreeMap<String, String>,
    /// Every failing run × property.
    pub failures: Vec<Failure>,
    /// Every run.
    pub runs: Vec<RunOutcome>,
    /// What the calibration run measured, when an item needed it.
    pub calibration: Option<super::calibrate::Calibration>,
    /// The time scale scenarios ran at (`--time-scale`, or chosen from the calibration).
    pub time_scale: Option<u64>,
    /// The exit code.
    pub exit_code: i32,
}

impl ProbeSummary {
    /// The summary of a probe of `target` with `a`'s settings over `traces`, before any run:
    /// empty tables, exit 0.
    pub fn start(a: &ProbeArgs, target: &Target, traces: Vec<String>) -> ProbeSummary {
        ProbeSummary {
            format: 1,
            deterministic: false,
            agent: target.name.clone(),
            target: target.clone(),
            repeat: a.repeat,
            timeout_ms: a.wait_ms(),
            traces,
            table: BTreeMap::new(),
            windows: BTreeMap::new(),
            notes: BTreeMap::new(),
            not_run: BTreeMap::new(),
            failures: Vec::new(),
            runs: Vec::new(),
            calibration: None,
            time_scale: None,
            exit_code: acp_chaos::exit::VALID,
        }
    }
}

/// ` (kill 5 ms after answered)`: where a run killed, for its report lines; empty for a run
/// without a kill.
pub(super) fn kill_words(point: Option<&str>, delay: Option<u64>) -> String {
    match (point, delay) {
        (Some(p), Some(d)) => format!(" (kill {})", kill_cell(Some(p), d)),
        (None, Some(d)) => format!(" (kill delay {d} ms)"),
        _ => String::new(),
    }
}

/// `5 ms after answered` (or `5 ms` for a run whose trace names no point): the kill of a
/// failing run, as `summary.md`'s table shows it.
fn kill_cell(point: Option<&str>, delay_ms: u64) -> String {
    match point {
        Some(p) => format!("{delay_ms} ms after {p}"),
        None => format!("{delay_ms} ms"),
    }
}

/// The command that runs one trace again, at the same delay, enough times to see a rate.
pub fn retry_line(
    a: &ProbeArgs,
    target: &Target,
    trace: &str,
    point: Option<&str>,
    delay: Option<u64>,
) -> String {
    let mut s = match trace.strip_prefix(super::SCENARIO) {
        Some(sc) => format!("acp-chaos probe --scenario {sc} --seed {}", a.seed),
        None => format!("acp-chaos probe --trace {trace}"),
    };
    // A scenario's scale is named whenever it was set or chosen: a retry line without it
    // would calibrate again and may run at another scale.
    if let (Some(t), true) = (a.time_scale, trace.starts_with(super::SCENARIO)) {
        s.push_str(&format!(" --time-scale {t}"));
    }
    // A point is named where the trace has more than one.
    let points = super::traces::find(trace).map_or(0, |t| t.points.len());
    if let Some(p) = point.filter(|_| points > 1) {
        s.push_str(&format!(" --kill-point {p}"));
    }
    if let Some(d) = delay {
        s.push_str(&format!(" --delay-ms {d}"));
    }
    s.push_str(&format!(
        " --repeat {} --timeout-ms {}",
        a.repeat.max(10),
        a.wait_ms()
    ));
    if a.retention.is_some() {
        let r = match target.retention {
            Retention::Durable => "durable",
            Retention::Process => "process",
        };
        s.push_str(&format!(" --retention {r}"));
    }
    if a.no_resume_after_restart {
        s.push_str(" --no-resume-after-restart");
    }
    for e in &a.env {
        s.push_str(&format!(" --env {}", shell_quote(e)));
    }
    match &a.profile {
        Some(p) => s.push_str(&format!(" --profile {p}")),
        None => {
            s.push_str(" --");
            for w in &target.command {
                s.push(' ');
                s.push_str(&shell_quote(w));
            }
        }
    }
    s
}

pub(super) fn party_word(p: Option<Party>) -> String {
    p.map(|p| {
        serde_json::to_value(p)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    })
    .unwrap_or_else(|| "-".into())
}

pub fn write_run(
    dir: &Path,
    a: &ProbeArgs,
    target: &Target,
    o: &RunOutcome,
    h: &History,
    stderr: &str,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut buf = Vec::new();
    h.write_jsonl(&mut buf)?;
    write_atomic(&dir.join("history.jsonl"), &buf)?;
    write_atomic(
        &dir.join("verdicts.json"),
        &serde_json::to_vec_pretty(&o.verdicts)?,
    )?;
    write_atomic(&dir.join("stderr.txt"), stderr.as_bytes())?;
    let retry = retry_line(a, target, &o.trace, o.kill_point.as_deref(), o.delay_ms);
    write_atomic(&dir.join("retry.txt"), format!("{retry}\n").as_bytes())?;
    // The first invalid verdict, else the first unknown one.
    let worst = [Status::Invalid, Status::Unknown]
        .iter()
        .find_map(|s| o.verdicts.iter().find(|v| v.status == *s))
        .cloned();
    if let Some(v) = worst {
        let scenario = format!(
            "probe {} {} run {}{}",
            target.name,
            o.trace,
            o.run,
            kill_words(o.kill_point.as_deref(), o.delay_ms)
        );
        let c = acp_chaos::report::Counterexample {
            scenario: &scenario,
            verdict: &v,
            repro: &retry,
            shrunk: None,
            schedule: None,
            history: h,
        };
        let mut md = acp_chaos::report::counterexample_md(&c).replace(
            "Times are simulated ms.",
            "Times are wall-clock ms since the run started: this is a real process, and the \
                 retry command runs the trace again, it does not replay this interleaving. Agent \
                 ops marked `inferred` are reconstructed from what the agent sent.",
        );
        if !o.notes.is_empty() || o.aborted.is_some() {
            md.push_str("\n## What never came, and other remarks\n\n");
            for n in o.aborted.iter().chain(o.notes.iter()) {
                md.push_str(&format!("- {n}\n"));
            }
        }
        write_atomic(&dir.join("report.md"), md.as_bytes())?;
        let html = acp_chaos::report::counterexample_html(&c);
        write_atomic(&dir.join("report.html"), html.as_bytes())?;
    }
    Ok(())
}

pub(super) fn cell_short(c: Option<&TraceTally>) -> String {
    match c {
        None => "-".into(),
        Some(c) if c.invalid == 0 && c.unknown == 0 => "ok".into(),
        // Judged nothing in any run: not `ok`, and not a failure to decide either.
        Some(c) if c.invalid == 0 && c.vacuous == c.runs => "vac".into(),
        Some(c) => {
            let mut s = String::new();
            if c.invalid > 0 {
                s.push_str(&format!("{}!", c.invalid));
            }
            if c.unknown > c.vacuous {
                s.push_str(&format!("{}?", c.unknown - c.vacuous));
            }
            if c.vacuous > 0 {
                s.push_str(&format!("{}v", c.vacuous));
            }
            s
        }
    }
}

pub(super) fn pct(n: u32, d: u32) -> String {
    if d == 0 {
        "-".into()
    } else {
        format!("{:.0}%", f64::from(n) * 100.0 / f64::from(d))
    }
}

/// The console table: one row per trace, one column per property (`ok`; `N!` runs invalid,
/// `N?` runs unknown), then the rates, the windows hit and the first failing run of each cell.
///
/// Long on purpose: a renderer: the table, then its notes in order.
pub fn table_text(s: &ProbeSummary) -> String {
    let mut out = String::new();
    let props = properties();
    out.push_str(&format!("\n{:<22} {:>4}", "trace", "runs"));
    for p in &props {
        out.push_str(&format!(" {p:>5}"));
    }
    out.push('\n');
    for t in &s.traces {
        let row = s.table.get(t);
        let runs = row.and_then(|r| r.values().next()).map_or(0, |c| c.runs);
        out.push_str(&format!("{t:<22} {runs:>4}"));
        for p in &props {
            out.push_str(&format!(" {:>5}", cell_short(row.and_then(|r| r.get(*p)))));
        }
        if let Some(why) = s.not_run.get(t) {
            out.push_str(&format!("  not run: {why}"));
        }
        out.push('\n');
    }
    out.push_str("(ok: valid in every run; N!: invalid in N runs; N?: unknown in N runs; Nv: vacuous, judged nothing, in N runs; vac: in every run)\n");
    for (t, ws) in &s.windows {
        for (w, (hit, runs)) in ws {
            out.push_str(&format!(
                "  window {t}: {w} in {hit} of {runs} runs ({})\n",
                pct(*hit, *runs)
            ));
        }
    }
    for (t, ns) in &s.notes {
        let runs = s.runs.iter().filter(|r| &r.trace == t).count();
        for (n, k) in ns {
            out.push_str(&format!("  remark {t} ({k} of {runs} runs): {n}\n"));
        }
    }
    let ignores = ignores_key(s);
    if let Some(d) = &ignores {
        out.push_str(d);
        let first = s
            .failures
            .iter()
            .find(|f| f.trace == "retry-after-answer" && f.verdict.property == "P1");
        if let Some(f) = first {
            out.push_str(&format!(
                "  first: run {}: {}\n  retry: {}\n",
                f.run, f.verdict.message, f.retry
            ));
        }
    }
    let mut shown: BTreeMap<(String, String), bool> = BTreeMap::new();
    let mut aborts: BTreeMap<(String, String), bool> = BTreeMap::new();
    for f in &s.failures {
        let k = (f.trace.clone(), f.verdict.property.clone());
        if shown.insert(k.clone(), true).is_some() {
            continue;
        }
        // Folded into the diagnosis line: the same cause, every trace with a retry.
        if ignores.is_some()
            && f.verdict.status == Status::Invalid
            && ["P1", "P3"].contains(&f.verdict.property.as_str())
        {
            continue;
        }
        if let Some(why) = f
            .verdict
            .message
            .strip_prefix(acp_chaos::checkers::black_box::VACUOUS)
        {
            let c = &s.table[&f.trace][&f.verdict.property];
            out.push_str(&format!(
                "VACUOUS {} {}: judged nothing in {} of {} runs: {why}\n",
                f.trace, f.verdict.property, c.vacuous, c.runs
            ));
            continue;
        }
        if let Some(why) = f.verdict.message.strip_prefix(INCOMPLETE) {
            // One line per trace for a run that stopped early, not one per property.
            if aborts
                .insert((f.trace.clone(), why.to_string()), true)
                .is_none()
            {
                let runs = s.runs.iter().filter(|r| r.trace == f.trace).count();
                let n = s
                    .runs
                    .iter()
                    .filter(|r| r.trace == f.trace && r.aborted.as_deref() == Some(why))
                    .count();
                out.push_str(&format!(
                    "UNKNOWN {} (every property not broken before): {n} of {runs} runs did not complete: {why}\n  first: run {}{} after {} ms\n  retry: {}\n",
                    f.trace,
                    f.run,
                    kill_words(f.kill_point.as_deref(), f.delay_ms),
                    f.wall_ms,
                    f.retry
                ));
                if let Some(d) = &f.folder {
                    out.push_str(&format!("  run folder: {d}\n"));
                }
            }
            continue;
        }
        let c = &s.table[&f.trace][&f.verdict.property];
        let v = &f.verdict;
        out.push_str(&format!(
            "{} {} {} {}: invalid in {} of {} runs ({}), unknown in {} ({})\n  first: run {}{}: {} (party {}, rules {}) at {} ms of {} ms: {}\n  retry: {}\n",
            if v.status == Status::Invalid { "FAIL" } else { "UNKNOWN" },
            f.trace,
            v.property,
            Status::as_str(v.status),
            c.invalid,
            c.runs,
            pct(c.invalid, c.runs),
            c.unknown,
            pct(c.unknown, c.runs),
            f.run,
            kill_words(f.kill_point.as_deref(), f.delay_ms),
            Status::as_str(v.status),
            party_word(v.party),
            v.rules.join(" "),
            f.at_ms.map_or("-".into(), |t| t.to_string()),
            f.wall_ms,
            v.message,
            f.retry
        ));
        if let Some(d) = &f.folder {
            out.push_str(&format!("  run folder: {d}\n"));
        }
    }
    for (t, why) in &s.not_run {
        out.push_str(&format!("UNKNOWN {t}: not run: {why}\n"));
    }
    out
}

/// One diagnosis line when the Agent plainly ignores `idempotencyKey`: a retry with the same
/// key on the same connection, after its answer, was inserted again (P1) in every
/// `retry-after-answer` run. The P1 and P3 failures of every trace follow from it, so the
/// console shows this line instead of one failure per trace (`summary.md` lists them all).
pub(super) fn ignores_key(s: &ProbeSummary) -> Option<String> {
    let c = s.table.get("retry-after-answer")?.get("P1")?;
    if c.runs == 0 || c.invalid != c.runs {
        return None;
    }
    let cells: Vec<String> = s
        .table
        .iter()
        .flat_map(|(t, row)| {
            ["P1", "P3"].into_iter().filter_map(move |p| {
                row.get(p)
                    .filter(|c| c.invalid > 0)
                    .map(|c| format!("{t} {p} {}!", c.invalid))
            })
        })
        .collect();
    Some(format!(
        "FAIL the agent ignores idempotencyKey (A1, A4, K4): a retry with the same key on the same connection, after its answer, was inserted again in {} of {} retry-after-answer runs; the P1 and P3 failures it causes: {} (each listed in summary.md)\n",
        c.invalid,
        c.runs,
        cells.join(", ")
    ))
}

/// `summary.md`: the table with rates, the windows, every failing run with its timing and
/// retry command, and what never came.
///
/// Long on purpose: a renderer: the page's sections in order.
pub fn summary_md(s: &ProbeSummary) -> String {
    let mut out = String::new();
    out.push_str(&format!("# Probe of `{}`\n\n", s.agent));
    out.push_str(&format!(
        "Agent: {}. {} runs per trace (a kill trace at least one per kill point and delay; the table's runs column counts them); every wait bounded by {} ms; declared retention {}.\n\n",
        s.target.shown(),
        s.repeat,
        s.timeout_ms,
        match s.target.retention {
            Retention::Durable => "durable",
            Retention::Process => "process",
        }
    ));
    if let Some(c) = &s.calibration {
        out.push_str(&format!("{}.\n\n", c.line()));
    }
    if let Some(t) = s.time_scale {
        out.push_str(&format!("Scenarios ran at time scale {t}.\n\n"));
    }
    out.push_str(
        "**A real process is not deterministic.** These are outcome rates over repeated runs, \
         not verdicts of one seed. A failing run's retry command runs its trace again (at the \
         same kill point and delay) to measure the rate; it does not replay the same interleaving. Times \
         are wall-clock ms since the run started. Agent-side ops in the histories are inferred \
         from what the agent sent (marked `inferred`).\n\n",
    );
    out.push_str("| trace | property | runs | valid | invalid | unknown | invalid rate | unknown rate |\n|---|---|---|---|---|---|---|---|\n");
    let ignores = ignores_key(s);
    let props = properties();
    for t in &s.traces {
        if let Some(why) = s.not_run.get(t) {
            out.push_str(&format!(
                "| {t} | all | 0 | - | - | - | - | not run: {why} |\n"
            ));
            continue;
        }
        for p in &props {
            if let Some(c) = s.table.get(t).and_then(|r| r.get(*p)) {
                out.push_str(&format!(
                    "| {t} | {p} | {} | {}{} | {} | {}{} | {} | {} |\n",
                    c.runs,
                    c.valid,
                    if c.finding > 0 {
                        format!(" ({} findings)", c.finding)
                    } else {
                        String::new()
                    },
                    c.invalid,
                    c.unknown,
                    if c.vacuous > 0 {
                        format!(" ({} vacuous)", c.vacuous)
                    } else {
                        String::new()
                    },
                    pct(c.invalid, c.runs),
                    pct(c.unknown, c.runs)
                ));
            }
        }
    }
    if let Some(d) = &ignores {
        out.push_str(&format!(
            "\n**Diagnosis.** {}",
            d.trim_start_matches("FAIL ")
        ));
    }
    if !s.windows.is_empty() {
        out.push_str("\n## Timing windows\n\n");
        for (t, ws) in &s.windows {
            for (w, (hit, runs)) in ws {
                out.push_str(&format!("- {t}: {w} in {hit} of {runs} runs\n"));
            }
        }
    }
    if s.failures
        .iter()
        .any(|f| f.verdict.status == Status::Invalid)
    {
        // The conformance view: each rule broken, where, in how many runs.
        let mut by_rule: BTreeMap<&str, BTreeMap<&str, BTreeSet<u32>>> = BTreeMap::new();
        for f in s
            .failures
            .iter()
            .filter(|f| f.verdict.status == Status::Invalid)
        {
            for r in &f.verdict.rules {
                by_rule
                    .entry(r.as_str())
                    .or_default()
                    .entry(f.trace.as_str())
                    .or_default()
                    .insert(f.run);
            }
        }
        out.push_str("\n## By rule\n\n| rule | broken in (runs) |\n|---|---|\n");
        for (rule, traces) in &by_rule {
            let places: Vec<String> = traces
                .iter()
                .map(|(t, runs)| format!("{t} ({})", runs.len()))
                .collect();
            out.push_str(&format!("| {rule} | {} |\n", places.join(", ")));
        }
    }
    if !s.failures.is_empty() {
        out.push_str("\n## Failing runs\n\n| trace | run | kill | property | status | party | at ms | run ms | message | folder |\n|---|---|---|---|---|---|---|---|---|---|\n");
        for f in &s.failures {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                f.trace,
                f.run,
                f.delay_ms
                    .map_or("-".into(), |d| kill_cell(f.kill_point.as_deref(), d)),
                f.verdict.property,
                Status::as_str(f.verdict.status),
                party_word(f.verdict.party),
                f.at_ms.map_or("-".into(), |t| t.to_string()),
                f.wall_ms,
                f.verdict.message.replace('|', "\\|"),
                f.folder.clone().unwrap_or_else(|| "-".into())
            ));
        }
        out.push_str("\nRetry commands:\n\n```sh\n");
        let mut seen = std::collections::BTreeSet::new();
        for f in &s.failures {
            if seen.insert(f.retry.clone()) {
                out.push_str(&format!("{}\n", f.retry));
            }
        }
        out.push_str("```\n");
    }
    if !s.notes.is_empty() {
        out.push_str("\n## What never came, and other remarks\n\n");
        for (t, ns) in &s.notes {
            let of = s.runs.iter().filter(|r| &r.trace == t).count();
            for (n, runs) in ns {
                out.push_str(&format!("- {t} ({runs} of {of} runs): {n}\n"));
            }
        }
    }
    out.push_str(&format!("\nExit code {}.\n", s.exit_code));
    out
}
