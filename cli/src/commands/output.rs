//! What several commands print: a campaign's summary with its failures and findings, one
//! failure's two lines, a run's verdicts.

use std::path::Path;

use crate::launch;
use acp_chaos::checkers::{self, Status, CHECKERS};
use acp_chaos::exit;

/// A campaign's summary; `written`: its report folder is there (else the last line says it is
/// not). Terse unless `verbose`: the failures grouped by what broke, the findings once per kind,
/// whatever needs attention, and one result line; `verbose` adds the scenario × property table,
/// how the submissions ended and the coverage map (all three are always in `summary.md`).
pub(super) fn print_summary(
    summary: &acp_chaos::summary::Summary,
    out: &Path,
    written: bool,
    verbose: bool,
) {
    println!();
    if verbose {
        print_tables(summary);
    }
    for k in &summary.expectations_unmet {
        println!(
            "EXPECTED a violation in {k} (the scenario says `expect = \"invalid\"`), found none"
        );
    }
    for (scen, missing) in &summary.vacuous {
        println!("VACUOUS {scen}: never happened: {}", missing.join(", "));
    }
    if verbose {
        print_outcomes_flat(summary);
    } else {
        print_failure_groups(summary, out);
        print_finding_kinds(summary);
    }
    for l in &summary.nondeterministic {
        println!("NONDETERMINISM: {l} gave two different histories");
    }
    let held = summary.regressions.iter().filter(|r| r.ok).count();
    if !summary.regressions.is_empty() {
        println!("regressions: {held} of {} hold", summary.regressions.len());
    }
    for r in summary.regressions.iter().filter(|r| !r.ok) {
        println!(
            "REGRESSION {}: expected {}, got {}\n  repro: {}",
            r.file,
            r.expect,
            r.got,
            launch::runnable(&r.replay)
        );
    }
    if summary.interrupted {
        println!("INTERRUPTED: the report covers only the runs done before Ctrl-C");
    }
    println!("{}", result_line(summary));
    if written {
        let html = if out.join("summary.html").exists() {
            "summary.html, "
        } else {
            ""
        };
        println!(
            "report: {}/summary.md ({html}summary.json, junit.xml)  exit {}",
            out.display(),
            summary.exit_code
        );
    } else {
        println!(
            "report: not written (see the error on stderr); verdict exit {}",
            summary.exit_code
        );
    }
}

/// The scenario × property table, the submission classes, the coverage counts and map.
fn print_tables(summary: &acp_chaos::summary::Summary) {
    print!("{}", acp_chaos::report::table_text(summary));
    println!();
    for (scen, counts) in &summary.classes {
        let parts: Vec<String> = counts
            .iter()
            .map(|(c, n)| format!("{c:?}={n}").to_lowercase())
            .collect();
        println!("  submissions {scen}: {}", parts.join(" "));
    }
    for (scen, ev) in &summary.events {
        let parts: Vec<String> = ev.iter().map(|(e, n)| format!("{e}={n}")).collect();
        println!("  coverage {scen} (seeds with): {}", parts.join(" "));
    }
    print!("{}", acp_chaos::report::coverage_text(summary));
}

/// `--verbose`: the first failure of each (scenario, design, property) and every finding.
fn print_outcomes_flat(summary: &acp_chaos::summary::Summary) {
    let mut shown = std::collections::BTreeSet::new();
    for f in &summary.failures {
        let key = (
            f["scenario"].to_string(),
            f["design"].to_string(),
            f["property"].to_string(),
        );
        if shown.insert(key) {
            println!("FAIL {}", outcome_line(f, true));
        }
    }
    for f in &summary.findings {
        println!("finding {}", outcome_line(f, false));
    }
}

/// The failures grouped by what broke ([`acp_chaos::summary::failure_groups`]: property and
/// rules), in the order they ran: how many runs and rows, one example with its repro line,
/// its shrunk replay and its report page.
fn print_failure_groups(summary: &acp_chaos::summary::Summary, out: &Path) {
    for g in acp_chaos::summary::failure_groups(summary) {
        let parties: Vec<&str> = g.parties.iter().map(String::as_str).collect();
        println!(
            "FAIL {} {} (party {}, rules {}) on {}: {} in {}",
            g.property,
            g.status,
            if parties.is_empty() {
                "-".to_string()
            } else {
                parties.join(",")
            },
            g.rules.join(" "),
            g.designs.join(" "),
            plural(g.runs as usize, "failing run"),
            plural(g.rows.len(), "scenario@design"),
        );
        println!("  e.g. {}", g.message);
        if !g.repro.is_empty() {
            println!("  repro:  {}", launch::runnable(&g.repro));
        }
        if let Some(shrunk) = &g.shrunk {
            println!("  shrunk: {}", launch::runnable(shrunk));
        }
        // This property's own page (a run failing two properties has one per property).
        if let (Some(_), Some(md)) = (&g.folder, &g.report) {
            let html = md.strip_suffix(".md").map(|stem| format!("{stem}.html"));
            let page = html
                .iter()
                .chain([md])
                .map(|p| out.join(p))
                .find(|p| p.exists());
            if let Some(page) = page {
                println!("  report: {}", page.display());
            }
        }
    }
}

