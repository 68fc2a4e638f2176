//! The probe's `junit.xml`: one `<testsuite>` per trace or scenario, one `<testcase>` per
//! property, for CI test views of a real agent (the conformance kit's report for CI).
//!
//! A property invalid in any run is a `<failure>` quoting the first failing run's verdict,
//! its rules and the retry command; one that was only unknown is `<skipped>` with the reason
//! (a vacuous check, a run that could not finish); a trace or scenario that was not run is one
//! skipped testcase saying why. Rates go in the message: a real process is not deterministic.

use std::fmt::Write as _;

use super::report::{Failure, ProbeSummary};
use crate::checkers::Status;
use crate::report::xml_escape;

/// `junit.xml` of a probe summary.
pub fn junit_xml(s: &ProbeSummary) -> String {
    let mut suites = String::new();
    let (mut tests, mut failures, mut skipped) = (0usize, 0usize, 0usize);
    for (trace, cells) in &s.table {
        let (mut t, mut fl, mut sk) = (0usize, 0usize, 0usize);
        let mut cases = String::new();
        for (property, c) in cells {
            t += 1;
            let first = |st: Status| -> Option<&Failure> {
                s.failures.iter().find(|f| {
                    &f.trace == trace && &f.verdict.property == property && f.verdict.status == st
                })
            };
            let _ = write!(
                cases,
                "    <testcase classname=\"{}\" name=\"{}\">",
                xml_escape(trace),
                xml_escape(property)
            );
            if c.invalid > 0 {
                fl += 1;
                let f = first(Status::Invalid);
                let message = format!(
                    "invalid in {} of {} runs: {}",
                    c.invalid,
                    c.runs,
                    f.map(|f| f.verdict.message.as_str()).unwrap_or("")
                );
                let _ = write!(
                    cases,
                    "\n      <failure message=\"{}\" type=\"invalid\">rules: {}\nretry: {}</failure>\n    ",
                    xml_escape(&message),
                    xml_escape(&f.map(|f| f.verdict.rules.join(" ")).unwrap_or_default()),
                    xml_escape(&f.map(|f| f.retry.clone()).unwrap_or_default())
                );
            } else if c.unknown > 0 {
                sk += 1;
                let f = first(Status::Unknown);
                let message = format!(
                    "unknown in {} of {} runs{}: {}",
                    c.unknown,
                    c.runs,
                    if c.vacuous > 0 {
                        " (vacuous: judged nothing)"
                    } else {
                        ""
                    },
                    f.map(|f| f.verdict.message.as_str()).unwrap_or("")
                );
                let _ = write!(cases, "<skipped message=\"{}\"/>", xml_escape(&message));
            }
            cases.push_str("</testcase>\n");
        }
        tests += t;
        failures += fl;
        skipped += sk;
        let _ = write!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{t}\" failures=\"{fl}\" skipped=\"{sk}\">\n{cases}  </testsuite>\n",
            xml_escape(trace)
        );
    }
    for (trace, why) in &s.not_run {
        tests += 1;
        skipped += 1;
        let _ = write!(
            suites,
            "  <testsuite name=\"{0}\" tests=\"1\" failures=\"0\" skipped=\"1\">\n    <testcase classname=\"{0}\" name=\"not run\"><skipped message=\"{1}\"/></testcase>\n  </testsuite>\n",
            xml_escape(trace),
            xml_escape(why)
        );
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"acp-chaos probe {}\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\">\n{suites}</testsuites>\n",
        xml_escape(&s.agent)
    )
}
