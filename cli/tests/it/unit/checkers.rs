//! The unit tests of `sim/src/checkers/mod.rs`.

use acp_chaos::checkers::facts::Facts;
use acp_chaos::checkers::p17_turn_stop::p17_turn_stop;
use acp_chaos::checkers::verdict::{Status, Verdict};
use acp_chaos::checkers::*;
use acp_chaos::history::History;
use acp_chaos::history::{Op, OpType};
use acp_chaos_models::Party;
use serde_json::json;
use serde_json::Value;

/// A tiny history builder: (process, f, value) in order.
fn hist(ops: &[(&str, &str, Value)]) -> History {
    history_of(json!({"format": 1}), ops)
}

/// A history of `header` and one info op per (process, f, value), in order, op `i` at `i` ms.
pub(super) fn history_of(header: Value, ops: &[(&str, &str, Value)]) -> History {
    History {
        header,
        ops: ops
            .iter()
            .enumerate()
            .map(|(i, (p, f, v))| Op {
                index: i,
                time_ms: i as u64,
                process: p.to_string(),
                kind: OpType::Info,
                f: f.to_string(),
                value: v.clone(),
            })
            .collect(),
    }
}

fn submit_and_attempt(
    n: u64,
    conn: u64,
    id: u64,
    key: &str,
) -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("user", "submit", json!({"submission": n})),
        (
            "client",
            "attempt",
            json!({"submission": n, "conn": conn, "id": id, "key": key}),
        ),
    ]
}

fn insert(mid: &str, conn: u64, id: u64, key: &str) -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "agent",
            "insert",
            json!({"session": "s", "messageId": mid, "key": key, "conn": conn, "id": id}),
        ),
        ("agent", "durable", json!({"messageId": mid})),
        ("agent", "visible", json!({"messageId": mid})),
    ]
}

fn status(h: &History, p: &str) -> (Status, Option<Party>) {
    let v = check_all(h).into_iter().find(|v| v.property == p).unwrap();
    (v.status, v.party)
}

#[test]
fn one_insertion_acknowledged_is_valid_everywhere() {
    let mut ops = submit_and_attempt(1, 1, 3, "k");
    ops.extend(insert("m1", 1, 3, "k"));
    ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
    let h = hist(&ops);
    for v in check_all(&h) {
        assert_eq!(v.status, Status::Valid, "{v:?}");
    }
}

#[test]
fn p1_second_insertion_same_key_blames_the_agent() {
    let mut ops = submit_and_attempt(1, 1, 3, "k");
    ops.extend(insert("m1", 1, 3, "k"));
    ops.push(("nemesis", "lose-frame", json!({})));
    ops.push((
        "client",
        "attempt",
        json!({"submission": 1, "conn": 2, "id": 3, "key": "k"}),
    ));
    ops.extend(insert("m2", 2, 3, "k"));
    ops.push(("client", "ack", json!({"submission": 1, "messageId": "m2"})));
    let h = hist(&ops);
    assert_eq!(status(&h, "P1"), (Status::Invalid, Some(Party::Agent)));
    let v = check_all(&h).remove(0);
    assert_eq!(v.fault, Some(5));
    assert_eq!(v.witnesses, vec![2, 3, 7]);
}

#[test]
fn p1_second_insertion_new_key_blames_the_client() {
    let mut ops = submit_and_attempt(1, 1, 3, "k");
    ops.extend(insert("m1", 1, 3, "k"));
    ops.push((
        "client",
        "attempt",
        json!({"submission": 1, "conn": 2, "id": 3, "key": "k2"}),
    ));
    ops.extend(insert("m2", 2, 3, "k2"));
    assert_eq!(
        status(&hist(&ops), "P1"),
        (Status::Invalid, Some(Party::Client))
    );
}

#[test]
fn p1_insertion_that_never_took_effect_may_be_redone() {
    let mut ops = submit_and_attempt(1, 1, 3, "k");
    ops.push((
        "agent",
        "insert",
        json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 3}),
    ));
    ops.push(("nemesis", "crash", json!({"host": "agent"})));
    ops.push((
        "agent",
        "recover",
        json!({"boot": 1, "retained": {"s": []}}),
    ));
    ops.push((
        "client",
        "attempt",
        json!({"submission": 1, "conn": 2, "id": 3, "key": "k"}),
    ));
    ops.extend(insert("m2", 2, 3, "k"));
    ops.push(("client", "ack", json!({"submission": 1, "messageId": "m2"})));
    for v in check_all(&hist(&ops)) {
        assert_eq!(v.status, Status::Valid, "{v:?}");
    }
}

