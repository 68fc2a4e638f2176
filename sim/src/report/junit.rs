//! A campaign's `junit.xml`: one `<testsuite>` per scenario@design, one `<testcase>` per
//! property, for CI test views.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::text::xml_escape;
use crate::checkers::CHECKERS;
use crate::summary::Summary;

/// `junit.xml`: one testsuite per scenario@design, one testcase per property. A violation or
/// unknown verdict is a `<failure>` carrying the first failing seed's message and repro line
/// (and the shrunk schedule's replay line); a row that expects a violation (`expect =
/// "invalid"`) passes when it has one and fails when it has none. Findings go to
/// `<system-out>`.
///
/// Long on purpose: a renderer writes its file top to bottom; the order of the code is the order of
/// the XML.
pub fn junit_xml(s: &Summary) -> String {
    // The failure a testcase quotes: its first invalid one, else its first unknown one (the
    // cell's `first_failing_seed` follows the same rule).
    let mut first: BTreeMap<(String, String), &Value> = BTreeMap::new();
    for f in &s.failures {
        let row = format!(
            "{}@{}",
            f["scenario"].as_str().unwrap_or(""),
            f["design"].as_str().unwrap_or("")
        );
        let key = (row, f["property"].as_str().unwrap_or("").to_string());
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
        let row = format!(
            "{}@{}",
            f["scenario"].as_str().unwrap_or(""),
            f["design"].as_str().unwrap_or("")
        );
        finding
            .entry((row, f["property"].as_str().unwrap_or("").to_string()))
            .or_insert(f);
    }
    let mut suites = String::new();
    let (mut tests, mut failures) = (0usize, 0usize);
    for (row, cells) in &s.table {
        let expects_invalid = s.expected_invalid.contains(row);
        let unmet = s.expectations_unmet.contains(row);
        let (mut t, mut fl) = (0usize, 0usize);
        let mut cases = String::new();
        for c in CHECKERS {
            let Some(cell) = cells.get(c.property) else {
                continue;
            };
            t += 1;
            let name = format!("{} {}", c.property, c.title);
            let _ = writeln!(
                cases,
                "    <testcase classname=\"{}\" name=\"{}\">",
                xml_escape(row),
                xml_escape(&name)
            );
            let key = (row.clone(), c.property.to_string());
            let failing = cell.violations > 0 || cell.unknown > 0;
            if failing && !(expects_invalid && cell.unknown == 0) {
                fl += 1;
                let f = first.get(&key);
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
                    let _ = write!(body, "\nshrunk: {r}");
                }
                let _ = writeln!(
                    cases,
                    "      <failure type=\"{kind}\" message=\"{}\">{}</failure>",
                    xml_escape(&msg),
                    xml_escape(&body)
                );
            } else if failing {
                let _ = writeln!(
                    cases,
                    "      <system-out>expected: {} of {} seeds invalid (the scenario shows a spec gap)</system-out>",
                    cell.violations, cell.seeds
                );
            }
            if let Some(f) = finding.get(&key) {
                let _ = writeln!(
                    cases,
                    "      <system-out>{} findings; first: {} repro: {}</system-out>",
                    cell.findings,
                    xml_escape(f["message"].as_str().unwrap_or("")),
                    xml_escape(f["repro"].as_str().unwrap_or(""))
                );
            }
            cases.push_str("    </testcase>\n");
        }
        if unmet {
            t += 1;
            fl += 1;
            let _ = write!(
                cases,
                "    <testcase classname=\"{0}\" name=\"expect invalid\">\n      <failure type=\"expectation\" message=\"the scenario expects a violation on {0}; none was found\"/>\n    </testcase>\n",
                xml_escape(row)
            );
        }
        tests += t;
        failures += fl;
        let _ = write!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{t}\" failures=\"{fl}\" errors=\"0\">\n{cases}  </testsuite>\n",
            xml_escape(row)
        );
    }
    // Campaign-wide verdicts that are not one row's: vacuous scenarios (exit 4) and
    // nondeterministic runs (exit 3), so a CI test view is never green when the exit is not 0.
    let mut whole = String::new();
    for (scen, missing) in &s.vacuous {
        tests += 1;
        failures += 1;
        let _ = writeln!(
            whole,
            "    <testcase classname=\"campaign\" name=\"sometimes {}\">\n      <failure type=\"vacuous\" message=\"never happened: {}\"/>\n    </testcase>",
            xml_escape(scen),
            xml_escape(&missing.join(", "))
        );
    }
    for l in &s.nondeterministic {
        tests += 1;
        failures += 1;
        let _ = writeln!(
            whole,
            "    <testcase classname=\"campaign\" name=\"determinism\">\n      <failure type=\"nondeterminism\" message=\"{}\"/>\n    </testcase>",
            xml_escape(l)
        );
    }
    if s.interrupted {
        tests += 1;
        failures += 1;
        let _ = writeln!(
            whole,
            "    <testcase classname=\"campaign\" name=\"complete\">\n      <failure type=\"interrupted\" message=\"stopped by Ctrl-C: only the runs done are reported\"/>\n    </testcase>"
        );
    }
    if !whole.is_empty() {
        let _ = write!(
            suites,
            "  <testsuite name=\"campaign\" tests=\"{}\" failures=\"{}\" errors=\"0\">\n{whole}  </testsuite>\n",
            s.vacuous.len() + s.nondeterministic.len() + usize::from(s.interrupted),
            s.vacuous.len() + s.nondeterministic.len() + usize::from(s.interrupted)
        );
    }
    if !s.regressions.is_empty() {
        let bad = s.regressions.iter().filter(|r| !r.ok).count();
        tests += s.regressions.len();
        failures += bad;
        let _ = writeln!(
            suites,
            "  <testsuite name=\"regressions\" tests=\"{}\" failures=\"{bad}\" errors=\"0\">",
            s.regressions.len()
        );
        for r in &s.regressions {
            let _ = writeln!(
                suites,
                "    <testcase classname=\"regressions\" name=\"{}\">",
                xml_escape(&r.file)
            );
            if !r.ok {
                let _ = writeln!(
                    suites,
                    "      <failure type=\"regression\" message=\"expected {}, got {}\">repro: {}</failure>",
                    xml_escape(&r.expect),
                    xml_escape(&r.got),
                    xml_escape(&r.replay)
                );
            }
            suites.push_str("    </testcase>\n");
        }
        suites.push_str("  </testsuite>\n");
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"acp-chaos {}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">\n{suites}</testsuites>\n",
        xml_escape(&s.name)
    )
}
