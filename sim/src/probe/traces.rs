//! The black-box traces: scripted Client sessions against a real Agent process. Each is a
//! function of the driver and, for traces with a kill, the delay of that run (swept over the
//! runs: run `i` takes `sweep[i % sweep.len()]`, or the `--delay-ms` the user pinned).
//!
//! Every trace ends with `Driver::finish`: open inputs are resent with their key (a bounded
//! number of times), every answer is awaited (bounded), and the session is read once more
//! with `session/resume` + `replayFrom` on the live connection, so the history holds every
//! user message the Agent keeps.

use std::time::Duration;

use serde_json::Value;

use super::driver::{Abort, Driver};

/// One trace.
pub struct Trace {
    /// Name (`--trace NAME`).
    pub name: &'static str,
    /// What it does and what it is for.
    pub summary: &'static str,
    /// The properties it aims at (every property is checked on every trace).
    pub aims: &'static [&'static str],
    /// Kill delays in ms swept over the runs; empty for traces without a kill.
    pub sweep: &'static [u64],
    /// The script.
    pub run: fn(&mut Driver, Option<u64>) -> Result<(), Abort>,
}

/// Every trace, in the order they run.
pub const TRACES: &[Trace] = &[
    Trace {
        name: "retry-after-answer",
        summary: "prompt, wait for its {messageId}, send it again with the same key on the same connection: the same messageId, one user message",
        aims: &["P1", "P3"],
        sweep: &[],
        run: retry_after_answer,
    },
    Trace {
        name: "retry-before-answer",
        summary: "a prompt that starts a turn, then a second prompt and its retry (same key) before any answer: the retry waits for the original's outcome (A7)",
        aims: &["P1", "P3"],
        sweep: &[],
        run: retry_before_answer,
    },
    Trace {
        name: "kill-after-answer",
        summary: "prompt; SIGKILL the process group a swept delay after the {messageId} answer; restart, session/resume with replay, resend with the same key: the same messageId, the message kept once",
        aims: &["P1", "P3", "P11", "X4"],
        // Up to 500 ms: from the loss window (a write not yet synced) to the later duplicate.
        sweep: &[0, 1, 2, 5, 10, 20, 50, 100, 200, 500],
        run: kill_after_answer,
    },
    Trace {
        name: "kill-before-answer",
        summary: "prompt; SIGKILL the process group a swept delay after writing it, before any answer; restart, resume with replay, resend with the same key: at most one user message, acknowledged",
        aims: &["P1", "P2", "P3", "P4", "X4"],
        sweep: &[0, 1, 2, 3, 5, 8],
        run: kill_before_answer,
    },
    Trace {
        name: "key-validation",
        summary: "malformed keys (\"\", 256 characters, number, bool, object, array, a lone surrogate) and valid boundary keys (255 characters, an astral character, null): -32602 and nothing inserted, never treated as omitted",
        aims: &["P5"],
        sweep: &[],
        run: key_validation,
    },
    Trace {
        name: "cancel-request",
        summary: "a prompt that starts a turn, a second prompt and its retry held behind it, then $/cancel_request for the second: every pending attempt of its key gets -32800 (or the messageId if it was inserted)",
        aims: &["P6", "P7"],
        sweep: &[],
        run: cancel_request,
    },
    Trace {
        name: "session-cancel",
        summary: "a prompt that starts a turn, a second prompt and its retry held behind it, then session/cancel: the held prompt gets -32800 on every attempt, the turn ends idle with stopReason cancelled; a prompt sent after the stop is not cancelled",
        aims: &["P6", "P7"],
        sweep: &[],
        run: session_cancel,
    },
    Trace {
        name: "key-privacy",
        summary: "two keyed prompts, session/list, session/resume with replay: no key string anywhere in what the agent sends (every trace is scanned too)",
        aims: &["P8"],
        sweep: &[],
        run: key_privacy,
    },
    Trace {
        name: "resume-order",
        summary: "a prompt, its turn to idle, SIGKILL, restart, session/resume without replayFrom (no replay_complete), then with it: replay, exactly one replay_complete, a state_update, then the response",
        aims: &["X4", "P11"],
        sweep: &[],
        run: resume_order,
    },
];

/// A trace by name.
pub fn find(name: &str) -> Option<&'static Trace> {
    TRACES.iter().find(|t| t.name == name)
}

fn open(d: &mut Driver) -> Result<(), Abort> {
    d.start()?;
    d.new_session()?;
    Ok(())
}

/// Wait for the first answer to any attempt of `n`; note it when none comes.
fn await_answer(d: &mut Driver, n: u64) -> Result<bool, Abort> {
    let t = d.timeout();
    let got = d.pump_until(t, |d| d.answered(n))?;
    if !got {
        d.notes.push(format!(
            "no answer to submission {n}'s prompt within {} ms",
            t.as_millis()
        ));
    }
    Ok(got)
}

fn retry_after_answer(d: &mut Driver, _: Option<u64>) -> Result<(), Abort> {
    open(d)?;
    d.submit(1);
    d.attempt(1)?;
    await_answer(d, 1)?;
    d.attempt(1)?;
    d.finish()
}

/// Submission 1 starts a turn; submission 2 and its retry follow back to back, so both arrive
/// while that turn runs (held, if the Agent holds). Returns the JSON-RPC id of 2's first attempt.
fn held_with_retry(d: &mut Driver) -> Result<u64, Abort> {
    open(d)?;
    d.submit(1);
    d.submit(2);
    d.attempt(1)?;
    let (_, held) = d.attempt(2)?;
    d.attempt(2)?;
    Ok(held)
}

