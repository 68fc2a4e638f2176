//! A counterexample folder's pages: `report.md` (Mermaid diagram) and `report.html` (inline
//! SVG), with the broken rules quoted.

use std::fmt::Write as _;

use super::diagram::{Diagram, DIAGRAM_ROWS_MAX};
use super::rules::rules_quoted;
use super::text::xml_escape;
use crate::checkers::{verdict_line, Status, Verdict};
use crate::history::History;

/// What a counterexample page says about the run it draws.
#[derive(Debug, Clone)]
pub struct Counterexample<'a> {
    /// Scenario name.
    pub scenario: &'a str,
    /// The verdict kept (of the drawn run).
    pub verdict: &'a Verdict,
    /// The original run's repro line.
    pub repro: &'a str,
    /// The shrunk schedule's replay line and its size line, if it was shrunk.
    pub shrunk: Option<(String, String)>,
    /// The schedule file's text, if any (shown in full).
    pub schedule: Option<&'a str>,
    /// The drawn run.
    pub history: &'a History,
}

/// `report.md`: the verdict, the rules it breaks quoted from RULES.md, how to rerun it, and the
/// Mermaid sequence diagram of the drawn run.
pub fn counterexample_md(c: &Counterexample<'_>) -> String {
    let d = Diagram::of(c.history, Some(c.verdict)).window(DIAGRAM_ROWS_MAX, 60);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {} {}: {}\n",
        c.verdict.property,
        Status::as_str(c.verdict.status),
        c.scenario
    );
    let _ = writeln!(s, "**{}**\n", verdict_line(c.verdict));
    s.push_str("## The rules\n\n");
    for (id, text) in rules_quoted(c.verdict) {
        let _ = writeln!(s, "> **{id}** {text}\n");
    }
    s.push_str("## Reproduce\n\n```sh\n");
    let _ = writeln!(s, "{}", c.repro);
    if let Some((replay, size)) = &c.shrunk {
        let _ = writeln!(s, "{replay}   # shrunk: {size}");
    }
    s.push_str("```\n\n");
    let drawn = if c.shrunk.is_some() {
        "the shrunk run"
    } else {
        "the run"
    };
    let _ = writeln!(
        s,
        "## Sequence diagram ({drawn}, {} ops, hash {})\n",
        c.history.ops.len(),
        c.history.hash()
    );
    s.push_str(
        "Red rows are the verdict's witnesses, amber its enabling fault; `-x` arrows are frames \
         sent and never received. Times are simulated ms.\n\n```mermaid\n",
    );
    s.push_str(&d.mermaid());
    s.push_str("```\n");
    if let Some(sched) = c.schedule {
        s.push_str("\n## Schedule\n\n```toml\n");
        s.push_str(sched);
        if !sched.ends_with('\n') {
            s.push('\n');
        }
        s.push_str("```\n");
    }
    s
}

/// `report.html`: the same page, self-contained (inline SVG, inline CSS, nothing fetched).
pub fn counterexample_html(c: &Counterexample<'_>) -> String {
    let d = Diagram::of(c.history, Some(c.verdict)).window(DIAGRAM_ROWS_MAX, 60);
    let mut s = String::new();
    let _ = write!(
        s,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} {} {}</title>\n<style>body{{font-family:system-ui,sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;color:#222}}blockquote{{border-left:4px solid #c62828;margin:.5em 0;padding:.2em 1em;background:#fafafa}}pre{{background:#f4f4f4;padding:.8em;overflow:auto}}.verdict{{background:#ffcdd2;padding:.6em 1em;border-radius:4px}}.diagram{{overflow:auto;border:1px solid #ddd}}</style></head><body>\n",
        xml_escape(&c.verdict.property),
        Status::as_str(c.verdict.status),
        xml_escape(c.scenario)
    );
    let _ = writeln!(
        s,
        "<h1>{} {}: {}</h1>\n<p class=\"verdict\"><b>{}</b></p>\n<h2>The rules</h2>",
        xml_escape(&c.verdict.property),
        Status::as_str(c.verdict.status),
        xml_escape(c.scenario),
        xml_escape(&verdict_line(c.verdict))
    );
    for (id, text) in rules_quoted(c.verdict) {
        let _ = writeln!(
            s,
            "<blockquote><b>{}</b> {}</blockquote>",
            xml_escape(&id),
            xml_escape(&text)
        );
    }
    let _ = writeln!(s, "<h2>Reproduce</h2>\n<pre>{}", xml_escape(c.repro));
    if let Some((replay, size)) = &c.shrunk {
        let _ = write!(
            s,
            "\n{}   # shrunk: {}",
            xml_escape(replay),
            xml_escape(size)
        );
    }
    s.push_str("</pre>\n");
    let drawn = if c.shrunk.is_some() {
        "the shrunk run"
    } else {
        "the run"
    };
    let _ = writeln!(
        s,
        "<h2>Sequence diagram ({drawn}, {} ops, hash {})</h2>\n<p>Red rows are the verdict's witnesses, amber its enabling fault; a line ending in a cross is a frame sent and never received. Times are simulated ms.</p>\n<div class=\"diagram\">",
        c.history.ops.len(),
        c.history.hash()
    );
    s.push_str(&d.svg());
    s.push_str("</div>\n");
    if let Some(sched) = c.schedule {
        let _ = writeln!(s, "<h2>Schedule</h2>\n<pre>{}</pre>", xml_escape(sched));
    }
    s.push_str("</body></html>\n");
    s
}
