//! The unit tests of `sim/src/bounds.rs`.

use acp_chaos::bounds::*;

#[test]
fn bounds_say_their_rule_and_refuse_the_ends_past_it() {
    assert_eq!(SESSIONS.check(0).as_deref(), Some("must be 1 to 16"));
    assert_eq!(SESSIONS.check(17).as_deref(), Some("must be 1 to 16"));
    assert_eq!(SESSIONS.check(16), None);
    assert_eq!(MS.check(MS_MAX + 1).as_deref(), Some("at most 600000"));
    assert!(NODES.max as usize == acp_chaos::history::NODES.len());
}

#[test]
fn rates_refuse_nan_and_out_of_range() {
    for bad in ["2", "nan", "NaN", "-0.1", "inf", "x", ""] {
        assert!(parse_rate(bad).is_err(), "{bad}");
    }
    assert_eq!(parse_rate("0.25"), Ok(0.25));
    assert_eq!(parse_rate("1"), Ok(1.0));
}
