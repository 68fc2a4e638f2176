//! `acp-chaos probe --client -- CLIENT_CMD ... {agent} ...`: a real ACP Client process under
//! test, served our model Agent, judged on the Client rules the wire shows
//! ([`acp_chaos::checkers::black_box::client_wire`]: C1, C3, C4, C6, C8, C9, K2).
//!
//! A Client starts its Agent as a child on stdio, so the probe hands it one: `{agent}` in the
//! command (a whole argument) becomes `acp-chaos agent --design D --store DIR --wire-log FILE
//! --slow-resume-ms 50 [--fault-at POINT:N]`, several arguments. That Agent logs everything it
//! reads and writes ([`super::wire_log`]), which is the ground truth the checks read, and
//! injects the trial's fault; the Client sees its Agent die (or a response come late) and does
//! what it does (restart it, resume, resend, retry, or give up).
//!
//! Trials: `no-fault` first, which also counts the prompts the Client sends; then, for each of
//! its first three prompts, the Agent dies when it reads it (`receive:N`), after inserting it
//! with the response lost (`before-response:N`), right after answering it
//! (`after-response:N`), or holds the answer 600 ms, past a Client's prompt timeout
//! (`stall-response:N`). Each trial runs `--repeat` times in a fresh folder. The report:
//! a table trial × rule in the terminal and `summary.md`, `summary.json`, `junit.xml`, a retry
//! command per failure, and the failing trials' folders (`wire.jsonl`, the Client's output).

use crate::error::{usage, Outcome};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::report::{cell_short, Failure, ProbeSummary, RunOutcome, TraceTally};
use super::target::shell_quote;
use super::wire_log::{FaultPoint, ServedFault};
use super::{ProbeArgs, Target};
use acp_chaos::checkers::black_box::client_wire::{self, RULES};
use acp_chaos::checkers::black_box::VACUOUS;
use acp_chaos::checkers::Status;
use acp_chaos::exit;

/// The placeholder a Client command starts its Agent with: a whole argument, replaced by the
/// served Agent's program and arguments (several arguments).
pub const AGENT: &str = "{agent}";

/// The placeholder for a Client that takes its Agent's command as one string (e.g. `--command
/// "{agent-line}"`): replaced, wherever it stands in an argument, by the command line, quoted
/// for a POSIX shell.
pub const AGENT_LINE: &str = "{agent-line}";

/// The trial without a crash.
const NO_FAULT: &str = "no-fault";

/// The served Agent holds its `session/resume` answers this long after a restart, so a Client
/// that prompts before the answer shows it (C6).
const SLOW_RESUME_MS: u64 = 50;

/// Crash trials cover the Client's first prompts only (each costs a run).
const PROMPTS_MAX: u32 = 3;

/// One trial run's result.
struct TrialRun {
    verdicts: Vec<acp_chaos::checkers::Verdict>,
    prompts: u32,
    exit: Option<i32>,
    wall_ms: u64,
    aborted: Option<String>,
    folder: PathBuf,
}

/// Run `acp-chaos probe --client`: the exit code, or a usage error (exit 2).
pub fn main(a: &ProbeArgs) -> Outcome {
    if a.command.is_empty() {
        return usage(
            "no Client to probe: give -- CLIENT_CMD ARGS... with {agent} where it starts its Agent",
        );
    }
    if !a
        .command
        .iter()
        .any(|w| w == AGENT || w.contains(AGENT_LINE))
    {
        return usage(format!(
            "the Client command has no `{AGENT}` argument: write it where the Client takes its Agent's command, e.g. `probe --client -- acp-chaos client -- {AGENT}` (or `{AGENT_LINE}` where it takes the command as one string)"
        ));
    }
    if a.profile.is_some() || !a.scenarios.is_empty() || a.suite.is_some() {
        return usage("--client takes -- CLIENT_CMD only (no --profile, --scenario or --suite)");
    }
    if a.repeat == 0 {
        return usage("--repeat must be at least 1");
    }
    if a.timeout_ms == Some(0) {
        return usage("--timeout-ms must be at least 1");
    }
    let mut pinned = Vec::new();
    for t in &a.traces {
        if t != NO_FAULT {
            if let Err(e) = t.parse::<ServedFault>() {
                return usage(format!("--trace {e} (or `{NO_FAULT}`)"));
            }
        }
        if !pinned.contains(t) {
            pinned.push(t.clone());
        }
    }
    let served = match served_agent(a) {
        Ok(s) => s,
        Err(e) => return usage(&e),
    };
    let mut target = Target::command(&a.command, a.name.as_deref());
    if a.name.is_none() {
        target.name = format!("client-{}", target.name);
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| Path::new("reports").join(format!("probe-{}", target.name)));
    super::runner::prepare_out(&out)?;
    Ok(probe(a, &target, &served, pinned, &out)?)
}

