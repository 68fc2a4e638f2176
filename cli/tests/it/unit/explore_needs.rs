//! The unit tests of `sim/src/explore/needs.rs`.

use acp_chaos::explore::needs::*;
use acp_chaos::models::mutant::Need;
use acp_chaos::models::mutant::MUTANTS;

/// The registry's rows are what `of_mutant` answers, and the needs most mutants of a kind
/// share are there (a cancel mutant needs a cancel).
#[test]
fn every_mutant_row_answers_its_needs() {
    for m in MUTANTS {
        assert_eq!(of_mutant(m.name), m.needs, "{}", m.name);
    }
    for (name, need) in [
        ("cancel-answers-one", Need::CancelRequest),
        ("close-forgets-held", Need::Close),
        ("cluster-check-then-insert", Need::TwoNodes),
        ("cancel-keeps-asking", Need::PermissionAsk),
        ("failure-ends-as-end-turn", Need::FailingWork),
        ("drop-held-drops-retries", Need::DropHeld),
    ] {
        assert!(of_mutant(name).contains(&need), "{name}");
    }
    assert!(of_mutant("no such mutant").is_empty());
}
