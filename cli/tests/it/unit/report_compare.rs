//! The unit tests of `sim/src/report/compare.rs`.

use acp_chaos::checkers::Verdict;
use acp_chaos::history::History;
use acp_chaos::report::compare::{named_submissions, why_they_differ};

/// A run shrinking left as it was is said to be the original, not "a run of its own (N
/// ops, not N)".
#[test]
fn an_unchanged_run_is_called_the_original() {
    let h = History::default();
    let v = Verdict::valid("P1");
    let s = why_they_differ((&v, &h), (&v, &h));
    assert!(s.starts_with("Shrinking changed nothing"), "{s}");
    assert!(!s.contains("not 0"), "{s}");
}

#[test]
fn names_submissions() {
    assert_eq!(
        named_submissions("submission 2 inserted twice (a then b)"),
        vec!["2".to_string()]
    );
    assert_eq!(
        named_submissions("submission 10: the Client no longer holds it"),
        vec!["10".to_string()]
    );
    assert!(named_submissions("request 3 on connection 1").is_empty());
}