/// `acp-chaos agent` arguments of the served Agent, before the trial's own.
fn served_agent(a: &ProbeArgs) -> Result<Vec<String>, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find acp-chaos itself: {e}"))?;
    let mut v = vec![
        exe.display().to_string(),
        "agent".into(),
        "--design".into(),
        a.served_design.clone(),
        "--turn-ms".into(),
        "30".into(),
        "--slow-resume-ms".into(),
        SLOW_RESUME_MS.to_string(),
    ];
    if !["stored", "in-memory", "adapter"].contains(&a.served_design.as_str()) {
        return Err(format!(
            "--served-design `{}`: stored, in-memory or adapter",
            a.served_design
        ));
    }
    if let Some(m) = &a.served_mutant {
        match acp_chaos::models::mutant::find(m).map(|m| m.kind) {
            Some(acp_chaos::models::mutant::MutantKind::Agent(_)) => {}
            _ => return Err(format!("--served-mutant `{m}` is not an Agent mutant")),
        }
        v.extend(["--mutant".into(), m.clone()]);
    }
    Ok(v)
}

fn folder_name(trial: &str, run: u32) -> String {
    format!("{}-run{run}", trial.replace(':', "-"))
}

/// One run of one trial in `dir` (created): the Client command with `{agent}` filled in.
fn run_trial(
    a: &ProbeArgs,
    served: &[String],
    trial: &str,
    dir: &Path,
) -> anyhow::Result<TrialRun> {
    std::fs::create_dir_all(dir)?;
    // The Client runs inside `dir`: every path it is handed must name the same file from
    // there (a relative `--out` would put the served Agent's store and wire log in a nested
    // copy of the path, and the probe would read none of them).
    let dir = &std::path::absolute(dir)?;
    let wire = dir.join("wire.jsonl");
    let argv = client_argv(a, &trial_agent(served, trial, dir, &wire));
    let t0 = crate::wall_clock::now();
    let status = run_client(a, &argv, dir, t0)?;
    let wall_ms = t0.elapsed().as_millis() as u64;
    let exit = status.and_then(|s| s.code());
    let log: Vec<Value> = std::fs::read_to_string(&wire)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let prompts = log
        .iter()
        .filter(|v| v["in"]["method"] == "session/prompt")
        .count() as u32;
    let aborted = aborted_why(a, dir, &log, exit, status.is_none());
    let mut verdicts = client_wire::judge(&log, exit);
    if let Some(why) = &aborted {
        if log.is_empty() {
            for v in &mut verdicts {
                v.status = Status::Unknown;
                v.message = why.clone();
            }
        }
    }
    let mut j = serde_json::to_vec_pretty(&verdicts)?;
    j.push(b'\n');
    std::fs::write(dir.join("verdicts.json"), j)?;
    Ok(TrialRun {
        verdicts,
        prompts,
        exit,
        wall_ms,
        aborted,
        folder: dir.to_path_buf(),
    })
}

/// The served Agent's command for one trial: its store and wire log in `dir`, and the
/// trial's fault.
fn trial_agent(served: &[String], trial: &str, dir: &Path, wire: &Path) -> Vec<String> {
    let mut agent = served.to_vec();
    agent.extend([
        "--store".into(),
        dir.join("store").display().to_string(),
        "--wire-log".into(),
        wire.display().to_string(),
    ]);
    if trial != NO_FAULT {
        agent.extend(["--fault-at".into(), trial.to_string()]);
    }
    agent
}

/// The Client command with `{agent}` (several arguments) and `{agent-line}` (one, quoted)
/// filled in.
fn client_argv(a: &ProbeArgs, agent: &[String]) -> Vec<String> {
    let line = agent
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    a.command
        .iter()
        .flat_map(|w| {
            if w == AGENT {
                agent.to_vec()
            } else {
                vec![w.replace(AGENT_LINE, &line)]
            }
        })
        .collect()
}

