//! What several commands print: a campaign's summary with its failures and findings, one
//! failure's two lines, a run's verdicts.

use std::path::Path;

use crate::checkers::{self, Status, CHECKERS};
use crate::exit;

/// A campaign's summary; `written`: its report folder is there (else the last line says it is
/// not).
pub(super) fn print_summary(summary: &crate::summary::Summary, out: &Path, written: bool) {
    println!();
    print!("{}", crate::report::table_text(summary));
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
    for k in &summary.expectations_unmet {
        println!(
            "EXPECTED a violation in {k} (the scenario says `expect = \"invalid\"`), found none"
        );
    }
    print!("{}", crate::report::coverage_text(summary));
    for (scen, missing) in &summary.vacuous {
        println!("VACUOUS {scen}: never happened: {}", missing.join(", "));
    }
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
            r.file, r.expect, r.got, r.replay
        );
    }
    if summary.interrupted {
        println!("INTERRUPTED: the report covers only the runs done before Ctrl-C");
    }
    if written {
        println!(
            "report: {}/summary.md (summary.json, junit.xml)  exit {}",
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
            "\n  shrunk to {} faults, {} ops, {} raw probes in {} runs: {}",
            s["faults"],
            s["ops"],
            s["raw"],
            s["runs"],
            s["replay"].as_str().unwrap_or("-")
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
        text("repro")
    )
}

pub(super) fn status_str(s: Status) -> String {
    format!("{s:?}").to_lowercase()
}

pub(super) fn party_str(p: Option<crate::models::Party>) -> String {
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
