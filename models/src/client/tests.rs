//! The spec Client and its mutants, driven directly.

use super::*;

fn cfg(stale_ms: u64, mutant: Option<ClientMutant>) -> ClientConfig {
    ClientConfig {
        prompt_timeout_ms: 100,
        backoff_ms_min: 10,
        backoff_ms_max: 100,
        attempts_max: 5,
        sessions: 1,
        keys: KeyScheme::Uuid,
        stale_ms,
        mutant,
        kind: ClientKind::Spec,
        unkeyed_rate: 0.0,
        permission_ms: 0,
    }
}

fn sends(out: &[Action]) -> Vec<Value> {
    out.iter()
        .filter_map(|a| match a {
            Action::Send { line, .. } => serde_json::from_str(line).ok(),
            _ => None,
        })
        .collect()
}

fn prompts(out: &[Action]) -> Vec<Value> {
    sends(out)
        .into_iter()
        .filter(|v| v["method"] == "session/prompt")
        .collect()
}

/// Connect and answer initialize and resume; return what the Client sent after resuming.
fn resume(c: &mut SpecClient) -> Vec<Action> {
    let mut out = vec![];
    c.handle(ClientInput::Connected(1), &mut out);
    c.handle(
        ClientInput::Frame(1, rpc::ok(&json!(1), json!({}))),
        &mut out,
    );
    let mut after = vec![];
    c.handle(
        ClientInput::Frame(1, rpc::ok(&json!(2), json!({}))),
        &mut after,
    );
    after
}

fn restored(stale_ms: u64) -> SpecClient {
    let recs = vec![
        json!({"t": "session", "slot": 0, "id": "s"}),
        json!({"t": "pending", "submission": 1, "slot": 0, "key": "k-old", "text": "a", "at_ms": 0}),
        json!({"t": "pending", "submission": 2, "slot": 0, "key": "k-new", "text": "b", "at_ms": 900}),
    ];
    let mut c = SpecClient::recover(cfg(stale_ms, None), 1, 1, &recs);
    c.set_clock(1000);
    c
}

#[test]
fn after_a_restart_pending_inputs_are_resent_with_their_stored_keys() {
    let mut c = restored(0);
    let out = resume(&mut c);
    let keys: Vec<_> = prompts(&out)
        .iter()
        .map(|v| v["params"]["idempotencyKey"].clone())
        .collect();
    assert_eq!(keys, vec![json!("k-old"), json!("k-new")]);
}

#[test]
fn a_stale_pending_input_is_shown_to_the_user_not_resent() {
    let mut c = restored(300);
    let out = resume(&mut c);
    let keys: Vec<_> = prompts(&out)
        .iter()
        .map(|v| v["params"]["idempotencyKey"].clone())
        .collect();
    assert_eq!(keys, vec![json!("k-new")]);
    assert!(out.iter().any(
        |a| matches!(a, Action::Effect(e) if e.f == op::SURFACE && e.value["submission"] == 1)
    ));
    assert_eq!(c.pending(), vec![2]);
}

#[test]
fn the_key_is_stored_before_the_first_attempt_is_written() {
    let mut c = restored(0);
    resume(&mut c);
    let mut out = vec![];
    c.handle(
        ClientInput::Submit {
            submission: 3,
            slot: 0,
            text: "c".into(),
        },
        &mut out,
    );
    let persist = out
        .iter()
        .position(|a| matches!(a, Action::Persist { sync: true, .. }))
        .unwrap();
    let send = out
        .iter()
        .position(|a| matches!(a, Action::Send { .. }))
        .unwrap();
    assert!(persist < send, "C1: stored before the first attempt");
    // The volatile-pending mutant never stores it.
    let mut v = SpecClient::recover(cfg(0, Some(ClientMutant::VolatilePending)), 0, 1, &[]);
    let mut out = vec![];
    v.handle(
        ClientInput::Submit {
            submission: 1,
            slot: 0,
            text: "c".into(),
        },
        &mut out,
    );
    assert!(!out
        .iter()
        .any(|a| matches!(a, Action::Persist { record, .. } if record["t"] == "pending")));
}