/// Run the Client in `dir` until it exits or the trial's bound passes, then kill its process
/// group; its exit status, or `None` when it was still running.
fn run_client(
    a: &ProbeArgs,
    argv: &[String],
    dir: &Path,
    t0: std::time::Instant,
) -> anyhow::Result<Option<std::process::ExitStatus>> {
    // A relative program path (`./my-client`) is the user's, from where they ran the probe.
    let program = match Path::new(&argv[0]) {
        p if p.is_relative() && p.components().count() > 1 => std::path::absolute(p)?,
        p => p.to_path_buf(),
    };
    let mut cmd = Command::new(&program);
    cmd.args(&argv[1..])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join("client.stdout"))?)
        .stderr(std::fs::File::create(dir.join("client.stderr"))?);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group: the Agent it starts is in it, and one kill ends both.
        cmd.process_group(0);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| anyhow::anyhow!("could not start `{}`: {e}", argv[0]))?;
    let pgid = child.id() as i32;
    super::driver::RUNNING_GROUP.store(pgid, std::sync::atomic::Ordering::SeqCst);
    let bound = Duration::from_millis(a.wait_ms());
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if t0.elapsed() >= bound {
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // The Agent it left behind (or the Client itself, out of time) goes with the group; the
    // Agent gets a moment to log the end of its stdin first.
    std::thread::sleep(Duration::from_millis(20));
    #[cfg(unix)]
    // SAFETY: kill(2) on the process group we created.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let _ = child.wait();
    Ok(status)
}

/// Why a run says nothing of the Client: it never started its Agent, or it was killed out of
/// time.
fn aborted_why(
    a: &ProbeArgs,
    dir: &Path,
    log: &[Value],
    exit: Option<i32>,
    killed: bool,
) -> Option<String> {
    if log.is_empty() {
        let err = std::fs::read_to_string(dir.join("client.stderr")).unwrap_or_default();
        Some(format!(
            "the Client never started its Agent (`{AGENT}`){}; {}",
            match exit {
                Some(c) => format!(", exited {c}"),
                None => format!(", still running after {} ms", a.wait_ms()),
            },
            match super::driver::last_line(&err).as_str() {
                "" => "nothing on its stderr".to_string(),
                l => format!("stderr: {l}"),
            }
        ))
    } else if killed {
        Some(format!(
            "the Client did not exit within {} ms (killed)",
            a.wait_ms()
        ))
    } else {
        None
    }
}

/// The command that runs one trial again.
fn retry_line(a: &ProbeArgs, trial: &str) -> String {
    let mut s = format!(
        "acp-chaos probe --client --trace {trial} --repeat {} --timeout-ms {}",
        a.repeat.max(5),
        a.wait_ms()
    );
    if a.served_design != "stored" {
        s.push_str(&format!(" --served-design {}", a.served_design));
    }
    if let Some(m) = &a.served_mutant {
        s.push_str(&format!(" --served-mutant {m}"));
    }
    s.push_str(" --");
    for w in &a.command {
        s.push(' ');
        s.push_str(&shell_quote(w));
    }
    s
}

/// What the trials so far added up to: the table trial × rule, the failures, every run, and
/// the notes per trial.
#[derive(Default)]
struct Tally {
    table: BTreeMap<String, BTreeMap<String, TraceTally>>,
    failures: Vec<Failure>,
    runs: Vec<RunOutcome>,
    notes: BTreeMap<String, BTreeMap<String, u32>>,
}

/// Run every trial `--repeat` times (the crash trials after the first fault-free run says how
/// many prompts there are), then print and write the report; the exit code.
fn probe(
    a: &ProbeArgs,
    target: &Target,
    served: &[String],
    pinned: Vec<String>,
    out: &Path,
) -> anyhow::Result<i32> {
    std::fs::create_dir_all(out)?;
    println!(
        "probe --client: {} (served: the {} model Agent{}), {} run(s) per trial, every trial bounded by {} ms",
        target.name,
        a.served_design,
        a.served_mutant
            .as_ref()
            .map(|m| format!(", mutant {m}"))
            .unwrap_or_default(),
        a.repeat,
        a.wait_ms()
    );
    let mut trials: Vec<String> = if pinned.is_empty() {
        vec![NO_FAULT.into()]
    } else {
        pinned.clone()
    };
    let mut t = Tally::default();
    let mut i = 0;
    while i < trials.len() {
        let trial = trials[i].clone();
        for run in 0..a.repeat {
            let name = folder_name(&trial, run);
            let r = run_trial(a, served, &trial, &out.join(&name))?;
            // The first fault-free run says how many prompts the crash trials cover.
            if pinned.is_empty() && trial == NO_FAULT && run == 0 {
                crash_trials(&r, &trial, &mut trials, &mut t.notes);
            }
            record(a, &mut t, &trial, run, name, r);
        }
        i += 1;
    }
    report(a, target, trials, t, out)
}

