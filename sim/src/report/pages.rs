//! A counterexample folder's pages: `report.md` (Mermaid diagram) and `report.html` (inline
//! SVG), with the fault in the header, the verdict (and the original run's, for a shrunk run,
//! with why they differ), what should have happened beside what did, and the broken rules
//! quoted.

use std::fmt::Write as _;

use super::compare::why_they_differ;
use super::diagram::{Diagram, DIAGRAM_ROWS_MAX};

/// Rows kept on each side of a witness, the enabling fault or a nemesis event when a long
/// diagram folds the rest ([`Diagram::fold`]).
const FOLD_CONTEXT_ROWS: usize = 8;
use super::expected::Expected;
use super::rules::rules_quoted;
use super::text::xml_escape;
use crate::checkers::{verdict_line, Status, Verdict};
use crate::history::{process, History};

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

/// What a page adds when its writer has it: the original run of a shrunk one, and the timeline
/// pages beside it.
#[derive(Debug, Clone, Default)]
pub struct PageExtras<'a> {
    /// The original (unshrunk) run's verdict and history, when the drawn run is its shrink.
    pub original: Option<(&'a Verdict, &'a History)>,
    /// Timeline pages beside the report, as (link text, file name relative to the report).
    pub timelines: Vec<(String, String)>,
}

/// The fault line of a page's header: the verdict's enabling fault (its op number and what
/// the diagram says of it) and every fault that fired in the run, each with its op number.
pub fn fault_line(v: &Verdict, h: &History) -> String {
    let d = Diagram::of(h, Some(v));
    let fired: Vec<String> = h
        .ops
        .iter()
        .filter(|o| o.process == process::NEMESIS)
        .filter_map(|o| {
            o.value["spec"]
                .as_str()
                .map(|s| format!("#{} {s}", o.index))
        })
        .collect();
    let enabling = v.fault.map(|f| {
        let what = d
            .items
            .iter()
            .find(|it| it.draws_op(f))
            .map(|it| it.text().to_string())
            .unwrap_or_else(|| "a nemesis op".into());
        format!("enabling fault #{f} {what}")
    });
    match (enabling, fired.is_empty()) {
        (None, true) => "no fault fired in this run".to_string(),
        (None, false) => format!("faults fired: {}", fired.join("; ")),
        (Some(e), true) => e,
        (Some(e), false) => format!("{e}; faults fired: {}", fired.join("; ")),
    }
}

/// `report.md`: the verdict, the rules it breaks quoted from RULES.md, how to rerun it, and the
/// Mermaid sequence diagram of the drawn run.
pub fn counterexample_md(c: &Counterexample<'_>) -> String {
    counterexample_md_with(c, &PageExtras::default())
}

/// [`counterexample_md`] with what `x` adds: the original verdict and why it differs, links
/// to the timelines.
///
/// Long on purpose: a renderer writes its page top to bottom; the order of the code is the
/// order of the page.
pub fn counterexample_md_with(c: &Counterexample<'_>, x: &PageExtras<'_>) -> String {
    let d = Diagram::of(c.history, Some(c.verdict))
        .fold(FOLD_CONTEXT_ROWS)
        .window(DIAGRAM_ROWS_MAX, 60);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {} {}: {}\n",
        c.verdict.property,
        Status::as_str(c.verdict.status),
        c.scenario
    );
    let _ = writeln!(s, "**Fault:** {}\n", fault_line(c.verdict, c.history));
    let drawn = if c.shrunk.is_some() {
        "the shrunk run"
    } else {
        "the run"
    };
    let _ = writeln!(
        s,
        "**{}** ({drawn}; witness ops {})\n",
        verdict_line(c.verdict),
        ops_list(c.verdict)
    );
    if let Some((ov, oh)) = x.original {
        let _ = writeln!(
            s,
            "Original run: {} (witness ops {})\n\n{}\n",
            verdict_line(ov),
            ops_list(ov),
            why_they_differ((ov, oh), (c.verdict, c.history))
        );
    }
    let e = Expected::of(c.verdict, c.history);
    let _ = writeln!(
        s,
        "## What should have happened\n\nExpected: {}.\n",
        e.summary
    );
    if !e.rows.is_empty() {
        s.push_str("| op | what happened | what the rule required |\n|---|---|---|\n");
        for (op, happened, want) in &e.rows {
            let _ = writeln!(s, "| {op} | {} | {} |", md_cell(happened), md_cell(want));
        }
        s.push('\n');
    }
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
    if !x.timelines.is_empty() {
        let links: Vec<String> = x
            .timelines
            .iter()
            .map(|(t, f)| format!("[{t}]({f})"))
            .collect();
        let _ = writeln!(
            s,
            "Timelines (every op, full frames): {}\n",
            links.join(" · ")
        );
    }
    let _ = writeln!(
        s,
        "## Sequence diagram ({drawn}, {} ops, hash {})\n",
        c.history.ops.len(),
        c.history.hash()
    );
    s.push_str(
        "Red rows are the verdict's witnesses, amber its enabling fault; `-x` arrows are frames \
         sent and never received. Each row starts with its history op numbers (`op 26→27`: \
         sent at op 26, received at op 27). Times are simulated ms.\n\n```mermaid\n",
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
    counterexample_html_with(c, &PageExtras::default())
}

