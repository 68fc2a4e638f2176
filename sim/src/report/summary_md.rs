//! A campaign's `summary.md`: verdict, counterexample links, the scenario × property table,
//! findings, how submissions ended, the coverage map (and the scoreboard, for `mutants`).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::checkers::CHECKERS;
use crate::summary::{Summary, Tally};

fn cell_text(c: &Tally) -> String {
    let parts = c.marks();
    if parts.is_empty() {
        "·".into()
    } else {
        parts.join(" ")
    }
}

/// `summary.md`: a campaign as a page: its verdict, the scenario × property table, how the
/// submissions ended, the coverage map, the mutant scoreboard if one was run, and links to
/// every counterexample folder.
///
/// Long on purpose: a renderer writes its page top to bottom; the order of the code is the order of
/// the page.
pub fn summary_md(s: &Summary) -> String {
    let mut o = String::new();
    let verdict = match s.exit_code {
        0 => "valid (exit 0)",
        1 => "INVALID (exit 1)",
        3 => "NONDETERMINISTIC (exit 3)",
        4 => "UNKNOWN or vacuous (exit 4)",
        130 => "INTERRUPTED by Ctrl-C (exit 130): this page covers only the runs done",
        _ => "error",
    };
    let _ = writeln!(o, "# acp-chaos campaign `{}`\n", s.name);
    o.push_str("Entry page with every counterexample's page: [`summary.html`](summary.html).\n\n");
    let _ = writeln!(
        o,
        "- verdict: **{verdict}**\n- seeds: {}\n- mutant: {}\n- runs: {}\n- machine-readable: [`summary.json`](summary.json) (format {}), [`junit.xml`](junit.xml)\n",
        s.seed_range(),
        s.mutant.as_deref().unwrap_or("none"),
        s.hashes.len(),
        s.format
    );
    if let Some(board) = &s.scoreboard {
        o.push_str("## Mutant scoreboard\n\nThe rest of this page is the correct models' baseline on the same swarm seeds.\n\n```\n");
        o.push_str(board);
        if !board.ends_with('\n') {
            o.push('\n');
        }
        o.push_str("```\n\n");
    }
    if !s.failures.is_empty() {
        o.push_str("## Counterexamples\n\n");
        let mut seen = BTreeSet::new();
        for f in &s.failures {
            let text = |k: &str| f[k].as_str().unwrap_or("-").to_string();
            let key = (text("scenario"), text("design"), text("property"));
            let first = seen.insert(key);
            // The HTML page (diagram, timeline links), with the Markdown page beside it.
            let link = match (
                f["folder"].as_str(),
                super::summary_html::report_html_link(f),
            ) {
                (Some(d), Some(html)) => {
                    let md = f["report"].as_str().unwrap_or_default();
                    format!("[{d}]({html}) ([Markdown]({md}))")
                }
                (Some(d), None) => format!("[{d}]({d}/) (verdicts and repro only)"),
                _ => "(folder not kept)".into(),
            };
            if first {
                let _ = writeln!(
                    o,
                    "- **{} {}** {}@{} seed {} (party {}): {}  \n  {link} · `{}`{}",
                    text("property"),
                    text("status"),
                    text("scenario"),
                    text("design"),
                    f["seed"],
                    text("party"),
                    text("message"),
                    text("repro"),
                    f["shrunk"]["replay"]
                        .as_str()
                        .map(|r| format!(
                            "  \n  shrunk to {}: `{r}`",
                            crate::summary::shrunk_size(&f["shrunk"])
                        ))
                        .unwrap_or_default()
                );
            }
        }
        let omitted: u64 = s.failures_omitted.values().sum();
        if omitted > 0 {
            let _ = writeln!(
                o,
                "\n{omitted} more failing verdicts are counted in the table but not listed in `summary.json` (`failures_omitted`)."
            );
        }
        let more = s.failures.len() - seen.len();
        if more > 0 {
            let _ = writeln!(
                o,
                "\n{more} more failing runs of the same rows and properties are listed in `summary.json`."
            );
        }
        o.push('\n');
    }
    for l in &s.nondeterministic {
        let _ = writeln!(o, "- **nondeterministic**: `{l}`");
    }
    for k in &s.expectations_unmet {
        let _ = writeln!(o, "- **expected a violation, found none**: {k}");
    }
    for (scen, missing) in &s.vacuous {
        let _ = writeln!(
            o,
            "- **vacuous** {scen}: never happened: {}",
            missing.join(", ")
        );
    }
    if !s.regressions.is_empty() {
        let held = s.regressions.iter().filter(|r| r.ok).count();
        let _ = writeln!(
            o,
            "## Regression corpus\n\n{held} of {} shrunk schedules keep their verdict (replayed first).\n",
            s.regressions.len()
        );
        for r in s.regressions.iter().filter(|r| !r.ok) {
            let _ = writeln!(
                o,
                "- **REGRESSION** `{}`: expected {}, got {}  \n  `{}`",
                r.file, r.expect, r.got, r.replay
            );
        }
        o.push('\n');
    }
    o.push_str("## Table\n\n`·` valid on every seed, `✗N` N violations, `?N` N unknown, `fN` N findings.\n\n");
    let props: Vec<&str> = CHECKERS.iter().map(|c| c.property.as_str()).collect();
    let _ = writeln!(o, "| scenario@design | {} |", props.join(" | "));
    let _ = writeln!(o, "|---|{}", "---|".repeat(props.len()));
    for (row, cells) in &s.table {
        let cols: Vec<String> = props
            .iter()
            .map(|p| cells.get(*p).map(cell_text).unwrap_or_default())
            .collect();
        let _ = writeln!(o, "| {row} | {} |", cols.join(" | "));
    }
    if !s.findings.is_empty() {
        o.push_str("\n## Findings (a SHOULD broken, or an allowed outcome worth a look)\n\n");
        for f in &s.findings {
            let text = |k: &str| f[k].as_str().unwrap_or("-").to_string();
            let _ = writeln!(
                o,
                "- {} {}@{}: {}  \n  `{}`",
                text("property"),
                text("scenario"),
                text("design"),
                text("message"),
                text("repro")
            );
        }
    }
    o.push_str("\n## How the submissions ended\n\n| scenario@design | classes |\n|---|---|\n");
    for (row, counts) in &s.classes {
        let parts: Vec<String> = counts
            .iter()
            .map(|(c, n)| format!("{c:?}={n}").to_lowercase())
            .collect();
        let _ = writeln!(o, "| {row} | {} |", parts.join(" "));
    }
    if !s.coverage_map.is_empty() {
        o.push_str("\n## Coverage map\n\nFaults fired, by the protocol state at that moment (over the whole campaign).\n\n");
        let states = crate::checkers::FAULT_STATES;
        let _ = writeln!(o, "| fault | {} |", states.join(" | "));
        let _ = writeln!(o, "|---|{}", "---:|".repeat(states.len()));
        for (kind, cells) in &s.coverage_map {
            let cols: Vec<String> = states
                .iter()
                .map(|st| cells.get(*st).copied().unwrap_or(0).to_string())
                .collect();
            let _ = writeln!(o, "| {kind} | {} |", cols.join(" | "));
        }
    }
    o
}