/// Queue a crash trial per fault point for each of the Client's first prompts (as many as
/// the fault-free run `r` sent); note a Client that sent none.
fn crash_trials(
    r: &TrialRun,
    trial: &str,
    trials: &mut Vec<String>,
    notes: &mut BTreeMap<String, BTreeMap<String, u32>>,
) {
    for n in 1..=r.prompts.min(PROMPTS_MAX) {
        for point in FaultPoint::ALL {
            trials.push(ServedFault { point, nth: n }.to_string());
        }
    }
    if r.prompts == 0 && r.aborted.is_none() {
        notes.entry(trial.to_string()).or_default().insert(
            "the Client sent no session/prompt: no crash trial to run".into(),
            1,
        );
    }
}

/// Count one run's verdicts, failures and notes; keep its folder only when it failed (or
/// `--keep-runs`).
fn record(a: &ProbeArgs, t: &mut Tally, trial: &str, run: u32, name: String, r: TrialRun) {
    let row = t.table.entry(trial.to_string()).or_default();
    let mut failed = false;
    for v in &r.verdicts {
        row.entry(v.property.clone()).or_default().count(v);
        let unknown = v.status == Status::Unknown && !v.message.starts_with(VACUOUS);
        if v.status == Status::Invalid || v.status == Status::Finding || unknown {
            failed |= v.status != Status::Finding;
            t.failures.push(Failure {
                trace: trial.to_string(),
                run,
                delay_ms: None,
                kill_point: None,
                verdict: v.clone(),
                at_ms: None,
                wall_ms: r.wall_ms,
                folder: Some(name.clone()),
                retry: retry_line(a, trial),
            });
        }
    }
    if let Some(why) = &r.aborted {
        *t.notes
            .entry(trial.to_string())
            .or_default()
            .entry(why.clone())
            .or_default() += 1;
    }
    let keep = failed || a.keep_runs;
    if !keep {
        let _ = std::fs::remove_dir_all(&r.folder);
    }
    t.runs.push(RunOutcome {
        trace: trial.to_string(),
        run,
        delay_ms: None,
        kill_point: None,
        wall_ms: r.wall_ms,
        verdicts: r.verdicts,
        aborted: r.aborted,
        notes: r
            .exit
            .map(|c| vec![format!("the Client exited {c}")])
            .unwrap_or_default(),
        windows: Vec::new(),
        folder: keep.then_some(name),
        ops: 0,
    });
}

/// The summary of every trial: printed as a table, written as `summary.json`, `summary.md`
/// and `junit.xml`, and the last line; the exit code.
fn report(
    a: &ProbeArgs,
    target: &Target,
    trials: Vec<String>,
    t: Tally,
    out: &Path,
) -> anyhow::Result<i32> {
    let invalid = t
        .failures
        .iter()
        .any(|f| f.verdict.status == Status::Invalid);
    let unknown = t
        .failures
        .iter()
        .any(|f| f.verdict.status == Status::Unknown);
    let code = if invalid {
        exit::INVALID
    } else if unknown {
        exit::LIVENESS
    } else {
        exit::VALID
    };
    let summary = ProbeSummary {
        table: t.table,
        notes: t.notes,
        failures: t.failures,
        runs: t.runs,
        exit_code: code,
        ..ProbeSummary::start(a, target, trials.clone())
    };
    let text = table_text(&summary, out);
    print!("{text}");
    let md = summary_md(a, &summary, &text);
    let mut json = serde_json::to_vec_pretty(&summary)?;
    json.push(b'\n');
    acp_chaos::folders::write_atomic(&out.join("summary.json"), &json)?;
    acp_chaos::folders::write_atomic(&out.join("summary.md"), md.as_bytes())?;
    acp_chaos::folders::write_atomic(
        &out.join("junit.xml"),
        super::junit::junit_xml(&summary).as_bytes(),
    )?;
    let (n_inv, n_find) = (
        summary
            .failures
            .iter()
            .filter(|f| f.verdict.status == Status::Invalid)
            .count(),
        summary
            .failures
            .iter()
            .filter(|f| f.verdict.status == Status::Finding)
            .count(),
    );
    println!(
        "{}: {} trial(s), {} run(s); {n_inv} invalid, {n_find} finding(s); report {}",
        match code {
            exit::INVALID => "FAIL",
            exit::LIVENESS => "UNKNOWN",
            _ => "ok",
        },
        trials.len(),
        summary.runs.len(),
        out.join("summary.md").display()
    );
    Ok(code)
}

