//! The probe's `junit.xml` (written with `quick-junit`): one `<testsuite>` per trace or
//! scenario, one `<testcase>` per property, for CI test views of a real agent (the conformance
//! kit's report for CI). Both `acp-chaos probe` and `acp-chaos probe --client` write it.
//!
//! A property invalid in any run is a `<failure>` quoting the first failing run's verdict,
//! its rules and the retry command; one that was only unknown is `<skipped>` with the reason
//! (a vacuous check, a run that could not finish); a trace or scenario that was not run is one
//! skipped testcase saying why. Rates go in the message: a real process is not deterministic.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::report::{Failure, ProbeSummary};
use acp_chaos::checkers::Status;

/// `junit.xml` of a probe summary. Every testcase carries `time` (the wall time of the trace's
/// runs, summed) and the properties `agent`, `command`, `runs`, the `design` and `mutant` of
/// our own model when the command names them (`--design`, `--mutant`), and, when it failed,
/// `run` (the first failing run's index) and `folder` (its kept run folder).
///
/// Long on purpose: a renderer: one testcase per row, its properties in order.
pub fn junit_xml(s: &ProbeSummary) -> String {
    let mut report = Report::new(format!("acp-chaos probe {}", s.agent));
    let command = s.target.command.join(" ");
    let flag = |name: &str| {
        s.target
            .command
            .iter()
            .position(|a| a == name)
            .and_then(|i| s.target.command.get(i + 1))
            .cloned()
    };
    let (design, mutant) = (flag("--design"), flag("--mutant"));
    for (trace, cells) in &s.table {
        let wall_ms: u64 = s
            .runs
            .iter()
            .filter(|r| &r.trace == trace)
            .map(|r| r.wall_ms)
            .sum();
        let mut suite = TestSuite::new(trace.as_str());
        suite.set_time(Duration::from_millis(wall_ms));
        for (property, c) in cells {
            let first = |st: Status| -> Option<&Failure> {
                s.failures.iter().find(|f| {
                    &f.trace == trace && &f.verdict.property == property && f.verdict.status == st
                })
            };
            let mut failed = None;
            let status = if c.invalid > 0 {
                let f = first(Status::Invalid);
                failed = f;
                let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                st.set_type("invalid")
                    .set_message(format!(
                        "invalid in {} of {} runs: {}",
                        c.invalid,
                        c.runs,
                        f.map(|f| f.verdict.message.as_str()).unwrap_or("")
                    ))
                    .set_description(format!(
                        "rules: {}\nretry: {}",
                        f.map(|f| f.verdict.rules.join(" ")).unwrap_or_default(),
                        f.map(|f| f.retry.as_str()).unwrap_or_default()
                    ));
                st
            } else if c.unknown > 0 {
                let f = first(Status::Unknown);
                failed = f;
                let mut st = TestCaseStatus::skipped();
                st.set_message(format!(
                    "unknown in {} of {} runs{}: {}",
                    c.unknown,
                    c.runs,
                    if c.vacuous > 0 {
                        " (vacuous: judged nothing)"
                    } else {
                        ""
                    },
                    f.map(|f| f.verdict.message.as_str()).unwrap_or("")
                ));
                st
            } else {
                TestCaseStatus::success()
            };
            let mut props = vec![
                Property::new("agent", s.agent.as_str()),
                Property::new("command", command.as_str()),
                Property::new("runs", c.runs.to_string()),
            ];
            if let Some(d) = &design {
                props.push(Property::new("design", d.as_str()));
            }
            if let Some(m) = &mutant {
                props.push(Property::new("mutant", m.as_str()));
            }
            if let Some(f) = failed {
                props.push(Property::new("run", f.run.to_string()));
                if let Some(folder) = &f.folder {
                    props.push(Property::new("folder", folder.as_str()));
                }
            }
            let mut case = TestCase::new(property.as_str(), status);
            case.set_classname(trace.as_str())
                .set_time(Duration::from_millis(wall_ms))
                .add_properties(props);
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    for (trace, why) in &s.not_run {
        let mut st = TestCaseStatus::skipped();
        st.set_message(why.as_str());
        let mut case = TestCase::new("not run", st);
        case.set_classname(trace.as_str());
        let mut suite = TestSuite::new(trace.as_str());
        suite.add_test_case(case);
        report.add_test_suite(suite);
    }
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- junit.xml could not be written: {e} -->\n"))
}
