//! The unit tests of `sim/src/checkers/black_box/agent.rs`.

use acp_chaos::checkers::black_box::agent::*;
use acp_chaos::checkers::black_box::VACUOUS;
use acp_chaos::checkers::Status;
use acp_chaos::history::OpType;
use acp_chaos::history::{History, Op};
use serde_json::json;
use serde_json::Value;

fn h(ops: Vec<(u64, &str, &str, Value)>) -> History {
    History {
        header: json!({}),
        ops: ops
            .into_iter()
            .enumerate()
            .map(|(index, (time_ms, p, f, value))| Op {
                index,
                time_ms,
                process: p.into(),
                kind: OpType::Info,
                f: f.into(),
                value,
            })
            .collect(),
    }
}

fn client(t: u64, conn: u64, frame: Value) -> (u64, &'static str, &'static str, Value) {
    (
        t,
        "net",
        "send",
        json!({"conn": conn, "from": "client", "frame": frame}),
    )
}

fn agent(t: u64, conn: u64, frame: Value) -> (u64, &'static str, &'static str, Value) {
    (
        t,
        "net",
        "send",
        json!({"conn": conn, "from": "agent", "frame": frame}),
    )
}

fn resume(t: u64, conn: u64, id: u64) -> (u64, &'static str, &'static str, Value) {
    client(
        t,
        conn,
        json!({"id": id, "method": "session/resume", "params": {"sessionId": "s", "replayFrom": {"type": "start"}}}),
    )
}

