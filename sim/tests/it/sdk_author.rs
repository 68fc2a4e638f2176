//! Testing your own ACP Agent with acp-chaos, as an SDK author would.
//!
//! `NotesAgent` below is an Agent written from scratch against acp-chaos's sans-IO
//! [`AgentModel`] trait: it gets connections, JSON-RPC lines and timers as [`AgentInput`]s and
//! answers with [`Action`]s (lines to send, records to write to its disk, effects for the
//! history). It speaks the part of ACP v2 the simulated Client uses: `initialize`,
//! `session/new`, `session/resume` and `session/prompt` with an `idempotencyKey`, deduplicated
//! per session in a table kept on the simulated disk; every other method gets `-32601` and a
//! line that is not JSON `-32700`.
//!
//! proptest draws fault schedules and workloads ([`acp_chaos::explore::strategy`]), the simulator runs
//! each against the Agent ([`world::run_with`]: a Client with retries, a network that loses
//! and stalls frames and partitions, crashes and restarts of both processes) and the checkers
//! judge the history ([`checkers::check_all`]: P1 at-most-once, P2 no-silent-drop, ...). The
//! first test shows the Agent holds every property; the second flips one flag that plants a
//! classic bug and shows proptest finding it and shrinking the schedule to a handful of
//! faults and inputs.
//!
//! The checkers see the Agent through the effects it reports (the effect contract, in the
//! [`AgentModel`] docs and `docs/effects.md`): the last tests show that the same Agent with its
//! effects left out is reported "not checked" (unknown) on every property that rests on them,
//! never valid, and that the project's model Agent owes none it does not emit.

use acp_chaos::checkers::{self, contract, Status, Verdict};
use acp_chaos::explore::strategy::{self, Space};
use acp_chaos::models::action::effect;
use acp_chaos::models::{Action, AgentInput, AgentModel, ConnId, Design, Party, Point};
use acp_chaos::plan::Plan;
use acp_chaos::world::{self, AgentBoot};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestError, TestRunner};
use serde_json::{json, Value};
use std::collections::BTreeMap;

// JSON-RPC 2.0 and ACP error codes.
const PARSE_ERROR: i64 = -32700;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
const RESOURCE_NOT_FOUND: i64 = -32002;

/// A small Agent: sessions of user messages, and for each session the `idempotencyKey` →
/// `messageId` table that makes a retried `session/prompt` get the original answer (ACP v2:
/// one submission, at most one message). Every prompt is answered in the step it arrives.
struct NotesAgent {
    /// The bug: the key is not written with its message, so the table lives in memory only and
    /// a restarted process inserts a retry of an answered prompt again.
    forgets_keys: bool,
    /// Which start of the process this is (in minted ids, so they stay unique).
    boot: u32,
    minted: u64,
    /// Session → its messages' ids, in order.
    sessions: BTreeMap<String, Vec<String>>,
    /// (session, key) → the messageId the key was answered with.
    keys: BTreeMap<(String, String), String>,
    /// Prompts to fail with a transient `-32603` (the nemesis's `transient-error` fault).
    failures: u32,
}

impl NotesAgent {
    /// Start from the records earlier processes wrote (none at the first start).
    fn recover(boot: &AgentBoot<'_>, forgets_keys: bool) -> NotesAgent {
        let mut a = NotesAgent {
            forgets_keys,
            boot: boot.boot,
            minted: 0,
            sessions: BTreeMap::new(),
            keys: BTreeMap::new(),
            failures: 0,
        };
        for r in boot.records {
            let sid = r["session"].as_str().unwrap_or_default().to_string();
            match r["t"].as_str() {
                Some("session") => {
                    a.sessions.entry(sid).or_default();
                }
                Some("message") => {
                    let mid = r["messageId"].as_str().unwrap_or_default().to_string();
                    if let Some(k) = r["key"].as_str() {
                        a.keys.insert((sid.clone(), k.to_string()), mid.clone());
                    }
                    a.sessions.entry(sid).or_default().push(mid);
                }
                _ => {}
            }
        }
        a
    }

    fn mint(&mut self, prefix: &str) -> String {
        self.minted += 1;
        format!("{prefix}{}.{}", self.boot, self.minted)
    }

