//! The verdicts a probe of a real Agent adds: what the wire shows black-box that the simulator's checkers do
//! not read from a probe history. Each one is judged from the recorded ops alone (the frames,
//! the Client's acks, the kill, the mock model's marker oracle) and folded into the column of
//! the property it belongs to:
//!
//! - [`kept_across_restarts`] (P11 column, A10): an Agent that offers `session/resume` with
//!   replay across its restarts retains its messages, so a `messageId` the Client holds for a
//!   message the restarted Agent no longer has is a violation, whatever retention it declares.
//! - [`second_round`] (P1 column, A1): the mock model was sent two copies of one message.
//! - [`stop_unconfirmed`] (P6 column, A6): a `session/cancel` during a turn with no idle
//!   `state_update` with `stopReason: "cancelled"` within the bound.
//! - [`x4_vacuous`]: X4 judged nothing (no `session/resume` with replay was answered).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::checkers::{Status, Verdict};
use crate::history::{op, process, History, Op};
use crate::models::Party;

use super::VACUOUS;

fn invalid(property: &str, rule: &str, witnesses: Vec<usize>, message: String) -> Verdict {
    let mut v = Verdict::valid(property);
    v.breach(
        Status::Invalid,
        Party::Agent,
        vec![rule.into()],
        witnesses,
        None,
        message,
    );
    v
}

fn from_agent(o: &Op) -> Option<(u64, &Value)> {
    (o.process == process::NET && o.f == op::SEND && o.value["from"] == "agent")
        .then(|| (o.value["conn"].as_u64().unwrap_or(0), &o.value["frame"]))
}

fn from_client(o: &Op) -> Option<(u64, &Value)> {
    (o.process == process::NET && o.f == op::SEND && o.value["from"] == "client")
        .then(|| (o.value["conn"].as_u64().unwrap_or(0), &o.value["frame"]))
}

/// One `session/resume` with `replayFrom` the probe sent: what it replayed and how it ended.
#[derive(Debug, Default, Clone)]
struct Replay {
    conn: u64,
    /// The session it resumed.
    session: String,
    /// Op index of the resume the Client wrote, and whether it asked for the whole history.
    sent_at: usize,
    whole: bool,
    replayed: Vec<String>,
    /// The text of each user message it replayed: (`messageId`, text), chunk by chunk.
    texts: Vec<(String, String)>,
    /// Op index of the answer, and the error (code, message) if it was one.
    answer: Option<Answer>,
}

/// Op index of an answer, and its error (code, message) if it was one.
type Answer = (usize, Option<(i64, String)>);

/// Every `session/resume` with `replayFrom` in the history, in the order sent.
fn replays(h: &History) -> Vec<Replay> {
    let mut all: Vec<Replay> = Vec::new();
    let mut open: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for o in &h.ops {
        if let Some((conn, fr)) = from_client(o) {
            if fr["method"] == "session/resume" && fr["params"]["replayFrom"].is_object() {
                if let Some(id) = fr["id"].as_u64() {
                    open.insert((conn, id), all.len());
                    all.push(Replay {
                        conn,
                        session: fr["params"]["sessionId"].as_str().unwrap_or("").to_string(),
                        sent_at: o.index,
                        whole: fr["params"]["replayFrom"]["type"] == "start",
                        ..Replay::default()
                    });
                }
            }
        } else if let Some((conn, fr)) = from_agent(o) {
            if fr["method"] == "session/update" {
                let u = &fr["params"]["update"];
                let kind = u["sessionUpdate"].as_str().unwrap_or("");
                if let (true, Some(m)) = (
                    kind == "user_message" || kind == "user_message_chunk",
                    u["messageId"].as_str(),
                ) {
                    for (_, i) in open.iter().filter(|((c, _), _)| *c == conn) {
                        if !all[*i].replayed.iter().any(|x| x == m) {
                            all[*i].replayed.push(m.to_string());
                        }
                        all[*i]
                            .texts
                            .extend(texts_of(&u["content"]).map(|t| (m.to_string(), t)));
                    }
                }
            } else if let Some(i) = fr["id"].as_u64().and_then(|id| open.remove(&(conn, id))) {
                let e = fr.get("error").map(|e| {
                    (
                        e["code"].as_i64().unwrap_or(0),
                        e["message"].as_str().unwrap_or("").to_string(),
                    )
                });
                all[i].answer = Some((o.index, e));
            }
        }
    }
    all
}

