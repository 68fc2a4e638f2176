//! The unit tests of `sim/src/harness.rs`.

use acp_chaos::harness::*;

/// An expected property no checker judges is an error naming the known ones, never a
/// vacuous pass.
#[test]
fn an_expected_property_that_no_checker_judges_is_an_error() {
    for p in ["P99", "p2"] {
        let h = Harness::scenario("rfd-01-retry-same-connection")
            .unwrap()
            .quiet(true)
            .seeds(0..1)
            .expect_holds(p);
        let e = h.run().unwrap_err().to_string();
        assert!(
            e.contains(&format!("no checker judges `{p}`")) && e.contains("P17"),
            "{e}"
        );
        let e = h
            .explore(Mode::Lineage {
                faults: 1,
                budget: 5,
            })
            .unwrap_err();
        assert!(e.to_string().contains("no checker judges"), "{e}");
    }
    let ok = Harness::scenario("rfd-01-retry-same-connection")
        .unwrap()
        .quiet(true)
        .seeds(0..1)
        .expect_holds("P2")
        .run()
        .unwrap();
    ok.assert_expected();
    assert_eq!(ok.counted, 1);
}
