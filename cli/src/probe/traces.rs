//! The black-box traces: scripted Client sessions against a real Agent process. Each is a
//! function of the driver and, for traces with a kill, where that run kills: one of the
//! trace's named points (moments where the Client's state changed: a prompt written, an
//! answer read, a turn ended, a replay asked for) and a delay after it. A kill trace runs
//! every (point, delay) cell of its sweep at least once (run `i` takes cell `i % cells`);
//! `--kill-point` and `--delay-ms` pin either.
//!
//! Every trace ends with `Driver::finish`: open inputs are resent with their key (a bounded
//! number of times), every answer is awaited (bounded), and the session is read once more
//! with `session/resume` + `replayFrom` on the live connection, so the history holds every
//! user message the Agent keeps.

use std::time::Duration;

use serde_json::Value;

use super::driver::{Abort, Driver};

/// Where one run of a kill trace kills: `delay_ms` after the trace reached `point`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kill {
    /// The point's name (`--kill-point`).
    pub point: &'static str,
    /// Wall ms after the point, reading what the Agent writes meanwhile (`--delay-ms`).
    pub delay_ms: u64,
}

/// The kill delays a trace sweeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sweep {
    /// No swept kill (a trace without a kill, or with one fixed kill).
    None,
    /// These delays, ms.
    Fixed(&'static [u64]),
    /// Delays scaled to the agent's measured persistence latency (the time from an answer
    /// to its files' last change, [`super::calibrate`]).
    Persistence,
}

/// One trace.
pub struct Trace {
    /// Name (`--trace NAME`).
    pub name: &'static str,
    /// What it does and what it is for.
    pub summary: &'static str,
    /// The properties it aims at (every property is checked on every trace).
    pub aims: &'static [&'static str],
    /// Where it kills, in the order the script reaches them; empty without a swept kill.
    pub points: &'static [&'static str],
    /// Kill delays swept at every point.
    pub sweep: Sweep,
    /// The script, with the run's kill (`None` for a trace without a swept kill).
    pub run: fn(&mut Driver, Option<&Kill>) -> Result<(), Abort>,
}

impl Trace {
    /// The (point, delay) cells a probe runs: every point (or the pinned one, if this trace
    /// has it) at every delay of `delays` (or the pinned delay). Empty for a trace without a
    /// swept kill.
    pub fn cells(&self, delays: &[u64], point: Option<&str>, delay: Option<u64>) -> Vec<Kill> {
        if self.sweep == Sweep::None {
            return Vec::new();
        }
        let delays: Vec<u64> = match delay {
            Some(d) => vec![d],
            None => delays.to_vec(),
        };
        let points = self
            .points
            .iter()
            .filter(|p| point.is_none_or(|q| !self.points.contains(&q) || **p == q));
        points
            .flat_map(|p| {
                delays.iter().map(|d| Kill {
                    point: p,
                    delay_ms: *d,
                })
            })
            .collect()
    }
}

