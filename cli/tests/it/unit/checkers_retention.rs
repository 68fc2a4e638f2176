//! The unit tests of `sim/src/checkers/mod.rs` (retention).

use acp_chaos::checkers::verdict::{Status, Verdict};
use acp_chaos::checkers::*;
use acp_chaos::history::History;
use acp_chaos_models::Party;
use serde_json::json;
use serde_json::Value;

fn hist(retention: &str, ops: &[(&str, &str, Value)]) -> History {
    super::checkers::history_of(json!({"format": 1, "plan": {"retention": retention}}), ops)
}

/// Insert m1 (visible), crash, recover without it, retry inserts m2 (same key).
fn lost_then_redone(mid2: &str) -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("user", "submit", json!({"submission": 1})),
        (
            "client",
            "attempt",
            json!({"submission": 1, "conn": 1, "id": 3, "key": "k"}),
        ),
        (
            "agent",
            "insert",
            json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 3}),
        ),
        ("agent", "visible", json!({"messageId": "m1"})),
        ("nemesis", "crash", json!({"host": "agent"})),
        (
            "agent",
            "recover",
            json!({"boot": 1, "retained": {"s": []}}),
        ),
        (
            "client",
            "attempt",
            json!({"submission": 1, "conn": 2, "id": 3, "key": "k"}),
        ),
        (
            "agent",
            "insert",
            json!({"session": "s", "messageId": mid2, "key": "k", "conn": 2, "id": 3}),
        ),
        ("agent", "visible", json!({"messageId": mid2})),
        ("client", "ack", json!({"submission": 1, "messageId": mid2})),
    ]
}

fn verdict(h: &History, p: &str) -> Verdict {
    check_all(h).into_iter().find(|v| v.property == p).unwrap()
}

#[test]
fn a_loss_the_retention_allows_is_a_finding_a_durable_loss_a_violation() {
    let process = hist("process", &lost_then_redone("m2"));
    assert_eq!(verdict(&process, "P1").status, Status::Finding);
    assert_eq!(verdict(&process, "P11").status, Status::Finding);
    let durable = hist("durable", &lost_then_redone("m2"));
    assert_eq!(verdict(&durable, "P1").status, Status::Invalid);
    assert_eq!(verdict(&durable, "P11").status, Status::Invalid);
}

#[test]
fn p12_repeated_id_is_a_finding_after_a_loss_and_a_violation_otherwise() {
    let h = hist("process", &lost_then_redone("m1"));
    assert_eq!(verdict(&h, "P12").status, Status::Finding);
    let mut ops = lost_then_redone("m1");
    ops.remove(5); // no restart: the first m1 is still there
    ops.remove(4);
    let h = hist("process", &ops);
    assert_eq!(verdict(&h, "P12").status, Status::Invalid);
    assert_eq!(verdict(&h, "P1").status, Status::Invalid);
}

#[test]
fn live_only_key_forgotten_after_the_session_is_active_nowhere_is_a_finding() {
    let ops = vec![
        ("user", "submit", json!({"submission": 1})),
        ("agent", "activate", json!({"session": "s", "conn": 1})),
        (
            "client",
            "attempt",
            json!({"submission": 1, "conn": 1, "id": 3, "key": "k"}),
        ),
        (
            "agent",
            "insert",
            json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 3, "live_only": true}),
        ),
        ("agent", "visible", json!({"messageId": "m1"})),
        ("agent", "conn-end", json!({"conn": 1})),
        ("agent", "activate", json!({"session": "s", "conn": 2})),
        (
            "client",
            "attempt",
            json!({"submission": 1, "conn": 2, "id": 3, "key": "k"}),
        ),
        (
            "agent",
            "insert",
            json!({"session": "s", "messageId": "m2", "key": "k", "conn": 2, "id": 3, "live_only": true}),
        ),
        ("agent", "visible", json!({"messageId": "m2"})),
        ("client", "ack", json!({"submission": 1, "messageId": "m2"})),
    ];
    assert_eq!(
        verdict(&hist("durable", &ops), "P1").status,
        Status::Finding
    );
    // Still active on another connection: the key must be recognized (A11).
    let mut kept = ops.clone();
    kept.insert(2, ("agent", "activate", json!({"session": "s", "conn": 9})));
    assert_eq!(
        verdict(&hist("durable", &kept), "P1").status,
        Status::Invalid
    );
}

