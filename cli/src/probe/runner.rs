//! Running the traces: every trace `--repeat` times against a fresh process group and
//! temporary `HOME`, each run recorded, inferred and judged.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

use super::calibrate::{self, Calibration};
use super::driver::Driver;
use super::report::{summary_md, table_text};
use super::start::{fresh_home, launch, run_seed};
use super::traces::{Kill, Sweep};
use super::{infer, properties, realtime, traces, ProbeArgs, SCENARIO};
use crate::probe::report::{retry_line, write_run, Failure, RunOutcome, INCOMPLETE};
use crate::probe::{ProbeSummary, Target};
use acp_chaos::checkers::black_box::{agent as verdicts, VACUOUS};
use acp_chaos::checkers::{self, Status, Verdict};
use acp_chaos::exit;
use acp_chaos::folders::write_atomic;
use acp_chaos::history::{op, process, History};
use acp_chaos::models::Design;
use acp_chaos::models::Retention;
use acp_chaos::plan::Plan;
use acp_chaos::scenario::Scenario;

/// Clear an earlier probe report in `out` (its `summary.*` and run folders); refuse a folder
/// holding anything else.
pub(super) fn prepare_out(out: &Path) -> anyhow::Result<()> {
    acp_chaos::folders::prepare_folder(out, "a probe report artefact", |name, path| {
        // A run folder: an Agent probe's (history) or a Client probe's (wire log).
        let run_dir = (path.join("history.jsonl").exists() || path.join("wire.jsonl").exists())
            && name.contains("-run");
        let file = matches!(
            name.trim_end_matches(".tmp"),
            "summary.json" | "summary.md" | "junit.xml"
        );
        file || run_dir
    })
}

/// One run of one trace: launch, drive, judge, killing where `kill` says (a kill trace's
/// cell). `Err` only for the probe's own I/O.
pub(super) fn run_once(
    a: &ProbeArgs,
    target: &Target,
    t: &traces::Trace,
    run: u32,
    kill: Option<&Kill>,
) -> anyhow::Result<(RunOutcome, History, String, bool)> {
    let (home, cwd) = fresh_home(target)?;
    let (launch, mock) = launch(a, target, &home, &cwd)?;
    let mut d = Driver::new(launch, run_seed(a.seed, t.name, run));
    let result = (t.run)(&mut d, kill);
    if let Err(why) = &result {
        d.end_aborted(why);
    }
    d.stop();
    let wall_ms = d.ms();
    let model = mock.map(|m| {
        let seen = d.model_saw(&m);
        let n = m.request_count();
        m.shutdown();
        json!({"requests": n, "markers": seen})
    });
    let _ = std::fs::remove_dir_all(&home);
    let header = header(
        a,
        target,
        &format!("probe:{}", t.name),
        run,
        model,
        json!({"trace": t.name, "delay_ms": kill.map(|k| k.delay_ms), "kill_point": kill.map(|k| k.point)}),
    );
    let h = infer::build(header, &d.ops);
    // Judged from the history alone (the abort is its `end` op): `check` on the saved
    // history gives the same verdicts.
    let judged = judge_history(&h);
    let mut windows = d.windows.clone();
    if kill.is_some() {
        // A kill trace: whether the acknowledged messages outlived the kill (A10's window).
        let kept = verdicts::kept_across_restarts(&h);
        if !kept.restarts.is_empty() {
            windows.push((
                "kept across the restart".into(),
                kept.restarts.iter().all(|k| *k),
            ));
        }
    }
    let fatal = result.is_err() && !d.initialized;
    let outcome = RunOutcome {
        trace: t.name.to_string(),
        run,
        delay_ms: kill.map(|k| k.delay_ms),
        kill_point: kill.map(|k| k.point.to_string()),
        wall_ms,
        verdicts: judged,
        aborted: result.err(),
        notes: d.notes.clone(),
        windows,
        folder: None,
        ops: h.ops.len(),
    };
    Ok((outcome, h, d.stderr.clone(), fatal))
}

