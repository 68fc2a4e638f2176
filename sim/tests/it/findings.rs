//! `acp-chaos findings`: the measurement is a pure function of scenario and seeds (any number
//! of threads), its breakdowns add up to their totals, and its witnesses show what they claim.

use acp_chaos::findings::{self, CLAIMS};
use acp_chaos::history::{op, process};

use super::common;

#[test]
fn findings_are_the_same_on_any_threads_and_their_parts_add_up() {
    let s = common::scenario("swarm-basic");
    let a = findings::measure(&s, 30, 1).unwrap();
    let b = findings::measure(&s, 30, 2).unwrap();
    assert_eq!(a, b, "the measurement depends on the thread count");
    let page = findings::page::markdown(&a, &s, None, "acp-chaos findings swarm-basic --seeds 30");
    assert_eq!(
        page,
        findings::page::markdown(&b, &s, None, "acp-chaos findings swarm-basic --seeds 30")
    );
    assert_eq!(
        page.matches("\n## ").count(),
        CLAIMS.len(),
        "one section per claim"
    );
    let stop = &a.claims["stop-withdraws-earlier"];
    let parts: u64 = stop
        .ordered()
        .iter()
        .filter(|(k, _)| k.starts_with("of them"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(parts, stop.get("queued prompts withdrawn by a stop"));
    let cancel = &a.claims["cancel-request-effect"];
    let ends: u64 = cancel
        .ordered()
        .iter()
        .filter(|(k, _)| k.starts_with("ended") || k.starts_with("still"))
        .map(|(_, n)| n)
        .sum();
    assert!(cancel.get("user cancels") > 0, "swarm-basic draws cancels");
    assert_eq!(ends, cancel.get("user cancels"));
    let x3 = &a.claims["connection-ends-mid-work"];
    for (total, prefix) in [
        ("turns running when their connection ended", "of the turns"),
        ("prompts held when their connection ended", "of the held"),
    ] {
        let parts: u64 = x3
            .ordered()
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, n)| n)
            .sum();
        assert_eq!(parts, x3.get(total), "{total}");
    }
    // The witness of "the cancel had no effect": the user's cancel, then that submission's ack.
    let w = cancel
        .witness
        .expect("a cancel that had no effect in 30 seeds");
    let (h, _) = acp_chaos::run::run_one(&s, w.seed, None, a.designs[w.design_index]);
    assert_eq!(h.ops.len(), w.ops);
    let (c, ack) = (&h.ops[w.at.0], &h.ops[w.at.1]);
    assert_eq!(
        (c.process.as_str(), c.f.as_str()),
        (process::USER, op::CANCEL)
    );
    assert_eq!(
        (ack.process.as_str(), ack.f.as_str()),
        (process::CLIENT, op::ACK)
    );
    assert_eq!(c.value["submission"], ack.value["submission"]);
    assert!(w.at.0 < w.at.1, "acknowledged after the cancel");
}

#[test]
fn a_stop_read_on_one_node_is_seen_withdrawing_a_prompt_held_on_another() {
    let s = common::scenario("cluster-06-stop-reaches-every-node");
    let m = findings::measure(&s, 3, 2).unwrap();
    let c = &m.claims["stop-reaches-other-nodes"];
    assert_eq!(
        c.get("held prompts withdrawn on another node than the one that read the stop"),
        3,
        "one per seed"
    );
}

#[test]
fn the_retention_table_is_the_same_on_any_threads_and_has_duplicates_only_past_the_window() {
    let s = common::scenario(findings::RETENTION_SCENARIO);
    let a = findings::measure_retention(&s, 2, 1).unwrap();
    assert_eq!(a, findings::measure_retention(&s, 2, 2).unwrap());
    let (mut safe, mut past) = (0, 0);
    for (r, (_, _, window)) in findings::RETENTION_ROWS.iter().enumerate() {
        for (c, stale) in findings::STALE_COLUMNS.iter().enumerate() {
            let cell = a.cells[r][c];
            assert_eq!(cell.invalid_runs, 0, "findings only");
            assert_eq!(cell.submissions, 8, "4 submissions x 2 seeds");
            if *window == 0 || (*stale > 0 && stale <= window) {
                safe += cell.duplicates;
            } else {
                past += cell.duplicates;
            }
        }
    }
    assert_eq!(
        safe, 0,
        "no second insertion while the limit is at most the window"
    );
    assert!(past > 0, "a Client with no limit resends past the window");
    // The page gets one more section, with the witness of the file as written.
    let w = a
        .witness
        .expect("the file as written inserts a resend twice");
    let (h, _) =
        acp_chaos::run::run_one(&s, w.seed, None, findings::RETENTION_ROWS[w.design_index].1);
    let (first, second) = (&h.ops[w.at.0], &h.ops[w.at.1]);
    assert_eq!(first.f, op::INSERT);
    assert_eq!(second.f, op::INSERT);
    let discard = h.ops[w.at.0..w.at.1]
        .iter()
        .any(|o| o.f == op::DISCARD && o.value["messageId"] == first.value["messageId"]);
    assert!(
        discard,
        "the first was discarded before the second insertion"
    );
    let m = findings::Measured {
        retention: Some(a),
        ..findings::measure(&common::scenario("swarm-basic"), 1, 1).unwrap()
    };
    let page = findings::page::markdown(&m, &common::scenario("swarm-basic"), Some(&s), "x");
    assert_eq!(page.matches("\n## ").count(), CLAIMS.len() + 1);
    assert!(page.contains(&format!(
        "acp-chaos replay {} --seed {}",
        findings::RETENTION_SCENARIO,
        w.seed
    )));
}