#[test]
fn p1_two_rounds_of_work_for_one_message() {
    let mut ops = submit_and_attempt(1, 1, 3, "k");
    ops.extend(insert("m1", 1, 3, "k"));
    ops.push(("agent", "turn-start", json!({"messageId": "m1"})));
    ops.push(("agent", "turn-start", json!({"messageId": "m1"})));
    ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
    assert_eq!(
        status(&hist(&ops), "P1"),
        (Status::Invalid, Some(Party::Agent))
    );
}

#[test]
fn p1_continuing_work_a_restart_stopped_is_not_a_second_round() {
    // (ops between the two turn-starts, P1's status)
    let turn_end = (
        "agent",
        "turn-end",
        json!({"messageId": "m1", "stopReason": "end_turn"}),
    );
    let recover = (
        "agent",
        "recover",
        json!({"boot": 1, "retained": {"s": ["m1"]}}),
    );
    let node2_recover = (
        "agent",
        "recover",
        json!({"boot": 1, "retained": {}, "renamed_from": "node2"}),
    );
    let cases = [
        // The restart stopped the turn before it ended: continuing it is the Agent's choice (A1).
        (vec![recover.clone()], Status::Valid),
        // The turn had ended: a second one after the restart is a second round.
        (vec![turn_end, recover], Status::Invalid),
        // No restart of the turn's host: the turn never stopped.
        (vec![], Status::Invalid),
        (vec![node2_recover], Status::Invalid),
    ];
    for (between, want) in cases {
        let mut ops = submit_and_attempt(1, 1, 3, "k");
        ops.extend(insert("m1", 1, 3, "k"));
        ops.push((
            "agent",
            "turn-start",
            json!({"messageId": "m1", "renamed_from": "node1"}),
        ));
        ops.extend(between.iter().cloned().map(|(p, f, mut v)| {
            if v.get("renamed_from").is_none() && f == "recover" {
                v["renamed_from"] = "node1".into();
            }
            (p, f, v)
        }));
        ops.push((
            "agent",
            "turn-start",
            json!({"messageId": "m1", "renamed_from": "node1"}),
        ));
        ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
        let h = hist(&ops);
        assert_eq!(status(&h, "P1").0, want, "{between:?}");
    }
}

#[test]
fn p1_a_recorded_key_with_another_submission_or_frame_inserts_nothing() {
    // A4: a raw frame (no submission) reuses submission 1's recorded key and is inserted.
    let mut ops = submit_and_attempt(1, 1, 3, "k");
    ops.extend(insert("m1", 1, 3, "k"));
    ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
    ops.extend(insert("m2", 1, 1_000_001, "k"));
    let v = check_all(&hist(&ops))
        .into_iter()
        .find(|v| v.property == "P1")
        .unwrap();
    assert_eq!((v.status, v.party), (Status::Invalid, Some(Party::Agent)));
    assert_eq!(v.rules, ["A4"]);
    // Another key in the same session, or the same key in another session: nothing to say.
    let mut ops = submit_and_attempt(1, 1, 3, "k");
    ops.extend(insert("m1", 1, 3, "k"));
    ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
    ops.extend(insert("m2", 1, 1_000_001, "other"));
    assert_eq!(status(&hist(&ops), "P1").0, Status::Valid);
}

