//! Model tests (sans-IO, no simulator): each method's normal answer, its error answers and what
//! a repeat does.

use super::*;

fn cfg(design: Design, mutant: Option<AgentMutant>) -> AgentConfig {
    AgentConfig::simple(design, HeldOnDisconnect::Keep, DuringTurn::Hold, mutant)
}

fn agent(design: Design) -> ModelAgent {
    ModelAgent::recover(cfg(design, None), 0, 1, &[])
}

fn sends(out: &[Action]) -> Vec<Value> {
    out.iter()
        .filter_map(|a| match a {
            Action::Send { line, .. } => Some(serde_json::from_str(line).unwrap()),
            _ => None,
        })
        .collect()
}

fn effects<'a>(out: &'a [Action], f: &str) -> Vec<&'a Value> {
    out.iter()
        .filter_map(|a| match a {
            Action::Effect(e) if e.f == f => Some(&e.value),
            _ => None,
        })
        .collect()
}

fn records(out: &[Action]) -> Vec<Value> {
    out.iter()
        .filter_map(|a| match a {
            Action::Persist { record, .. } => Some(record.clone()),
            _ => None,
        })
        .collect()
}

/// Send one request line on `conn`; return what the Agent did.
fn call(a: &mut ModelAgent, conn: ConnId, id: u64, method: &str, params: Value) -> Vec<Action> {
    let mut out = vec![];
    a.handle(
        AgentInput::Frame(conn, rpc::request(id, method, params)),
        &mut out,
    );
    out
}

fn notify(a: &mut ModelAgent, conn: ConnId, method: &str, params: Value) -> Vec<Action> {
    let mut out = vec![];
    a.handle(
        AgentInput::Frame(conn, rpc::notification(method, params)),
        &mut out,
    );
    out
}

fn response(out: &[Action], id: u64) -> Value {
    sends(out)
        .into_iter()
        .find(|v| v["id"] == id && v.get("method").is_none())
        .unwrap_or(Value::Null)
}

fn connect(a: &mut ModelAgent, conn: ConnId) {
    a.handle(AgentInput::Connected(conn), &mut vec![]);
}

fn new_session(a: &mut ModelAgent, conn: ConnId) -> String {
    connect(a, conn);
    let out = call(a, conn, 1, "session/new", json!({"cwd": "/w"}));
    response(&out, 1)["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string()
}

fn prompt_params(sid: &str, text: &str, key: Value) -> Value {
    rpc::prompt_params(sid, text, Some(key))
}

fn prompt(a: &mut ModelAgent, conn: ConnId, id: u64, sid: &str, key: Value) -> Vec<Action> {
    call(a, conn, id, "session/prompt", prompt_params(sid, "hi", key))
}

fn fire_timers(a: &mut ModelAgent, out: &[Action]) -> Vec<Action> {
    let mut more = vec![];
    for act in out {
        if let Action::Timer { id, .. } = act {
            a.handle(AgentInput::Timer(*id), &mut more);
        }
    }
    more
}

fn code_of(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or(0)
}

// ---- initialize -----------------------------------------------------------------------------

#[test]
fn initialize_answers_v2_with_session_capability_and_repeats_the_same() {
    let mut a = agent(Design::Stored);
    connect(&mut a, 1);
    let p = json!({"protocolVersion": 2, "info": {"name": "c", "version": "1"}});
    let r1 = response(&call(&mut a, 1, 1, "initialize", p.clone()), 1);
    let r2 = response(&call(&mut a, 1, 2, "initialize", p), 2);
    assert_eq!(r1["result"]["protocolVersion"], 2);
    assert!(r1["result"]["capabilities"]["session"].is_object());
    assert_eq!(r1["result"], r2["result"]);
    let bad = response(
        &call(&mut a, 1, 3, "initialize", json!({"protocolVersion": "x"})),
        3,
    );
    assert_eq!(code_of(&bad), code::INVALID_PARAMS);
}

// ---- session/new, session/fork (duplicating) ------------------------------------------------

#[test]
fn session_new_repeats_create_another_session() {
    let mut a = agent(Design::Stored);
    let s1 = new_session(&mut a, 1);
    let s2 = new_session(&mut a, 1);
    assert_ne!(s1, s2);
    let bad = response(&call(&mut a, 1, 9, "session/new", json!({})), 9);
    assert_eq!(code_of(&bad), code::INVALID_PARAMS);
}

#[test]
fn session_fork_copies_history_but_not_keys() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let out = prompt(&mut a, 1, 2, &sid, json!("k"));
    let mid = response(&out, 2)["result"]["messageId"].clone();
    fire_timers(&mut a, &out);
    let f = response(
        &call(
            &mut a,
            1,
            3,
            "session/fork",
            json!({"sessionId": sid, "cwd": "/w"}),
        ),
        3,
    );
    let fork = f["result"]["sessionId"].as_str().unwrap().to_string();
    assert_ne!(fork, sid);
    // The fork replays the parent's message with its id...
    let out = call(
        &mut a,
        1,
        4,
        "session/resume",
        json!({"sessionId": fork, "cwd": "/w", "replayFrom": {"type": "start"}}),
    );
    assert!(sends(&out)
        .iter()
        .any(|v| v["params"]["update"]["messageId"] == mid));
    // ...but the same key in the fork names an unrelated submission (A9).
    let out = prompt(&mut a, 1, 5, &fork, json!("k"));
    assert_eq!(effects(&out, "insert").len(), 1);
    assert_ne!(response(&out, 5)["result"]["messageId"], mid);
    let again = response(
        &call(
            &mut a,
            1,
            6,
            "session/fork",
            json!({"sessionId": sid, "cwd": "/w"}),
        ),
        6,
    );
    assert_ne!(
        again["result"]["sessionId"], f["result"]["sessionId"],
        "a repeat forks again"
    );
    let missing = response(
        &call(
            &mut a,
            1,
            7,
            "session/fork",
            json!({"sessionId": "nope", "cwd": "/w"}),
        ),
        7,
    );
    assert_eq!(code_of(&missing), code::RESOURCE_NOT_FOUND);
}

// ---- session/list ---------------------------------------------------------------------------

#[test]
fn session_list_shows_sessions_and_never_keys() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    prompt(&mut a, 1, 2, &sid, json!("secret-key-123"));
    let r1 = response(&call(&mut a, 1, 3, "session/list", json!({})), 3);
    let r2 = response(&call(&mut a, 1, 4, "session/list", json!({})), 4);
    assert_eq!(r1["result"]["sessions"][0]["sessionId"], sid.as_str());
    assert!(!r1.to_string().contains("secret-key-123"));
    assert_eq!(r1["result"], r2["result"]);
}

