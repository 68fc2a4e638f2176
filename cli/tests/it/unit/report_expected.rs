//! The unit tests of `sim/src/report/expected.rs`.

use acp_chaos::checkers::Verdict;
use acp_chaos::history::{History, Op};
use serde_json::json;

use acp_chaos::checkers::{Status, CHECKERS};
use acp_chaos::history::OpType;
use acp_chaos::report::expected::{general, Expected};

/// Every property's page states its expected behaviour on every witness row, in words of
/// its own: never "the summary above", never empty.
#[test]
fn every_witness_row_states_what_its_property_required() {
    let op = Op {
        index: 0,
        time_ms: 0,
        process: "client".into(),
        kind: OpType::Info,
        f: "attempt".into(),
        value: json!({"submission": 1}),
    };
    let h = History {
        header: json!({}),
        ops: vec![op],
    };
    for c in CHECKERS {
        let mut v = Verdict::valid(c.property.as_str());
        v.status = Status::Invalid;
        v.witnesses = vec![0];
        let e = Expected::of(&v, &h);
        assert_eq!(e.rows.len(), 1, "{}", c.property);
        let required = &e.rows[0].2;
        assert!(!required.is_empty(), "{}", c.property);
        assert!(!required.contains("above"), "{}: {required}", c.property);
        assert_eq!(
            Some(e.summary.as_str()),
            general(c.property.as_str()),
            "{}",
            c.property
        );
    }
}