#[test]
fn p7_no_response_to_a_request_never_read() {
    let read = (
        "net",
        "recv",
        json!({"conn": 1, "from": "client", "frame": {"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {}}}),
    );
    let answer = |id: Value| {
        (
            "net",
            "send",
            json!({"conn": 1, "from": "agent", "frame": {"jsonrpc": "2.0", "id": id, "result": {}}}),
        )
    };
    let end = ("world", "end", json!({"outcome": "quiescent"}));
    // An invalid request with an id (no method) is read too: its -32600 answers it.
    let invalid = (
        "net",
        "recv",
        json!({"conn": 1, "from": "client", "frame": {"jsonrpc": "2.0", "id": 8, "params": {}}}),
    );
    let h = hist(&[invalid, answer(json!(8)), end.clone()]);
    assert_eq!(status(&h, "P7").0, Status::Valid);
    // Answered once: valid. An answer to id 7, never read (A5): invalid. `id: null`: valid.
    for (extra, want) in [
        (None, Status::Valid),
        (Some(json!(7)), Status::Invalid),
        (Some(Value::Null), Status::Valid),
    ] {
        let mut ops = vec![read.clone(), answer(json!(3))];
        ops.extend(extra.map(answer));
        ops.push(end.clone());
        assert_eq!(status(&hist(&ops), "P7").0, want, "{ops:?}");
    }
}

#[test]
fn p16_the_client_waits_for_the_resume_response_before_prompting() {
    let send = |id: u64, method: &str| {
        (
            "net",
            "send",
            json!({"conn": 2, "from": "client", "frame": {"jsonrpc": "2.0", "id": id, "method": method, "params": {"sessionId": "s"}}}),
        )
    };
    let answered = (
        "net",
        "recv",
        json!({"conn": 2, "from": "agent", "frame": {"jsonrpc": "2.0", "id": 2, "result": {}}}),
    );
    // The prompt after the resume's response: valid; before it: a C6 finding, the Client's.
    let after = hist(&[
        send(2, "session/resume"),
        answered.clone(),
        send(3, "session/prompt"),
    ]);
    assert_eq!(status(&after, "P16").0, Status::Valid);
    let before = hist(&[
        send(2, "session/resume"),
        send(3, "session/prompt"),
        answered,
    ]);
    assert_eq!(
        status(&before, "P16"),
        (Status::Finding, Some(Party::Client))
    );
}

#[test]
fn p2_lost_submission_blames_the_client_and_pending_is_unknown() {
    let ops = submit_and_attempt(1, 1, 3, "k");
    let mut lost = ops.clone();
    lost.push(("client", "pending-at-end", json!({"submissions": []})));
    assert_eq!(
        status(&hist(&lost), "P2"),
        (Status::Invalid, Some(Party::Client))
    );
    let mut pending = ops.clone();
    pending.push(("client", "pending-at-end", json!({"submissions": [1]})));
    assert_eq!(status(&hist(&pending), "P2").0, Status::Unknown);
    let mut surfaced = ops;
    surfaced.push(("client", "surface", json!({"submission": 1})));
    assert_eq!(status(&hist(&surfaced), "P2").0, Status::Valid);
}

#[test]
fn p2_an_input_shown_withdrawn_was_not_inserted() {
    // C8: the Client shows submission 1 withdrawn, though its attempt was inserted.
    let mut ops = submit_and_attempt(1, 1, 3, "k");
    ops.extend(insert("m1", 1, 3, "k"));
    ops.push(("user", "cancel", json!({"submission": 1})));
    ops.push((
        "client",
        "withdrawn",
        json!({"submission": 1, "local": true}),
    ));
    assert_eq!(
        status(&hist(&ops), "P2"),
        (Status::Invalid, Some(Party::Client))
    );
    // The Agent answered that very attempt -32800 and inserted it: P4/P6 blame the Agent, P2
    // does not blame the Client for believing it.
    let mut ops = submit_and_attempt(1, 1, 3, "k");
    ops.extend(insert("m1", 1, 3, "k"));
    ops.push(("user", "cancel", json!({"submission": 1})));
    ops.push((
        "net",
        "send",
        json!({"conn": 1, "from": "agent", "frame": {"jsonrpc": "2.0", "id": 3, "error": {"code": -32800, "message": "cancelled"}}}),
    ));
    ops.push(("client", "withdrawn", json!({"submission": 1})));
    assert_eq!(status(&hist(&ops), "P2").0, Status::Valid);
    // Never inserted, and its user cancelled it (or stopped its session): withdrawn is the
    // truth. Nobody asked: a -32800 from elsewhere is not the user's withdrawal (C8).
    for (asked, want) in [
        (Some(("cancel", json!({"submission": 1}))), Status::Valid),
        (Some(("stop", json!({"slot": 0}))), Status::Valid),
        (Some(("stop", json!({"slot": 1}))), Status::Invalid),
        (None, Status::Invalid),
    ] {
        let mut ops = vec![("user", "submit", json!({"submission": 1, "slot": 0}))];
        ops.extend(submit_and_attempt(1, 1, 3, "k").into_iter().skip(1));
        ops.extend(asked.map(|(f, v)| ("user", f, v)));
        ops.push(("client", "withdrawn", json!({"submission": 1})));
        assert_eq!(status(&hist(&ops), "P2").0, want, "{ops:?}");
    }
}

#[test]
fn p2_ack_with_a_message_of_another_submission() {
    let mut ops = submit_and_attempt(1, 1, 3, "a");
    ops.extend(insert("m1", 1, 3, "a"));
    ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
    ops.extend(submit_and_attempt(2, 1, 4, "b"));
    ops.push(("client", "ack", json!({"submission": 2, "messageId": "m1"})));
    assert_eq!(
        status(&hist(&ops), "P2"),
        (Status::Invalid, Some(Party::Agent))
    );
    // Same key reused for a new submission: the Client's fault (C2).
    let mut ops = submit_and_attempt(1, 1, 3, "a");
    ops.extend(insert("m1", 1, 3, "a"));
    ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
    ops.extend(submit_and_attempt(2, 1, 4, "a"));
    ops.push(("client", "ack", json!({"submission": 2, "messageId": "m1"})));
    assert_eq!(
        status(&hist(&ops), "P2"),
        (Status::Invalid, Some(Party::Client))
    );
}

#[test]
fn p11_message_missing_after_restart() {
    let mut ops = submit_and_attempt(1, 1, 3, "k");
    ops.push((
        "agent",
        "insert",
        json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 3}),
    ));
    ops.push(("agent", "visible", json!({"messageId": "m1"})));
    ops.push(("client", "ack", json!({"submission": 1, "messageId": "m1"})));
    ops.push(("nemesis", "crash", json!({"host": "agent"})));
    ops.push((
        "agent",
        "recover",
        json!({"boot": 1, "retained": {"s": []}}),
    ));
    let h = hist(&ops);
    assert_eq!(status(&h, "P11"), (Status::Invalid, Some(Party::Agent)));
    let mut kept = ops.clone();
    kept.pop();
    kept.push((
        "agent",
        "recover",
        json!({"boot": 1, "retained": {"s": ["m1"]}}),
    ));
    assert_eq!(status(&hist(&kept), "P11").0, Status::Valid);
}

/// A6 on a cluster: a stop read on node1 reaches a prompt held on node2 through the store. An
/// insertion between the read and the store's `stop-recorded` is concurrent with the stop;
/// one after it, or with no stop ever recorded while the reading node lived, is a violation.
#[test]
fn p6_a_stop_read_on_one_node_covers_prompts_held_on_the_others() {
    let run = |tail: &[(&str, &str, Value)]| {
        let mut ops = vec![
            ("net", "conn-open", json!({"conn": 1, "seen_by": "node2"})),
            ("net", "conn-open", json!({"conn": 2, "seen_by": "node1"})),
            ("agent", "activate", json!({"session": "s", "conn": 2})),
            ("agent", "hold", json!({"session": "s", "conn": 1, "id": 5})),
            (
                "net",
                "recv",
                json!({"conn": 2, "from": "client", "frame": {"method": "session/cancel", "params": {"sessionId": "s"}}}),
            ),
        ];
        ops.extend_from_slice(tail);
        let h = hist(&ops);
        status(&h, "P6").0
    };
    let stop = (
        "agent",
        "stop-recorded",
        json!({"session": "s", "stops": 1, "renamed_from": "store"}),
    );
    let release = (
        "agent",
        "release",
        json!({"session": "s", "conn": 1, "id": 5}),
    );
    let inserted = (
        "agent",
        "insert",
        json!({"session": "s", "messageId": "m2", "conn": 1, "id": 5, "mode": "held"}),
    );
    let crash = ("nemesis", "crash", json!({"host": "node1"}));
    assert_eq!(
        run(&[release.clone(), inserted.clone(), stop.clone()]),
        Status::Valid,
        "inserted before the stop reached the store: concurrent"
    );
    assert_eq!(
        run(&[stop.clone(), release.clone(), inserted.clone()]),
        Status::Invalid,
        "inserted after the store recorded the stop"
    );
    assert_eq!(
        run(&[release.clone(), inserted.clone()]),
        Status::Invalid,
        "no stop ever reached the store (a node that keeps its stop to itself)"
    );
    assert_eq!(
        run(&[crash, release, inserted]),
        Status::Valid,
        "the reading node crashed before its stop reached the store"
    );
}

/// X2 from the wire: active from the read of a `session/resume` answered with a success (a
/// prompt pipelined behind it is fine), inactive after `session/close`; a prompt there must get
/// `-32002` naming the session.
#[test]
fn p16_a_prompt_on_a_session_not_active_on_its_connection_gets_32002() {
    let recv = |id: u64, method: &str, params: Value| {
        (
            "net",
            "recv",
            json!({"conn": 1, "from": "client", "frame": {"jsonrpc": "2.0", "id": id, "method": method, "params": params}}),
        )
    };
    let send = |id: u64, body: Value| {
        let mut frame = json!({"jsonrpc": "2.0", "id": id});
        for (k, v) in body.as_object().unwrap() {
            frame[k] = v.clone();
        }
        (
            "net",
            "send",
            json!({"conn": 1, "from": "agent", "frame": frame}),
        )
    };
    let s = json!({"sessionId": "s"});
    let prompt = json!({"sessionId": "s", "prompt": [{"type": "text", "text": "x"}]});
    let not_found =
        json!({"error": {"code": -32002, "message": "not active", "data": {"sessionId": "s"}}});
    let served = json!({"result": {"messageId": "m1"}});
    let p16 = |ops: Vec<(&str, &str, Value)>| status(&hist(&ops), "P16").0;
    // Pipelined: the prompt is read before the resume is answered, after it was read.
    assert_eq!(
        p16(vec![
            recv(1, "session/resume", s.clone()),
            recv(2, "session/prompt", prompt.clone()),
            send(1, json!({"result": {}})),
            send(2, served.clone()),
        ]),
        Status::Valid
    );
    let after_close = |answer: Value| {
        vec![
            recv(1, "session/resume", s.clone()),
            send(1, json!({"result": {}})),
            recv(2, "session/close", s.clone()),
            send(2, json!({"result": {}})),
            recv(3, "session/prompt", prompt.clone()),
            send(3, answer),
        ]
    };
    assert_eq!(p16(after_close(not_found)), Status::Valid);
    assert_eq!(p16(after_close(served.clone())), Status::Invalid);
    assert_eq!(
        p16(after_close(
            json!({"error": {"code": -32002, "message": "not active"}})
        )),
        Status::Invalid,
        "-32002 must name the session in data.sessionId"
    );
    // Never resumed on this connection at all.
    assert_eq!(
        p16(vec![
            recv(1, "session/prompt", prompt.clone()),
            send(1, served)
        ]),
        Status::Invalid
    );
    // An answer logged with its connection only in `detail` (a history written elsewhere)
    // still answers the request on that connection: the resume succeeded, the prompt is fine.
    let (p, f, mut resumed) = send(1, json!({"result": {}}));
    resumed["detail"] = json!({"conn": resumed["conn"].take()});
    resumed.as_object_mut().unwrap().remove("conn");
    assert_eq!(
        p16(vec![
            recv(1, "session/resume", s.clone()),
            (p, f, resumed),
            recv(2, "session/prompt", prompt),
            send(2, json!({"result": {"messageId": "m1"}})),
        ]),
        Status::Valid
    );
}

/// P17 (A6, A15): a cancel of running work ends it `cancelled` before new work and withdraws
/// its unanswered permission request; a close is answered after the idle state and nothing
/// names the session on that connection after it, until the session is activated there again.
#[test]
fn p17_a_stop_ends_the_work_cancelled_and_a_close_is_the_last_word() {
    let net = |f: &'static str, frame: Value| {
        (
            "net",
            f,
            json!({"conn": 1, "from": if f == "recv" { "client" } else { "agent" }, "frame": frame}),
        )
    };
    let cancel = net(
        "recv",
        json!({"method": "session/cancel", "params": {"sessionId": "s"}}),
    );
    let start = |m: &str| {
        (
            "agent",
            "turn-start",
            json!({"session": "s", "messageId": m}),
        )
    };
    let end = |reason: &str| {
        (
            "agent",
            "turn-end",
            json!({"session": "s", "messageId": "m1", "stopReason": reason}),
        )
    };
    let activate = ("agent", "activate", json!({"session": "s", "conn": 1}));
    // The checker itself, not `check_all`: the A15 fragments below show work `running` on the
    // wire with no `turn-start`, which the effect contract reports as not checked.
    let p17 = |ops: Vec<(&str, &str, Value)>| {
        let h = hist(&ops);
        p17_turn_stop(&Facts::of(&h)).status
    };
    let stopped = |reason: &str| vec![activate.clone(), start("m1"), cancel.clone(), end(reason)];
    assert_eq!(p17(stopped("cancelled")), Status::Valid);
    assert_eq!(p17(stopped("error")), Status::Invalid, "never error");
    let mut early = vec![activate.clone(), start("m1"), cancel.clone(), start("m2")];
    assert_eq!(p17(early.clone()), Status::Invalid, "new work first");
    early.insert(3, ("client", "conn-end", json!({"conn": 1})));
    early.insert(3, end("cancelled"));
    assert_eq!(p17(early), Status::Valid);
    // The permission request it was waiting on.
    let ask = net(
        "send",
        json!({"id": 7, "method": "session/request_permission", "params": {"sessionId": "s"}}),
    );
    let withdraw = net(
        "send",
        json!({"method": "$/cancel_request", "params": {"requestId": 7}}),
    );
    let mut asked = stopped("cancelled");
    asked.insert(2, ask);
    assert_eq!(p17(asked.clone()), Status::Invalid, "never withdrawn");
    asked.push(withdraw);
    assert_eq!(p17(asked), Status::Valid);
    // Close: the idle state first, then the response, then nothing for the session.
    let state = |s: &str| {
        net(
            "send",
            json!({"method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "state_update", "state": s}}}),
        )
    };
    let close = net(
        "recv",
        json!({"id": 9, "method": "session/close", "params": {"sessionId": "s"}}),
    );
    let closed = net("send", json!({"id": 9, "result": {}}));
    let chunk = net(
        "send",
        json!({"method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}}}),
    );
    let prompt_answer = net("send", json!({"id": 4, "result": {"messageId": "m1"}}));
    let in_order = vec![
        state("running"),
        close.clone(),
        state("idle"),
        closed.clone(),
        prompt_answer,
    ];
    assert_eq!(p17(in_order), Status::Valid);
    let answered_first = vec![state("running"), close.clone(), closed.clone()];
    assert_eq!(p17(answered_first), Status::Invalid);
    let after = vec![close, closed, chunk.clone()];
    assert_eq!(p17(after.clone()), Status::Invalid);
    let mut reopened = after;
    reopened.insert(2, activate);
    assert_eq!(p17(reopened), Status::Valid);
}

/// P17 (A3, A15's SHOULD, crashes): failed work ends `error`; a refused close of a session not
/// active on its connection is a finding; a Client's crash leaves the Agent's debts standing,
/// an Agent's crash takes them with it.
#[test]
fn p17_failed_work_ends_error_and_crashes_take_only_their_own_debts() {
    let p17 = |ops: Vec<(&str, &str, Value)>| status(&hist(&ops), "P17").0;
    let m1 = json!({"session": "s", "messageId": "m1"});
    let end = |reason: &str| {
        (
            "agent",
            "turn-end",
            json!({"session": "s", "messageId": "m1", "stopReason": reason}),
        )
    };
    let failed = |reason: &str| {
        vec![
            ("agent", "turn-start", m1.clone()),
            ("agent", "work-failed", m1.clone()),
            end(reason),
        ]
    };
    assert_eq!(p17(failed("error")), Status::Valid);
    assert_eq!(p17(failed("end_turn")), Status::Invalid, "A3");
    // A close of a session not active on the connection, refused.
    let close = (
        "net",
        "recv",
        json!({"conn": 1, "from": "client", "frame": {"id": 9, "method": "session/close", "params": {"sessionId": "gone"}}}),
    );
    let refused = (
        "net",
        "send",
        json!({"conn": 1, "from": "agent", "frame": {"id": 9, "error": {"code": -32002, "message": "x"}}}),
    );
    let activate = ("agent", "activate", json!({"session": "s", "conn": 1}));
    assert_eq!(p17(vec![activate.clone(), close, refused]), Status::Finding);
    // A cancel of running work whose stop is still owed at a crash.
    let cancel = (
        "net",
        "recv",
        json!({"conn": 1, "from": "client", "frame": {"method": "session/cancel", "params": {"sessionId": "s"}}}),
    );
    let owed = vec![activate, ("agent", "turn-start", m1.clone()), cancel];
    let crash = |host: &str| ("nemesis", "crash", json!({"host": host}));
    let mut client_crash = owed.clone();
    client_crash.push(crash("client"));
    assert_eq!(p17(client_crash), Status::Invalid, "still owed");
    let mut agent_crash = owed;
    agent_crash.push(crash("agent"));
    assert_eq!(p17(agent_crash), Status::Valid);
}

/// A `session/prompt` #`id` on connection 1, written, read by the Agent, and its success
/// answer with `mid`.
fn prompt_answered(id: u64, mid: &str) -> Vec<(&'static str, &'static str, Value)> {
    let request = json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": "s", "idempotencyKey": "k"}});
    vec![
        (
            "net",
            "send",
            json!({"conn": 1, "from": "client", "frame": request}),
        ),
        (
            "net",
            "recv",
            json!({"conn": 1, "from": "client", "frame": request}),
        ),
        (
            "net",
            "send",
            json!({"conn": 1, "from": "agent", "frame": {"jsonrpc": "2.0", "id": id,
                "result": {"messageId": mid}}}),
        ),
    ]
}

/// `ops` as a history whose Client reported its attempts (one `attempt`, appended so the
/// ops' indices stay): the Agent's contract tests owe nothing of the Client.
fn hist_agent(ops: &[(&str, &str, Value)]) -> History {
    let mut all = ops.to_vec();
    all.push((
        "client",
        "attempt",
        json!({"submission": 0, "conn": 1, "id": 1, "key": "k"}),
    ));
    hist(&all)
}

#[test]
fn contract_a_prompt_answered_with_no_insert_ever_leaves_its_properties_not_checked() {
    let h = hist_agent(&prompt_answered(1, "m1"));
    let m = contract::missing(&h);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!((m[0].effect.as_str(), m[0].witness), ("`insert`", 2));
    let vs = check_all(&h);
    for p in ["P1", "P3", "P4", "P6", "P9", "P11", "P12", "P15"] {
        let v = vs.iter().find(|v| v.property == p).unwrap();
        assert_eq!(v.status, Status::Unknown, "{p}: {}", v.message);
        assert!(v
            .message
            .starts_with("not checked: the Agent never emitted `insert`"));
        assert_eq!(v.witnesses, vec![2]);
    }
    // Judged on the wire alone: untouched.
    for p in ["P5", "P7", "P8"] {
        let v = vs.iter().find(|v| v.property == p).unwrap();
        assert_eq!(v.status, Status::Valid, "{p}: {}", v.message);
    }
    // The same history with the insertion reported is checked (and valid).
    let mut ops = prompt_answered(1, "m1");
    ops.splice(2..2, insert("m1", 1, 1, "k"));
    assert!(contract::missing(&hist_agent(&ops)).is_empty());
    assert_eq!(status(&hist_agent(&ops), "P4").0, Status::Valid);
}

#[test]
fn contract_an_insertion_that_never_takes_effect_leaves_p1_p11_p12_not_checked() {
    let mut ops = prompt_answered(1, "m1");
    ops.insert(
        2,
        (
            "agent",
            "insert",
            json!({"session": "s", "messageId": "m1", "key": "k", "conn": 1, "id": 1}),
        ),
    );
    let h = hist_agent(&ops);
    let m = contract::missing(&h);
    assert_eq!(
        m.iter().map(|m| m.effect.as_str()).collect::<Vec<_>>(),
        ["`durable` or `visible`"]
    );
    for p in ["P1", "P11", "P12"] {
        assert_eq!(status(&h, p).0, Status::Unknown, "{p}");
    }
    assert_eq!(status(&h, "P4").0, Status::Valid);
}

#[test]
fn contract_turns_on_the_wire_without_turn_start_leave_p1_and_p17_not_checked() {
    let mut ops = prompt_answered(1, "m1");
    ops.splice(2..2, insert("m1", 1, 1, "k"));
    ops.push((
        "net",
        "send",
        json!({"conn": 1, "from": "agent", "frame": {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": "state_update", "state": "running"}}}}),
    ));
    ops.push((
        "net",
        "send",
        json!({"conn": 1, "from": "agent", "frame": {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}}}}),
    ));
    let h = hist_agent(&ops);
    let m: Vec<String> = contract::missing(&h)
        .into_iter()
        .map(|m| m.effect)
        .collect();
    assert_eq!(m, ["`turn-start`", "`turn-end`"]);
    let p17 = check_all(&h)
        .into_iter()
        .find(|v| v.property == "P17")
        .unwrap();
    assert_eq!(p17.status, Status::Unknown);
    assert!(p17.message.contains("`turn-start`") && p17.message.contains("`turn-end`"));
    assert_eq!(status(&h, "P1").0, Status::Unknown);
    assert_eq!(status(&h, "P4").0, Status::Valid);
}

#[test]
fn contract_keeps_a_violation_its_frames_show_and_leaves_probe_histories_alone() {
    // An error answer after the Agent reported an insertion (P4 invalid), and a second prompt
    // answered with a messageId nobody reported: the violation stays, with a note.
    let mut ops = vec![(
        "net",
        "send",
        json!({"conn": 1, "from": "client", "frame": {"jsonrpc": "2.0", "id": 1,
            "method": "session/prompt", "params": {"sessionId": "s"}}}),
    )];
    ops.push((
        "agent",
        "insert",
        json!({"session": "s", "messageId": "m1", "key": null, "conn": 1, "id": 1}),
    ));
    ops.push((
        "net",
        "send",
        json!({"conn": 1, "from": "agent", "frame": {"jsonrpc": "2.0", "id": 1,
            "error": {"code": -32603, "message": "x"}}}),
    ));
    let h = hist_agent(&ops);
    let p4 = check_all(&h)
        .into_iter()
        .find(|v| v.property == "P4")
        .unwrap();
    assert_eq!(p4.status, Status::Invalid);
    assert!(contract::missing(&h).is_empty());
    // The rule owes no effect for a history the probe recorded from a real Agent.
    let mut probe = hist(&prompt_answered(1, "m1"));
    probe.header = json!({"format": 1, "plan": {"probe": {"agent": "x"}}});
    assert!(contract::missing(&probe).is_empty());
    assert_eq!(status(&probe, "P4").0, Status::Valid);
    // A violation in a history that owes `insert`: kept, with the note.
    let mut ops = prompt_answered(1, "m1");
    ops.extend(prompt_answered(2, "m2"));
    ops.push((
        "net",
        "send",
        json!({"conn": 1, "from": "agent", "frame": {"jsonrpc": "2.0", "id": 2,
            "result": {"messageId": "m2"}}}),
    ));
    let h = hist_agent(&ops);
    let p7 = check_all(&h)
        .into_iter()
        .find(|v| v.property == "P7")
        .unwrap();
    assert_eq!(p7.status, Status::Invalid, "{}", p7.message);
    assert!(!p7.message.contains("never emitted"), "P7 reads no effect");
    let mut v = vec![Verdict {
        property: "P1".into(),
        status: Status::Invalid,
        rules: vec!["A1".into()],
        witnesses: vec![0],
        fault: None,
        party: Some(Party::Agent),
        message: "twice".into(),
    }];
    contract::apply(&h, &mut v);
    assert_eq!(
        (v[0].status, v[0].witnesses.clone()),
        (Status::Invalid, vec![0])
    );
    assert!(v[0]
        .message
        .starts_with("twice (note: the Agent never emitted `insert`"));
    // The same violation citing an op that is not a frame (what the missing effect would
    // have said) rests on the effect: unknown, naming it, what the checker saw kept.
    let last = h.ops.len() - 1;
    let mut v = vec![Verdict {
        property: "P1".into(),
        status: Status::Invalid,
        rules: vec!["A1".into()],
        witnesses: vec![last],
        fault: None,
        party: Some(Party::Agent),
        message: "twice".into(),
    }];
    contract::apply(&h, &mut v);
    assert_eq!(v[0].status, Status::Unknown);
    assert!(
        v[0].message
            .starts_with("not checked: the Agent never emitted `insert`")
            && v[0]
                .message
                .ends_with("judged without it, the checker saw: twice"),
        "{}",
        v[0].message
    );
}