/// The terminal table (trial × rule), then each failing rule once with its first run.
fn table_text(s: &ProbeSummary, folder: &Path) -> String {
    let mut out = format!("\n{:<20} {:>4}", "trial", "runs");
    for r in RULES {
        out.push_str(&format!(" {r:>4}"));
    }
    out.push('\n');
    for t in &s.traces {
        let row = s.table.get(t);
        let runs = s.runs.iter().filter(|r| &r.trace == t).count();
        out.push_str(&format!("{t:<20} {runs:>4}"));
        for r in RULES {
            out.push_str(&format!(" {:>4}", cell_short(row.and_then(|x| x.get(*r)))));
        }
        out.push('\n');
    }
    out.push_str("(ok: valid in every run; N!: invalid in N runs; N?: unknown in N runs; Nv: vacuous in N runs; vac: in every run)\n");
    for (t, ns) in &s.notes {
        for (n, k) in ns {
            out.push_str(&format!("  remark {t} ({k} run(s)): {n}\n"));
        }
    }
    // Each rule once: how many trials it failed in, its first witness and retry.
    let mut seen: BTreeMap<(&str, Status), Vec<&Failure>> = BTreeMap::new();
    for f in &s.failures {
        seen.entry((f.verdict.property.as_str(), f.verdict.status))
            .or_default()
            .push(f);
    }
    for ((rule, status), fs) in &seen {
        let f = fs[0];
        let word = match status {
            Status::Invalid => "FAIL",
            Status::Finding => "finding",
            _ => "unknown",
        };
        let trials: std::collections::BTreeSet<&str> =
            fs.iter().map(|f| f.trace.as_str()).collect();
        out.push_str(&format!(
            "{word} {rule} ({}) in {} run(s) of {} trial(s), first {} run {}: {}\n",
            f.verdict.rules.join(" "),
            fs.len(),
            trials.len(),
            f.trace,
            f.run,
            f.verdict.message
        ));
        if *status != Status::Finding {
            out.push_str(&format!("  rerun: {}\n", f.retry));
            if let Some(d) = &f.folder {
                let log = folder.join(d).join("wire.jsonl");
                out.push_str(&format!("  wire log: {}\n", log.display()));
            }
        }
    }
    out
}

fn summary_md(a: &ProbeArgs, s: &ProbeSummary, text: &str) -> String {
    let mut md = format!(
        "# probe --client: {}\n\nClient command: `{}`. Served: the {} model Agent{}. {} run(s) per trial; every trial bounded by {} ms.\n\n",
        s.agent,
        s.target.command.join(" "),
        a.served_design,
        a.served_mutant.as_ref().map(|m| format!(" (mutant `{m}`)")).unwrap_or_default(),
        s.repeat,
        s.timeout_ms
    );
    md.push_str("One prompt text in one session is one submission (see `docs/probe.md`, \"Probing a Client\"). A trial `POINT:N` kills the served Agent at that point of the Nth `session/prompt` it reads.\n\n```text");
    md.push_str(text);
    md.push_str("```\n\n## Every run that failed or had a finding\n\n");
    if s.failures.is_empty() {
        md.push_str("None.\n");
    }
    for f in &s.failures {
        md.push_str(&format!(
            "- **{} {}** ({}), trial `{}` run {}: {}\n  - folder: `{}`\n  - rerun: `{}`\n",
            f.verdict.status.as_str(),
            f.verdict.property,
            f.verdict.rules.join(" "),
            f.trace,
            f.run,
            f.verdict.message,
            f.folder.as_deref().unwrap_or("-"),
            f.retry
        ));
    }
    md
}
