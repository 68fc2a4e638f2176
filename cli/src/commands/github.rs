//! GitHub Actions output of `acp-chaos check --github`: one `::error` workflow command per
//! failing group, and a Markdown step summary (for `$GITHUB_STEP_SUMMARY`).

use std::path::Path;

use acp_chaos::summary::{campaign_failures, failure_groups, FailureGroup, Summary};

/// Escape a workflow command's message (`%`, CR, LF; GitHub's `escapeData`).
pub(super) fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escape a workflow command's property value (`title=...`): also `:` and `,`
/// (GitHub's `escapeProperty`).
pub(super) fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// `::error title=TITLE::MESSAGE`, escaped.
pub fn error_line(title: &str, message: &str) -> String {
    format!(
        "::error title={}::{}",
        escape_property(title),
        escape_data(message)
    )
}

/// The message of a group's annotation: the first failure, where else it failed, one repro
/// line and the shrunk replay line.
fn group_message(g: &FailureGroup) -> String {
    let mut m = format!(
        "{} failing runs in {} scenario@design rows ({}); first: {}",
        g.runs,
        g.rows.len(),
        list(&g.rows, 3),
        g.message
    );
    if !g.repro.is_empty() {
        m.push_str(&format!("\nrepro: {}", g.repro));
    }
    if let Some(s) = &g.shrunk {
        m.push_str(&format!("\nshrunk: {s}"));
    }
    m
}

/// At most `n` items, then "and K more".
fn list(items: &[String], n: usize) -> String {
    let mut s = items.iter().take(n).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > n {
        s.push_str(&format!(" and {} more", items.len() - n));
    }
    s
}

/// One `::error` line per failing group, then one per campaign-wide failure.
pub(super) fn annotations(s: &Summary) -> Vec<String> {
    let mut v: Vec<String> = failure_groups(s)
        .iter()
        .map(|g| error_line(&format!("acp-chaos {}", g.title()), &group_message(g)))
        .collect();
    for (title, message) in campaign_failures(s) {
        v.push(error_line(&format!("acp-chaos {title}"), &message));
    }
    v
}

/// One terminal line per failing group (and per campaign-wide failure), with its repro.
pub(super) fn plain_lines(s: &Summary) -> Vec<String> {
    let mut v = Vec::new();
    for g in failure_groups(s) {
        v.push(format!(
            "FAIL {}: {} runs in {} rows ({}); first: {}",
            g.title(),
            g.runs,
            g.rows.len(),
            list(&g.rows, 3),
            g.message
        ));
        if !g.repro.is_empty() {
            v.push(format!("  repro: {}", g.repro));
        }
        if let Some(sh) = &g.shrunk {
            v.push(format!("  shrunk: {sh}"));
        }
    }
    for (title, message) in campaign_failures(s) {
        v.push(format!("FAIL {title}: {}", message.replace('\n', "\n  ")));
    }
    v
}

/// The step summary: the head of the report's `summary.md` (its title and verdict lines, up
/// to its first `## ` section) when `summary_md` exists, else a title line; then a table of
/// the failing groups with one repro each.
pub(super) fn step_summary(s: &Summary, summary_md: &Path) -> String {
    let mut out = String::new();
    match std::fs::read_to_string(summary_md) {
        Ok(md) => {
            for l in md.lines().take_while(|l| !l.starts_with("## ")) {
                out.push_str(l);
                out.push('\n');
            }
        }
        Err(_) => out.push_str(&format!(
            "# acp-chaos campaign `{}`\n\n- exit code: {}\n\n",
            s.name, s.exit_code
        )),
    }
    let groups = failure_groups(s);
    let whole = campaign_failures(s);
    if groups.is_empty() && whole.is_empty() {
        out.push_str("## No failures\n\nEvery property held on every run.\n");
        return out;
    }
    out.push_str(&format!(
        "## Failing groups ({})\n\n| property | rules | designs | mutant | runs | rows | repro |\n|---|---|---|---|---|---|---|\n",
        groups.len()
    ));
    let cell = |t: &str| t.replace('|', "\\|").replace('\n', " ");
    for g in &groups {
        out.push_str(&format!(
            "| {} {} | {} | {} | {} | {} | {} | {} |\n",
            g.property,
            g.status,
            g.rules.join(" "),
            g.designs.join(" "),
            g.mutant.as_deref().unwrap_or("none"),
            g.runs,
            cell(&list(&g.rows, 3)),
            if g.repro.is_empty() {
                "-".to_string()
            } else {
                format!("`{}`", cell(&g.repro))
            }
        ));
    }
    if !whole.is_empty() {
        out.push_str("\n## Campaign failures\n\n");
        for (title, message) in &whole {
            out.push_str(&format!("- **{title}**: {}\n", cell(message)));
        }
    }
    out
}
