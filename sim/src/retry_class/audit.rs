//! `acp-chaos audit`: every method's retry class (RULES.md "Retry classes"; inferred ones
//! marked) next to what sending it twice does to the correct `stored` Agent, measured on the
//! sans-IO model (no simulator, no faults): the class table and the models kept in step.
//!
//! One row per method of [`crate::models::methods`], both directions. The Client→Agent methods
//! the models speak are measured; the others (not spoken by the models, or sent by the Agent to
//! the Client) are listed with their class and why they are not measured.

use serde::Serialize;
use serde_json::{json, Value};

use crate::history::op;
use crate::models::methods::{self, Direction, RetryClass};
use crate::models::{
    rpc, Action, AgentConfig, AgentInput, AgentModel, Design, DuringTurn, HeldOnDisconnect,
    ModelAgent,
};

/// One row of the audit.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRow {
    /// Method name.
    pub method: &'static str,
    /// Which way it goes.
    pub direction: Direction,
    /// Its class.
    pub class: RetryClass,
    /// True when RULES.md infers the class (the proposal's table was lost); false when the
    /// proposal states it.
    pub inferred: bool,
    /// What the second send changed on the correct stored Agent.
    pub repeat: String,
    /// Whether the observed repeat behaviour fits the class (true when not measured: nothing
    /// observed contradicts it).
    pub consistent: bool,
    /// Why the row is not measured (`None`: measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_measured: Option<String>,
}

impl AuditRow {
    fn measured(m: &methods::MethodInfo, repeat: String, consistent: bool) -> AuditRow {
        AuditRow {
            method: m.name,
            direction: Direction::ClientToAgent,
            class: m.class,
            inferred: m.inferred,
            repeat,
            consistent,
            not_measured: None,
        }
    }
}

/// What one send did.
struct Sent {
    answer: Value,
    state_changes: Vec<String>,
}

fn agent() -> (ModelAgent, String) {
    let cfg = AgentConfig::simple(
        Design::Stored,
        HeldOnDisconnect::Keep,
        DuringTurn::Hold,
        None,
    );
    let mut a = ModelAgent::recover(cfg, 0, 7, &[]);
    let mut out = Vec::new();
    a.handle(AgentInput::Connected(1), &mut out);
    a.handle(
        AgentInput::Frame(1, rpc::request(1, "session/new", json!({"cwd": "/w"}))),
        &mut out,
    );
    let sid = out
        .iter()
        .find_map(|x| match x {
            Action::Send { line, .. } => serde_json::from_str::<Value>(line).ok(),
            _ => None,
        })
        .and_then(|v| v["result"]["sessionId"].as_str().map(String::from))
        .unwrap_or_default();
    (a, sid)
}

fn send(a: &mut ModelAgent, id: u64, method: &str, params: &Value, notification: bool) -> Sent {
    let line = if notification {
        rpc::notification(method, params.clone())
    } else {
        rpc::request(id, method, params.clone())
    };
    let mut out = Vec::new();
    a.handle(AgentInput::Frame(1, line), &mut out);
    let mut answer = Value::Null;
    let mut state_changes = Vec::new();
    for x in &out {
        match x {
            Action::Send { line, .. } => {
                let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                if v["id"] == id && v.get("method").is_none() {
                    answer = v
                        .get("result")
                        .or(v.get("error"))
                        .cloned()
                        .unwrap_or(Value::Null);
                }
            }
            Action::Persist { record, .. } => {
                state_changes.push(format!("stored {}", record["t"].as_str().unwrap_or("?")))
            }
            Action::Effect(e)
                if matches!(
                    e.f,
                    "insert"
                        | "turn-start"
                        | "turn-end"
                        | "withdraw"
                        | "session-delete"
                        | "session-meta"
                        | "deactivate"
                ) =>
            {
                state_changes.push(e.f.to_string())
            }
            _ => {}
        }
    }
    Sent {
        answer,
        state_changes,
    }
}

/// Build the audit table: the methods measured by a repeat, then `initialize`, the two
/// cancels and `session/prompt`, each measured its own way, then every other method of the
/// table (both directions), unmeasured, with the reason.
pub fn audit() -> Vec<AuditRow> {
    let mut rows = repeat_rows();
    rows.push(initialize_row());
    rows.push(cancel_row());
    rows.push(cancel_request_row());
    rows.extend(prompt_rows());
    for (direction, m) in methods::all() {
        let done = rows
            .iter()
            .any(|r| r.method == m.name && r.direction == direction);
        if done {
            continue;
        }
        let why = match (m.not_spoken, direction) {
            (Some(why), _) => format!("not spoken by the models: {why}"),
            (None, Direction::AgentToClient) => {
                "not measured: sent by the Agent to the Client; the audit sends to the Agent".into()
            }
            (None, Direction::ClientToAgent) => "not measured".into(),
            (None, Direction::ConductorProxy) => {
                "not measured: between a conductor and its proxies".into()
            }
        };
        rows.push(AuditRow {
            method: m.name,
            direction,
            class: m.class,
            inferred: m.inferred,
            repeat: why.clone(),
            consistent: true,
            not_measured: Some(why),
        });
    }
    rows
}

