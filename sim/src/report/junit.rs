//! A campaign's `junit.xml` (written with `quick-junit`): one `<testsuite>` per
//! scenario@design, one `<testcase>` per property, for CI test views.

use std::collections::BTreeMap;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use serde_json::Value;

use crate::checkers::CHECKERS;
use crate::summary::{Summary, Tally};

/// `junit.xml`: one testsuite per scenario@design, one testcase per property. A violation or
/// unknown verdict is a `<failure>` carrying the first failing seed's message and repro line
/// (and the shrunk schedule's replay line); a row that expects a violation (`expect =
/// "invalid"`) passes when it has one and fails when it has none. Findings go to
/// `<system-out>`.
///
/// Every testcase carries `time` (the simulated seconds its runs span, summed: deterministic,
/// so the file is the same bytes for the same campaign) and the properties `design`, `mutant`
/// (`none` for the correct models), `seeds` (the range run, `S..E`), and, when it failed,
/// `seed` (the first failing seed) and `hash` (that run's history hash).
///
/// Long on purpose: a renderer: one testcase per row, its properties in order.
pub fn junit_xml(s: &Summary) -> String {
    // The failure a testcase quotes: its first invalid one, else its first unknown one (the
    // cell's `first_failing_seed` follows the same rule).
    let mut first: BTreeMap<(String, String), &Value> = BTreeMap::new();
    for f in &s.failures {
        let key = (row_of(f), f["property"].as_str().unwrap_or("").to_string());
        let invalid = f["status"] == "invalid";
        match first.get(&key) {
            Some(old) if old["status"] == "invalid" || !invalid => {}
            _ => {
                first.insert(key, f);
            }
        }
    }
    let mut finding: BTreeMap<(String, String), &Value> = BTreeMap::new();
    for f in &s.findings {
        finding
            .entry((row_of(f), f["property"].as_str().unwrap_or("").to_string()))
            .or_insert(f);
    }
    let mutant = s.mutant.as_deref().unwrap_or("none");
    let seeds = format!("{}..{}", s.seed_start, s.seed_start.saturating_add(s.seeds));
    let mut report = Report::new(format!("acp-chaos {}", s.name));
    for (row, cells) in &s.table {
        let design = row.rsplit_once('@').map(|(_, d)| d).unwrap_or("");
        let expects_invalid = s.expected_invalid.contains(row);
        let mut suite = TestSuite::new(row.as_str());
        let mut row_ms = 0u64;
        for c in CHECKERS {
            let Some(cell) = cells.get(c.property.as_str()) else {
                continue;
            };
            row_ms = row_ms.max(cell.sim_ms);
            let key = (row.clone(), c.property.to_string());
            let failing = cell.violations > 0 || cell.unknown > 0;
            let f = first.get(&key);
            let mut out = Vec::new();
            let status = if failing && !(expects_invalid && cell.unknown == 0) {
                failure_status(cell, f.copied())
            } else {
                if failing {
                    out.push(format!(
                        "expected: {} of {} seeds invalid (the scenario shows a spec gap)",
                        cell.violations, cell.seeds
                    ));
                }
                TestCaseStatus::success()
            };
            if let Some(f) = finding.get(&key) {
                out.push(format!(
                    "{} findings; first: {} repro: {}",
                    cell.findings,
                    f["message"].as_str().unwrap_or(""),
                    f["repro"].as_str().unwrap_or("")
                ));
            }
            let mut case = TestCase::new(format!("{} {}", c.property, c.title), status);
            case.set_classname(row.as_str())
                .set_time(Duration::from_millis(cell.sim_ms))
                .add_properties(case_properties(design, mutant, &seeds, cell, f.copied()));
            if !out.is_empty() {
                case.set_system_out(out.join("\n"));
            }
            suite.add_test_case(case);
        }
        if s.expectations_unmet.contains(row) {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_type("expectation").set_message(format!(
                "the scenario expects a violation on {row}; none was found"
            ));
            let mut case = TestCase::new("expect invalid", status);
            case.set_classname(row.as_str());
            suite.add_test_case(case);
        }
        suite.set_time(Duration::from_millis(row_ms));
        report.add_test_suite(suite);
    }
    // Campaign-wide verdicts that are not one row's: vacuous scenarios (exit 4) and
    // nondeterministic runs (exit 3), so a CI test view is never green when the exit is not 0.
    let mut whole = TestSuite::new("campaign");
    let failed = |ty: &str, message: String| {
        let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
        st.set_type(ty).set_message(message);
        st
    };
    for (scen, missing) in &s.vacuous {
        let mut case = TestCase::new(
            format!("sometimes {scen}"),
            failed("vacuous", format!("never happened: {}", missing.join(", "))),
        );
        case.set_classname("campaign");
        whole.add_test_case(case);
    }
    for l in &s.nondeterministic {
        let mut case = TestCase::new("determinism", failed("nondeterminism", l.clone()));
        case.set_classname("campaign");
        whole.add_test_case(case);
    }
    if s.interrupted {
        let mut case = TestCase::new(
            "complete",
            failed(
                "interrupted",
                "stopped by Ctrl-C: only the runs done are reported".into(),
            ),
        );
        case.set_classname("campaign");
        whole.add_test_case(case);
    }
    if !whole.test_cases.is_empty() {
        report.add_test_suite(whole);
    }
    if !s.regressions.is_empty() {
        let mut suite = TestSuite::new("regressions");
        for r in &s.regressions {
            let status = if r.ok {
                TestCaseStatus::success()
            } else {
                let mut st = failed(
                    "regression",
                    format!("expected {}, got {}", r.expect, r.got),
                );
                st.set_description(format!("repro: {}", r.replay));
                st
            };
            let mut case = TestCase::new(r.file.as_str(), status);
            case.set_classname("regressions");
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- junit.xml could not be written: {e} -->\n"))
}

/// `scenario@design` of a failure or finding entry of `summary.json`.
fn row_of(f: &Value) -> String {
    format!(
        "{}@{}",
        f["scenario"].as_str().unwrap_or(""),
        f["design"].as_str().unwrap_or("")
    )
}

/// The `<failure>` of a failing cell: counts, the first failing seed's message, repro and
/// shrunk replay line.
fn failure_status(cell: &Tally, f: Option<&Value>) -> TestCaseStatus {
    let msg = f
        .and_then(|f| f["message"].as_str())
        .unwrap_or("failed")
        .to_string();
    let kind = if cell.violations > 0 {
        "invalid"
    } else {
        "unknown"
    };
    let mut body = format!(
        "{} of {} seeds invalid, {} unknown\nseed {}: {msg}\nrepro: {}",
        cell.violations,
        cell.seeds,
        cell.unknown,
        cell.first_failing_seed
            .map(|x| x.to_string())
            .unwrap_or_default(),
        f.and_then(|f| f["repro"].as_str()).unwrap_or("-")
    );
    if let Some(r) = f.and_then(|f| f["shrunk"]["replay"].as_str()) {
        body.push_str(&format!("\nshrunk: {r}"));
    }
    let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
    st.set_type(kind).set_message(msg).set_description(body);
    st
}

/// A testcase's properties: design, mutant, the seed range; the first failing seed and its
/// history hash when the cell failed.
fn case_properties(
    design: &str,
    mutant: &str,
    seeds: &str,
    cell: &Tally,
    f: Option<&Value>,
) -> Vec<Property> {
    let mut p = vec![
        Property::new("design", design),
        Property::new("mutant", mutant),
        Property::new("seeds", seeds),
    ];
    let seed = f
        .and_then(|f| f["seed"].as_u64())
        .or(cell.first_failing_seed);
    if let Some(seed) = seed {
        p.push(Property::new("seed", seed.to_string()));
    }
    if let Some(h) = f.and_then(|f| f["hash"].as_str()) {
        p.push(Property::new("hash", h));
    }
    p
}
