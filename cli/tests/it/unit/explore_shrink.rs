//! The unit tests of `sim/src/explore/shrink.rs`.

use acp_chaos::explore::shrink::ddmin;

#[test]
fn ddmin_finds_a_one_minimal_subset() {
    // Fails when both 3 and 7 are present.
    let mut calls = 0;
    let got = ddmin((0..10).collect(), &mut |s: &[u32]| {
        calls += 1;
        s.contains(&3) && s.contains(&7)
    });
    assert_eq!(got, vec![3, 7]);
    assert!(calls < 40, "{calls} tests");
    // Fails with nothing at all.
    assert!(ddmin(vec![1, 2], &mut |_: &[u32]| true).is_empty());
    // One unit needed.
    assert_eq!(
        ddmin((0..9).collect(), &mut |s: &[u32]| s.contains(&8)),
        vec![8]
    );
}
