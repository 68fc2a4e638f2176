//! The unit tests of `sim/src/summary/mod.rs`.

use serde_json::json;

#[test]
fn a_shrunk_size_counts_in_words_one_and_many() {
    assert_eq!(
        acp_chaos::summary::shrunk_size(&json!({"faults": 1, "ops": 2, "raw": 0})),
        "1 fault, 2 workload ops, 0 raw probes"
    );
    assert_eq!(
        acp_chaos::summary::shrunk_size(&json!({"faults": 3, "ops": 1, "raw": 1})),
        "3 faults, 1 workload op, 1 raw probe"
    );
}