#[test]
fn session_list_reports_each_sessions_cwd_filters_by_it_and_keeps_it_across_a_restart() {
    let mut a = agent(Design::Stored);
    connect(&mut a, 1);
    let mut recs = Vec::new();
    let mut ids = Vec::new();
    for (n, cwd) in [(1, "/a"), (2, "/b")] {
        let out = call(&mut a, 1, n, "session/new", json!({"cwd": cwd}));
        ids.push(response(&out, n)["result"]["sessionId"].clone());
        recs.extend(records(&out));
    }
    let all = response(&call(&mut a, 1, 3, "session/list", json!({})), 3);
    let cwds: Vec<_> = all["result"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["sessionId"].clone(), s["cwd"].clone()))
        .collect();
    assert_eq!(
        cwds,
        [(ids[0].clone(), json!("/a")), (ids[1].clone(), json!("/b"))]
    );
    let only_b = response(&call(&mut a, 1, 4, "session/list", json!({"cwd": "/b"})), 4);
    assert_eq!(only_b["result"]["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(only_b["result"]["sessions"][0]["sessionId"], ids[1]);
    // A restart recovers each session's cwd from its record.
    let mut b = ModelAgent::recover(cfg(Design::Stored, None), 1, 1, &recs);
    connect(&mut b, 1);
    let again = response(&call(&mut b, 1, 5, "session/list", json!({})), 5);
    assert_eq!(again["result"], all["result"]);
}

#[test]
fn after_a_failed_initialize_nothing_else_is_served_until_one_succeeds() {
    let mut a = agent(Design::Stored);
    connect(&mut a, 1);
    let bad = response(
        &call(&mut a, 1, 1, "initialize", json!({"protocolVersion": "x"})),
        1,
    );
    assert_eq!(code_of(&bad), code::INVALID_PARAMS);
    let refused = response(&call(&mut a, 1, 2, "session/new", json!({"cwd": "/w"})), 2);
    assert_eq!(code_of(&refused), code::INVALID_REQUEST);
    // Another connection is not affected, and a good initialize lifts it.
    connect(&mut a, 2);
    let other = response(&call(&mut a, 2, 1, "session/new", json!({"cwd": "/w"})), 1);
    assert!(other["result"]["sessionId"].is_string());
    let p = json!({"protocolVersion": 2, "info": {"name": "c", "version": "1"}});
    assert_eq!(
        response(&call(&mut a, 1, 3, "initialize", p), 3)["result"]["protocolVersion"],
        2
    );
    let served = response(&call(&mut a, 1, 4, "session/new", json!({"cwd": "/w"})), 4);
    assert!(served["result"]["sessionId"].is_string());
}

// ---- session/resume -------------------------------------------------------------------------

#[test]
fn session_resume_replays_then_completes_then_snapshots_then_answers() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let out = prompt(&mut a, 1, 2, &sid, json!("key-a"));
    fire_timers(&mut a, &out);
    connect(&mut a, 2);
    let out = call(
        &mut a,
        2,
        1,
        "session/resume",
        json!({"sessionId": sid, "cwd": "/w", "replayFrom": {"type": "start"}}),
    );
    let kinds: Vec<String> = sends(&out)
        .iter()
        .map(|v| {
            v["params"]["update"]["sessionUpdate"]
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| "response".into())
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "user_message",
            "replay_complete",
            "state_update",
            "response"
        ]
    );
    assert!(
        !sends(&out).iter().any(|v| v.to_string().contains("key-a")),
        "A8: no key in replay"
    );
    // Without replayFrom: no replay and no replay_complete; a repeat re-synchronizes.
    for id in [2, 3] {
        let out = call(
            &mut a,
            2,
            id,
            "session/resume",
            json!({"sessionId": sid, "cwd": "/w"}),
        );
        let kinds: Vec<_> = sends(&out)
            .iter()
            .map(|v| v["params"]["update"]["sessionUpdate"].clone())
            .collect();
        assert_eq!(kinds, vec![json!("state_update"), Value::Null]);
    }
    let missing = response(
        &call(
            &mut a,
            2,
            4,
            "session/resume",
            json!({"sessionId": "nope", "cwd": "/w"}),
        ),
        4,
    );
    assert_eq!(code_of(&missing), code::RESOURCE_NOT_FOUND);
}

// ---- session/prompt -------------------------------------------------------------------------

#[test]
fn keyed_retry_gets_the_original_message_id_and_no_second_turn() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let o1 = prompt(&mut a, 1, 2, &sid, json!("k"));
    let o2 = prompt(&mut a, 1, 3, &sid, json!("k"));
    assert_eq!(
        effects(&o1, "insert").len() + effects(&o2, "insert").len(),
        1
    );
    assert_eq!(effects(&o2, "turn-start").len(), 0);
    assert_eq!(response(&o1, 2)["result"], response(&o2, 3)["result"]);
}

#[test]
fn response_comes_at_insertion_with_an_echo_carrying_the_id() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let out = prompt(&mut a, 1, 2, &sid, json!("k"));
    let mid = response(&out, 2)["result"]["messageId"].clone();
    let echo = sends(&out)
        .into_iter()
        .find(|v| v["params"]["update"]["sessionUpdate"] == "user_message")
        .unwrap();
    assert_eq!(echo["params"]["update"]["messageId"], mid);
    // The record is synced before anything becomes visible (D1).
    let persist = out
        .iter()
        .position(|x| matches!(x, Action::Persist { sync: true, .. }))
        .unwrap();
    let first_send = out
        .iter()
        .position(|x| matches!(x, Action::Send { .. }))
        .unwrap();
    assert!(persist < first_send);
}

#[test]
fn no_dedup_mutant_inserts_twice() {
    let mut a = ModelAgent::recover(cfg(Design::Stored, Some(AgentMutant::NoDedup)), 0, 1, &[]);
    let sid = new_session(&mut a, 1);
    let out = prompt(&mut a, 1, 2, &sid, json!("k"));
    let more = fire_timers(&mut a, &out);
    let again = prompt(&mut a, 1, 3, &sid, json!("k"));
    assert_eq!(
        effects(&out, "insert").len()
            + effects(&more, "insert").len()
            + effects(&again, "insert").len(),
        2
    );
}

#[test]
fn malformed_keys_get_invalid_params_and_insert_nothing() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    for k in [
        json!(""),
        json!("x".repeat(256)),
        json!(7),
        json!(true),
        json!({}),
        json!([]),
    ] {
        let out = prompt(&mut a, 1, 9, &sid, k.clone());
        assert_eq!(effects(&out, "insert").len(), 0, "{k}");
        assert_eq!(code_of(&response(&out, 9)), code::INVALID_PARAMS, "{k}");
    }
    // Boundary keys are accepted: 1 and 255 characters (chars, not bytes), spaces, case.
    for k in [
        json!("a"),
        json!("é".repeat(255)),
        json!("a b"),
        json!("A b"),
        Value::Null,
    ] {
        let out = prompt(&mut a, 1, 9, &sid, k.clone());
        let more = fire_timers(&mut a, &out);
        assert_eq!(
            effects(&out, "insert").len() + effects(&more, "insert").len(),
            1,
            "{k}"
        );
    }
}

#[test]
fn prompt_errors_insert_nothing() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    connect(&mut a, 2);
    let out = prompt(&mut a, 2, 1, &sid, json!("k"));
    assert_eq!(
        code_of(&response(&out, 1)),
        code::RESOURCE_NOT_FOUND,
        "X2: not active on conn 2"
    );
    assert_eq!(
        response(&out, 1)["error"]["data"]["sessionId"],
        sid.as_str()
    );
    let out = call(
        &mut a,
        1,
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": []}),
    );
    assert_eq!(code_of(&response(&out, 2)), code::INVALID_PARAMS, "A17");
    a.handle(AgentInput::InjectTransientError, &mut vec![]);
    let out = prompt(&mut a, 1, 3, &sid, json!("k"));
    assert_eq!(code_of(&response(&out, 3)), code::INTERNAL_ERROR);
    assert!(effects(&out, "insert").is_empty());
    // A2: the key stayed unused: the retry inserts.
    let out = prompt(&mut a, 1, 4, &sid, json!("k"));
    assert_eq!(effects(&out, "insert").len(), 1);
}