/// The findings (allowed by the rules, never failing a campaign) once per kind (property,
/// rules): how many rows, and the first as an example with its repro line.
fn print_finding_kinds(summary: &acp_chaos::summary::Summary) {
    for g in group(&summary.findings) {
        let f = &g.members[0];
        let text = |k: &str| f[k].as_str().unwrap_or("-").to_string();
        println!(
            "finding {} (rules {}) in {}, e.g. {} [{}]: {}",
            text("property"),
            rules_of(f).join(" "),
            plural(g.rows, "scenario@design"),
            text("scenario"),
            text("design"),
            text("message")
        );
        println!("  repro: {}", launch::runnable(&text("repro")));
    }
}

/// Findings of one kind, in first-seen order.
struct Group<'a> {
    members: Vec<&'a serde_json::Value>,
    /// Distinct scenario@design rows among them.
    rows: usize,
}

/// `outcomes` grouped by property and rules, in the order of their first member.
fn group(outcomes: &[serde_json::Value]) -> Vec<Group<'_>> {
    let mut order: Vec<(String, Group<'_>)> = Vec::new();
    let mut rows: Vec<std::collections::BTreeSet<String>> = Vec::new();
    for f in outcomes {
        let key = format!("{} {}", f["property"], rules_of(f).join(" "));
        let i = match order.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                order.push((
                    key,
                    Group {
                        members: Vec::new(),
                        rows: 0,
                    },
                ));
                rows.push(Default::default());
                order.len() - 1
            }
        };
        order[i].1.members.push(f);
        rows[i].insert(format!("{}@{}", f["scenario"], f["design"]));
    }
    order
        .into_iter()
        .zip(rows)
        .map(|((_, mut g), r)| {
            g.rows = r.len();
            g
        })
        .collect()
}

fn rules_of(f: &serde_json::Value) -> Vec<&str> {
    f["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str())
        .collect()
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else if what.ends_with("@design") {
        format!("{n} {what} rows")
    } else {
        format!("{n} {what}s")
    }
}

/// One line: the verdict and the counts (runs, violations, unknown, findings) over the
/// whole campaign.
fn result_line(s: &acp_chaos::summary::Summary) -> String {
    let cells = || s.table.values().flat_map(|r| r.values());
    let violations: u64 = cells().map(|c| c.violations).sum();
    let unknown: u64 = cells().map(|c| c.unknown).sum();
    let findings: u64 = cells().map(|c| c.findings).sum();
    let verdict = match s.exit_code {
        exit::VALID => "valid",
        exit::INVALID => "INVALID",
        exit::NONDETERMINISM => "NONDETERMINISTIC",
        exit::LIVENESS => "UNKNOWN (liveness, unknown verdict or vacuous)",
        exit::INTERRUPTED => "interrupted",
        _ => "?",
    };
    format!(
        "result: {verdict}: {} ({}), {violations} violations, {unknown} unknown, {findings} findings",
        plural(s.hashes.len(), "run"),
        plural(s.table.len(), "scenario@design"),
    )
}

/// One failure or finding of `summary.json` as two lines: what, then its repro command.
pub(super) fn outcome_line(f: &serde_json::Value, with_party: bool) -> String {
    let text = |k: &str| f[k].as_str().unwrap_or("-").to_string();
    let rules: Vec<&str> = f["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str())
        .collect();
    let what = if with_party {
        format!(
            "{} (party {}, rules {})",
            text("status"),
            text("party"),
            rules.join(" ")
        )
    } else {
        format!("(rules {})", rules.join(" "))
    };
    let shrunk = if f["shrunk"].is_object() {
        let s = &f["shrunk"];
        format!(
            "\n  shrunk to {} in {} runs: {}",
            acp_chaos::summary::shrunk_size(s),
            s["runs"],
            launch::runnable(s["replay"].as_str().unwrap_or("-"))
        )
    } else {
        String::new()
    };
    format!(
        "{} [{}] {} {what}: {}\n  repro: {}{shrunk}",
        text("scenario"),
        text("design"),
        text("property"),
        text("message"),
        launch::runnable(&text("repro"))
    )
}

pub(super) fn status_str(s: Status) -> String {
    format!("{s:?}").to_lowercase()
}

pub(super) fn party_str(p: Option<acp_chaos::models::Party>) -> String {
    p.map_or("none".into(), |p| format!("{p:?}").to_lowercase())
}

pub(super) fn print_verdicts(vs: &[checkers::Verdict], to_stderr: bool) -> i32 {
    let say = |l: String| {
        if to_stderr {
            eprintln!("{l}")
        } else {
            println!("{l}")
        }
    };
    let mut code = exit::VALID;
    for v in vs {
        let title = CHECKERS
            .iter()
            .find(|c| c.property == v.property)
            .map(|c| c.title)
            .unwrap_or("");
        let status = format!("{:?}", v.status).to_lowercase();
        if v.status == Status::Valid {
            say(format!("verdict {} {title}: valid", v.property));
        } else {
            say(format!(
                "verdict {} {title}: {status} (party {}, rules {}, witnesses {:?}, fault op {}): {}",
                v.property,
                v.party.map(|p| format!("{p:?}").to_lowercase()).unwrap_or_else(|| "-".into()),
                v.rules.join(" "),
                v.witnesses,
                v.fault.map(|f| f.to_string()).unwrap_or_else(|| "-".into()),
                v.message
            ));
        }
        code = match (code, v.status) {
            (_, Status::Invalid) => exit::INVALID,
            (exit::VALID, Status::Unknown) => exit::LIVENESS,
            (c, _) => c,
        };
    }
    code
}