/// The methods whose repeat is measured the same way: send it twice, compare the answers and
/// what changed.
fn repeat_rows() -> Vec<AuditRow> {
    type Params = fn(&str) -> Value;
    let methods: Vec<(&'static str, Params)> = vec![
        ("session/new", |_| json!({"cwd": "/w"})),
        ("session/fork", |s| json!({"sessionId": s, "cwd": "/w"})),
        ("session/list", |_| json!({})),
        ("session/resume", |s| json!({"sessionId": s, "cwd": "/w"})),
        ("session/status", |s| json!({"sessionId": s})),
        (
            "session/set_config_option",
            |s| json!({"sessionId": s, "configId": "autosave", "type": "boolean", "value": true}),
        ),
        ("session/close", |s| json!({"sessionId": s})),
        ("session/delete", |s| json!({"sessionId": s})),
        ("session/options", |s| json!({"sessionId": s, "cwd": "/w"})),
        (
            "session/set_title",
            |s| json!({"sessionId": s, "title": "t"}),
        ),
        ("session/archive", |s| json!({"sessionId": s})),
        // Of an archived session (archived below, before the two sends).
        ("session/unarchive", |s| json!({"sessionId": s})),
    ];
    let mut rows = Vec::new();
    for (method, params) in methods {
        let m = methods::info(method);
        let class = m.class;
        let (mut a, sid) = agent();
        let p = params(&sid);
        if method == "session/unarchive" {
            send(&mut a, 9, "session/archive", &p, false);
        }
        let first = send(&mut a, 10, method, &p, m.notification);
        let second = send(&mut a, 11, method, &p, m.notification);
        let same = first.answer == second.answer;
        let (repeat, consistent) = match class {
            RetryClass::Idempotent => {
                let changed = !second.state_changes.is_empty();
                let text = match (same, changed) {
                    (true, false) => "same answer, nothing changed".to_string(),
                    (true, true) => {
                        format!("same answer; changed: {}", second.state_changes.join(", "))
                    }
                    (false, _) => {
                        format!("another answer: {} then {}", first.answer, second.answer)
                    }
                };
                (text, same && !changed)
            }
            RetryClass::Duplicating => {
                let new = !same && second.state_changes.iter().any(|c| c.starts_with("stored"));
                (
                    format!(
                        "created another resource: {} then {}",
                        first.answer, second.answer
                    ),
                    new,
                )
            }
            RetryClass::NotResent | RetryClass::Keyed => unreachable!("those rows are built below"),
        };
        rows.push(AuditRow::measured(m, repeat, consistent));
    }
    rows
}

/// initialize: on a new connection, repeated before any other request.
fn initialize_row() -> AuditRow {
    let cfg = AgentConfig::simple(
        Design::Stored,
        HeldOnDisconnect::Keep,
        DuringTurn::Hold,
        None,
    );
    let mut a = ModelAgent::recover(cfg, 0, 7, &[]);
    a.handle(AgentInput::Connected(1), &mut Vec::new());
    let p = rpc::initialize_params("c", "1");
    let first = send(&mut a, 10, "initialize", &p, false);
    let second = send(&mut a, 11, "initialize", &p, false);
    let ok = first.answer == second.answer && second.state_changes.is_empty();
    let m = methods::info("initialize");
    AuditRow::measured(
        m,
        "before any other request on a new connection: same answer, nothing changed".into(),
        ok,
    )
}

/// session/cancel: why it is never resent. A late repeat arrives after the user started new
/// work, and cancels that work.
fn cancel_row() -> AuditRow {
    let (mut a, sid) = agent();
    send(
        &mut a,
        10,
        "session/prompt",
        &prompt(&sid, Some("k-a")),
        false,
    );
    send(
        &mut a,
        0,
        "session/cancel",
        &json!({"sessionId": sid}),
        true,
    );
    let fresh = send(
        &mut a,
        11,
        "session/prompt",
        &prompt(&sid, Some("k-b")),
        false,
    );
    let late = send(
        &mut a,
        0,
        "session/cancel",
        &json!({"sessionId": sid}),
        true,
    );
    let harmed = fresh.state_changes.iter().any(|c| c == "turn-start")
        && late.state_changes.iter().any(|c| c == "turn-end");
    let m = methods::info("session/cancel");
    AuditRow::measured(
        m,
        if harmed {
            "a late repeat cancelled the work of the next prompt, which the user did not mean to stop".into()
        } else {
            "a late repeat changed nothing (expected it to cancel new work)".into()
        },
        harmed,
    )
}