fn retry_before_answer(d: &mut Driver, _: Option<u64>) -> Result<(), Abort> {
    held_with_retry(d)?;
    d.finish()
}

fn kill_after_answer(d: &mut Driver, delay: Option<u64>) -> Result<(), Abort> {
    let delay = delay.unwrap_or(0);
    open(d)?;
    d.submit(1);
    d.attempt(1)?;
    let answered = await_answer(d, 1)?;
    d.window("answered before the kill", answered);
    d.pump_for(delay)?;
    d.kill(&format!(
        "SIGKILL {delay} ms after the answer to session/prompt"
    ));
    d.start()?;
    let r = d.resume(true)?;
    note_error(d, "session/resume after the restart", &r);
    d.attempt(1)?;
    d.finish()
}

fn kill_before_answer(d: &mut Driver, delay: Option<u64>) -> Result<(), Abort> {
    let delay = delay.unwrap_or(0);
    open(d)?;
    d.submit(1);
    d.attempt(1)?;
    // Not reading meanwhile: an answer written before the kill is read (and logged) with it.
    std::thread::sleep(Duration::from_millis(delay));
    d.kill(&format!("SIGKILL {delay} ms after writing session/prompt"));
    let hit = !d.answered(1);
    d.window("killed before any answer", hit);
    d.start()?;
    let r = d.resume(true)?;
    note_error(d, "session/resume after the restart", &r);
    d.attempt(1)?;
    d.finish()
}

/// The K2/K3 probes: (idempotencyKey as JSON text, malformed).
fn key_cases() -> Vec<(String, bool)> {
    vec![
        (r#""""#.to_string(), true),
        (format!("\"{}\"", "é".repeat(256)), true),
        ("1".into(), true),
        ("true".into(), true),
        ("{}".into(), true),
        ("[]".into(), true),
        // Not JSON text at all: the whole frame fails with -32700 and `id: null`.
        (r#""\ud800""#.into(), true),
        (format!("\"{}\"", "é".repeat(255)), false),
        (format!("\"{}😀\"", "d".repeat(254)), false),
        ("null".into(), false),
    ]
}

fn key_validation(d: &mut Driver, _: Option<u64>) -> Result<(), Abort> {
    open(d)?;
    for (key, _) in key_cases() {
        let before = d.null_answers;
        let id = d.raw_prompt(&key)?;
        let t = d.timeout();
        let conn = d.conn;
        let got = d.pump_until(t, |d| {
            d.answers.contains_key(&(conn, id)) || d.null_answers > before
        })?;
        if !got {
            d.notes.push(format!(
                "no answer to the probe with idempotencyKey {} within {} ms",
                crate::report::clip(&key, 20),
                t.as_millis()
            ));
        }
    }
    d.finish()
}

fn cancel_request(d: &mut Driver, _: Option<u64>) -> Result<(), Abort> {
    let held = held_with_retry(d)?;
    d.cancel_request(2, held)?;
    d.finish()
}

fn session_cancel(d: &mut Driver, _: Option<u64>) -> Result<(), Abort> {
    held_with_retry(d)?;
    let t = d.timeout();
    let seen = d.updates.len();
    d.session_cancel(&[1, 2])?;
    // Wait (bounded) for the stop to end the turn; one that never says `cancelled` is an A6
    // violation, judged from the frames (`verdicts::stop_unconfirmed`).
    d.pump_until(t, |d| {
        d.updates[seen..].iter().any(|(_, p, _)| {
            p["update"]["sessionUpdate"] == "state_update" && p["update"]["state"] == "idle"
        })
    })?;
    // A later prompt is not covered by the stop (A6).
    d.submit(3);
    d.attempt(3)?;
    await_answer(d, 3)?;
    d.finish()
}

fn key_privacy(d: &mut Driver, _: Option<u64>) -> Result<(), Abort> {
    open(d)?;
    for n in 1..=2 {
        d.submit(n);
        d.attempt(n)?;
        await_answer(d, n)?;
    }
    d.list()?;
    d.quiesce()?;
    let r = d.resume(true)?;
    note_error(d, "session/resume", &r);
    d.finish()
}

fn resume_order(d: &mut Driver, _: Option<u64>) -> Result<(), Abort> {
    open(d)?;
    d.submit(1);
    d.attempt(1)?;
    await_answer(d, 1)?;
    let t = d.timeout();
    let idle = d.pump_until(t, |d| {
        d.updates.iter().any(|(_, p, _)| {
            p["update"]["sessionUpdate"] == "state_update" && p["update"]["state"] == "idle"
        })
    })?;
    if !idle {
        d.notes.push(format!(
            "no idle state_update within {} ms of the answer",
            t.as_millis()
        ));
    }
    d.kill("SIGKILL after the turn ended");
    d.start()?;
    let r = d.resume(false)?;
    note_error(d, "session/resume without replayFrom", &r);
    let r = d.resume(true)?;
    note_error(d, "session/resume with replayFrom", &r);
    d.finish()
}

/// A remark for an error answer: its code and message only (its `data` names the run's
/// session, and the report counts the runs that made each remark).
fn note_error(d: &mut Driver, what: &str, answer: &Value) {
    if let Some(e) = answer.get("error") {
        d.notes.push(format!(
            "{what} was answered with error {} ({})",
            e["code"],
            e["message"].as_str().unwrap_or("")
        ));
    }
}
