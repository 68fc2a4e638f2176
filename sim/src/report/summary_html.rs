//! A campaign's `summary.html`: the entry page of its report folder, linking every kept
//! counterexample's `report.html` (grouped by property and row), with the verdict, the
//! nonzero cells of the table and the mutant scoreboard. Self-contained: inline CSS, nothing
//! fetched.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::text::xml_escape;
use crate::checkers::CHECKERS;
use crate::summary::{failure_groups, FailureGroup, Summary};

/// The page of a failure kept whole: its `report` (`<folder>/[P<n>.]report.md`) as the `.html`
/// page beside it; `None` when it has no page (not kept, or kept as verdicts and repro only).
pub fn report_html_link(f: &Value) -> Option<String> {
    f["folder"].as_str()?;
    let r = f["report"].as_str()?;
    Some(match r.strip_suffix(".md") {
        Some(stem) => format!("{stem}.html"),
        None => r.to_string(),
    })
}

/// `summary.html` for campaign `s`.
///
/// Long on purpose: a renderer writes its page top to bottom; the order of the code is the
/// order of the page.
pub fn summary_html(s: &Summary) -> String {
    let mut o = String::new();
    let verdict = match s.exit_code {
        0 => "valid (exit 0)",
        1 => "INVALID (exit 1)",
        3 => "NONDETERMINISTIC (exit 3)",
        4 => "UNKNOWN or vacuous (exit 4)",
        130 => "INTERRUPTED (exit 130): only the runs done",
        _ => "error",
    };
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>acp-chaos {}</title>\n<style>body{{font-family:system-ui,sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;color:#222}}table{{border-collapse:collapse;margin:.5em 0}}td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}}.bad{{background:#ffcdd2}}.ok{{background:#e8f5e9}}code,pre{{font-family:ui-monospace,Menlo,Consolas,monospace}}pre{{background:#f4f4f4;padding:.8em;overflow:auto}}.scroll{{overflow-x:auto}}</style></head><body>\n<h1>acp-chaos campaign <code>{}</code></h1>\n",
        xml_escape(&s.name),
        xml_escape(&s.name)
    );
    let cls = if s.exit_code == 0 { "ok" } else { "bad" };
    let omitted: u64 = s.failures_omitted.values().sum();
    let _ = writeln!(
        o,
        "<p class=\"{cls}\">verdict: <b>{verdict}</b></p>\n<ul><li>seeds {}</li><li>mutant: {}</li><li>runs: {}</li><li>failing verdicts: {} ({} listed in summary.json, {omitted} more counted only)</li><li>also: <a href=\"summary.md\">summary.md</a> (the full table), <a href=\"summary.json\">summary.json</a>, <a href=\"junit.xml\">junit.xml</a></li></ul>",
        s.seed_range(),
        xml_escape(s.mutant.as_deref().unwrap_or("none")),
        s.hashes.len(),
        s.failures.len() as u64 + omitted,
        s.failures.len(),
    );
    if let Some(board) = &s.scoreboard {
        let _ = writeln!(
            o,
            "<h2>Mutant scoreboard</h2>\n<pre>{}</pre>",
            xml_escape(board)
        );
    }
    counterexamples(s, &mut o);
    for l in &s.nondeterministic {
        let _ = writeln!(
            o,
            "<p class=\"bad\">nondeterministic: <code>{}</code></p>",
            xml_escape(l)
        );
    }
    for k in &s.expectations_unmet {
        let _ = writeln!(
            o,
            "<p class=\"bad\">expected a violation, found none: {}</p>",
            xml_escape(k)
        );
    }
    for (scen, missing) in &s.vacuous {
        let _ = writeln!(
            o,
            "<p class=\"bad\">vacuous {}: never happened: {}</p>",
            xml_escape(scen),
            xml_escape(&missing.join(", "))
        );
    }
    // The table's nonzero cells only; summary.md has all of it.
    let props: Vec<&str> = CHECKERS.iter().map(|c| c.property.as_str()).collect();
    let mut nonzero: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (row, cells) in &s.table {
        for p in &props {
            if let Some(c) = cells.get(*p) {
                let parts: Vec<String> = c.marks().iter().map(|m| format!("{p} {m}")).collect();
                if !parts.is_empty() {
                    nonzero.entry(row.as_str()).or_default().extend(parts);
                }
            }
        }
    }
    let _ = writeln!(
        o,
        "<h2>Table (nonzero rows)</h2>\n<p>{} of {} rows have a violation (✗), an unknown verdict (?) or a finding (f); every other row is valid on every seed.</p>",
        nonzero.len(),
        s.table.len()
    );
    if !nonzero.is_empty() {
        o.push_str("<table><tr><th>scenario@design</th><th>cells</th></tr>\n");
        for (row, cells) in &nonzero {
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td>{}</td></tr>",
                xml_escape(row),
                xml_escape(&cells.join(" · "))
            );
        }
        o.push_str("</table>\n");
    }
    o.push_str("</body></html>\n");
    o
}