    fn request(
        &mut self,
        conn: ConnId,
        id: &Value,
        method: &str,
        params: &Value,
        out: &mut Vec<Action>,
    ) {
        match method {
            "initialize" => reply(out, conn, id, Ok(json!({"protocolVersion": 2}))),
            "session/new" => {
                let sid = self.mint("s");
                // On disk before the Client hears of it, so a restart can resume it.
                out.push(Action::Persist {
                    record: json!({"t": "session", "session": sid}),
                    sync: true,
                });
                self.sessions.insert(sid.clone(), Vec::new());
                // The session is active on this connection (the effect contract: P6, P10, P17
                // judge cancels and resumes by where a session is active).
                out.push(effect("activate", json!({"session": sid, "conn": conn})));
                reply(out, conn, id, Ok(json!({"sessionId": sid})));
            }
            "session/resume" => {
                let known = params["sessionId"]
                    .as_str()
                    .is_some_and(|s| self.sessions.contains_key(s));
                let answer = if known {
                    out.push(effect(
                        "activate",
                        json!({"session": params["sessionId"], "conn": conn}),
                    ));
                    Ok(json!({}))
                } else {
                    Err((RESOURCE_NOT_FOUND, "Session not found"))
                };
                reply(out, conn, id, answer);
            }
            "session/prompt" => self.prompt(conn, id, params, out),
            _ => reply(out, conn, id, Err((METHOD_NOT_FOUND, "Method not found"))),
        }
    }

    fn prompt(&mut self, conn: ConnId, id: &Value, params: &Value, out: &mut Vec<Action>) {
        out.push(Action::Point(Point::AfterReceive));
        let sid = params["sessionId"].as_str().unwrap_or_default().to_string();
        // A key is a string of 1 to 255 characters; anything else is refused, never ignored.
        let key = match params.get("idempotencyKey") {
            None | Some(Value::Null) => None,
            Some(Value::String(k)) if (1..=255).contains(&k.chars().count()) => Some(k.clone()),
            Some(_) => return reject(out, conn, id, INVALID_PARAMS, "Invalid idempotencyKey"),
        };
        if !self.sessions.contains_key(&sid) {
            return reject(out, conn, id, RESOURCE_NOT_FOUND, "Session not found");
        }
        if self.failures > 0 {
            // A failure before insertion: nothing is inserted, so the Client may send it again.
            self.failures -= 1;
            out.push(effect(
                "reject",
                json!({"conn": conn, "id": id, "code": INTERNAL_ERROR, "transient": true}),
            ));
            return reply(out, conn, id, Err((INTERNAL_ERROR, "Try again")));
        }
        if let Some(k) = &key {
            if let Some(mid) = self.keys.get(&(sid.clone(), k.clone())) {
                // A retry: the original answer, nothing inserted.
                out.push(effect(
                    "dedup-hit",
                    json!({"session": sid, "key": k, "messageId": mid, "conn": conn, "id": id}),
                ));
                return reply(out, conn, id, Ok(json!({"messageId": mid})));
            }
        }
        let mid = self.mint("m");
        let text = params["prompt"][0]["text"].as_str().unwrap_or_default();
        out.push(effect(
            "insert",
            json!({"session": sid, "messageId": mid, "key": key, "conn": conn, "id": id,
                   "mode": "direct", "live_only": false}),
        ));
        out.push(Action::Point(Point::AfterInsertBeforeSync));
        // Message and key in one synced record, before the Client hears of the message.
        let stored_key = if self.forgets_keys {
            Value::Null
        } else {
            json!(key)
        };
        out.push(Action::Persist {
            record: json!({"t": "message", "session": sid, "messageId": mid, "key": stored_key, "text": text}),
            sync: true,
        });
        out.push(effect("durable", json!({"session": sid, "messageId": mid})));
        out.push(Action::Point(Point::AfterSyncBeforeResponse));
        if let Some(k) = key {
            self.keys.insert((sid.clone(), k), mid.clone());
        }
        self.sessions.entry(sid).or_default().push(mid.clone());
        reply(out, conn, id, Ok(json!({"messageId": mid})));
    }
}

impl AgentModel for NotesAgent {
    fn handle(&mut self, input: AgentInput, out: &mut Vec<Action>) {
        match input {
            AgentInput::Frame(conn, line) => match serde_json::from_str::<Value>(&line) {
                Err(_) => reply(out, conn, &Value::Null, Err((PARSE_ERROR, "Parse error"))),
                // Requests have an id. Notifications (`session/cancel`, `$/cancel_request`)
                // find nothing to cancel: every prompt is answered at once.
                Ok(msg) => {
                    if let (Some(method), Some(id)) = (msg["method"].as_str(), msg.get("id")) {
                        self.request(conn, id, method, &msg["params"], out);
                    }
                }
            },
            AgentInput::InjectTransientError => self.failures += 1,
            // Connections, timers and cluster inputs need nothing here.
            _ => {}
        }
    }