/// Every trace, in the order they run.
pub const TRACES: &[Trace] = &[
    Trace {
        name: "retry-after-answer",
        summary: "prompt, wait for its {messageId}, send it again with the same key on the same connection: the same messageId, one user message",
        aims: &["P1", "P3"],
        points: &[],
        sweep: Sweep::None,
        run: retry_after_answer,
    },
    Trace {
        name: "retry-before-answer",
        summary: "a prompt that starts a turn, then a second prompt and its retry (same key) before any answer: the retry waits for the original's outcome (A7)",
        aims: &["P1", "P3"],
        points: &[],
        sweep: Sweep::None,
        run: retry_before_answer,
    },
    Trace {
        name: "kill-after-answer",
        summary: "prompt; SIGKILL the process group a swept delay after the {messageId} answer; restart, session/resume with replay, resend with the same key: the same messageId, the message kept once",
        aims: &["P1", "P3", "P11", "X4"],
        points: &["answered"],
        // Up to 500 ms: from the loss window (a write not yet synced) to the later duplicate.
        sweep: Sweep::Fixed(&[0, 1, 2, 5, 10, 20, 50, 100, 200, 500]),
        run: kill_after_answer,
    },
    Trace {
        name: "kill-before-answer",
        summary: "prompt; SIGKILL the process group a swept delay after writing it, before any answer; restart, resume with replay, resend with the same key: at most one user message, acknowledged",
        aims: &["P1", "P2", "P3", "P4", "X4"],
        points: &["prompt-written"],
        sweep: Sweep::Fixed(&[0, 1, 2, 3, 5, 8]),
        run: kill_before_answer,
    },
    Trace {
        name: "key-validation",
        summary: "malformed keys (\"\", 256 characters, number, bool, object, array, a lone surrogate) and valid boundary keys (255 characters, an astral character, null): -32602 and nothing inserted, never treated as omitted",
        aims: &["P5"],
        points: &[],
        sweep: Sweep::None,
        run: key_validation,
    },
    Trace {
        name: "cancel-request",
        summary: "a prompt that starts a turn, a second prompt and its retry held behind it, then $/cancel_request for the second: every pending attempt of its key gets -32800 (or the messageId if it was inserted)",
        aims: &["P6", "P7"],
        points: &[],
        sweep: Sweep::None,
        run: cancel_request,
    },
    Trace {
        name: "session-cancel",
        summary: "a prompt that starts a turn, a second prompt and its retry held behind it, then session/cancel: the held prompt gets -32800 on every attempt, the turn ends idle with stopReason cancelled; a prompt sent after the stop is not cancelled",
        aims: &["P6", "P7"],
        points: &[],
        sweep: Sweep::None,
        run: session_cancel,
    },
    Trace {
        name: "key-privacy",
        summary: "two keyed prompts, session/list, session/resume with replay: no key string anywhere in what the agent sends (every trace is scanned too)",
        aims: &["P8"],
        points: &[],
        sweep: Sweep::None,
        run: key_privacy,
    },
    Trace {
        name: "resume-order",
        summary: "a prompt, its turn to idle, SIGKILL, restart, session/resume without replayFrom (no replay_complete), then with it: replay, exactly one replay_complete, a state_update, then the response",
        aims: &["X4", "P11"],
        points: &[],
        sweep: Sweep::None,
        run: resume_order,
    },
    Trace {
        name: "kill-across-life",
        summary: "two prompts (the second written during the first one's turn), the turn's end, a resume with replay; SIGKILL at one of these points a delay after it (scaled to the agent's measured persistence latency); restart, resume with replay, resend every input with its key: every acknowledged message kept once, every input acknowledged",
        aims: &["P1", "P2", "P3", "P11", "X4"],
        points: &[
            "prompt-written",
            "answered",
            "later-prompt-written",
            "later-answered",
            "turn-ended",
            "replay-requested",
        ],
        sweep: Sweep::Persistence,
        run: kill_across_life,
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

fn retry_after_answer(d: &mut Driver, _: Option<&Kill>) -> Result<(), Abort> {
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

fn retry_before_answer(d: &mut Driver, _: Option<&Kill>) -> Result<(), Abort> {
    held_with_retry(d)?;
    d.finish()
}

fn kill_after_answer(d: &mut Driver, kill: Option<&Kill>) -> Result<(), Abort> {
    let delay = kill.map_or(0, |k| k.delay_ms);
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

fn kill_before_answer(d: &mut Driver, kill: Option<&Kill>) -> Result<(), Abort> {
    let delay = kill.map_or(0, |k| k.delay_ms);
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

/// At `point`, when it is the run's kill: wait the delay reading what comes, SIGKILL the
/// group, start again, resume with replay and resend every input with its key (an input
/// whose answer the kill may have taken, as a Client that lost it would). `true` when it
/// killed: the script then ends with [`Driver::finish`].
fn kill_here(d: &mut Driver, kill: Option<&Kill>, point: &str, after: &str) -> Result<bool, Abort> {
    let Some(k) = kill.filter(|k| k.point == point) else {
        return Ok(false);
    };
    d.pump_for(k.delay_ms)?;
    d.kill(&format!("SIGKILL {} ms after {after}", k.delay_ms));
    d.start()?;
    let r = d.resume(true)?;
    note_error(d, "session/resume after the restart", &r);
    let inputs: Vec<u64> = d.subs.keys().copied().collect();
    for n in inputs {
        d.attempt(n)?;
    }
    Ok(true)
}

/// The points of an Agent's life where the Client's state changes, in order; the run kills
/// at one of them ([`kill_here`]) and then settles everything ([`Driver::finish`]).
fn kill_across_life(d: &mut Driver, kill: Option<&Kill>) -> Result<(), Abort> {
    open(d)?;
    d.submit(1);
    d.attempt(1)?;
    if kill_here(d, kill, "prompt-written", "writing session/prompt")? {
        return d.finish();
    }
    await_answer(d, 1)?;
    if kill_here(d, kill, "answered", "the answer to session/prompt")? {
        return d.finish();
    }
    // Right behind the first answer: the first prompt's turn is still running.
    d.submit(2);
    d.attempt(2)?;
    let later = "writing a second session/prompt during the first one's turn";
    if kill_here(d, kill, "later-prompt-written", later)? {
        return d.finish();
    }
    await_answer(d, 2)?;
    if kill_here(
        d,
        kill,
        "later-answered",
        "the answer to the second session/prompt",
    )? {
        return d.finish();
    }
    d.quiesce()?;
    if kill_here(d, kill, "turn-ended", "the second turn ended")? {
        return d.finish();
    }
    let id = d.resume_send(true)?;
    let replay = "writing session/resume with replayFrom";
    if kill_here(d, kill, "replay-requested", replay)? {
        return d.finish();
    }
    match d.wait_answer(id, d.timeout())? {
        Some(r) => note_error(d, "session/resume with replayFrom", &r),
        None => d.notes.push(format!(
            "no answer to session/resume with replayFrom within {} ms",
            d.timeout().as_millis()
        )),
    }
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

fn key_validation(d: &mut Driver, _: Option<&Kill>) -> Result<(), Abort> {
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
                acp_chaos::report::clip(&key, 20),
                t.as_millis()
            ));
        }
    }
    d.finish()
}

fn cancel_request(d: &mut Driver, _: Option<&Kill>) -> Result<(), Abort> {
    let held = held_with_retry(d)?;
    d.cancel_request(2, held)?;
    d.finish()
}

fn session_cancel(d: &mut Driver, _: Option<&Kill>) -> Result<(), Abort> {
    held_with_retry(d)?;
    let t = d.timeout();
    let seen = d.updates.len();
    d.session_cancel(&[1, 2])?;
    // Wait (bounded) for the stop to end the turn; one that never says `cancelled` is an A6
    // violation, judged from the frames (`checkers::black_box::agent::stop_unconfirmed`).
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

fn key_privacy(d: &mut Driver, _: Option<&Kill>) -> Result<(), Abort> {
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

fn resume_order(d: &mut Driver, _: Option<&Kill>) -> Result<(), Abort> {
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