fn user_message(t: u64, conn: u64, m: &str) -> (u64, &'static str, &'static str, Value) {
    agent(
        t,
        conn,
        json!({"method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "user_message", "messageId": m}}}),
    )
}

/// An ack at 10 ms, a kill at 13 ms, a restart, then the resume's `answer` (after the
/// replayed `replayed` messages).
fn restart(replayed: &[&str], answer: Value) -> History {
    let mut ops = vec![
        (0, "net", "conn-open", json!({"conn": 1})),
        (
            10,
            "client",
            "ack",
            json!({"submission": 1, "messageId": "m1", "conn": 1, "id": 3}),
        ),
        (13, "nemesis", "crash", json!({"host": "agent"})),
        (20, "net", "conn-open", json!({"conn": 2})),
        resume(21, 2, 5),
    ];
    ops.extend(replayed.iter().map(|m| user_message(22, 2, m)));
    let mut a = json!({"id": 5});
    a.as_object_mut()
        .unwrap()
        .extend(answer.as_object().unwrap().clone());
    ops.push(agent(23, 2, a));
    h(ops)
}

#[test]
fn an_acknowledged_message_gone_after_a_restart_is_an_a10_violation_in_words() {
    let k = kept_across_restarts(&restart(&["m1"], json!({"result": {}})));
    assert_eq!((k.restarts, k.lost.is_none()), (vec![true], true));
    let k = kept_across_restarts(&restart(&[], json!({"result": {}})));
    let v = k.lost.unwrap();
    assert_eq!((v.status, v.property.as_str()), (Status::Invalid, "P11"));
    assert_eq!(v.rules, vec!["A10".to_string()]);
    for w in [
        "acknowledged at 10 ms",
        "killed 3 ms after",
        "is not replayed after the restart",
        "the message was not replayed",
    ] {
        assert!(v.message.contains(w), "{w}: {}", v.message);
    }
    let k = kept_across_restarts(&restart(
        &[],
        json!({"error": {"code": -32002, "message": "Resource not found"}}),
    ));
    let v = k.lost.unwrap();
    assert!(
        v.message.contains("error -32002") && v.message.contains("session is gone"),
        "{}",
        v.message
    );
    assert_eq!(k.restarts, vec![false]);
    // ... and X4 judged nothing then.
    let why = x4_vacuous(&restart(
        &[],
        json!({"error": {"code": -32002, "message": "x"}}),
    ))
    .unwrap();
    assert!(why.starts_with(VACUOUS) && why.contains("-32002"), "{why}");
    assert_eq!(x4_vacuous(&restart(&[], json!({"result": {}}))), None);
}

#[test]
fn two_copies_sent_to_the_model_are_a_second_round_of_work() {
    let saw = |c: u64| {
        h(vec![(
            5,
            "mock",
            "model-saw",
            json!({"submission": 2, "copies_max": c, "requests": 1}),
        )])
    };
    assert!(second_round(&saw(1)).is_none());
    let v = second_round(&saw(2)).unwrap();
    assert_eq!((v.property.as_str(), v.rules[0].as_str()), ("P1", "A1"));
    assert!(
        v.message.contains("no second round of work")
            && v.message.contains("2 copies of submission 2"),
        "{}",
        v.message
    );
}

#[test]
fn a_cancel_whose_turn_never_reports_cancelled_is_an_a6_violation() {
    let state = |t: u64, s: &str, why: Option<&str>| {
        agent(
            t,
            1,
            json!({"method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "state_update", "state": s, "stopReason": why}}}),
        )
    };
    let run = |end: Option<(u64, &str)>| {
        let mut ops = vec![
            client(
                0,
                1,
                json!({"id": 3, "method": "session/prompt", "params": {}}),
            ),
            state(1, "running", None),
            agent(2, 1, json!({"id": 3, "result": {"messageId": "m1"}})),
            client(
                20,
                1,
                json!({"method": "session/cancel", "params": {"sessionId": "s"}}),
            ),
        ];
        ops.extend(end.map(|(t, why)| state(t, "idle", Some(why))));
        stop_unconfirmed(&h(ops), 1000)
    };
    assert!(run(Some((40, "cancelled"))).is_none());
    // Crossed the cancel in the pipe: the turn had ended.
    assert!(run(Some((21, "end_turn"))).is_none());
    // ... but `error` never ends a cancelled turn.
    assert!(run(Some((21, "error"))).is_some());
    let v = run(Some((40, "error"))).unwrap();
    assert_eq!((v.property.as_str(), v.rules[0].as_str()), ("P6", "A6"));
    let v = run(None).unwrap();
    assert!(v.message.contains("within 1000 ms"), "{}", v.message);
    // Too late counts as never.
    assert!(run(Some((2000, "cancelled"))).is_some());
    // The cancel went out before the Agent reported the turn: judged, since a prompt sent
    // before it was inserted.
    let crossed = |end: Option<&str>| {
        let mut ops = vec![
            client(
                0,
                1,
                json!({"id": 3, "method": "session/prompt", "params": {}}),
            ),
            client(
                1,
                1,
                json!({"method": "session/cancel", "params": {"sessionId": "s"}}),
            ),
            agent(2, 1, json!({"id": 3, "result": {"messageId": "m1"}})),
            state(3, "running", None),
        ];
        ops.extend(end.map(|why| state(50, "idle", Some(why))));
        stop_unconfirmed(&h(ops), 1000)
    };
    assert!(crossed(None).is_some());
    assert!(crossed(Some("end_turn")).is_some());
    assert!(crossed(Some("cancelled")).is_none());
    // Answered -32800, yet its message was inserted (inferred from a replay), and no
    // cancelled end ever came: judged (claude-agent-acp 0.101.0).
    let v = stop_unconfirmed(
        &h(vec![
            client(
                0,
                1,
                json!({"id": 3, "method": "session/prompt", "params": {}}),
            ),
            client(
                1,
                1,
                json!({"method": "session/cancel", "params": {"sessionId": "s"}}),
            ),
            agent(2, 1, json!({"id": 3, "error": {"code": -32800}})),
            (
                3,
                "agent",
                "insert",
                json!({"conn": 1, "id": 3, "inferred": true}),
            ),
            state(5000, "running", None),
        ]),
        1000,
    );
    assert!(v.is_some_and(|v| v.message.contains("within 1000 ms")));
}

#[test]
fn every_accepted_malformed_key_is_named() {
    let raw = |id: u64, key: &str| {
        (
            1,
            "client",
            "raw-sent",
            json!({"conn": 1, "id": id, "line": format!(r#"{{"id":{id},"params":{{"idempotencyKey":{key}}}}}"#)}),
        )
    };
    let ok = |id: u64| agent(2, 1, json!({"id": id, "result": {"messageId": "m"}}));
    let hist = h(vec![
        raw(1, r#""""#),
        raw(2, "1"),
        raw(3, "null"),
        raw(4, r#""abc""#),
        raw(5, "{}"),
        raw(6, "[]"),
        raw(7, &format!("\"{}\"", "é".repeat(256))),
        ok(1),
        ok(2),
        ok(3),
        ok(4),
        agent(3, 1, json!({"id": 5, "error": {"code": -32602}})),
        ok(6),
        ok(7),
    ]);
    assert_eq!(
        accepted_malformed_keys(&hist),
        vec![r#""""#, "1", "[]", "a string of 256 characters"]
    );
}

/// Submission 1 acknowledged as `m1`, then a replay of the whole session on the same
/// process that shows `replayed` (messageId, text) and is answered.
fn acked_then_replayed(replayed: &[(&str, &str)], retry_answer: Option<&str>) -> History {
    let mut ops = vec![
        (0, "net", "conn-open", json!({"conn": 1})),
        (
            1,
            "user",
            "submit",
            json!({"submission": 1, "text": "Reply. [probe-s1]", "marker": "[probe-s1]"}),
        ),
        (
            5,
            "agent",
            "insert",
            json!({"session": "s", "messageId": "m1", "conn": 1, "id": 3}),
        ),
        (
            10,
            "client",
            "ack",
            json!({"submission": 1, "messageId": "m1", "conn": 1, "id": 3}),
        ),
    ];
    // A later attempt of the same submission answered with `retry_answer`, if any.
    if let Some(m) = retry_answer {
        ops.push((
            12,
            "client",
            "ack",
            json!({"submission": 1, "messageId": m, "conn": 1, "id": 4}),
        ));
    }
    ops.push(resume(20, 1, 5));
    ops.extend(replayed.iter().map(|(m, text)| {
        agent(
            21,
            1,
            json!({"method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "user_message_chunk", "messageId": m, "content": {"type": "text", "text": text}}}}),
        )
    }));
    ops.push(agent(22, 1, json!({"id": 5, "result": {}})));
    h(ops)
}

/// Found on claude-agent-acp 0.101.0: two prompts queued during a turn are replayed as one
/// message under the second's messageId. The first's text is not gone (no P2), but the
/// Client holds a messageId no message has (P3, A14). Left out of the replay altogether,
/// it is dropped (P2, A12).
#[test]
fn an_acknowledged_message_replayed_under_another_id_is_renamed_not_dropped() {
    let v = acknowledged_not_replayed(&acked_then_replayed(&[("m1", "Reply. [probe-s1]")], None));
    assert!(v.is_empty(), "{v:?}");
    // The marker split across two chunks of one message is found.
    let v = acknowledged_not_replayed(&acked_then_replayed(
        &[("m2", "Reply. [probe-"), ("m2", "s1]\nReply. [probe-s2]")],
        None,
    ));
    let v = v.into_iter().next().unwrap();
    assert_eq!(
        (v.property.as_str(), v.rules.clone()),
        ("P3", vec!["A14".to_string()])
    );
    assert!(
        v.message.contains("in message m2 and no message m1"),
        "{}",
        v.message
    );
    assert!(!v.message.contains("dropped"), "{}", v.message);
    let v = acknowledged_not_replayed(&acked_then_replayed(&[("m2", "Reply. [probe-s2]")], None));
    let v = v.into_iter().next().unwrap();
    assert_eq!(
        (v.property.as_str(), v.rules.clone()),
        ("P2", vec!["A12".to_string()])
    );
    assert!(v.message.contains("dropped silently"), "{}", v.message);
    // A retry answered with m2 and one copy of the text, in m2: the first message is
    // dropped, not renamed (the copy is the retry's own).
    let v = acknowledged_not_replayed(&acked_then_replayed(
        &[("m2", "Reply. [probe-s1]")],
        Some("m2"),
    ));
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].property, "P2", "{v:?}");
}