/// One run of a scenario against the process (the conformance kit): its plan at seed
/// `--seed + run`, played by the model Client in real time ([`realtime`]).
pub(super) fn scenario_once(
    a: &ProbeArgs,
    target: &Target,
    sc: &Scenario,
    run: u32,
) -> anyhow::Result<(RunOutcome, History, String, bool)> {
    let design = match target.retention {
        Retention::Durable => Design::Stored,
        Retention::Process => Design::InMemory,
    };
    let plan = Plan::derive(sc, a.seed.wrapping_add(u64::from(run)), None, design);
    let (home, cwd) = fresh_home(target)?;
    let (launch, mock) = launch(a, target, &home, &cwd)?;
    let r = realtime::run(&plan, launch, a.scale(), true);
    if let Some(m) = mock {
        m.shutdown();
    }
    let _ = std::fs::remove_dir_all(&home);
    let name = format!("{SCENARIO}{}", sc.name);
    let header = header(
        a,
        target,
        &format!("probe:{name}"),
        run,
        None,
        json!({"scenario": sc.name, "plan_seed": plan.seed, "time_scale": a.scale()}),
    );
    let h = infer::build(header, &r.ops);
    let verdicts: Vec<Verdict> = judge_history(&h);
    let started = r.ops.iter().any(|o| o.f == op::CONN_OPEN);
    let outcome = RunOutcome {
        trace: name,
        run,
        delay_ms: None,
        kill_point: None,
        wall_ms: r.wall_ms,
        verdicts,
        aborted: r.aborted.clone(),
        notes: r.notes,
        windows: Vec::new(),
        folder: None,
        ops: h.ops.len(),
    };
    Ok((outcome, h, r.stderr, r.aborted.is_some() && !started))
}

/// The reason of a suite's scenario that needs the inside of a process.
const NOT_BLACK_BOX: &str = "not black-box: ";

/// The run's history header.
fn header(
    a: &ProbeArgs,
    target: &Target,
    scenario: &str,
    run: u32,
    model: Option<serde_json::Value>,
    what: serde_json::Value,
) -> serde_json::Value {
    let mut probe = json!({
        "agent": target.name,
        "resumes_after_restart": target.resumes_after_restart,
        "command": target.command,
        "profile": target.real.map(|p| p.specs()),
        "mock_model": model,
        "run": run,
        "timeout_ms": a.wait_ms(),
        "clock": "wall ms since the run started (a real process: not deterministic)",
        "inferred": "agent ops marked inferred are reconstructed from what the agent sent",
    });
    if let (Some(p), Some(w)) = (probe.as_object_mut(), what.as_object()) {
        p.extend(w.clone());
    }
    json!({
        "format": acp_chaos::history::FORMAT,
        "scenario": scenario,
        "seed": run,
        "mutant": null,
        "plan": {
            "retention": match target.retention { Retention::Durable => "durable", Retention::Process => "process" },
            "probe": probe,
        },
    })
}

/// How to start the Agent in `home`: a real agent's profile (with its own mock model server,
/// returned to be shut down) or the command.
/// The reported verdicts of one history: the simulator's checkers (X4 among them), with the probe's
/// own verdicts ([`acp_chaos::checkers::black_box::agent`]) folded into their property's column where that column was not
/// already broken; an X4 that judged nothing is `unknown` (vacuous); an aborted run's valid
/// verdicts become unknown.
pub fn judge(h: &History, aborted: Option<&str>) -> Vec<Verdict> {
    let all = checkers::check_all(h);
    let mut out: Vec<Verdict> = properties()
        .iter()
        .filter_map(|p| all.iter().find(|v| v.property == *p).cloned())
        .collect();
    let probe = &h.header["plan"]["probe"];
    let bound = probe["timeout_ms"].as_u64().unwrap_or(10_000);
    let mut own: Vec<Verdict> = Vec::new();
    // Absent in a history written before the field: judged, as for any Agent that resumes.
    if probe["resumes_after_restart"] != false {
        own.extend(verdicts::kept_across_restarts(h).lost);
    }
    own.extend(verdicts::acknowledged_not_replayed(h));
    own.extend(verdicts::second_round(h));
    own.extend(verdicts::stop_unconfirmed(h, bound));
    for v in own {
        if let Some(slot) = out.iter_mut().find(|x| x.property == v.property) {
            if slot.status == Status::Invalid {
                // Both stand: the checker's first, then the probe's own.
                slot.message = format!("{}; also {}", slot.message, v.message);
                for r in v.rules {
                    if !slot.rules.contains(&r) {
                        slot.rules.push(r);
                    }
                }
            } else {
                *slot = v;
            }
        }
    }
    for v in out.iter_mut() {
        match v.property.as_str() {
            "X4" if v.status == Status::Valid => {
                if let Some(why) = verdicts::x4_vacuous(h) {
                    v.status = Status::Unknown;
                    v.message = why;
                }
            }
            "P5" if v.status == Status::Invalid => {
                let keys = verdicts::accepted_malformed_keys(h);
                if !keys.is_empty() {
                    v.message = format!(
                        "{} (every malformed key it accepted: {})",
                        v.message,
                        keys.join(", ")
                    );
                }
            }
            _ => {}
        }
    }
    if let Some(why) = aborted {
        for v in out.iter_mut().filter(|v| v.status == Status::Valid) {
            v.status = Status::Unknown;
            v.message = format!("{INCOMPLETE}{why}");
        }
    }
    out
}