#[test]
fn retry_while_held_waits_for_the_original() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let o = prompt(&mut a, 1, 2, &sid, json!("a"));
    let h1 = prompt(&mut a, 1, 3, &sid, json!("b"));
    let h2 = prompt(&mut a, 1, 4, &sid, json!("b"));
    assert!(response(&h1, 3).is_null() && response(&h2, 4).is_null());
    let end = fire_timers(&mut a, &o);
    assert_eq!(response(&end, 3)["result"], response(&end, 4)["result"]);
    assert_eq!(effects(&end, "insert").len(), 1);
}

/// A7 with O1 drop: the held original's connection ends while a retry waits for it on another
/// connection; the retry becomes the submission. `drop-held-drops-retries` drops it unanswered.
#[test]
fn o1_drop_makes_a_waiting_retry_the_submission() {
    for mutant in [None, Some(AgentMutant::DropHeldDropsRetries)] {
        let c = AgentConfig::simple(
            Design::Stored,
            HeldOnDisconnect::Drop,
            DuringTurn::Hold,
            mutant,
        );
        let mut a = ModelAgent::recover(c, 0, 1, &[]);
        let sid = new_session(&mut a, 1);
        let o = prompt(&mut a, 1, 2, &sid, json!("a"));
        assert!(response(&prompt(&mut a, 1, 3, &sid, json!("b")), 3).is_null());
        connect(&mut a, 2);
        call(
            &mut a,
            2,
            1,
            "session/resume",
            json!({"sessionId": sid, "cwd": "/w"}),
        );
        let retry = prompt(&mut a, 2, 2, &sid, json!("b"));
        assert!(response(&retry, 2).is_null(), "the retry waits (A7)");
        let mut gone = vec![];
        a.handle(AgentInput::Disconnected(1), &mut gone);
        let end = fire_timers(&mut a, &o);
        let inserted = effects(&end, "insert");
        if mutant.is_none() {
            assert!(effects(&gone, "drop-held").is_empty());
            assert_eq!(inserted.len(), 1);
            assert_eq!(
                (inserted[0]["conn"].clone(), inserted[0]["id"].clone()),
                (json!(2), json!(2))
            );
            assert!(response(&end, 2)["result"]["messageId"].is_string());
        } else {
            assert_eq!(effects(&gone, "drop-held").len(), 1);
            assert!(inserted.is_empty() && response(&end, 2).is_null());
        }
    }
}

#[test]
fn live_only_command_is_answered_echoed_not_retained() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let out = call(
        &mut a,
        1,
        2,
        "session/prompt",
        prompt_params(&sid, "/status", json!("k")),
    );
    assert!(response(&out, 2)["result"]["messageId"].is_string());
    assert!(effects(&out, "turn-start").is_empty());
    assert!(records(&out).is_empty(), "not persisted");
    // Recognized while the session is active (A11)...
    let again = call(
        &mut a,
        1,
        3,
        "session/prompt",
        prompt_params(&sid, "/status", json!("k")),
    );
    assert!(effects(&again, "insert").is_empty());
    // ...and may be forgotten once it is active nowhere.
    a.handle(AgentInput::Disconnected(1), &mut vec![]);
    connect(&mut a, 2);
    call(
        &mut a,
        2,
        1,
        "session/resume",
        json!({"sessionId": sid, "cwd": "/w"}),
    );
    let later = call(
        &mut a,
        2,
        2,
        "session/prompt",
        prompt_params(&sid, "/status", json!("k")),
    );
    assert_eq!(effects(&later, "insert").len(), 1);
}

// ---- session/cancel, $/cancel_request -------------------------------------------------------

#[test]
fn session_cancel_ends_the_turn_cancelled_and_withdraws_held_prompts() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let first = prompt(&mut a, 1, 2, &sid, json!("a"));
    prompt(&mut a, 1, 3, &sid, json!("b"));
    let out = notify(&mut a, 1, "session/cancel", json!({"sessionId": sid}));
    assert_eq!(code_of(&response(&out, 3)), code::REQUEST_CANCELLED);
    let idle = sends(&out)
        .into_iter()
        .find(|v| v["params"]["update"]["state"] == "idle")
        .unwrap();
    assert_eq!(idle["params"]["update"]["stopReason"], "cancelled");
    // The inserted prompt had already succeeded; the old turn timer does nothing now.
    assert!(response(&first, 2)["result"]["messageId"].is_string());
    assert!(fire_timers(&mut a, &first).is_empty());
    // A later prompt is not covered, and the cancelled key is unused (A2): it inserts.
    let later = prompt(&mut a, 1, 4, &sid, json!("b"));
    assert_eq!(effects(&later, "insert").len(), 1);
    // Cancelling an idle session or one not active here changes nothing.
    connect(&mut a, 2);
    assert!(notify(&mut a, 2, "session/cancel", json!({"sessionId": sid})).is_empty());
}

#[test]
fn cancel_request_withdraws_a_held_prompt_answering_every_attempt() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let first = prompt(&mut a, 1, 2, &sid, json!("a"));
    prompt(&mut a, 1, 3, &sid, json!("b"));
    prompt(&mut a, 1, 4, &sid, json!("b"));
    // Cancelling the retry withdraws the prompt: both attempts get -32800 (A5).
    let out = notify(&mut a, 1, "$/cancel_request", json!({"requestId": 4}));
    assert_eq!(code_of(&response(&out, 3)), code::REQUEST_CANCELLED);
    assert_eq!(code_of(&response(&out, 4)), code::REQUEST_CANCELLED);
    // Unknown and answered ids are ignored.
    assert!(notify(&mut a, 1, "$/cancel_request", json!({"requestId": 99})).is_empty());
    assert!(notify(&mut a, 1, "$/cancel_request", json!({"requestId": 2})).is_empty());
    let end = fire_timers(&mut a, &first);
    assert!(
        effects(&end, "insert").is_empty(),
        "the withdrawn prompt is never inserted"
    );
}

// ---- session/close, session/delete (idempotent) ---------------------------------------------

#[test]
fn session_close_cancels_held_prompts_and_is_idempotent() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    prompt(&mut a, 1, 2, &sid, json!("a"));
    prompt(&mut a, 1, 3, &sid, json!("b"));
    let out = call(&mut a, 1, 4, "session/close", json!({"sessionId": sid}));
    let msgs = sends(&out);
    let pos = |pred: &dyn Fn(&Value) -> bool| msgs.iter().position(pred).unwrap();
    assert_eq!(code_of(&response(&out, 3)), code::REQUEST_CANCELLED);
    let idle = pos(&|v| v["params"]["update"]["stopReason"] == "cancelled");
    let closed = pos(&|v| v["id"] == 4);
    assert!(
        idle < closed,
        "A15: final updates before the close response"
    );
    assert!(response(&out, 4)["result"].is_object());
    // After close the session is inactive here; repeats and missing sessions succeed.
    let p = prompt(&mut a, 1, 5, &sid, json!("c"));
    assert_eq!(code_of(&response(&p, 5)), code::RESOURCE_NOT_FOUND);
    for (id, s) in [(6, sid.as_str()), (7, "missing")] {
        assert!(response(
            &call(&mut a, 1, id, "session/close", json!({"sessionId": s})),
            id
        )["result"]
            .is_object());
    }
}