    fn is_idle(&self) -> bool {
        true // nothing runs in the background
    }

    fn retained(&self) -> Value {
        json!(self.sessions) // {sessionId: [messageId, ...]}
    }
}

fn reply(out: &mut Vec<Action>, conn: ConnId, id: &Value, answer: Result<Value, (i64, &str)>) {
    let frame = match answer {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    };
    out.push(Action::Send {
        conn,
        line: frame.to_string(),
    });
}

/// Refuse a prompt before inserting anything (the checkers read the `reject` effect).
fn reject(out: &mut Vec<Action>, conn: ConnId, id: &Value, code: i64, message: &str) {
    out.push(effect(
        "reject",
        json!({"conn": conn, "id": id, "code": code}),
    ));
    reply(out, conn, id, Err((code, message)));
}

/// What the simulator calls at every start of the Agent process.
fn notes_agent(forgets_keys: bool) -> impl Fn(AgentBoot<'_>) -> Box<dyn AgentModel> {
    move |boot: AgentBoot<'_>| -> Box<dyn AgentModel> {
        Box::new(NotesAgent::recover(&boot, forgets_keys))
    }
}

/// One Client, one Agent keeping its sessions on disk (`stored`: durable retention).
fn base() -> Plan {
    strategy::base(Design::Stored)
}

/// Every fault kind a single Agent can meet; crashes also at the three protocol points
/// `NotesAgent` passes.
fn space() -> Space {
    let mut s = Space::of(&base());
    s.points = vec![
        Point::AfterReceive,
        Point::AfterInsertBeforeSync,
        Point::AfterSyncBeforeResponse,
    ];
    s
}

/// Seeded, and nothing written to the source tree: the same cases on every machine.
fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0xAC9),
        failure_persistence: None,
        ..Config::default()
    }
}

fn line(v: &Verdict) -> String {
    format!(
        "{} {:?} ({:?}): {}",
        v.property, v.status, v.party, v.message
    )
}

proptest! {
    #![proptest_config(config(64))]

    /// The correct Agent: every checker is valid on every drawn schedule and workload.
    #[test]
    fn the_notes_agent_holds_every_property_under_drawn_faults(plan in strategy::plan(&base(), &space())) {
        let history = world::run_with(&plan, notes_agent(false));
        for v in checkers::check_all(&history) {
            prop_assert_eq!(v.status, Status::Valid, "{}", line(&v));
        }
    }
}

/// The bug: proptest finds a schedule where a restart makes the Agent insert a retry again
/// (P1 at-most-once, the Agent at fault), shrinks it, and the schedule replays.
#[test]
fn a_notes_agent_that_forgets_its_keys_on_restart_is_caught_with_a_small_schedule() {
    let mut runner = TestRunner::new(config(256));
    let found = runner.run(&strategy::plan(&base(), &space()), |plan| {
        let history = world::run_with(&plan, notes_agent(true));
        match checkers::check_all(&history)
            .iter()
            .find(|v| v.status == Status::Invalid)
        {
            Some(v) => Err(TestCaseError::fail(line(v))),
            None => Ok(()),
        }
    });
    let (reason, plan) = match found {
        Err(TestError::Fail(reason, plan)) => (reason, plan),
        other => panic!("the planted bug was not found in 256 cases: {other:?}"),
    };
    let schedule = toml::to_string(&plan).expect("a plan is TOML");
    println!("shrunk: {reason}\n{schedule}");
    assert!(
        plan.faults.len() <= 2 && plan.workload.len() <= 2 && plan.raw.is_empty(),
        "not small: {} faults, {} inputs, {} probes\n{schedule}",
        plan.faults.len(),
        plan.workload.len(),
        plan.raw.len()
    );
    // The schedule file replays to the same history and the same verdict.
    let file = std::env::temp_dir().join("acp-chaos-sdk-author.schedule.toml");
    std::fs::write(&file, &schedule).unwrap();
    let replayed: Plan = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let a = world::run_with(&plan, notes_agent(true));
    let b = world::run_with(&replayed, notes_agent(true));
    assert_eq!(a.hash(), b.hash());
    let verdicts = checkers::check_all(&b);
    let p1 = verdicts.iter().find(|v| v.property == "P1").unwrap();
    assert_eq!(
        (p1.status, p1.party),
        (Status::Invalid, Some(Party::Agent)),
        "{}",
        line(p1)
    );
    // The correct Agent passes the same schedule.
    let fixed = checkers::check_all(&world::run_with(&replayed, notes_agent(false)));
    assert!(fixed.iter().all(|v| v.status == Status::Valid));
}

