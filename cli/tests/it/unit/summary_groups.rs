//! The unit tests of `sim/src/summary/groups.rs`.

use acp_chaos::summary::*;
use serde_json::json;

/// One row whose P1 cell has 10 failing runs: two listed under rules A1, one under A1 A11.
fn summary() -> Summary {
    let failure = |rules: &[&str], seed: u64| {
        json!({"scenario": "s", "design": "stored", "property": "P1", "status": "invalid",
               "rules": rules, "party": "agent", "message": format!("seed {seed}"),
               "repro": format!("acp-chaos replay s --seed {seed}")})
    };
    serde_json::from_value(json!({
        "format": acp_chaos::summary::SUMMARY_FORMAT, "name": "c", "seed_start": 0, "seeds": 10, "shard": null,
        "mutant": "no-dedup", "order": ["s@stored"], "expected_invalid": [],
        "sometimes": {}, "interrupted": false, "regressions": [],
        "table": {"s@stored": {"P1": {"seeds": 10, "violations": 10, "findings": 0,
                   "unknown": 0, "first_failing_seed": 0, "parties": ["agent"]}}},
        "classes": {}, "events": {}, "hashes": {}, "vacuous": {}, "findings": [],
        "expectations_unmet": [],
        "failures": [failure(&["A1"], 0), failure(&["A1", "A11"], 1), failure(&["A1"], 2)],
        "nondeterministic": [], "coverage_map": {}, "kept_per_property": 1,
        "scoreboard": null, "exit_code": 1
    }))
    .expect("a summary")
}

#[test]
fn a_cell_split_between_groups_counts_in_each_and_adds_up() {
    let groups = failure_groups(&summary());
    let runs: Vec<(Vec<String>, u64, usize)> = groups
        .iter()
        .map(|g| (g.rules.clone(), g.runs, g.rows.len()))
        .collect();
    assert_eq!(
        runs,
        vec![
            (vec!["A1".to_string()], 9, 1),
            (vec!["A1".to_string(), "A11".to_string()], 1, 1),
        ]
    );
}