#[test]
fn session_delete_succeeds_for_missing_sessions_and_forgets_the_session() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let out = call(&mut a, 1, 2, "session/delete", json!({"sessionId": sid}));
    assert!(response(&out, 2)["result"].is_object());
    assert!(records(&out).iter().any(|r| r["t"] == "delete"));
    assert!(response(
        &call(&mut a, 1, 3, "session/delete", json!({"sessionId": sid})),
        3
    )["result"]
        .is_object());
    let r = response(
        &call(
            &mut a,
            1,
            4,
            "session/resume",
            json!({"sessionId": sid, "cwd": "/w"}),
        ),
        4,
    );
    assert_eq!(code_of(&r), code::RESOURCE_NOT_FOUND);
}

// ---- session/set_config_option, session/status ----------------------------------------------

#[test]
fn set_config_option_needs_an_active_session_and_repeats_the_same() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let p = json!({"sessionId": sid, "configId": "autosave", "type": "boolean", "value": true});
    let r1 = response(
        &call(&mut a, 1, 2, "session/set_config_option", p.clone()),
        2,
    );
    let r2 = response(
        &call(&mut a, 1, 3, "session/set_config_option", p.clone()),
        3,
    );
    assert_eq!(r1["result"]["configOptions"][0]["currentValue"], true);
    assert_eq!(r1["result"], r2["result"]);
    connect(&mut a, 2);
    assert_eq!(
        code_of(&response(
            &call(&mut a, 2, 1, "session/set_config_option", p),
            1
        )),
        code::RESOURCE_NOT_FOUND
    );
    let bad = json!({"sessionId": sid, "configId": "autosave"});
    assert_eq!(
        code_of(&response(
            &call(&mut a, 1, 4, "session/set_config_option", bad),
            4
        )),
        code::INVALID_PARAMS
    );
}

#[test]
fn session_status_reports_state_without_activating() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    connect(&mut a, 2);
    let r = response(
        &call(&mut a, 2, 1, "session/status", json!({"sessionId": sid})),
        1,
    );
    assert_eq!(r["result"]["state"]["state"], "idle");
    let p = prompt(&mut a, 2, 2, &sid, json!("k"));
    assert_eq!(
        code_of(&response(&p, 2)),
        code::RESOURCE_NOT_FOUND,
        "status does not activate"
    );
    let missing = response(
        &call(&mut a, 2, 3, "session/status", json!({"sessionId": "nope"})),
        3,
    );
    assert_eq!(code_of(&missing), code::RESOURCE_NOT_FOUND);
    let again = response(
        &call(&mut a, 2, 4, "session/status", json!({"sessionId": sid})),
        4,
    );
    assert_eq!(
        r["result"], again["result"],
        "a repeat answers the same current state"
    );
}

// ---- JSON-RPC errors -------------------------------------------------------------------------