/// The probe's verdicts of a recorded probe history, from the history alone: [`judge`], with
/// the abort read off the run's `end` op (`outcome: "aborted"`, its `reason`), and, for a
/// conformance scenario's run (`plan.probe.scenario`), a vacuous X4 left out (the model
/// Client resumes without `replayFrom`). What `probe`, `probe --suite conformance` and
/// `acp-chaos check` report for the same history: one verdict set.
pub fn judge_history(h: &History) -> Vec<Verdict> {
    let aborted = h
        .ops
        .iter()
        .rev()
        .find(|o| o.process == process::WORLD && o.f == op::END)
        .filter(|o| o.value["outcome"] == "aborted")
        .map(|o| o.value["reason"].as_str().unwrap_or("aborted").to_string());
    let scenario = h.header["plan"]["probe"]["scenario"].is_string();
    judge(h, aborted.as_deref())
        .into_iter()
        .filter(|v| !(scenario && v.property == "X4" && v.message.starts_with(VACUOUS)))
        .collect()
}

/// Whether `h` is a probe's history (its plan is the probe's, not a simulated one).
pub fn is_probe_history(h: &History) -> bool {
    h.header["plan"]["probe"].is_object()
}

/// The kill cells of one item: its points × delays, as `--kill-point` and `--delay-ms` pin
/// them; a persistence sweep's delays from the calibration. Empty for a trace without a
/// swept kill and for a scenario.
pub fn kill_cells(a: &ProbeArgs, item: &super::Item, cal: Option<&Calibration>) -> Vec<Kill> {
    let super::Item::Trace(t) = item else {
        return Vec::new();
    };
    let delays = match t.sweep {
        Sweep::None => Vec::new(),
        Sweep::Fixed(d) => d.to_vec(),
        Sweep::Persistence => calibrate::delays(cal.and_then(|c| c.persistence_ms), a.wait_ms()),
    };
    t.cells(&delays, a.kill_point.as_deref(), a.delay_ms)
}

/// The calibration, when a selected item needs it (a persistence sweep with no pinned delay,
/// a scenario with no pinned `--time-scale`), printed; and the arguments with the time scale
/// it chose. A calibration that fails is said and left out (the traces say why again).
fn calibrated(
    a: &ProbeArgs,
    target: &Target,
    selected: &[super::Item],
) -> (Option<Calibration>, ProbeArgs) {
    let mut a = a.clone();
    let sweeps = a.delay_ms.is_none()
        && selected
            .iter()
            .any(|i| matches!(i, super::Item::Trace(t) if t.sweep == Sweep::Persistence));
    let setup_ms = selected
        .iter()
        .filter_map(|i| match i {
            super::Item::Scenario(sc) => {
                let plan = Plan::derive(sc, a.seed, None, Design::Stored);
                Some(plan.client.prompt_timeout_ms)
            }
            super::Item::Trace(_) => None,
        })
        .min()
        .filter(|_| a.time_scale.is_none());
    if !sweeps && setup_ms.is_none() {
        return (None, a);
    }
    let cal = match calibrate::measure(&a, target) {
        Ok(c) => c,
        Err(e) => {
            println!("calibration: failed ({e:#}); kill delays not scaled, time scale 1");
            return (None, a);
        }
    };
    println!("{}", cal.line());
    if let Some(setup) = setup_ms {
        let scale = calibrate::time_scale(cal.initialize_ms, setup);
        println!(
            "time scale {scale}: a scenario's ms lasts {scale} real ms, so the model Client waits at least three times the measured initialize for its answer ({setup} plan ms; --time-scale N pins it)"
        );
        a.time_scale = Some(scale);
    }
    (Some(cal), a)
}