/// Widest a page is drawn (CSS px); a wider diagram scales down or scrolls in its container.
pub const PAGE_MAX_WIDTH: u32 = 1400;

/// [`counterexample_html`] with what `x` adds: the original verdict and why it differs, links
/// to the timelines.
///
/// Long on purpose: a renderer writes its page top to bottom; the order of the code is the
/// order of the page.
pub fn counterexample_html_with(c: &Counterexample<'_>, x: &PageExtras<'_>) -> String {
    let d = Diagram::of(c.history, Some(c.verdict))
        .fold(FOLD_CONTEXT_ROWS)
        .window(DIAGRAM_ROWS_MAX, 60);
    let mut s = String::new();
    let _ = write!(
        s,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} {} {}</title>\n<style>body{{font-family:system-ui,sans-serif;max-width:{PAGE_MAX_WIDTH}px;margin:2em auto;padding:0 1em;color:#222}}blockquote{{border-left:4px solid #c62828;margin:.5em 0;padding:.2em 1em;background:#fafafa}}pre{{background:#f4f4f4;padding:.8em;overflow:auto}}.verdict{{background:#ffcdd2;padding:.6em 1em;border-radius:4px}}.original{{background:#eee;padding:.6em 1em;border-radius:4px}}.fault{{background:#ffecb3;padding:.4em 1em;border-radius:4px}}.expected{{background:#e8f5e9;padding:.6em 1em;border-radius:4px;border-left:4px solid #2e7d32}}table.ex{{border-collapse:collapse;margin:.5em 0}}table.ex td,table.ex th{{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}}table.ex td:first-child{{font-family:ui-monospace,Menlo,Consolas,monospace;white-space:nowrap}}.diagram{{overflow-x:auto;border:1px solid #ddd}}.diagram svg{{display:block}}</style></head><body>\n",
        xml_escape(&c.verdict.property),
        Status::as_str(c.verdict.status),
        xml_escape(c.scenario)
    );
    let drawn = if c.shrunk.is_some() {
        "the shrunk run"
    } else {
        "the run"
    };
    let _ = writeln!(
        s,
        "<h1>{} {}: {}</h1>\n<p class=\"fault\"><b>Fault:</b> {}</p>\n<p class=\"verdict\"><b>{}</b><br>({drawn}; witness ops {})</p>",
        xml_escape(&c.verdict.property),
        Status::as_str(c.verdict.status),
        xml_escape(c.scenario),
        xml_escape(&fault_line(c.verdict, c.history)),
        xml_escape(&verdict_line(c.verdict)),
        xml_escape(&ops_list(c.verdict))
    );
    if let Some((ov, oh)) = x.original {
        let _ = writeln!(
            s,
            "<p class=\"original\"><b>Original run:</b> {} (witness ops {})<br>{}</p>",
            xml_escape(&verdict_line(ov)),
            xml_escape(&ops_list(ov)),
            xml_escape(&why_they_differ((ov, oh), (c.verdict, c.history)))
        );
    }
    let e = Expected::of(c.verdict, c.history);
    let _ = writeln!(
        s,
        "<h2>What should have happened</h2>\n<p class=\"expected\"><b>Expected:</b> {}.</p>",
        xml_escape(&e.summary)
    );
    if !e.rows.is_empty() {
        s.push_str("<table class=\"ex\"><tr><th>op</th><th>what happened</th><th>what the rule required</th></tr>\n");
        for (op, happened, want) in &e.rows {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                xml_escape(op),
                xml_escape(happened),
                xml_escape(want)
            );
        }
        s.push_str("</table>\n");
    }
    s.push_str("<h2>The rules</h2>\n");
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
    if !x.timelines.is_empty() {
        let links: Vec<String> = x
            .timelines
            .iter()
            .map(|(t, f)| format!("<a href=\"{}\">{}</a>", xml_escape(f), xml_escape(t)))
            .collect();
        let _ = writeln!(
            s,
            "<p>Timelines (every op in a column per process, full frames): {}</p>",
            links.join(" · ")
        );
    }
    let _ = writeln!(
        s,
        "<h2>Sequence diagram ({drawn}, {} ops, hash {})</h2>\n<p>Red rows are the verdict's witnesses, amber its enabling fault; a line ending in a cross is a frame sent and never received. Each row starts with its history op numbers (<code>#26→27</code>: sent at op 26, received at op 27). Times are simulated ms.</p>\n<div class=\"diagram\">",
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

/// A verdict's witness ops and enabling fault as `#27, #28, #71; fault #50`.
fn ops_list(v: &Verdict) -> String {
    let w: Vec<String> = v.witnesses.iter().map(|w| format!("#{w}")).collect();
    let mut s = if w.is_empty() {
        "none".to_string()
    } else {
        w.join(", ")
    };
    if let Some(f) = v.fault {
        let _ = write!(s, "; fault #{f}");
    }
    s
}

/// Text for a Markdown table cell: `|` escaped, newlines as spaces.
fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}
