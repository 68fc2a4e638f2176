//! The unit tests of `sim/src/checkers/black_box/client_wire.rs`.

use acp_chaos::checkers::black_box::client_wire::*;
use acp_chaos::checkers::black_box::VACUOUS;
use acp_chaos::checkers::{Status, Verdict};
use serde_json::json;
use serde_json::Value;

fn prompt(boot: u64, id: u64, text: &str, key: Option<&str>) -> Value {
    let mut p = json!({"sessionId": "s1", "prompt": [{"type": "text", "text": text}]});
    if let Some(k) = key {
        p["idempotencyKey"] = json!(k);
    }
    json!({"boot": boot, "in": {"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": p}})
}

fn answer(boot: u64, id: u64, mid: &str) -> Value {
    json!({"boot": boot, "out": {"jsonrpc": "2.0", "id": id, "result": {"messageId": mid}}})
}

fn resume(boot: u64, id: u64) -> [Value; 2] {
    [
        json!({"boot": boot, "in": {"jsonrpc": "2.0", "id": id, "method": "session/resume", "params": {"sessionId": "s1"}}}),
        json!({"boot": boot, "out": {"jsonrpc": "2.0", "id": id, "result": {}}}),
    ]
}

fn status(vs: &[Verdict], rule: &str) -> Status {
    vs.iter().find(|v| v.property == rule).expect(rule).status
}

#[test]
fn a_retry_under_the_same_key_after_resume_is_valid() {
    let [r, ra] = resume(2, 1);
    let log = vec![
        prompt(1, 3, "one", Some("k1")),
        r,
        ra,
        prompt(2, 2, "one", Some("k1")),
        answer(2, 2, "m1"),
    ];
    let vs = judge(&log, Some(0));
    for rule in ["C4", "K2", "C1", "C6", "C8"] {
        assert_eq!(status(&vs, rule), Status::Valid, "{rule}: {vs:?}");
    }
}

#[test]
fn a_new_key_on_the_retry_breaks_c1() {
    let [r, ra] = resume(2, 1);
    let log = vec![
        prompt(1, 3, "one", Some("k1")),
        r,
        ra,
        prompt(2, 2, "one", Some("k2")),
        answer(2, 2, "m1"),
    ];
    let vs = judge(&log, Some(0));
    assert_eq!(status(&vs, "C1"), Status::Invalid);
    // One submission only: C3 has nothing to judge, and says so.
    assert_eq!(status(&vs, "C3"), Status::Unknown);
}

#[test]
fn one_key_for_two_prompts_breaks_c3_and_a_bad_key_k2() {
    let log = vec![
        prompt(1, 3, "one", Some("undefined")),
        answer(1, 3, "m1"),
        prompt(1, 4, "two", Some("undefined")),
        answer(1, 4, "m1"),
        prompt(1, 5, "three", Some("")),
        answer(1, 5, "m3"),
    ];
    let vs = judge(&log, Some(0));
    assert_eq!(status(&vs, "C3"), Status::Invalid);
    assert_eq!(status(&vs, "K2"), Status::Invalid);
}

#[test]
fn an_id_reused_while_pending_breaks_c4() {
    let log = vec![
        prompt(1, 3, "one", Some("k1")),
        prompt(1, 3, "one", Some("k1")),
    ];
    assert_eq!(status(&judge(&log, Some(0)), "C4"), Status::Invalid);
}

#[test]
fn prompt_before_resume_is_a_c6_finding_and_an_unkeyed_resend_c9() {
    let [r, ra] = resume(2, 2);
    let log = vec![
        prompt(1, 3, "one", None),
        prompt(2, 1, "one", None),
        r,
        ra,
        answer(2, 1, "m1"),
    ];
    let vs = judge(&log, Some(0));
    assert_eq!(status(&vs, "C6"), Status::Finding);
    assert_eq!(status(&vs, "C9"), Status::Finding);
    assert!(vs
        .iter()
        .find(|v| v.property == "C1")
        .unwrap()
        .message
        .starts_with(VACUOUS));
}

#[test]
fn a_lost_submission_is_a_silent_drop_only_on_exit_0() {
    let log = vec![
        prompt(1, 3, "one", Some("k1")),
        json!({"boot": 1, "crash": "receive:1"}),
        json!({"boot": 2, "start": true}),
    ];
    assert_eq!(status(&judge(&log, Some(0)), "C8"), Status::Invalid);
    assert_eq!(status(&judge(&log, Some(1)), "C8"), Status::Finding);
}