/// Runs of an item: `--repeat`, and for a kill trace at least one per cell.
pub fn runs_of(repeat: u32, cells: &[Kill]) -> u32 {
    repeat.max(cells.len() as u32)
}

/// Where a kill trace's runs killed: `kill points a, b; delays 0, 1, 10 ms (why); 6 cells,
/// each run at least once`. `None` without cells.
pub fn sweep_line(
    t: &traces::Trace,
    cells: &[Kill],
    runs: u32,
    a: &ProbeArgs,
    cal: Option<&Calibration>,
) -> Option<String> {
    if cells.is_empty() {
        return None;
    }
    let mut points: Vec<&str> = Vec::new();
    let mut delays: Vec<u64> = Vec::new();
    for c in cells {
        if !points.contains(&c.point) {
            points.push(c.point);
        }
        if !delays.contains(&c.delay_ms) {
            delays.push(c.delay_ms);
        }
    }
    let list = |d: &[u64]| d.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    let pinned_point = a
        .kill_point
        .as_deref()
        .is_some_and(|p| t.points.contains(&p));
    let points = format!(
        "kill point{} {}{}",
        if points.len() == 1 { "" } else { "s" },
        points.join(", "),
        if pinned_point {
            " (pinned by --kill-point)"
        } else {
            ""
        }
    );
    let why = match (a.delay_ms, t.sweep, cal.and_then(|c| c.persistence_ms)) {
        (Some(_), _, _) => " (pinned by --delay-ms)".to_string(),
        (None, Sweep::Persistence, Some(l)) if l > 1 => {
            format!(" (around the measured persistence latency, {l} ms)")
        }
        (None, Sweep::Persistence, Some(_)) => {
            " (no write after the answer to scale to)".to_string()
        }
        (None, Sweep::Persistence, None) => {
            " (not measured: the calibration got no answer to its prompt)".to_string()
        }
        _ => String::new(),
    };
    let ran = if runs as usize >= cells.len() {
        "each run at least once".to_string()
    } else {
        format!("{runs} run before the trace stopped")
    };
    Some(format!(
        "{points}; delay{} {} ms{why}; {} cell{}, {ran}",
        if delays.len() == 1 { "" } else { "s" },
        list(&delays),
        cells.len(),
        if cells.len() == 1 { "" } else { "s" },
    ))
}

/// Folders kept per (trace, property): the first failing runs.
pub(super) const KEEP: usize = 5;

