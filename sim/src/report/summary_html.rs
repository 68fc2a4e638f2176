//! A campaign's `summary.html`: the entry page of its report folder, linking every kept
//! counterexample's `report.html` (grouped by property and row), with the verdict, the
//! nonzero cells of the table and the mutant scoreboard. Self-contained: inline CSS, nothing
//! fetched.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::text::xml_escape;
use crate::checkers::CHECKERS;
use crate::summary::Summary;

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

/// A group of failures: (property, status, `scenario@design`).
type Group = (String, String, String);

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
    // Groups: (property, status, row) in the order failures are listed.
    let mut groups: Vec<(Group, Vec<&Value>)> = Vec::new();
    for f in &s.failures {
        let t = |k: &str| f[k].as_str().unwrap_or("-").to_string();
        let key = (
            t("property"),
            t("status"),
            format!("{}@{}", t("scenario"), t("design")),
        );
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(f),
            None => groups.push((key, vec![f])),
        }
    }
    if !groups.is_empty() {
        o.push_str("<h2>Counterexamples</h2>\n<div class=\"scroll\"><table><tr><th>property</th><th>scenario@design</th><th>failing seeds</th><th>first failure</th><th>reports</th></tr>\n");
        for ((prop, status, row), fs) in &groups {
            let cell = s.table.get(row).and_then(|r| r.get(prop));
            let n = cell.map_or(fs.len() as u64, |c| {
                if status == "invalid" {
                    c.violations
                } else {
                    c.unknown
                }
            });
            let first = fs[0];
            // The first of a group is kept whole (its page linked); the others are seeds to
            // replay.
            let links: Vec<String> = fs
                .iter()
                .map(|f| match report_html_link(f) {
                    Some(l) => format!(
                        "<a href=\"{}\">seed {} report</a>{}",
                        xml_escape(&l),
                        f["seed"],
                        if f["shrunk"].is_object() {
                            " (shrunk)"
                        } else {
                            ""
                        }
                    ),
                    None => format!("seed {} (replay it)", f["seed"]),
                })
                .collect();
            let _ = writeln!(
                o,
                "<tr><td><b>{} {}</b></td><td>{}</td><td>{n}</td><td>{}<br><code>{}</code></td><td>{}</td></tr>",
                xml_escape(prop),
                xml_escape(status),
                xml_escape(row),
                xml_escape(first["message"].as_str().unwrap_or("")),
                xml_escape(first["repro"].as_str().unwrap_or("")),
                links.join("<br>")
            );
        }
        o.push_str("</table></div>\n");
    }
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
    let props: Vec<&str> = CHECKERS.iter().map(|c| c.property).collect();
    let mut nonzero: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (row, cells) in &s.table {
        for p in &props {
            if let Some(c) = cells.get(*p) {
                let mut parts = Vec::new();
                if c.violations > 0 {
                    parts.push(format!("{p} ✗{}", c.violations));
                }
                if c.unknown > 0 {
                    parts.push(format!("{p} ?{}", c.unknown));
                }
                if c.findings > 0 {
                    parts.push(format!("{p} f{}", c.findings));
                }
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
