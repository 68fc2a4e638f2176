//! The unit tests of `sim/src/retry_class/audit.rs`.

use acp_chaos::models::methods::{self, Direction, RetryClass};
use acp_chaos::retry_class::audit::*;

/// The class table and the models stay in step: every method's repeat behaviour fits its
/// class on the correct stored Agent.
#[test]
fn every_method_behaves_on_a_repeat_as_its_class_says() {
    let rows = audit();
    assert!(rows.len() >= 13);
    for r in &rows {
        assert!(r.consistent, "{}: {:?} but {}", r.method, r.class, r.repeat);
    }
    let dup: Vec<_> = rows
        .iter()
        .filter(|r| r.class == RetryClass::Duplicating)
        .map(|r| r.method)
        .collect();
    assert_eq!(dup, vec!["session/new", "session/fork"]);
    assert_eq!(
        rows.iter().filter(|r| r.class == RetryClass::Keyed).count(),
        1
    );
}

/// Every method of the table, both directions, has one audit row with its class; the
/// Client→Agent methods the models speak are measured.
#[test]
fn every_method_of_the_table_has_a_row() {
    let rows = audit();
    for (direction, m) in methods::all() {
        let of: Vec<&AuditRow> = rows
            .iter()
            .filter(|r| r.method == m.name && r.direction == direction)
            .collect();
        assert_eq!(of.len(), 1, "{} ({direction:?})", m.name);
        assert_eq!((of[0].class, of[0].inferred), (m.class, m.inferred));
        let measurable = m.spoken() && direction == Direction::ClientToAgent;
        assert_eq!(of[0].not_measured.is_none(), measurable, "{}", m.name);
    }
    let text = table_text(&rows);
    assert!(text.contains("session/set_title") && text.contains("elicitation/create"));
}
