//! A kept failing run: its folder (`history.jsonl`, `verdicts.json`, `repro.txt`), its shrunk
//! schedule (with `shrunk.jsonl`), and its `report.md`, `report.html` and `timeline.html`.

use std::path::Path;

use serde_json::{json, Value};

use acp_chaos::checkers::Verdict;
use acp_chaos::folders::write_atomic;
use acp_chaos::history::History;
use acp_chaos::plan::Plan;
use acp_chaos::run::{repro, RunResult};
use acp_chaos::scenario::Scenario;
use acp_chaos::world;

/// A kept failing run's `report.md` and `report.html`: the shrunk run when there is one (its
/// history also kept as `shrunk.jsonl`), else the run itself, drawn around its witnesses.
/// File names inside a run folder for one property's counterexample.
pub(super) struct Names<'a> {
    /// `""` for the run's first failing property, `"P12."` for another.
    pub(super) prefix: &'a str,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn write_counterexample(
    out: &Path,
    r: &RunResult,
    v: &Verdict,
    line: &str,
    failure: &Value,
    h: &History,
    shrunk: Option<(History, Verdict)>,
    names: Names<'_>,
) -> anyhow::Result<()> {
    let dir = out.join(run_dir_name(r));
    let p = names.prefix;
    let schedule = shrunk
        .as_ref()
        .and_then(|_| std::fs::read_to_string(dir.join(format!("{p}schedule.toml"))).ok());
    let size = acp_chaos::summary::shrunk_size;
    let (drawn, verdict, shrunk_line) = match &shrunk {
        Some((sh, sv)) => {
            let mut buf = Vec::new();
            sh.write_jsonl(&mut buf)?;
            write_atomic(&dir.join(format!("{p}shrunk.jsonl")), &buf)?;
            let s = &failure["shrunk"];
            let replay = s["replay"].as_str().unwrap_or("-").to_string();
            (sh, sv, Some((replay, size(s))))
        }
        None => (h, v, None),
    };
    // The timeline of the run the page draws (the shrunk run when there is one).
    let leaf = format!("{p}timeline.html");
    let what = if shrunk.is_some() {
        format!("{} (shrunk, {})", run_dir_name(r), v.property)
    } else {
        run_dir_name(r)
    };
    let mut timelines = Vec::new();
    if write_timeline(
        &dir.join(&leaf),
        &what,
        drawn,
        std::slice::from_ref(verdict),
    )? {
        timelines.push(("the drawn run".to_string(), leaf));
    }
    let extras = acp_chaos::report::PageExtras {
        original: shrunk.as_ref().map(|_| (v, h)),
        timelines,
    };
    let c = acp_chaos::report::Counterexample {
        scenario: &r.scenario,
        verdict,
        repro: line,
        shrunk: shrunk_line,
        schedule: schedule.as_deref(),
        history: drawn,
    };
    write_atomic(
        &dir.join(format!("{p}report.md")),
        acp_chaos::report::counterexample_md_with(&c, &extras).as_bytes(),
    )?;
    write_atomic(
        &dir.join(format!("{p}report.html")),
        acp_chaos::report::counterexample_html_with(&c, &extras).as_bytes(),
    )?;
    Ok(())
}

/// Most ops a run may have for its `timeline.html` to be written (one table row per op: a
/// long unshrunk swarm run would make a page of many megabytes; its `history.jsonl` has it all).
pub(super) const TIMELINE_OPS_MAX: usize = 5_000;

/// Write `h`'s timeline page to `path` if it has at most [`TIMELINE_OPS_MAX`] ops; whether
/// it was written.
pub(crate) fn write_timeline(
    path: &Path,
    name: &str,
    h: &History,
    verdicts: &[Verdict],
) -> anyhow::Result<bool> {
    if h.ops.len() > TIMELINE_OPS_MAX {
        return Ok(false);
    }
    write_atomic(
        path,
        acp_chaos::report::timeline_html(name, h, verdicts).as_bytes(),
    )?;
    Ok(true)
}

/// Shrink a failing run on `v`'s property, status and party, and write the schedule into its
/// run folder (`schedule.toml`) under `out`, naming it under `shown` (where the report will be). Returns `{schedule, replay, faults, ops, raw, runs}`, or
/// `None` when the failure does not survive fixing the plan (it always should).
pub(super) fn shrink_into(
    out: &Path,
    shown: &Path,
    s: &Scenario,
    r: &RunResult,
    v: &Verdict,
    mutant: Option<&str>,
    prefix: &str,
) -> anyhow::Result<Option<(Value, (History, Verdict))>> {
    let plan = Plan::derive(s, r.seed, mutant, r.design);
    let target = acp_chaos::explore::shrink::Target::of_verdict(v);
    let Ok(shrunk) = acp_chaos::explore::shrink::shrink(&plan, &target) else {
        return Ok(None);
    };
    let h = world::run(&shrunk.plan);
    let dir = out.join(run_dir_name(r));
    std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    let leaf = format!("{prefix}schedule.toml");
    let file = shown.join(run_dir_name(r)).join(&leaf);
    let replay = format!("acp-chaos replay --schedule {}", file.display());
    let body = acp_chaos::plan::file::to_toml(&shrunk.plan)?;
    write_atomic(
        &dir.join(&leaf),
        format!(
            "# shrunk from: {}\n# keeps {}: {}\n# replay: {replay}\n{body}",
            repro(&s.reference, r.design, r.seed, mutant),
            v.property,
            shrunk.verdict.message
        )
        .as_bytes(),
    )?;
    let (f, o, w) = shrunk.after;
    Ok(Some((
        json!({"schedule": file.display().to_string(), "replay": replay, "faults": f, "ops": o, "raw": w, "runs": shrunk.runs}),
        (h, shrunk.verdict),
    )))
}

pub(super) fn run_dir_name(r: &RunResult) -> String {
    format!("{}-{}-seed{}", r.scenario, r.design.as_str(), r.seed)
}

/// Write a run's folder: `verdicts.json` and `repro.txt`, and with `whole` its
/// `history.jsonl` (a counterexample's run; the other kept runs of its row × property are
/// replayed from their repro line).
pub(super) fn write_run(
    out: &Path,
    h: &History,
    r: &RunResult,
    line: &str,
    whole: bool,
) -> anyhow::Result<()> {
    let dir = out.join(run_dir_name(r));
    std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    if whole {
        let mut buf = Vec::new();
        h.write_jsonl(&mut buf)?;
        write_atomic(&dir.join("history.jsonl"), &buf)?;
    }
    write_atomic(
        &dir.join("verdicts.json"),
        &serde_json::to_vec_pretty(&r.verdicts)?,
    )?;
    write_atomic(&dir.join("repro.txt"), format!("{line}\n").as_bytes())?;
    Ok(())
}