/// Long on purpose: the probe's loop over traces × repeats, printing and recording as it goes, in
/// the order of its output.
pub(super) fn probe_traces(
    a: &ProbeArgs,
    target: &Target,
    selected: &[super::Item],
    skipped: Vec<(String, String)>,
    out: &Path,
) -> anyhow::Result<i32> {
    let kills = selected
        .iter()
        .any(|i| matches!(i, super::Item::Trace(t) if t.sweep != Sweep::None));
    println!(
        "probe {}: {} ({} traces x {} runs{}, every wait bounded by {} ms, retention {})",
        target.name,
        target.shown(),
        selected.len(),
        a.repeat,
        if kills {
            ", a kill trace at least one per kill point and delay"
        } else {
            ""
        },
        a.wait_ms(),
        match target.retention {
            Retention::Durable => "durable",
            Retention::Process => "process",
        }
    );
    println!(
        "note: a real process is not deterministic. Each trace runs {} times (a kill trace at least once per kill point and delay) and the report gives outcome rates; a failing run's retry command runs its trace again at the same kill point and delay, it does not replay the same interleaving.",
        a.repeat
    );
    let (cal, scaled) = calibrated(a, target, selected);
    let a = &scaled;
    let cal = cal.as_ref();
    let mut summary = ProbeSummary {
        not_run: skipped
            .into_iter()
            .map(|(n, why)| (format!("{SCENARIO}{n}"), format!("{NOT_BLACK_BOX}{why}")))
            .collect(),
        calibration: cal.cloned(),
        time_scale: a.time_scale,
        ..ProbeSummary::start(a, target, selected.iter().map(super::Item::name).collect())
    };
    let mut kept: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut fatal: Option<String> = None;
    for item in selected {
        let name = item.name();
        if let Some(why) = &fatal {
            summary.not_run.insert(name.clone(), why.clone());
            continue;
        }
        let t0 = crate::wall_clock::now();
        let cells = kill_cells(a, item, cal);
        for run in 0..runs_of(a.repeat, &cells) {
            let kill = (!cells.is_empty()).then(|| &cells[run as usize % cells.len()]);
            let (mut o, h, stderr, is_fatal) = match item {
                super::Item::Trace(t) => run_once(a, target, t, run, kill)?,
                super::Item::Scenario(sc) => scenario_once(a, target, sc, run)?,
            };
            let failing: Vec<&Verdict> = o
                .verdicts
                .iter()
                .filter(|v| matches!(v.status, Status::Invalid | Status::Unknown))
                .collect();
            let keep = a.keep_runs
                || failing.iter().any(|v| {
                    kept.get(&(name.clone(), v.property.clone()))
                        .is_none_or(|n| *n < KEEP)
                });
            if keep {
                for v in &failing {
                    *kept.entry((name.clone(), v.property.clone())).or_default() += 1;
                }
                let dir = format!("{}-run{run}", name.replace(SCENARIO, "scenario-"));
                write_run(&out.join(&dir), a, target, &o, &h, &stderr)?;
                o.folder = Some(dir);
            }
            for v in &o.verdicts {
                let c = summary
                    .table
                    .entry(name.clone())
                    .or_default()
                    .entry(v.property.clone())
                    .or_default();
                c.count(v);
                if matches!(v.status, Status::Invalid | Status::Unknown) {
                    let at_ms = v
                        .witnesses
                        .first()
                        .and_then(|i| h.ops.get(*i))
                        .map(|o| o.time_ms);
                    summary.failures.push(Failure {
                        trace: name.clone(),
                        run,
                        delay_ms: o.delay_ms,
                        kill_point: o.kill_point.clone(),
                        verdict: v.clone(),
                        at_ms,
                        wall_ms: o.wall_ms,
                        folder: o.folder.clone(),
                        retry: retry_line(a, target, &name, o.kill_point.as_deref(), o.delay_ms),
                    });
                }
            }
            for (w, hit) in &o.windows {
                let e = summary
                    .windows
                    .entry(name.clone())
                    .or_default()
                    .entry(w.clone())
                    .or_default();
                e.0 += u32::from(*hit);
                e.1 += 1;
            }
            for n in o.notes.iter().chain(o.aborted.iter()) {
                *summary
                    .notes
                    .entry(name.clone())
                    .or_default()
                    .entry(n.clone())
                    .or_default() += 1;
            }
            summary.runs.push(o);
            if is_fatal {
                fatal = summary.runs.last().and_then(|o| o.aborted.clone());
                break;
            }
        }
        let ran = summary.runs.iter().filter(|r| r.trace == name).count();
        let swept = match item {
            super::Item::Trace(t) => sweep_line(t, &cells, ran as u32, a, cal),
            super::Item::Scenario(_) => None,
        };
        println!(
            "  {:<22} {} runs in {:.1} s{}",
            name,
            ran,
            t0.elapsed().as_secs_f64(),
            swept.map(|l| format!(" ({l})")).unwrap_or_default()
        );
    }
    let invalid = summary
        .table
        .values()
        .flat_map(|r| r.values())
        .any(|c| c.invalid > 0);
    let unknown = summary
        .table
        .values()
        .flat_map(|r| r.values())
        .any(|c| c.unknown > 0)
        // A suite's scenarios that cannot run black-box are listed, not failed.
        || summary.not_run.values().any(|why| !why.starts_with(NOT_BLACK_BOX));
    summary.exit_code = if invalid {
        exit::INVALID
    } else if unknown {
        exit::LIVENESS
    } else {
        exit::VALID
    };
    print!("{}", table_text(&summary));
    write_atomic(
        &out.join("summary.json"),
        &serde_json::to_vec_pretty(&summary)?,
    )?;
    write_atomic(&out.join("summary.md"), summary_md(&summary).as_bytes())?;
    write_atomic(
        &out.join("junit.xml"),
        super::junit::junit_xml(&summary).as_bytes(),
    )?;
    println!(
        "report: {}  exit {}",
        out.join("summary.md").display(),
        summary.exit_code
    );
    Ok(summary.exit_code)
}