#[test]
fn garbage_gets_json_rpc_errors() {
    let mut a = agent(Design::Stored);
    connect(&mut a, 1);
    let mut out = vec![];
    a.handle(AgentInput::Frame(1, "{oops".into()), &mut out);
    a.handle(AgentInput::Frame(1, "[1,2]".into()), &mut out);
    a.handle(
        AgentInput::Frame(1, rpc::request(5, "nope", json!({}))),
        &mut out,
    );
    a.handle(AgentInput::Frame(1, r#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"\ud800"}]}}"#.into()), &mut out);
    let codes: Vec<_> = sends(&out)
        .iter()
        .map(|v| v["error"]["code"].as_i64().unwrap())
        .collect();
    assert_eq!(
        codes,
        vec![
            code::PARSE_ERROR,
            code::INVALID_REQUEST,
            code::METHOD_NOT_FOUND,
            code::PARSE_ERROR
        ]
    );
    assert_eq!(sends(&out)[0]["id"], Value::Null);
}

// ---- tools and permission --------------------------------------------------------------------

fn tool_agent(permission: bool) -> ModelAgent {
    let mut c = cfg(Design::Stored, None);
    c.tool_rate = 1.0;
    c.permission_rate = if permission { 1.0 } else { 0.0 };
    ModelAgent::recover(c, 0, 1, &[])
}

#[test]
fn approved_permission_runs_the_tool_once() {
    let mut a = tool_agent(true);
    let sid = new_session(&mut a, 1);
    let out = prompt(&mut a, 1, 2, &sid, json!("k"));
    let ask = sends(&out)
        .into_iter()
        .find(|v| v["method"] == "session/request_permission")
        .unwrap();
    assert!(effects(&out, "tool-effect").is_empty());
    let mut more = vec![];
    let answer = rpc::ok(
        &ask["id"],
        json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
    );
    a.handle(AgentInput::Frame(1, answer.clone()), &mut more);
    assert_eq!(effects(&more, "tool-effect").len(), 1);
    // A second answer to the same request is ignored.
    let mut dup = vec![];
    a.handle(AgentInput::Frame(1, answer), &mut dup);
    assert!(effects(&dup, "tool-effect").is_empty());
}

#[test]
fn cancel_while_asking_withdraws_the_permission_request_and_runs_no_tool() {
    let mut a = tool_agent(true);
    let sid = new_session(&mut a, 1);
    let out = prompt(&mut a, 1, 2, &sid, json!("k"));
    let ask = sends(&out)
        .into_iter()
        .find(|v| v["method"] == "session/request_permission")
        .unwrap();
    let c = notify(&mut a, 1, "session/cancel", json!({"sessionId": sid}));
    assert!(sends(&c)
        .iter()
        .any(|v| v["method"] == "$/cancel_request" && v["params"]["requestId"] == ask["id"]));
    let mut late = vec![];
    a.handle(
        AgentInput::Frame(
            1,
            rpc::ok(
                &ask["id"],
                json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
            ),
        ),
        &mut late,
    );
    assert!(
        effects(&late, "tool-effect").is_empty(),
        "a late approval after cancel runs nothing"
    );
}

#[test]
fn a_connection_that_ends_is_never_approval() {
    let mut a = tool_agent(true);
    let sid = new_session(&mut a, 1);
    prompt(&mut a, 1, 2, &sid, json!("k"));
    let mut out = vec![];
    a.handle(AgentInput::Disconnected(1), &mut out);
    assert!(effects(&out, "tool-effect").is_empty());
    assert_eq!(effects(&out, "permission")[0]["approved"], false);
}

// ---- designs ----------------------------------------------------------------------------------

#[test]
fn stored_design_recovers_sessions_and_keys_from_its_records() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let mut recs = vec![json!({"t": "session", "id": sid})];
    let out = prompt(&mut a, 1, 2, &sid, json!("k"));
    recs.extend(records(&out));
    let mid = response(&out, 2)["result"]["messageId"].clone();
    let mut b = ModelAgent::recover(cfg(Design::Stored, None), 1, 1, &recs);
    connect(&mut b, 5);
    call(
        &mut b,
        5,
        1,
        "session/resume",
        json!({"sessionId": sid, "cwd": "/w"}),
    );
    let again = prompt(&mut b, 5, 2, &sid, json!("k"));
    assert!(effects(&again, "insert").is_empty());
    assert_eq!(response(&again, 2)["result"]["messageId"], mid);
}

#[test]
fn in_memory_design_loses_everything_on_restart() {
    let mut a = agent(Design::InMemory);
    let sid = new_session(&mut a, 1);
    let out = prompt(&mut a, 1, 2, &sid, json!("k"));
    assert!(records(&out).is_empty(), "nothing on disk");
    let mut b = ModelAgent::recover(
        cfg(Design::InMemory, None),
        1,
        1,
        &[json!({"t": "session", "id": sid})],
    );
    connect(&mut b, 5);
    let r = response(
        &call(
            &mut b,
            5,
            1,
            "session/resume",
            json!({"sessionId": sid, "cwd": "/w"}),
        ),
        1,
    );
    assert_eq!(code_of(&r), code::RESOURCE_NOT_FOUND);
    assert_eq!(b.retention(), Retention::Process);
}

fn adapter_restart(mutant: Option<AgentMutant>) -> (Value, Vec<Action>, Vec<Action>) {
    let mut a = agent(Design::Adapter);
    let sid = new_session(&mut a, 1);
    let out = prompt(&mut a, 1, 2, &sid, json!("k"));
    let mid = response(&out, 2)["result"]["messageId"].clone();
    assert_eq!(mid, derive_id(&sid, "k").as_str());
    let rec = records(&out);
    assert!(
        rec.iter().all(|r| r.get("key").is_none()),
        "the runtime never stores keys"
    );
    let mut recs = vec![json!({"t": "session", "id": sid})];
    recs.extend(rec);
    let mut b = ModelAgent::recover(cfg(Design::Adapter, mutant), 1, 1, &recs);
    connect(&mut b, 5);
    call(
        &mut b,
        5,
        1,
        "session/resume",
        json!({"sessionId": sid, "cwd": "/w"}),
    );
    let first = prompt(&mut b, 5, 2, &sid, json!("k"));
    let during = prompt(&mut b, 5, 3, &sid, json!("k"));
    let fill = fire_timers(&mut b, &first);
    (mid, [first, during].concat(), fill)
}

#[test]
fn adapter_fills_its_id_set_from_history_once_after_restart() {
    let (mid, before, fill) = adapter_restart(None);
    assert!(
        effects(&before, "insert").is_empty(),
        "prompts wait for the fill"
    );
    assert_eq!(effects(&fill, "history-read").len(), 1);
    assert!(effects(&fill, "insert").is_empty());
    assert_eq!(response(&fill, 2)["result"]["messageId"], mid);
    assert_eq!(
        response(&fill, 3)["result"]["messageId"],
        mid,
        "a retry that arrived during the fill"
    );
}

#[test]
fn adapter_without_history_fill_inserts_a_retry_again() {
    let (_, before, _) = adapter_restart(Some(AgentMutant::AdapterNoHistoryFill));
    assert_eq!(effects(&before, "insert").len(), 1);
}

#[test]
fn adapter_runtime_syncs_at_turn_end() {
    let mut a = agent(Design::Adapter);
    let sid = new_session(&mut a, 1);
    let out = prompt(&mut a, 1, 2, &sid, json!("k"));
    assert!(out
        .iter()
        .any(|x| matches!(x, Action::Persist { sync: false, .. })));
    assert!(effects(&out, "durable").is_empty());
    let end = fire_timers(&mut a, &out);
    assert!(end
        .iter()
        .any(|x| matches!(x, Action::Persist { sync: true, .. })));
    assert_eq!(effects(&end, "durable").len(), 1);
}

#[test]
fn a_held_prompt_whose_connection_ended_asks_on_a_live_one_or_runs_no_tool() {
    let mut a = tool_agent(true);
    let sid = new_session(&mut a, 1);
    let first = prompt(&mut a, 1, 2, &sid, json!("a"));
    let ask = sends(&first)
        .into_iter()
        .find(|v| v["method"] == "session/request_permission")
        .unwrap();
    a.handle(
        AgentInput::Frame(
            1,
            rpc::ok(
                &ask["id"],
                json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
            ),
        ),
        &mut vec![],
    );
    prompt(&mut a, 1, 3, &sid, json!("b"));
    // The prompt's connection ends; its retry waits on conn 2 (A7).
    a.handle(AgentInput::Disconnected(1), &mut vec![]);
    connect(&mut a, 2);
    call(
        &mut a,
        2,
        1,
        "session/resume",
        json!({"sessionId": sid, "cwd": "/w"}),
    );
    prompt(&mut a, 2, 2, &sid, json!("b"));
    let mut out = vec![];
    for t in 0..8 {
        a.handle(AgentInput::Timer(t), &mut out);
    }
    assert!(
        effects(&out, "tool-effect").is_empty(),
        "no tool without an answer"
    );
    let asked: Vec<_> = out
        .iter()
        .filter_map(|x| match x {
            Action::Send { conn, line } if line.contains("session/request_permission") => {
                Some(*conn)
            }
            _ => None,
        })
        .collect();
    assert_eq!(asked, vec![2], "asks on the live connection");
}

#[test]
fn o2_cancel_cancels_held_work_whose_connection_already_ended() {
    let mut c = cfg(Design::Stored, None);
    c.o2 = WorkOnDisconnect::Cancel;
    let mut a = ModelAgent::recover(c, 0, 1, &[]);
    let sid = new_session(&mut a, 1);
    let first = prompt(&mut a, 1, 2, &sid, json!("a"));
    prompt(&mut a, 1, 3, &sid, json!("b"));
    let mut out = vec![];
    a.handle(AgentInput::Disconnected(1), &mut out);
    out.extend(fire_timers(&mut a, &first));
    let ends: Vec<_> = effects(&out, "turn-end")
        .iter()
        .map(|v| v["stopReason"].clone())
        .collect();
    assert!(ends.iter().all(|r| r == "cancelled"), "{ends:?}");
    assert!(a.is_idle());
}

// ---- cluster nodes over one store (A13, A2) ------------------------------------------------

mod cluster {
    use super::*;
    use crate::cluster::ClusterStore;

    fn node(name: &str, mutant: Option<AgentMutant>) -> ModelAgent {
        ModelAgent::recover(cfg(Design::Cluster, mutant), 0, 1, &[]).node(name)
    }

    /// Run a node's actions against the store: appends apply at once; a store op's reply goes
    /// back to the node (or is lost while `lose` > 0). Returns the other actions.
    fn run(
        n: &mut ModelAgent,
        st: &mut ClusterStore,
        mut out: Vec<Action>,
        lose: &mut u32,
    ) -> Vec<Action> {
        let mut done = vec![];
        while !out.is_empty() {
            match out.remove(0) {
                Action::Persist { record, .. } => {
                    st.handle(&json!({"op": "append", "record": record}));
                }
                Action::Store { req, op } => {
                    let applied = st.handle(&op);
                    let reply = if *lose > 0 {
                        *lose -= 1;
                        None
                    } else {
                        Some(applied.reply)
                    };
                    let mut more = vec![];
                    n.handle(AgentInput::StoreReply { req, reply }, &mut more);
                    more.append(&mut out);
                    out = more;
                }
                other => done.push(other),
            }
        }
        done
    }

    /// Connect `conn` as part of logical connection `logical`.
    fn attach(n: &mut ModelAgent, conn: ConnId, logical: &str) {
        connect(n, conn);
        n.handle(AgentInput::Logical(conn, logical.into()), &mut vec![]);
    }

    fn ask(
        n: &mut ModelAgent,
        st: &mut ClusterStore,
        conn: ConnId,
        id: u64,
        method: &str,
        params: Value,
        lose: &mut u32,
    ) -> Vec<Action> {
        let mut out = vec![];
        n.handle(
            AgentInput::StoreSnapshot(st.handle(&json!({"op": "load"})).reply),
            &mut out,
        );
        n.handle(
            AgentInput::Frame(conn, rpc::request(id, method, params)),
            &mut out,
        );
        run(n, st, out, lose)
    }

    fn messages(st: &mut ClusterStore, sid: &str) -> usize {
        st.handle(&json!({"op": "load"})).reply["sessions"][sid]["messages"]
            .as_array()
            .map_or(0, Vec::len)
    }

    fn setup(mutant: Option<AgentMutant>) -> (ModelAgent, ModelAgent, ClusterStore, String) {
        let (mut a, b, mut st) = (
            node("n1", mutant),
            node("n2", mutant),
            ClusterStore::default(),
        );
        attach(&mut a, 1, "L");
        let out = ask(
            &mut a,
            &mut st,
            1,
            1,
            "session/new",
            json!({"cwd": "/w"}),
            &mut 0,
        );
        let sid = response(&out, 1)["result"]["sessionId"]
            .as_str()
            .unwrap()
            .to_string();
        (a, b, st, sid)
    }

    #[test]
    fn a_retry_on_another_node_gets_the_original_message_id_from_the_store() {
        let (mut a, mut b, mut st, sid) = setup(None);
        let out = ask(
            &mut a,
            &mut st,
            1,
            2,
            "session/prompt",
            prompt_params(&sid, "hi", json!("k")),
            &mut 0,
        );
        let mid = response(&out, 2)["result"]["messageId"].clone();
        assert!(mid.is_string(), "{out:?}");
        assert!(
            effects(&out, "insert").is_empty(),
            "the store reports insertions, not the node"
        );
        // Node 2, same logical connection: the session is active there without a resume (X2).
        attach(&mut b, 7, "L");
        let out = ask(
            &mut b,
            &mut st,
            7,
            3,
            "session/prompt",
            prompt_params(&sid, "hi", json!("k")),
            &mut 0,
        );
        assert_eq!(response(&out, 3)["result"]["messageId"], mid, "{out:?}");
        assert_eq!(effects(&out, "dedup-hit").len(), 1);
        assert_eq!(messages(&mut st, &sid), 1);
        // Another logical connection has not activated it: -32002.
        attach(&mut b, 8, "M");
        let out = ask(
            &mut b,
            &mut st,
            8,
            4,
            "session/prompt",
            prompt_params(&sid, "hi", json!("k2")),
            &mut 0,
        );
        assert_eq!(code_of(&response(&out, 4)), code::RESOURCE_NOT_FOUND);
    }

    #[test]
    fn node_local_keys_mutant_inserts_again_on_another_node() {
        let (mut a, mut b, mut st, sid) = setup(Some(AgentMutant::ClusterNodeLocalKeys));
        ask(
            &mut a,
            &mut st,
            1,
            2,
            "session/prompt",
            prompt_params(&sid, "hi", json!("k")),
            &mut 0,
        );
        attach(&mut b, 7, "L");
        let out = ask(
            &mut b,
            &mut st,
            7,
            3,
            "session/prompt",
            prompt_params(&sid, "hi", json!("k")),
            &mut 0,
        );
        assert!(response(&out, 3)["result"]["messageId"].is_string());
        assert_eq!(messages(&mut st, &sid), 2, "the mutant's second insertion");
    }

    #[test]
    fn a_store_write_whose_answer_was_lost_is_sent_again_never_answered_with_an_error() {
        let (mut a, _, mut st, sid) = setup(None);
        // The store applies the insert; its reply is lost once.
        let out = ask(
            &mut a,
            &mut st,
            1,
            2,
            "session/prompt",
            prompt_params(&sid, "hi", json!("k")),
            &mut 1,
        );
        assert_eq!(effects(&out, "store-retry").len(), 1);
        let r = response(&out, 2);
        assert!(r["result"]["messageId"].is_string(), "A2: {r}");
        assert_eq!(
            messages(&mut st, &sid),
            1,
            "the second send found its own insertion"
        );
        assert_eq!(effects(&out, "visible").len(), 1);
    }

    #[test]
    fn error_on_store_timeout_mutant_answers_an_error_for_an_inserted_prompt() {
        let (mut a, _, mut st, sid) = setup(Some(AgentMutant::ClusterErrorOnStoreTimeout));
        let out = ask(
            &mut a,
            &mut st,
            1,
            2,
            "session/prompt",
            prompt_params(&sid, "hi", json!("k")),
            &mut 1,
        );
        assert_eq!(code_of(&response(&out, 2)), code::INTERNAL_ERROR);
        assert_eq!(
            messages(&mut st, &sid),
            1,
            "inserted although answered with an error"
        );
    }

    /// Two nodes handle attempts of one key at once: both read "absent", both write.
    fn race(mutant: Option<AgentMutant>) -> (usize, Value, Value) {
        let (mut a, mut b, mut st, sid) = setup(mutant);
        attach(&mut b, 7, "L");
        let view = st.handle(&json!({"op": "load"})).reply;
        let mut outs = vec![];
        for (n, conn, id) in [(&mut a, 1, 2), (&mut b, 7, 3)] {
            let mut out = vec![];
            n.handle(AgentInput::StoreSnapshot(view.clone()), &mut out);
            n.handle(
                AgentInput::Frame(
                    conn,
                    rpc::request(id, "session/prompt", prompt_params(&sid, "hi", json!("k"))),
                ),
                &mut out,
            );
            outs.push(out);
        }
        let ra = run(&mut a, &mut st, outs.remove(0), &mut 0);
        let rb = run(&mut b, &mut st, outs.remove(0), &mut 0);
        (
            messages(&mut st, &sid),
            response(&ra, 2)["result"]["messageId"].clone(),
            response(&rb, 3)["result"]["messageId"].clone(),
        )
    }

    #[test]
    fn insert_if_absent_lets_only_one_of_two_racing_nodes_insert() {
        let (n, ma, mb) = race(None);
        assert_eq!(n, 1);
        assert_eq!(ma, mb, "A1: the loser answers with the winner's messageId");
    }

    #[test]
    fn check_then_insert_mutant_inserts_twice_when_two_nodes_race() {
        let (n, ma, mb) = race(Some(AgentMutant::ClusterCheckThenInsert));
        assert_eq!(n, 2);
        assert_ne!(ma, mb);
    }
}

/// Bad input: arbitrary frames to every Agent design never panic and always get a well-formed
/// JSON-RPC answer (an error where the input is invalid), or nothing for a notification.
mod bad_input {
    use super::*;
    use proptest::prelude::*;

    /// Feed one line to a fresh Agent of `design` (a cluster node on a logical connection) and
    /// check every line it writes.
    fn answers(design: Design, line: &str) -> Result<(), TestCaseError> {
        let mut a = ModelAgent::recover(cfg(design, None), 0, 1, &[]);
        if design == Design::Cluster {
            a = a.node("node1");
        }
        let mut out = vec![];
        a.handle(AgentInput::Connected(1), &mut out);
        if design == Design::Cluster {
            a.handle(AgentInput::Logical(1, "client-0".into()), &mut out);
        }
        out.clear();
        a.handle(AgentInput::Frame(1, line.to_string()), &mut out);
        let parsed: Option<Value> = serde_json::from_str(line).ok();
        let is_notification = parsed.as_ref().is_some_and(|v| {
            v.get("method").is_some_and(Value::is_string) && v.get("id").is_none()
        });
        let mut answered = 0;
        for a in &out {
            let Action::Send { line: sent, .. } = a else {
                continue;
            };
            let v: Value = serde_json::from_str(sent)
                .map_err(|e| TestCaseError::fail(format!("not JSON: {sent}: {e}")))?;
            prop_assert_eq!(&v["jsonrpc"], "2.0", "{}", sent);
            if v.get("method").is_some() {
                continue; // an update or an Agent request
            }
            answered += 1;
            prop_assert!(v.get("id").is_some(), "no id: {}", sent);
            let ok = v.get("result").is_some();
            let err = v["error"]["code"].is_i64() && v["error"]["message"].is_string();
            prop_assert!(ok != err, "neither result nor error (or both): {}", sent);
        }
        if line.trim().is_empty() {
            // An empty line is the frame layer's heartbeat: nothing to answer.
            prop_assert_eq!(answered, 0, "a heartbeat was answered");
        } else if parsed.is_none() {
            // Not JSON: exactly one -32700 with id null.
            prop_assert_eq!(answered, 1, "no answer to garbage {:?}", line);
        } else if is_notification {
            prop_assert_eq!(answered, 0, "a notification was answered: {:?}", line);
        }
        Ok(())
    }

    fn request_like() -> impl Strategy<Value = String> {
        let method = prop_oneof![
            Just("session/prompt".to_string()),
            Just("session/new".to_string()),
            Just("session/resume".to_string()),
            Just("initialize".to_string()),
            Just("session/cancel".to_string()),
            Just("$/cancel_request".to_string()),
            "[a-z/_$]{0,20}",
        ];
        let id = prop_oneof![
            Just("1".to_string()),
            Just("null".to_string()),
            Just("\"x\"".to_string()),
            Just("{}".to_string()),
            Just("1.5".to_string()),
            Just(String::new()),
        ];
        let params = prop_oneof![
            Just("{}".to_string()),
            Just("[]".to_string()),
            Just("null".to_string()),
            Just("{\"sessionId\":\"s0.0\",\"prompt\":[]}".to_string()),
            Just("{\"sessionId\":1,\"prompt\":\"x\",\"idempotencyKey\":[]}".to_string()),
            "\\PC{0,40}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        ];
        (method, id, params).prop_map(|(m, id, p)| {
            let id = if id.is_empty() {
                String::new()
            } else {
                format!(",\"id\":{id}")
            };
            format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":{}{id},\"params\":{p}}}",
                serde_json::to_string(&m).unwrap()
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 1000,
            // Seeded like everything else here, and nothing written to the tree.
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x5EED),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn arbitrary_bytes_get_a_well_formed_answer(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let line = String::from_utf8_lossy(&bytes).replace('\n', " ");
            for d in Design::ALL {
                answers(d, &line)?;
            }
        }

        #[test]
        fn arbitrary_json_rpc_messages_get_a_well_formed_answer(line in request_like()) {
            for d in Design::ALL {
                answers(d, &line)?;
            }
        }
    }
}

// ---- session/set_title, session/archive, session/unarchive, session/options ----------------

#[test]
fn set_title_stores_it_once_and_survives_a_restart() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let p = json!({"sessionId": sid, "title": "  Plan  "});
    let first = call(&mut a, 1, 2, "session/set_title", p.clone());
    assert_eq!(response(&first, 2)["result"]["title"], "Plan");
    assert_eq!(records(&first).len(), 1);
    // A repeat answers the same and records nothing (idempotent).
    let again = call(&mut a, 1, 3, "session/set_title", p);
    assert_eq!(response(&again, 3)["result"], response(&first, 2)["result"]);
    assert!(records(&again).is_empty());
    let missing = call(
        &mut a,
        1,
        4,
        "session/set_title",
        json!({"sessionId": "nope", "title": "x"}),
    );
    assert_eq!(code_of(&response(&missing, 4)), code::RESOURCE_NOT_FOUND);
    let empty = call(
        &mut a,
        1,
        5,
        "session/set_title",
        json!({"sessionId": sid, "title": "  "}),
    );
    assert_eq!(code_of(&response(&empty, 5)), code::INVALID_PARAMS);
    let disk = vec![
        json!({"t": "session", "id": sid}),
        records(&first)[0].clone(),
    ];
    let b = ModelAgent::recover(cfg(Design::Stored, None), 1, 1, &disk);
    assert_eq!(b.session_meta(&sid), Some((Some("Plan".into()), false)));
}

#[test]
fn archive_closes_hides_and_unarchive_shows_again() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let p = json!({"sessionId": sid});
    let out = call(&mut a, 1, 2, "session/archive", p.clone());
    assert!(response(&out, 2)["result"].is_object());
    assert_eq!(effects(&out, op::DEACTIVATE).len(), 1);
    let again = call(&mut a, 1, 3, "session/archive", p.clone());
    assert!(response(&again, 3)["result"].is_object());
    assert!(records(&again).is_empty() && effects(&again, op::DEACTIVATE).is_empty());
    let list = |a: &mut ModelAgent, id, params| {
        response(&call(a, 1, id, "session/list", params), id)["result"]["sessions"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(list(&mut a, 4, json!({})), 0);
    assert_eq!(list(&mut a, 5, json!({"archived": "only"})), 1);
    let out = call(&mut a, 1, 6, "session/unarchive", p);
    assert!(response(&out, 6)["result"].is_object());
    assert_eq!(list(&mut a, 7, json!({})), 1);
    let missing = call(
        &mut a,
        1,
        8,
        "session/archive",
        json!({"sessionId": "nope"}),
    );
    assert_eq!(code_of(&response(&missing, 8)), code::RESOURCE_NOT_FOUND);
}

#[test]
fn session_options_reads_and_changes_nothing() {
    let mut a = agent(Design::Stored);
    let sid = new_session(&mut a, 1);
    let out = call(&mut a, 1, 2, "session/options", json!({"cwd": "/w"}));
    assert_eq!(
        response(&out, 2)["result"]["configOptions"][0]["configId"],
        "autosave"
    );
    assert!(records(&out).is_empty());
    let out = call(
        &mut a,
        1,
        3,
        "session/options",
        json!({"cwd": "/w", "sessionId": "nope"}),
    );
    assert_eq!(code_of(&response(&out, 3)), code::RESOURCE_NOT_FOUND);
    let out = call(
        &mut a,
        1,
        4,
        "session/options",
        json!({"cwd": "/w", "sessionId": sid}),
    );
    assert!(response(&out, 4)["result"]["configOptions"].is_array());
}

// ---- retention window -----------------------------------------------------------------------

fn windowed(design: Design, retention_ms: u64, records: &[Value]) -> ModelAgent {
    let mut c = cfg(design, None);
    c.retention_ms = retention_ms;
    ModelAgent::recover(c, 0, 1, records)
}

/// The ids of the timers in `out` set for `after_ms`.
fn timers_of(out: &[Action], after: u64) -> Vec<u64> {
    out.iter()
        .filter_map(|a| match a {
            Action::Timer { id, after_ms } if *after_ms == after => Some(*id),
            _ => None,
        })
        .collect()
}

fn fire(a: &mut ModelAgent, timers: &[u64]) -> Vec<Action> {
    let mut out = vec![];
    for t in timers {
        a.handle(AgentInput::Timer(*t), &mut out);
    }
    out
}

#[test]
fn a_retention_window_discards_the_message_with_its_key_and_a_retry_inserts_again() {
    for design in [Design::InMemory, Design::Stored, Design::Adapter] {
        let mut a = windowed(design, 400, &[]);
        let sid = new_session(&mut a, 1);
        let out = prompt(&mut a, 1, 2, &sid, json!("k"));
        let mid = response(&out, 2)["result"]["messageId"].clone();
        let discard = timers_of(&out, 400);
        assert_eq!(
            discard.len(),
            1,
            "{design:?}: one discard timer per insertion"
        );
        // The turn ends (10 ms); within the window a retry is answered from the key's record.
        fire(&mut a, &timers_of(&out, 10));
        let r = prompt(&mut a, 1, 3, &sid, json!("k"));
        assert_eq!(response(&r, 3)["result"]["messageId"], mid, "{design:?}");
        assert!(effects(&r, op::INSERT).is_empty());
        // The window ends: the message leaves what the Agent retains, key and all.
        let d = fire(&mut a, &discard);
        assert_eq!(
            effects(&d, op::DISCARD),
            vec![&json!({"session": sid, "messageId": mid})],
            "{design:?}"
        );
        assert_eq!(
            records(&d).is_empty(),
            design == Design::InMemory,
            "{design:?}: a design that persists writes the discard"
        );
        assert_eq!(a.retained()[&sid], json!([]), "{design:?}");
        // A16: a retry of the key is now a new submission.
        let r = prompt(&mut a, 1, 4, &sid, json!("k"));
        assert_eq!(effects(&r, op::INSERT).len(), 1, "{design:?}");
    }
}

#[test]
fn without_a_window_nothing_is_discarded() {
    for design in [Design::InMemory, Design::Stored, Design::Adapter] {
        let mut a = windowed(design, 0, &[]);
        let sid = new_session(&mut a, 1);
        let out = prompt(&mut a, 1, 2, &sid, json!("k"));
        let mid = response(&out, 2)["result"]["messageId"].clone();
        let more = fire_timers(&mut a, &out);
        assert!(effects(&more, op::DISCARD).is_empty());
        assert!(out.iter().chain(&more).all(
            |x| !matches!(x, Action::Timer { after_ms, .. } if *after_ms != 10 && *after_ms != 5)
        ));
        let r = prompt(&mut a, 1, 3, &sid, json!("k"));
        assert_eq!(response(&r, 3)["result"]["messageId"], mid);
    }
}

#[test]
fn a_stored_discard_survives_a_restart_and_a_restart_starts_the_window_again() {
    let mut a = windowed(Design::Stored, 400, &[]);
    let sid = new_session(&mut a, 1);
    // Two messages: the first is discarded before the restart, the second is not.
    let o1 = prompt(&mut a, 1, 2, &sid, json!("k1"));
    fire(&mut a, &timers_of(&o1, 10));
    let o2 = prompt(&mut a, 1, 3, &sid, json!("k2"));
    let m2 = response(&o2, 3)["result"]["messageId"].clone();
    let d = fire(&mut a, &timers_of(&o1, 400));
    let mut recs = vec![json!({"t": "session", "id": sid})];
    recs.extend(records(&o1));
    recs.extend(records(&o2));
    recs.extend(records(&d));
    let mut b = windowed(Design::Stored, 400, &recs);
    assert_eq!(b.retained()[&sid], json!([m2]));
    // The first input after the restart sets the recovered message's window again.
    let mut out = vec![];
    b.handle(AgentInput::Connected(2), &mut out);
    let t = timers_of(&out, 400);
    assert_eq!(t.len(), 1);
    let d = fire(&mut b, &t);
    assert_eq!(
        effects(&d, op::DISCARD),
        vec![&json!({"session": sid, "messageId": m2})]
    );
}

#[test]
fn a_forks_copies_are_kept_the_window_from_the_fork() {
    let mut a = windowed(Design::Stored, 400, &[]);
    let sid = new_session(&mut a, 1);
    let out = prompt(&mut a, 1, 2, &sid, json!("k"));
    let mid = response(&out, 2)["result"]["messageId"].clone();
    fire(&mut a, &timers_of(&out, 10));
    let f = call(
        &mut a,
        1,
        3,
        "session/fork",
        json!({"sessionId": sid, "cwd": "/w"}),
    );
    let fork = response(&f, 3)["result"]["sessionId"].clone();
    let d = fire(&mut a, &timers_of(&f, 400));
    assert_eq!(
        effects(&d, op::DISCARD),
        vec![&json!({"session": fork, "messageId": mid})]
    );
    assert_eq!(a.retained()[fork.as_str().unwrap()], json!([]));
    assert_eq!(
        a.retained()[&sid],
        json!([mid]),
        "the original keeps its own window"
    );
}

// ---- a frame the driver already decoded ---------------------------------------------------

/// `handle_decoded` with the line's own JSON does what `handle(Frame)` does with the line, for
/// requests, notifications, answers and every kind of bad envelope (the driver hands over a
/// value only for a line that decoded to an object).
#[test]
fn a_decoded_frame_is_handled_as_its_line() {
    let lines = [
        rpc::request(
            1,
            "initialize",
            json!({"protocolVersion": 2, "info": {"name": "c", "version": "1"}}),
        ),
        rpc::request(2, "session/new", json!({"cwd": "/w"})),
        r#"{"jsonrpc":"1.0","id":3,"method":"session/new","params":{"cwd":"/w"}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":1.5,"method":"session/new","params":{"cwd":"/w"}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":{"a":1},"method":"session/list"}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"session/list"}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":4}"#.to_string(),
        r#"{"nothing":"here"}"#.to_string(),
        rpc::ok(&json!(77), json!({"outcome": {"outcome": "cancelled"}})),
        rpc::request(5, "no/such_method", json!({})),
    ];
    for mutant in [None, Some(AgentMutant::LenientJson)] {
        let (mut by_line, mut by_value) = (
            ModelAgent::recover(cfg(Design::Stored, mutant), 0, 1, &[]),
            ModelAgent::recover(cfg(Design::Stored, mutant), 0, 1, &[]),
        );
        connect(&mut by_line, 1);
        connect(&mut by_value, 1);
        let mut answered = 0;
        for line in &lines {
            let (mut a, mut b) = (vec![], vec![]);
            by_line.handle(AgentInput::Frame(1, line.clone()), &mut a);
            let decoded: Value = serde_json::from_str(line).unwrap();
            by_value.handle_decoded(1, line.clone(), decoded, &mut b);
            answered += usize::from(!sends(&a).is_empty());
            assert_eq!(a, b, "{line} ({mutant:?})");
        }
        // Every line but the notification and the Client's answer gets an answer (an error for
        // each bad envelope).
        assert_eq!(answered, lines.len() - 2, "{mutant:?}");
    }
}