/// `NotesAgent` with every effect left out: the same frames on the wire, nothing reported to
/// the history. What an Agent written without reading the effect contract looks like.
struct Silent(NotesAgent);

impl AgentModel for Silent {
    fn handle(&mut self, input: AgentInput, out: &mut Vec<Action>) {
        let from = out.len();
        self.0.handle(input, out);
        let mut i = from;
        while i < out.len() {
            if matches!(out[i], Action::Effect(_)) {
                out.remove(i);
            } else {
                i += 1;
            }
        }
    }

    fn is_idle(&self) -> bool {
        self.0.is_idle()
    }

    fn retained(&self) -> Value {
        self.0.retained()
    }
}

/// An Agent that emits no effects is not checked on the properties that rest on them: each
/// says "not checked" and names the effect it owed (`insert`: it answered the prompt with a
/// messageId; `activate`: it answered `session/new`), instead of valid. A violation stays a
/// violation, with a note: P2 cannot find the acknowledged message among insertions that were
/// never reported. The properties judged on the wire and the Client alone stay valid.
#[test]
fn an_agent_that_emits_no_effects_is_reported_not_checked_rather_than_valid() {
    let plan = base();
    let silent = world::run_with(&plan, |boot: AgentBoot<'_>| -> Box<dyn AgentModel> {
        Box::new(Silent(NotesAgent::recover(&boot, false)))
    });
    assert!(
        !silent
            .ops
            .iter()
            .any(|o| o.process == "agent"
                && ["insert", "durable", "activate"].contains(&o.f.as_str())),
        "the silent Agent reported an effect"
    );
    let missing: Vec<String> = contract::missing(&silent)
        .into_iter()
        .map(|m| m.effect)
        .collect();
    assert_eq!(missing, ["`insert`", "`activate`"]);
    let verdicts = checkers::check_all(&silent);
    let status = |p: &str| {
        let v = verdicts.iter().find(|v| v.property == p).unwrap();
        (v.status, v)
    };
    for p in ["P1", "P3", "P4", "P9", "P11", "P12", "P15"] {
        let (s, v) = status(p);
        assert_eq!(s, Status::Unknown, "{}", line(v));
        assert!(
            v.message
                .starts_with("not checked: the Agent never emitted `insert`"),
            "{}",
            line(v)
        );
        assert!(!v.witnesses.is_empty(), "{}", line(v));
    }
    for p in ["P10", "P17"] {
        let (s, v) = status(p);
        assert_eq!(s, Status::Unknown, "{}", line(v));
        assert!(
            v.message
                .starts_with("not checked: the Agent never emitted `activate`"),
            "{}",
            line(v)
        );
    }
    let (s, v) = status("P6");
    assert_eq!(s, Status::Unknown, "{}", line(v));
    assert!(
        v.message.contains("`insert`") && v.message.contains("`activate`"),
        "{}",
        line(v)
    );
    let (s, v) = status("P2");
    assert_eq!(s, Status::Invalid, "{}", line(v));
    assert!(
        v.message.contains("note: the Agent never emitted `insert`"),
        "{}",
        line(v)
    );
    for p in ["P5", "P7", "P8", "P13", "P14", "P16"] {
        let (s, v) = status(p);
        assert_eq!(s, Status::Valid, "{}", line(v));
    }
    // The same Agent with its effects: every property checked, and valid.
    let full = world::run_with(&plan, notes_agent(false));
    assert!(contract::missing(&full).is_empty());
    for v in checkers::check_all(&full) {
        assert_eq!(v.status, Status::Valid, "{}", line(&v));
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// The project's model Agent, on every design and under drawn faults, emits every effect the
    /// wire shows it owes: the effect contract never reports one of its properties not checked
    /// (so adding the contract changed none of its verdicts).
    #[test]
    fn the_model_agent_owes_no_effect_it_does_not_emit(
        (design, plan) in prop_oneof![
            Just(Design::Stored), Just(Design::InMemory), Just(Design::Adapter), Just(Design::Cluster)
        ].prop_flat_map(|d| {
            let b = strategy::base(d);
            let s = Space::of(&b);
            (Just(d), strategy::plan(&b, &s))
        })
    ) {
        let history = world::run(&plan);
        let missing = contract::missing(&history);
        prop_assert!(missing.is_empty(), "{design:?}: {missing:?}");
        for v in checkers::check_all(&history) {
            prop_assert!(!v.message.contains("never emitted"), "{design:?}: {}", line(&v));
        }
    }
}
