//! The unit tests of `cli/src/probe/infer.rs`.

use acp_chaos::checkers::{x4_resume_order, Status, Verdict};
use acp_chaos::history::{op, OpType};
use acp_chaos::models::Party;
use acp_chaos_cli::probe::driver::RawOp;
use acp_chaos_cli::probe::infer::*;
use serde_json::{json, Value};

fn op(process: &'static str, f: &str, value: Value) -> RawOp {
    RawOp {
        time_ms: 0,
        process,
        kind: OpType::Info,
        f: f.into(),
        value,
    }
}

fn from_client(frame: Value) -> RawOp {
    op(
        "net",
        "send",
        json!({"conn": 1, "from": "client", "frame": frame}),
    )
}

fn from_agent(frame: Value) -> RawOp {
    op(
        "net",
        "send",
        json!({"conn": 1, "from": "agent", "frame": frame}),
    )
}

fn update(kind: &str) -> RawOp {
    from_agent(
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s", "update": {"sessionUpdate": kind, "messageId": "m1", "state": "idle"}}}),
    )
}

fn resume(replay: bool, updates: &[&str]) -> Verdict {
    let mut params = json!({"sessionId": "s", "cwd": "/w", "mcpServers": []});
    if replay {
        params["replayFrom"] = json!({"type": "start"});
    }
    let mut raw = vec![
        op("net", "conn-open", json!({"conn": 1})),
        from_client(
            json!({"jsonrpc": "2.0", "id": 5, "method": "session/resume", "params": params}),
        ),
    ];
    raw.extend(updates.iter().map(|u| update(u)));
    raw.push(from_agent(json!({"jsonrpc": "2.0", "id": 5, "result": {}})));
    x4_resume_order(&build(json!({}), &raw))
}

#[test]
fn x4_judges_the_order_of_a_resume() {
    let ok = resume(true, &["user_message", "replay_complete", "state_update"]);
    assert_eq!(ok.status, Status::Valid, "{}", ok.message);
    assert_eq!(resume(false, &["state_update"]).status, Status::Valid);
    for (replay, ups, why) in [
        (
            true,
            &["user_message", "state_update"][..],
            "without a replay_complete",
        ),
        (
            true,
            &["replay_complete", "replay_complete", "state_update"][..],
            "exactly one",
        ),
        (
            false,
            &["replay_complete", "state_update"][..],
            "never without replayFrom",
        ),
        (
            true,
            &[
                "user_message",
                "state_update",
                "replay_complete",
                "state_update",
            ][..],
            "inside the replay",
        ),
        (
            true,
            &["user_message", "replay_complete"][..],
            "no state_update snapshot",
        ),
    ] {
        let v = resume(replay, ups);
        assert_eq!(v.status, Status::Invalid, "{ups:?}");
        assert_eq!(v.party, Some(Party::Agent));
        assert!(v.message.contains(why), "{ups:?}: {}", v.message);
    }
    // A state_update before the first replayed item may have crossed the request in the
    // pipe: not judged.
    let v = resume(
        true,
        &[
            "state_update",
            "user_message",
            "replay_complete",
            "state_update",
        ],
    );
    assert_eq!(v.status, Status::Valid, "{}", v.message);
}

#[test]
fn an_error_answer_followed_by_the_prompts_message_is_an_insertion_of_that_attempt() {
    let marker = "[probe-x-s1]";
    let prompt = |id: u64| {
        from_client(
            json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {
            "sessionId": "s", "prompt": [{"type": "text", "text": marker}], "idempotencyKey": "k"}}),
        )
    };
    let raw = vec![
        op("net", "conn-open", json!({"conn": 1})),
        op(
            "user",
            "submit",
            json!({"submission": 1, "slot": 0, "text": marker, "marker": marker}),
        ),
        op(
            "client",
            "attempt",
            json!({"submission": 1, "conn": 1, "id": 3, "key": "k"}),
        ),
        prompt(3),
        from_agent(json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "x"}})),
        from_agent(
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
            "update": {"sessionUpdate": "user_message", "messageId": "m1", "content": [{"type": "text", "text": marker}]}}}),
        ),
        op(
            "client",
            "attempt",
            json!({"submission": 1, "conn": 1, "id": 4, "key": "k"}),
        ),
        prompt(4),
        from_agent(json!({"jsonrpc": "2.0", "id": 4, "result": {"messageId": "m1"}})),
    ];
    let h = build(json!({"plan": {"retention": "durable"}}), &raw);
    let insert = h.ops.iter().find(|o| o.f == op::INSERT).unwrap();
    assert_eq!(insert.value["id"], 3, "{:?}", insert.value);
    assert_eq!(insert.value["inferred"], true);
    let p4 = acp_chaos::checkers::check_all(&h)
        .into_iter()
        .find(|v| v.property == "P4")
        .unwrap();
    assert_eq!(p4.status, Status::Invalid, "{}", p4.message);
    // Answered with the messageId: the insertion is that attempt's, and valid.
    let mut ok = raw.clone();
    ok[4] = from_agent(json!({"jsonrpc": "2.0", "id": 3, "result": {"messageId": "m1"}}));
    let h = build(json!({"plan": {"retention": "durable"}}), &ok);
    for v in acp_chaos::checkers::check_all(&h)
        .iter()
        .filter(|v| ["P1", "P3", "P4", "P6"].contains(&v.property.as_str()))
    {
        assert_eq!(v.status, Status::Valid, "{}: {}", v.property, v.message);
    }
}