fn answer(conn: u64, id: u64, body: Value) -> (&'static str, &'static str, Value) {
    let mut frame = json!({"jsonrpc": "2.0", "id": id});
    for (k, v) in body.as_object().unwrap() {
        frame[k] = v.clone();
    }
    (
        "net",
        "send",
        json!({"conn": conn, "from": "agent", "frame": frame}),
    )
}

fn prompt_sent(conn: u64, id: u64) -> (&'static str, &'static str, Value) {
    (
        "net",
        "send",
        json!({"conn": conn, "from": "client", "frame": {"id": id, "method": "session/prompt"}}),
    )
}

#[test]
fn p3_two_message_ids_for_one_submission() {
    let mut ops = lost_then_redone("m2");
    ops.truncate(2);
    ops.push(prompt_sent(1, 3));
    ops.push((
        "agent",
        "insert",
        json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 3}),
    ));
    ops.push(("agent", "visible", json!({"messageId": "m1"})));
    ops.push(answer(1, 3, json!({"result": {"messageId": "m1"}})));
    ops.push((
        "client",
        "attempt",
        json!({"submission": 1, "conn": 1, "id": 4, "key": "k"}),
    ));
    ops.push(prompt_sent(1, 4));
    ops.push(answer(1, 4, json!({"result": {"messageId": "m9"}})));
    let v = verdict(&hist("durable", &ops), "P3");
    assert_eq!((v.status, v.party), (Status::Invalid, Some(Party::Agent)));
    ops.pop();
    ops.push(answer(1, 4, json!({"result": {"messageId": "m1"}})));
    assert_eq!(verdict(&hist("durable", &ops), "P3").status, Status::Valid);
}

#[test]
fn p4_error_after_insertion_blames_the_agent() {
    let mut ops = lost_then_redone("m2");
    ops.truncate(2);
    ops.push(prompt_sent(1, 3));
    ops.push((
        "agent",
        "insert",
        json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 3}),
    ));
    ops.push(answer(1, 3, json!({"error": {"code": -32603}})));
    let v = verdict(&hist("durable", &ops), "P4");
    assert_eq!((v.status, v.party), (Status::Invalid, Some(Party::Agent)));
    // An error to an attempt that inserted nothing is fine.
    ops.remove(3);
    assert_eq!(verdict(&hist("durable", &ops), "P4").status, Status::Valid);
}

#[test]
fn a_second_tool_side_effect_for_one_insertion_breaks_a1() {
    let mut ops = lost_then_redone("m2");
    ops.truncate(4);
    ops.push(("agent", "tool-effect", json!({"messageId": "m1"})));
    ops.push(("agent", "tool-effect", json!({"messageId": "m1"})));
    let v = verdict(&hist("durable", &ops), "P1");
    assert_eq!((v.status, v.party), (Status::Invalid, Some(Party::Agent)));
}

fn unkeyed_twice(second: (u64, u64)) -> History {
    let ops = vec![
        ("user", "submit", json!({"submission": 1})),
        (
            "client",
            "attempt",
            json!({"submission": 1, "conn": 1, "id": 3, "key": null}),
        ),
        (
            "agent",
            "insert",
            json!({"session": "s", "messageId": "m1", "key": null, "conn": 1, "id": 3}),
        ),
        ("agent", "visible", json!({"messageId": "m1"})),
        (
            "client",
            "attempt",
            json!({"submission": 1, "conn": second.0, "id": second.1, "key": null}),
        ),
        (
            "agent",
            "insert",
            json!({"session": "s", "messageId": "m2", "key": null, "conn": second.0, "id": second.1}),
        ),
        ("agent", "visible", json!({"messageId": "m2"})),
    ];
    hist("durable", &ops)
}

#[test]
fn a_prompt_sent_twice_without_a_key_is_the_clients_finding_not_the_agents_violation() {
    // K1: no key, no duplicate detection; resending it is C9's business.
    let v = verdict(&unkeyed_twice((2, 3)), "P1");
    assert_eq!(
        (v.status, v.party),
        (Status::Finding, Some(Party::Client)),
        "{v:?}"
    );
    assert!(v.rules.contains(&"C9".to_string()));
    // One request inserted twice is the Agent's doing, key or not.
    let v = verdict(&unkeyed_twice((1, 3)), "P1");
    assert_eq!(
        (v.status, v.party),
        (Status::Invalid, Some(Party::Agent)),
        "{v:?}"
    );
}