fn effects_named<'a>(out: &'a [Action], f: &str) -> Vec<&'a Value> {
    out.iter()
        .filter_map(|a| match a {
            Action::Effect(e) if e.f == f => Some(&e.value),
            _ => None,
        })
        .collect()
}

#[test]
fn sdk_auto_retry_resends_only_what_the_retry_class_allows() {
    let mut cfg = cfg(0, None);
    cfg.kind = ClientKind::SdkAutoRetry;
    // The application sends every new prompt without a key here; one keyed prompt is
    // restored from the store.
    cfg.unkeyed_rate = 1.0;
    let recs = vec![
        json!({"t": "session", "slot": 0, "id": "s"}),
        json!({"t": "pending", "submission": 1, "slot": 0, "key": "k1", "text": "a", "at_ms": 0}),
    ];
    let mut c = SpecClient::recover(cfg, 0, 1, &recs);
    let mut first = resume(&mut c);
    c.handle(
        ClientInput::Submit {
            submission: 2,
            slot: 0,
            text: "b".into(),
        },
        &mut first,
    );
    let sent = prompts(&first);
    assert_eq!(sent.len(), 2, "both go out once: {sent:?}");
    assert_eq!(sent[1]["params"].get("idempotencyKey"), None, "unkeyed");
    // No answer in time on a live connection: the keyed prompt is resent with its key;
    // the unkeyed one's outcome is unknown, so it is shown to the user (C9).
    let mut out = vec![];
    for a in &first {
        if let Action::Timer { id, .. } = a {
            c.handle(ClientInput::Timer(*id), &mut out);
        }
    }
    let resent = sends(&out);
    assert_eq!(resent.len(), 1, "{resent:?}");
    assert_eq!(resent[0]["params"]["idempotencyKey"], "k1");
    assert_eq!(effects_named(&out, "surface").len(), 1);
    assert_eq!(effects_named(&out, "not-resent")[0]["why"], "no key");
    // The connection ends with both unanswered: the SDK decides per class.
    let mut out = vec![];
    c.handle(ClientInput::Disconnected(1), &mut out);
    assert!(effects_named(&out, "not-resent")
        .iter()
        .all(|v| v["class"] == "keyed"));
    // After the reconnect only the keyed prompt goes out again, with its key.
    let mut out = vec![];
    c.handle(ClientInput::Connected(2), &mut out);
    c.handle(
        ClientInput::Frame(2, rpc::ok(&json!(1), json!({}))),
        &mut out,
    );
    let mut after = vec![];
    c.handle(
        ClientInput::Frame(2, rpc::ok(&json!(2), json!({}))),
        &mut after,
    );
    let keys: Vec<_> = prompts(&after)
        .iter()
        .map(|v| v["params"]["idempotencyKey"].clone())
        .collect();
    assert_eq!(keys, vec![json!("k1")]);
    assert_eq!(c.pending(), vec![1]);
}

#[test]
fn an_unkeyed_input_restored_after_a_restart_is_shown_not_resent() {
    let mut cfg = cfg(0, None);
    cfg.kind = ClientKind::SdkAutoRetry;
    let recs = vec![
        json!({"t": "session", "slot": 0, "id": "s"}),
        json!({"t": "pending", "submission": 1, "slot": 0, "key": null, "text": "a", "at_ms": 0}),
    ];
    let mut c = SpecClient::recover(cfg, 1, 1, &recs);
    let out = resume(&mut c);
    assert!(prompts(&out).is_empty(), "C9: never resent");
    assert_eq!(effects_named(&out, "surface").len(), 1);
    assert!(c.pending().is_empty());
}

#[test]
fn sdk_auto_retry_never_resends_session_new() {
    let mut cfg = cfg(0, None);
    cfg.kind = ClientKind::SdkAutoRetry;
    let mut c = SpecClient::recover(cfg, 0, 1, &[]);
    let mut out = vec![];
    c.handle(ClientInput::Connected(1), &mut out);
    c.handle(
        ClientInput::Frame(1, rpc::ok(&json!(1), json!({}))),
        &mut out,
    );
    assert!(sends(&out).iter().any(|v| v["method"] == "session/new"));
    let mut out = vec![];
    c.handle(ClientInput::Disconnected(1), &mut out);
    let not = effects_named(&out, "not-resent");
    assert_eq!(not.len(), 1);
    assert_eq!(not[0]["method"], "session/new");
    assert_eq!(not[0]["class"], "duplicating");
    assert_eq!(effects_named(&out, "app-new-session").len(), 1);
}