/// $/cancel_request: harmless to repeat (the id is answered now), but it has no response to
/// lose, so there is nothing to resend.
fn cancel_request_row() -> AuditRow {
    let (mut a, sid) = agent();
    send(
        &mut a,
        10,
        "session/prompt",
        &prompt(&sid, Some("k-a")),
        false,
    );
    send(
        &mut a,
        11,
        "session/prompt",
        &prompt(&sid, Some("k-b")),
        false,
    );
    let first = send(
        &mut a,
        0,
        "$/cancel_request",
        &json!({"requestId": 11}),
        true,
    );
    let second = send(
        &mut a,
        0,
        "$/cancel_request",
        &json!({"requestId": 11}),
        true,
    );
    let ok = first.state_changes.iter().any(|c| c == "withdraw") && second.state_changes.is_empty();
    let m = methods::info("$/cancel_request");
    AuditRow::measured(
        m,
        if ok {
            "the first withdrew the held prompt; the repeat names an answered id and is ignored"
                .into()
        } else {
            "the repeat changed state".into()
        },
        ok,
    )
}

/// session/prompt: with the key a repeat inserts nothing; without it, a second message.
fn prompt_rows() -> [AuditRow; 2] {
    let (mut a, sid) = agent();
    let k1 = send(
        &mut a,
        10,
        "session/prompt",
        &prompt(&sid, Some("k-1")),
        false,
    );
    let k2 = send(
        &mut a,
        11,
        "session/prompt",
        &prompt(&sid, Some("k-1")),
        false,
    );
    let keyed_ok = k1.answer == k2.answer && !k2.state_changes.iter().any(|c| c == "insert");
    let m = methods::info("session/prompt");
    let keyed = AuditRow::measured(
        m,
        format!(
            "with the same key: {} (same messageId, no insertion: {keyed_ok})",
            if keyed_ok {
                "answered from the record"
            } else {
                "inserted again"
            }
        ),
        keyed_ok,
    );
    let (mut a, sid) = agent();
    send(&mut a, 10, "session/prompt", &prompt(&sid, None), false);
    let u2 = send(&mut a, 11, "session/prompt", &prompt(&sid, None), false);
    let mut out = Vec::new();
    a.handle(AgentInput::Timer(0), &mut out);
    let second_inserted = u2.state_changes.iter().any(|c| c == "insert")
        || out
            .iter()
            .any(|x| matches!(x, Action::Effect(e) if e.f == op::INSERT));
    let unkeyed = AuditRow {
        method: "session/prompt (no key)",
        direction: Direction::ClientToAgent,
        // Not a method of the table: what an unkeyed prompt's class amounts to (K1, C9).
        class: RetryClass::NotResent,
        inferred: false,
        repeat: "a second user message and a second round of work".into(),
        consistent: second_inserted,
        not_measured: None,
    };
    [keyed, unkeyed]
}

/// `session/prompt` params with the audit's text, keyed or not.
fn prompt(sid: &str, key: Option<&str>) -> Value {
    rpc::prompt_params(sid, "hello", key.map(|k| json!(k)))
}

/// The table as text.
pub fn table_text(rows: &[AuditRow]) -> String {
    let mut s = format!(
        "{:<26} {:<13} {:<12} {:<9} {:<4} {}\n",
        "method",
        "direction",
        "class",
        "source",
        "ok",
        "sending it twice to the correct stored Agent"
    );
    for r in rows {
        let class = serde_json::to_value(r.class)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        s.push_str(&format!(
            "{:<26} {:<13} {:<12} {:<9} {:<4} {}\n",
            r.method,
            r.direction.as_str(),
            class,
            if r.inferred { "inferred" } else { "stated" },
            match (&r.not_measured, r.consistent) {
                (Some(_), _) => "-",
                (None, true) => "yes",
                (None, false) => "NO",
            },
            r.repeat
        ));
    }
    s.push_str(&format!(
        "v1 only, not in v2 (no class; a v2 Agent answers -32601): {}\n",
        methods::V1_ONLY.join(", ")
    ));
    s
}
