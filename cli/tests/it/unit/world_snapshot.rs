//! The unit tests of `sim/src/world/snapshot.rs`.

use acp_chaos::world::snapshot::*;
use acp_chaos::world::wakes::Wakes;
use std::rc::Rc;

#[test]
fn a_party_without_a_digest_makes_no_snapshot() {
    let mut s = Snapshots::new(Rc::new(Wakes::default()));
    s.set_digest("agent", Some(1));
    assert!(s.take(0).is_some());
    s.set_digest("client", None);
    assert_eq!(s.take(0), None);
    s.crashed("client");
    assert!(s.take(0).is_some());
}

#[test]
fn unsynced_records_and_the_nemesis_are_part_of_it() {
    let mut s = Snapshots::new(Rc::new(Wakes::default()));
    let a = s.take(7);
    s.persisted("agent", false);
    let b = s.take(7);
    assert_ne!(a, b);
    s.persisted("agent", true);
    s.set_nemesis(3);
    assert_ne!(s.take(7), b);
    assert_ne!(s.take(7), s.take(8), "the ledger's part is part of it");
}