/// The texts of an update's `content`: one block, or an array of blocks.
fn texts_of(content: &Value) -> impl Iterator<Item = String> + '_ {
    let blocks: Vec<&Value> = match content {
        Value::Array(a) => a.iter().collect(),
        one => vec![one],
    };
    blocks
        .into_iter()
        .filter_map(|b| b["text"].as_str().map(str::to_string))
}

/// The session of each retained message the Agent inserted (its `insert` ops, inferred from
/// the frames it wrote: an answer's or a replay's `messageId`); live-only messages (A11: a
/// locally handled command, kept only while its session is active) are left out, since no
/// replay owes them.
fn sessions_of(h: &History) -> BTreeMap<String, String> {
    h.ops
        .iter()
        .filter(|o| o.process == process::AGENT && o.f == op::INSERT)
        .filter(|o| o.value["live_only"] != true)
        .filter_map(|o| {
            Some((
                o.value["messageId"].as_str()?.to_string(),
                o.value["session"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Live-only messages (their `insert` says `live_only`): no replay owes them.
fn live_only(h: &History) -> BTreeSet<String> {
    h.ops
        .iter()
        .filter(|o| o.process == process::AGENT && o.f == op::INSERT)
        .filter(|o| o.value["live_only"] == true)
        .filter_map(|o| o.value["messageId"].as_str().map(str::to_string))
        .collect()
}

/// What a restart did to the messages the Client held: for each restart judged (a resume
/// with replay answered on the new process), whether every acknowledged message was kept,
/// and the first one not replayed (or gone with its session) as a verdict.
#[derive(Debug, Default)]
pub struct Kept {
    /// Restarts after which some resume with replay was answered, and whether each kept
    /// every message the Client held.
    pub restarts: Vec<bool>,
    /// The first acknowledged message gone after a restart (A10), if any.
    pub lost: Option<Verdict>,
}

/// A message the Client holds: (submission, messageId, ack ms, ack op index).
type Held = (u64, String, u64, usize);

/// A10 across restarts: after each SIGKILL and restart, the first `session/resume` with
/// `replayFrom` answered with success on the new process must replay every message whose
/// `messageId` the Client held before the kill; when every one was answered with an error
/// (`-32002`: the session is gone), every such message is gone.
pub fn kept_across_restarts(h: &History) -> Kept {
    let rs = replays(h);
    let sessions = sessions_of(h);
    let live = live_only(h);
    let mut out = Kept::default();
    let mut held: Vec<Held> = Vec::new();
    let mut crash: Option<(u64, usize)> = None;
    for o in &h.ops {
        match (o.process.as_str(), o.f.as_str()) {
            (process::CLIENT, "ack") => {
                if let Some(m) = o.value["messageId"].as_str().filter(|m| !live.contains(*m)) {
                    let n = o.value["submission"].as_u64().unwrap_or(0);
                    held.push((n, m.to_string(), o.time_ms, o.index));
                }
            }
            (process::NEMESIS, "crash") => crash = Some((o.time_ms, o.index)),
            (process::NET, op::CONN_OPEN) => {
                let (Some(crash), Some(conn)) = (crash.take(), o.value["conn"].as_u64()) else {
                    continue;
                };
                // Nothing acknowledged before the kill: nothing to keep.
                if held.is_empty() {
                    continue;
                }
                let judged = judged_after(&rs, &sessions, &held, conn);
                // No resume with replay answered on this process: nothing judged.
                if judged.is_empty() {
                    continue;
                }
                let gone: Vec<&Judged> = judged
                    .iter()
                    .filter(|(x, r, a)| {
                        a.1.is_some()
                            || (!r.replayed.contains(&x.1) && replayed_as(h, r, x.0).is_none())
                    })
                    .collect();
                out.restarts.push(gone.is_empty());
                if out.lost.is_none() {
                    out.lost = lost_after(crash, &gone);
                }
            }
            _ => {}
        }
    }
    out
}

/// A held message, and the resume with replay (and its answer) that judges it.
type Judged<'a> = (&'a Held, &'a Replay, &'a Answer);

/// Each held message with the first resume with replay of its own session answered on the
/// new process's connection `conn` (a Client may hold several sessions): a success judges;
/// errors only when no resume of it succeeded.
fn judged_after<'a>(
    rs: &'a [Replay],
    sessions: &BTreeMap<String, String>,
    held: &'a [Held],
    conn: u64,
) -> Vec<Judged<'a>> {
    let first = |x: &Held| {
        let mine = rs
            .iter()
            .filter(|r| r.conn == conn && sessions.get(&x.1).is_none_or(|s| *s == r.session));
        let answered: Vec<_> = mine
            .filter_map(|r| r.answer.as_ref().map(|a| (r, a)))
            .collect();
        let ok = answered.iter().find(|(_, a)| a.1.is_none());
        ok.or(answered.first()).copied()
    };
    held.iter()
        .filter_map(|x| first(x).map(|(r, a)| (x, r, a)))
        .collect()
}

/// The verdict when messages are `gone` after the restart after the crash (ms, op).
/// A message left out of a replay is "not replayed" (it may live on, or come back as a second
/// copy); "gone" only when the session itself is. One whose text the replay shows under
/// another messageId is not lost (P11) but renamed.
fn lost_after((crash_ms, crash_at): (u64, usize), gone: &[&Judged]) -> Option<Verdict> {
    let (answer_at, why, what) = match gone.first() {
        Some((_, r, a)) => match &a.1 {
            None => (
                a.0,
                format!(
                    "replayed {} user messages without it (session/resume with replayFrom): the message was not replayed",
                    r.replayed.len()
                ),
                "not replayed",
            ),
            Some((c, m)) => (
                a.0,
                format!(
                    "answered session/resume with replayFrom with error {c} ({m}): the session is gone"
                ),
                "gone",
            ),
        },
        None => (0, String::new(), ""),
    };
    let gone: Vec<&Held> = gone.iter().map(|(x, _, _)| *x).collect();
    let (n, m, ack_ms, ack_at) = gone.first()?;
    Some(invalid(
        "P11",
        "A10",
        vec![*ack_at, crash_at, answer_at],
        format!(
            "submission {n}'s message {m}, acknowledged at {ack_ms} ms (the Client holds its messageId), is {what} after the restart: the Agent was killed {} ms after that answer, and the restarted Agent {why}; an Agent that offers session/resume with replay retains its messages (A10){}",
            crash_ms.saturating_sub(*ack_ms),
            if gone.len() > 1 {
                format!(" ({} acknowledged messages {what} in all)", gone.len())
            } else {
                String::new()
            }
        ),
    ))
}

/// A12 on one process: a message whose `messageId` the Client was answered must be in every
/// whole replay (`replayFrom: start`, answered with success) the same process serves later:
/// a messageId no replayed message has is a key recorded without its message (or a message
/// dropped while the process lived), and the input it acknowledged is silently dropped (P2).
/// Restarts are [`kept_across_restarts`]'s (A10): only a resume on the connection the answer
/// came on is judged here (one connection per process start).
pub fn acknowledged_not_replayed(h: &History) -> Vec<Verdict> {
    // The first message dropped (P2) and the first renamed (P3), each in its own column: a
    // rename found first does not hide a drop.
    let (mut dropped, mut renamed): (Option<Verdict>, Option<Verdict>) = (None, None);
    let rs = replays(h);
    let sessions = sessions_of(h);
    // The connection of the process running at each ack (one per process start): a model
    // Client's ack names none.
    let mut live: Option<u64> = None;
    for o in &h.ops {
        if o.process == process::NET && o.f == op::CONN_OPEN {
            live = o.value["conn"].as_u64();
        }
        if !(o.process == process::CLIENT && o.f == "ack") {
            continue;
        }
        let (Some(m), Some(conn)) = (
            o.value["messageId"].as_str(),
            o.value["conn"].as_u64().or(live),
        ) else {
            continue;
        };
        let session = sessions.get(m);
        let later = rs.iter().find(|r| {
            r.conn == conn
                && session.is_some_and(|s| *s == r.session)
                && r.whole
                && r.sent_at > o.index
                && matches!(r.answer, Some((_, None)))
                && !r.replayed.iter().any(|x| x == m)
        });
        if let Some(r) = later {
            let n = o.value["submission"].as_u64().unwrap_or(0);
            let answer_at = r.answer.as_ref().map_or(r.sent_at, |a| a.0);
            // Its text replayed under another messageId: not gone, but merged or renamed.
            if let Some(other) = replayed_as(h, r, n) {
                renamed = renamed.or(Some(invalid(
                    "P3",
                    "A14",
                    vec![o.index, r.sent_at, answer_at],
                    format!(
                        "submission {n} was acknowledged with messageId {m} at {} ms, but the same Agent process's later replay of the whole session has its text in message {other} and no message {m}: the Agent merged or renamed the message, so the Client holds a messageId no message has (A14: the user_message of an insertion carries its messageId)",
                        o.time_ms
                    ),
                )));
                continue;
            }
            dropped = dropped.or(Some(invalid(
                "P2",
                "A12",
                vec![o.index, r.sent_at, answer_at],
                format!(
                    "submission {n} was acknowledged with messageId {m} at {} ms, but the same Agent process replayed the session's whole history later ({} user messages, session/resume with replayFrom start) without it: the Client holds a messageId no message has, and the input is dropped silently (A12: a key is recorded when its prompt is inserted, so its messageId names a message)",
                    o.time_ms,
                    r.replayed.len()
                ),
            )));
        }
    }
    dropped.into_iter().chain(renamed).collect()
}

/// The `messageId` under which replay `r` shows submission `n`'s text (its probe marker, or
/// its whole text when it has none), if the replay holds as many copies of that text as the
/// distinct `messageId`s the Client was answered for `n` before the replay was asked for:
/// then every message answered for it is there, some under another id (merged or renamed). One
/// copy for two answers is a message dropped, not renamed. Chunks join per message first, so
/// a marker split across two chunks is found.
fn replayed_as(h: &History, r: &Replay, n: u64) -> Option<String> {
    let submit = h.ops.iter().find(|o| {
        o.process == process::USER && o.f == op::SUBMIT && o.value["submission"].as_u64() == Some(n)
    })?;
    let needle = submit.value["marker"]
        .as_str()
        .or(submit.value["text"].as_str())
        .filter(|t| !t.is_empty())?;
    // Each message's chunks joined, in the order the replay first shows each message.
    let mut joined: indexmap::IndexMap<&str, String> = indexmap::IndexMap::new();
    for (m, text) in &r.texts {
        joined.entry(m).or_default().push_str(text);
    }
    let answered: BTreeSet<&str> = h.ops[..r.sent_at]
        .iter()
        .filter(|o| o.process == process::CLIENT && o.f == "ack")
        .filter(|o| o.value["submission"].as_u64() == Some(n))
        .filter_map(|o| o.value["messageId"].as_str())
        .collect();
    let copies: usize = joined.values().map(|t| t.matches(needle).count()).sum();
    if copies < answered.len().max(1) {
        return None;
    }
    joined
        .into_iter()
        .find(|(_, text)| text.contains(needle))
        .map(|(m, _)| m.to_string())
}

/// A1's "no second round of work", from the mock model's marker oracle (`mock model-saw`
/// ops): a turn request that carried two copies of one submission's message gave the model
/// a second insertion of it.
pub fn second_round(h: &History) -> Option<Verdict> {
    h.ops
        .iter()
        .filter(|o| o.process == "mock" && o.f == "model-saw")
        .find(|o| o.value["copies_max"].as_u64().unwrap_or(0) > 1)
        .map(|o| {
            let v = &o.value;
            invalid(
                "P1",
                "A1",
                vec![o.index],
                format!(
                    "no second round of work (A1): the model was sent {} copies of submission {}'s message in one request ({} turn requests carried it)",
                    v["copies_max"],
                    v["submission"],
                    v["requests"]
                ),
            )
        })
}

/// A pipe's crossing: an idle `state_update` this soon after a `session/cancel` may have been
/// written before the Agent read the cancel.
const CROSSING_MS: u64 = 10;

/// A6: a `session/cancel` sent while a turn ran (the last `state_update` the Agent sent on
/// that connection said `running`, or a prompt sent before the stop was inserted:
/// `turn_at_stop`) must be followed, within `bound_ms`, by an idle
/// `state_update` with `stopReason: "cancelled"` there. An Agent that reports no states is
/// not judged.
pub fn stop_unconfirmed(h: &History, bound_ms: u64) -> Option<Verdict> {
    for (i, c) in h.ops.iter().enumerate() {
        let Some((conn, fr)) = from_client(c) else {
            continue;
        };
        if fr["method"] != "session/cancel" {
            continue;
        }
        let state = |o: &Op| {
            from_agent(o)
                .filter(|(cn, f)| {
                    *cn == conn
                        && f["method"] == "session/update"
                        && f["params"]["update"]["sessionUpdate"] == "state_update"
                })
                .map(|(_, f)| f["params"]["update"].clone())
        };
        // Judged when a turn ran at the cancel: the Agent last reported `running` before it
        // went out, or a prompt sent before it was inserted with no idle since (the stop
        // crossed that turn's start in the pipe, or the Agent never reported it).
        let last = h.ops[..i].iter().rev().find_map(state);
        let running_then = last.as_ref().is_some_and(|u| u["state"] != "idle");
        if !running_then && !turn_at_stop(h, i, conn) {
            continue;
        }
        let idle = h.ops[i..]
            .iter()
            .filter(|o| o.time_ms <= c.time_ms + bound_ms)
            .find_map(|o| {
                state(o)
                    .filter(|u| u["state"] == "idle")
                    .map(|u| (o.index, o.time_ms, u))
            });
        let message = match &idle {
            Some((_, _, u)) if u["stopReason"] == "cancelled" => continue,
            // A normal end this soon may have been written before the Agent read the cancel
            // (the turn had ended already); `error` never ends a cancelled turn (A6).
            Some((_, t, u)) if *t <= c.time_ms + CROSSING_MS && u["stopReason"] != "error" => {
                continue
            }
            Some((_, t, u)) => format!(
                "session/cancel at {} ms, with a turn to stop: the turn ended at {t} ms with stopReason {} instead of \"cancelled\" (A6: the cancelled work ends with an idle state_update with stopReason \"cancelled\")",
                c.time_ms, u["stopReason"]
            ),
            None => format!(
                "session/cancel at {} ms, with a turn to stop: no idle state_update with stopReason \"cancelled\" within {bound_ms} ms (A6: the cancelled work ends with an idle state_update with stopReason \"cancelled\" before new work)",
                c.time_ms
            ),
        };
        let mut w = vec![c.index];
        w.extend(idle.as_ref().map(|x| x.0));
        return Some(invalid("P6", "A6", w, message));
    }
    None
}

/// For the cancel at op `i` on `conn`: the Agent reports states on `conn`, no idle
/// `state_update` came between the last prompt sent before the cancel and it, and a prompt
/// sent before it was inserted (answered with a `messageId`, or its message inferred inserted
/// from what the Agent showed): that prompt's work was the stop's to end.
fn turn_at_stop(h: &History, i: usize, conn: u64) -> bool {
    let state_of = |o: &Op| {
        from_agent(o)
            .filter(|(c, f)| {
                *c == conn
                    && f["method"] == "session/update"
                    && f["params"]["update"]["sessionUpdate"] == "state_update"
            })
            .map(|(_, f)| f["params"]["update"]["state"].clone())
    };
    if !h.ops.iter().any(|o| state_of(o).is_some()) {
        return false;
    }
    let before = &h.ops[..i];
    let prompts: Vec<(usize, u64)> = before
        .iter()
        .enumerate()
        .filter_map(|(k, o)| from_client(o).map(|(c, f)| (k, c, f)))
        .filter(|(_, c, f)| *c == conn && f["method"] == "session/prompt")
        .filter_map(|(k, _, f)| f["id"].as_u64().map(|id| (k, id)))
        .collect();
    let Some((last_prompt, _)) = prompts.last() else {
        return false;
    };
    if before[*last_prompt..]
        .iter()
        .any(|o| state_of(o).is_some_and(|s| s == "idle"))
    {
        return false;
    }
    let mine = |c: Option<u64>, id: Option<u64>| {
        c == Some(conn) && id.is_some_and(|id| prompts.iter().any(|p| p.1 == id))
    };
    h.ops.iter().any(|o| {
        let answered = from_agent(o).is_some_and(|(c, f)| {
            f["result"]["messageId"].is_string() && mine(Some(c), f["id"].as_u64())
        });
        let inferred = o.process == process::AGENT
            && o.f == op::INSERT
            && mine(o.value["conn"].as_u64(), o.value["id"].as_u64());
        answered || inferred
    })
}

/// X4 judged nothing when no `session/resume` with `replayFrom` was answered with success:
/// the reason, if so.
pub fn x4_vacuous(h: &History) -> Option<String> {
    let rs = replays(h);
    if rs.iter().any(|r| matches!(r.answer, Some((_, None)))) {
        return None;
    }
    let errors: Vec<String> = rs
        .iter()
        .filter_map(|r| r.answer.as_ref().and_then(|a| a.1.as_ref()))
        .map(|(c, _)| c.to_string())
        .collect();
    Some(if rs.is_empty() {
        format!("{VACUOUS}no session/resume with replayFrom was sent, so X4 judged nothing")
    } else if errors.is_empty() {
        format!(
            "{VACUOUS}no session/resume with replayFrom was answered ({} sent), so X4 judged nothing",
            rs.len()
        )
    } else {
        format!(
            "{VACUOUS}every session/resume with replayFrom was answered with an error ({}), so X4 judged nothing",
            errors.join(", ")
        )
    })
}

/// The malformed keys (K3) the Agent accepted: each raw probe whose key is not a string of 1
/// to 255 characters and whose answer was a success, as its JSON text.
pub fn accepted_malformed_keys(h: &History) -> Vec<String> {
    let mut sent: BTreeMap<(u64, u64), String> = BTreeMap::new();
    let mut out = Vec::new();
    for o in &h.ops {
        if o.process == process::CLIENT && o.f == op::RAW_SENT {
            let line = o.value["line"].as_str().unwrap_or("");
            // The key is the last param: the rest of the line but the params' and frame's ends.
            let key_text = line
                .split_once("\"idempotencyKey\":")
                .map(|(_, k)| k.strip_suffix("}}").unwrap_or(k).to_string())
                .unwrap_or_default();
            let malformed = match serde_json::from_str::<Value>(&key_text) {
                Ok(Value::Null) => false,
                Ok(Value::String(s)) => s.is_empty() || s.chars().count() > 255,
                // Not JSON text (a lone surrogate): K3 wants -32700.
                Ok(_) | Err(_) => true,
            };
            if let (true, Some(c), Some(id)) =
                (malformed, o.value["conn"].as_u64(), o.value["id"].as_u64())
            {
                sent.insert((c, id), key_text);
            }
        } else if let Some((conn, fr)) = from_agent(o) {
            if fr.get("result").is_some() {
                if let Some(k) = fr["id"].as_u64().and_then(|id| sent.remove(&(conn, id))) {
                    out.push(match serde_json::from_str::<Value>(&k) {
                        Ok(Value::String(s)) if s.chars().count() > 16 => {
                            format!("a string of {} characters", s.chars().count())
                        }
                        _ => crate::checkers::verdict::clip(&k, 24),
                    });
                }
            }
        }
    }
    out
}
