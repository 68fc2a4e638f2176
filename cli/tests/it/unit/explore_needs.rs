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

/// The needs scenario `name`'s fault-free run at seed 0 under `design` meets.
fn met_by(s: &acp_chaos::scenario::Scenario, design: acp_chaos::models::Design) -> Vec<Need> {
    let plan = acp_chaos::plan::Plan::derive(s, 0, None, design);
    let h = acp_chaos::world::run(&plan);
    met(&plan, &h).into_iter().collect()
}

/// `inserts-other-prompt` needs a raw prompt that reuses a raw prompt's key with another text,
/// not any raw probe: the key probes of `field-f19` lack it, `key-01`'s pair has it.
#[test]
fn a_rekey_probe_is_a_recorded_key_with_another_text_not_any_raw_probe() {
    use acp_chaos::models::Design::Stored;
    let f19 = met_by(&crate::common::scenario("field-f19-key-validation"), Stored);
    assert!(f19.contains(&Need::RawProbe), "{f19:?}");
    assert!(!f19.contains(&Need::RekeyProbe), "{f19:?}");
    assert_eq!(of_mutant("inserts-other-prompt"), [Need::RekeyProbe]);
    let key01 = met_by(
        &crate::common::scenario("key-01-recorded-key-other-prompt"),
        Stored,
    );
    assert!(key01.contains(&Need::RekeyProbe), "{key01:?}");
    // The same key with the same text is a retry, not a rekey.
    let mut same = crate::common::scenario("key-01-recorded-key-other-prompt");
    let first = same.raw[0].line.clone();
    same.raw[1].line = first;
    assert!(!met_by(&same, Stored).contains(&Need::RekeyProbe));
}

/// `any-cancel-withdraws` needs a cancel nobody pressed and an Agent that holds prompts: a
/// trace with key probes only lacks the first, `cancel-03`'s raw stop over held prompts has
/// both.
#[test]
fn a_stop_nobody_pressed_is_a_raw_stop_or_cancel() {
    use acp_chaos::models::Design::Stored;
    let f19 = met_by(&crate::common::scenario("field-f19-key-validation"), Stored);
    assert!(!f19.contains(&Need::UnpressedStop), "{f19:?}");
    assert_eq!(
        of_mutant("any-cancel-withdraws"),
        [Need::UnpressedStop, Need::Holding]
    );
    let c03 = met_by(
        &crate::common::scenario("cancel-03-stop-nobody-pressed"),
        Stored,
    );
    for n in [Need::UnpressedStop, Need::Stop, Need::Holding] {
        assert!(c03.contains(&n), "{n:?} in {c03:?}");
    }
    // A user's stop is pressed.
    let pressed = met_by(
        &crate::common::scenario("cancel-04-stop-while-asking"),
        Stored,
    );
    assert!(pressed.contains(&Need::Stop), "{pressed:?}");
    assert!(!pressed.contains(&Need::UnpressedStop), "{pressed:?}");
}

/// `close-inactive-errors` needs a close the Agent may find inactive: a raw close (of a
/// missing session: that is no close of a session the Client has, so no [`Need::Close`]), or
/// a user's close on a cluster; a user's close elsewhere is not one.
#[test]
fn an_inactive_close_is_a_raw_close_or_a_user_close_on_a_cluster() {
    use acp_chaos::models::Design::{Cluster, Stored};
    assert_eq!(of_mutant("close-inactive-errors"), [Need::InactiveClose]);
    let user = crate::common::scenario("session-01-close-fork-list");
    let stored = met_by(&user, Stored);
    assert!(stored.contains(&Need::Close), "{stored:?}");
    assert!(!stored.contains(&Need::InactiveClose), "{stored:?}");
    let cluster = met_by(&user, Cluster);
    assert!(cluster.contains(&Need::InactiveClose), "{cluster:?}");
    let s03 = met_by(
        &crate::common::scenario("session-03-close-while-running"),
        Stored,
    );
    assert!(s03.contains(&Need::InactiveClose), "{s03:?}");
    // A raw close of a session that does not exist, in a trace without the user's close.
    let mut missing = crate::common::scenario("key-01-recorded-key-other-prompt");
    missing.raw.truncate(1);
    missing.raw[0].line = Some(
        r#"{"jsonrpc":"2.0","id":$ID,"method":"session/close","params":{"sessionId":"gone"}}"#
            .into(),
    );
    let m = met_by(&missing, Stored);
    assert!(m.contains(&Need::InactiveClose), "{m:?}");
    assert!(!m.contains(&Need::Close), "{m:?}");
}