/// The failures as the terminal groups them ([`failure_groups`]: property and rules), one
/// table row each: what broke, where (runs, rows, designs, and each row's listed seeds behind
/// a fold, every kept page linked), the example with its repro and shrunk lines, its page.
fn counterexamples(s: &Summary, o: &mut String) {
    let groups = failure_groups(s);
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "<h2>Failures</h2>\n<p>{} group{}, as the terminal lists them: one per property and the rules its verdicts cite.</p>\n<div class=\"scroll\"><table><tr><th>what broke</th><th>where</th><th>example</th><th>report</th></tr>",
        groups.len(),
        if groups.len() == 1 { "" } else { "s" }
    );
    for g in &groups {
        group_row(s, g, o);
    }
    o.push_str("</table></div>\n");
}

fn group_row(s: &Summary, g: &FailureGroup, o: &mut String) {
    // Each row's listed failures of this group, with a link to every kept page.
    let mut rows: Vec<String> = Vec::new();
    for row in &g.rows {
        let seeds: Vec<String> = g
            .failures
            .iter()
            .map(|i| &s.failures[*i])
            .filter(|f| {
                let t = |k: &str| f[k].as_str().unwrap_or("-");
                format!("{}@{}", t("scenario"), t("design")) == *row
            })
            .map(|f| match report_html_link(f) {
                Some(l) => format!(
                    "<a href=\"{}\">seed {}</a>{}",
                    xml_escape(&l),
                    f["seed"],
                    if f["shrunk"].is_object() {
                        " (shrunk)"
                    } else {
                        ""
                    }
                ),
                None => format!("seed {}", f["seed"]),
            })
            .collect();
        rows.push(format!("{}: {}", xml_escape(row), seeds.join(", ")));
    }
    let parties: Vec<&str> = g.parties.iter().map(String::as_str).collect();
    let page = g.report.as_deref().filter(|_| g.folder.is_some()).map(|r| {
        r.strip_suffix(".md")
            .map_or(r.to_string(), |st| format!("{st}.html"))
    });
    let _ = writeln!(
        o,
        "<tr><td><b>{} {}</b><br>party {}<br>rules {}</td><td>{} failing run{} in {} scenario@design row{} ({})<details><summary>rows and seeds</summary>{}</details></td><td>{}<br><code>{}</code>{}</td><td>{}</td></tr>",
        xml_escape(&g.property),
        xml_escape(&g.status),
        xml_escape(&if parties.is_empty() { "-".to_string() } else { parties.join(", ") }),
        xml_escape(&g.rules.join(" ")),
        g.runs,
        if g.runs == 1 { "" } else { "s" },
        g.rows.len(),
        if g.rows.len() == 1 { "" } else { "s" },
        xml_escape(&g.designs.join(" ")),
        rows.join("<br>"),
        xml_escape(&g.message),
        xml_escape(&g.repro),
        g.shrunk
            .as_ref()
            .map(|l| format!("<br>shrunk: <code>{}</code>", xml_escape(l)))
            .unwrap_or_default(),
        page.map(|p| format!("<a href=\"{}\">its page</a>", xml_escape(&p)))
            .unwrap_or_else(|| "-".into())
    );
}