#[test]
fn close_then_prompt_resumes_first_and_fork_prompts_in_the_fork() {
    let mut c = restored(0);
    let first = resume(&mut c);
    let ids: Vec<u64> = sends(&first)
        .iter()
        .filter_map(|v| v["id"].as_u64())
        .collect();
    // Answer both restored prompts and the list.
    let mut out = vec![];
    for id in ids {
        c.handle(
            ClientInput::Frame(
                1,
                rpc::ok(
                    &json!(id),
                    json!({"messageId": format!("m{id}"), "sessions": []}),
                ),
            ),
            &mut out,
        );
    }
    assert!(c.pending().is_empty());
    // Close, answered: the next input resumes the session before its prompt (X2).
    let mut out = vec![];
    c.handle(ClientInput::Close { slot: 0 }, &mut out);
    let close = sends(&out);
    assert_eq!(close[0]["method"], "session/close");
    c.handle(
        ClientInput::Frame(1, rpc::ok(&close[0]["id"], json!({}))),
        &mut vec![],
    );
    let mut out = vec![];
    c.handle(
        ClientInput::Submit {
            submission: 3,
            slot: 0,
            text: "c".into(),
        },
        &mut out,
    );
    let sent = sends(&out);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["method"], "session/resume");
    let mut out = vec![];
    c.handle(
        ClientInput::Frame(1, rpc::ok(&sent[0]["id"], json!({}))),
        &mut out,
    );
    let p = sends(&out);
    assert_eq!(p[0]["method"], "session/prompt");
    assert_eq!(p[0]["params"]["sessionId"], "s");
    // Fork slot 0 into slot 1; a submission there waits for the fork, then goes to it.
    let mut out = vec![];
    c.handle(ClientInput::Fork { slot: 0, into: 1 }, &mut out);
    let fork = sends(&out);
    assert_eq!(fork[0]["method"], "session/fork");
    assert_eq!(fork[0]["params"]["sessionId"], "s");
    let mut out = vec![];
    c.handle(
        ClientInput::Submit {
            submission: 4,
            slot: 1,
            text: "d".into(),
        },
        &mut out,
    );
    assert!(sends(&out).is_empty(), "no session yet for the fork");
    let mut out = vec![];
    c.handle(
        ClientInput::Frame(1, rpc::ok(&fork[0]["id"], json!({"sessionId": "f"}))),
        &mut out,
    );
    let p = sends(&out);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0]["params"]["sessionId"], "f");
}

/// `handle_decoded` with the line's own JSON does what `handle(Frame)` does with the line:
/// answers, errors, an Agent's request, an answer to a raw probe and a stray object.
#[test]
fn a_decoded_frame_is_handled_as_its_line() {
    let lines = [
        rpc::ok(&json!(1), json!({})),
        rpc::ok(&json!(2), json!({})),
        rpc::err(&json!(3), -32603, "Internal error", None),
        rpc::request(9, "session/request_permission", json!({"sessionId": "s"})),
        rpc::request(10, "fs/unknown", json!({})),
        rpc::ok(&Value::Null, json!({})),
        r#"{"nothing":"here"}"#.to_string(),
        r#"{"jsonrpc":"1.0","id":11,"method":"session/request_permission"}"#.to_string(),
    ];
    let (mut by_line, mut by_value) = (restored(0), restored(0));
    by_line.handle(ClientInput::Connected(1), &mut vec![]);
    by_value.handle(ClientInput::Connected(1), &mut vec![]);
    let mut answered = 0;
    for line in &lines {
        let (mut a, mut b) = (vec![], vec![]);
        by_line.handle(ClientInput::Frame(1, line.clone()), &mut a);
        let decoded: Value = serde_json::from_str(line).unwrap();
        by_value.handle_decoded(1, line.clone(), decoded, &mut b);
        answered += a.len();
        assert_eq!(a, b, "{line}");
    }
    assert!(answered > 0, "the script made the Client do nothing");
}