/// Insert m1 (visible, durable design with a window), the window discards it, a resend of the
/// same submission with the same key inserts `mid2`.
fn discarded_then_redone(mid2: &str) -> Vec<(&'static str, &'static str, Value)> {
    let mut ops = lost_then_redone(mid2);
    // No crash: the Agent's window discards m1 instead.
    ops[4] = (
        "agent",
        "discard",
        json!({"session": "s", "messageId": "m1"}),
    );
    ops.remove(5);
    ops
}

fn windowed(retention: &str, ops: &[(&str, &str, Value)]) -> History {
    let mut h = hist(retention, ops);
    h.header["plan"]["agent"] = json!({"retention_ms": 600});
    h
}

#[test]
fn a_second_insertion_after_a_retention_discard_is_an_a16_finding() {
    for retention in ["durable", "process"] {
        let h = windowed(retention, &discarded_then_redone("m2"));
        let p1 = verdict(&h, "P1");
        assert_eq!(p1.status, Status::Finding, "{retention}: {}", p1.message);
        assert_eq!(p1.party, Some(Party::Spec));
        assert_eq!(p1.rules, vec!["A16".to_string()]);
        assert!(
            p1.message.contains("retention window (600 ms)"),
            "{}",
            p1.message
        );
        // Discarded, not lost: no durability claim either way.
        assert_eq!(verdict(&h, "P11").status, Status::Valid);
    }
    // Without the discard the same second insertion is a violation (the key was retained).
    let mut ops = discarded_then_redone("m2");
    ops.remove(4);
    assert_eq!(
        verdict(&windowed("durable", &ops), "P1").status,
        Status::Invalid
    );
}

#[test]
fn a_discard_of_another_message_or_after_the_retry_excuses_nothing() {
    // The discard names another message.
    let mut ops = discarded_then_redone("m2");
    ops[4].2 = json!({"session": "s", "messageId": "m9"});
    assert_eq!(
        verdict(&windowed("durable", &ops), "P1").status,
        Status::Invalid
    );
    // The discard names the message in another session.
    let mut ops = discarded_then_redone("m2");
    ops[4].2 = json!({"session": "other", "messageId": "m1"});
    assert_eq!(
        verdict(&windowed("durable", &ops), "P1").status,
        Status::Invalid
    );
    // The discard comes after the second insertion.
    let mut ops = discarded_then_redone("m2");
    let d = ops.remove(4);
    ops.push(d);
    assert_eq!(
        verdict(&windowed("durable", &ops), "P1").status,
        Status::Invalid
    );
}

#[test]
fn p12_repeated_id_after_a_discard_is_a_finding() {
    let h = windowed("process", &discarded_then_redone("m1"));
    assert_eq!(verdict(&h, "P12").status, Status::Finding);
    let mut ops = discarded_then_redone("m1");
    ops.remove(4);
    assert_eq!(
        verdict(&windowed("process", &ops), "P12").status,
        Status::Invalid
    );
}

#[test]
fn a_restart_after_a_discard_does_not_lose_the_discarded_message() {
    // Durable design with a window: m1 discarded, then a restart whose recovery (rightly) no
    // longer has it. Not a D1 loss.
    let mut ops = discarded_then_redone("m2");
    ops.insert(5, ("nemesis", "crash", json!({"host": "agent"})));
    ops.insert(
        6,
        (
            "agent",
            "recover",
            json!({"boot": 1, "retained": {"s": []}}),
        ),
    );
    let h = windowed("durable", &ops);
    assert_eq!(verdict(&h, "P11").status, Status::Valid);
    assert_eq!(verdict(&h, "P1").status, Status::Finding);
    // The same restart before the discard is a D1 violation.
    let mut ops = lost_then_redone("m2");
    ops.push((
        "agent",
        "discard",
        json!({"session": "s", "messageId": "m1"}),
    ));
    let h = windowed("durable", &ops);
    assert_eq!(verdict(&h, "P11").status, Status::Invalid);
    assert_eq!(verdict(&h, "P1").status, Status::Invalid);
}
