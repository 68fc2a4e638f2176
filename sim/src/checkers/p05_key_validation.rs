//! P5 key-validation (K1 K2 K3): [`p5_key_validation`].

use std::collections::BTreeMap;

use acp_chaos_models::rpc::code as rpc_code;
use acp_chaos_models::Party;
use serde_json::Value;

use super::facts::Facts;
use super::verdict::{Status, Verdict};
use crate::history::{op, process, Op};
use crate::nemesis::logged;

/// What K2/K3 make of a raw probe's line.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyForm {
    /// Not valid JSON: the frame gets `-32700`.
    NotJson,
    /// No key, or `null` (K1): nothing to validate.
    Omitted,
    /// A string of 1 to 255 Unicode scalar values (K2).
    Valid,
    /// Anything else (K3): `""`, 256+ characters, a number, bool, object or array.
    Malformed(String),
}

/// Classify a raw `session/prompt` line by K1–K3 (characters are Unicode scalar values).
pub fn key_form(line: &str) -> KeyForm {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return KeyForm::NotJson;
    };
    key_form_of(&v)
}

/// Classify a `session/prompt` frame already parsed by K1–K3 ([`key_form`] without the parse).
pub fn key_form_of(v: &Value) -> KeyForm {
    match v["params"].get("idempotencyKey") {
        None | Some(Value::Null) => KeyForm::Omitted,
        Some(Value::String(s)) if (1..=255).contains(&s.chars().count()) => KeyForm::Valid,
        Some(Value::String(s)) => {
            KeyForm::Malformed(format!("a string of {} characters", s.chars().count()))
        }
        Some(other) => KeyForm::Malformed(format!("{other}")),
    }
}

/// Whether a raw `session/prompt` line sends `idempotencyKey: null` and nothing else in it can
/// be wrong (only a session id and a non-empty prompt of text blocks besides): K1 makes it a
/// prompt without a key, so an error `-32602` for it is about the key. Any other line is not
/// judged on K1 (its `-32602` may be about something else).
pub fn null_key_alone(line: &str) -> bool {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return false;
    };
    let p = &v["params"];
    let text_block = |b: &Value| b["type"] == "text" && b["text"].is_string();
    let known = |k: &String| matches!(k.as_str(), "sessionId" | "prompt" | "idempotencyKey");
    p.get("idempotencyKey") == Some(&Value::Null)
        && p.as_object().is_some_and(|o| o.keys().all(known))
        && p["sessionId"].is_string()
        && p["prompt"]
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(text_block))
}

/// What a writer wrote at op `o`: a frame sent (the `send` op), or one the network lost at the
/// break or the lost exchange it caused (the nemesis op's `detail`: written all the same).
fn written(o: &Op) -> Option<&Value> {
    if o.process == process::NET && o.f == op::SEND {
        Some(&o.value)
    } else if o.process == process::NEMESIS
        && matches!(o.f.as_str(), logged::LOSE_FRAME | logged::LOSE_EXCHANGE)
    {
        Some(&o.value["detail"])
    } else {
        None
    }
}

/// P5 key-validation (K1 K2 K3): every raw probe the Client sent (`[[raw]]`) is classified by
/// [`key_form`] independently of the Agent, then: a malformed key gets an error, `-32602`
/// (nothing else is wrong in a probe), and inserts nothing (never treated as omitted); a
/// valid key is never answered `-32602`, nor a `null` one ([`null_key_alone`]: K1, the same
/// as no key); a frame that is not JSON gets `-32700`. A probe whose
/// connection ended before any answer is not judged (P7 judges unanswered requests). Then,
/// from the frames alone, every `session/prompt` the Agent read, whoever wrote it
/// (`prompts_read`): a malformed key is never answered with a result nor inserted (K3).
pub fn p5_key_validation(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P5");
    let ops = &f.history.ops;
    let silent_from = silent_breaks(f);
    for sent in ops
        .iter()
        .filter(|o| o.process == process::CLIENT && o.f == op::RAW_SENT)
    {
        let conn = sent.value["conn"].as_u64().unwrap_or(0);
        if silent_from.get(&conn).is_some_and(|b| *b < sent.index) {
            continue;
        }
        let bad = judge_probe(f, sent, &silent_from);
        if let Some((at, message, rule)) = bad {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            // The clause this branch tested, not the property's whole list.
            v.rules = vec![rule.to_string()];
            v.witnesses = vec![sent.index, at];
            v.fault = f.fault_before(at);
            v.message = format!("raw probe {}: {message}", sent.value["n"]);
            return v;
        }
    }
    prompts_read(f).unwrap_or(v)
}

/// Connections the nemesis broke silently, with the op it did so at: what is written there
/// after it reaches nobody, so a probe sent then is not judged.
fn silent_breaks(f: &Facts) -> BTreeMap<u64, usize> {
    let faults = &f.history.header["plan"]["faults"];
    let mut silent_from: BTreeMap<u64, usize> = BTreeMap::new();
    for o in f
        .history
        .ops
        .iter()
        .filter(|o| o.process == process::NEMESIS && o.f == logged::LOSE_FRAME)
    {
        let i = o.value["fault"].as_u64().unwrap_or(u64::MAX) as usize;
        if faults[i]["silent"] == true {
            if let Some(c) = o.value["detail"]["conn"].as_u64() {
                silent_from.entry(c).or_insert(o.index);
            }
        }
    }
    silent_from
}

/// What is wrong with the Agent's handling of the raw probe sent at op `sent` (`silent_from`:
/// where a silent break swallowed each connection): the op that shows it, the message and the
/// clause (K1, K2 or K3), or `None`.
fn judge_probe(
    f: &Facts,
    sent: &Op,
    silent_from: &BTreeMap<u64, usize>,
) -> Option<(usize, String, &'static str)> {
    let ops = &f.history.ops;
    let conn = sent.value["conn"].as_u64().unwrap_or(0);
    let form = key_form(sent.value["line"].as_str().unwrap_or_default());
    let later = || ops[sent.index..].iter();
    let (aconn, aid) = agent_side(f, sent, conn);
    let answer = if form == KeyForm::NotJson {
        // Garbage is answered by whoever reads it first: the Agent, or a proxy.
        later().find_map(|o| {
            let w = written(o)?;
            (w["conn"].as_u64() == Some(conn)
                && w["from"] != "client"
                && w["frame"]["id"].is_null()
                && w["frame"]["error"]["code"] == rpc_code::PARSE_ERROR)
                .then_some((o, w))
        })
    } else {
        later().find_map(|o| agent_answer(o, aconn, &aid).map(|w| (o, w)))
    };
    let insert = later()
        .filter(|o| o.value["conn"].as_u64() == Some(aconn))
        .find(|o| o.process == process::AGENT && o.f == op::INSERT && o.value["id"] == aid);
    // K3: a frame that is not JSON has no id to answer under; an answer under the probe's
    // id means the Agent parsed it anyway.
    let served = (form == KeyForm::NotJson)
        .then(|| later().find(|o| agent_answer(o, aconn, &aid).is_some()))
        .flatten();
    let code = answer.and_then(|(_, w)| w["frame"]["error"]["code"].as_i64());
    let answer = answer.map(|(a, _)| a);
    match (&form, answer, insert) {
        (KeyForm::Malformed(what), _, Some(i)) => Some((
            i.index,
            format!(
                "a malformed key ({what}) was treated as omitted: the prompt was inserted (K3)"
            ),
            "K3",
        )),
        (KeyForm::Malformed(what), Some(a), None) if code != Some(rpc_code::INVALID_PARAMS) => {
            Some((
                a.index,
                format!(
                    "a malformed key ({what}) was answered {} instead of -32602 (K3)",
                    code.map_or("with a result".to_string(), |c| c.to_string())
                ),
                "K3",
            ))
        }
        // A4 lets the Agent reject a key already recorded in the session (another prompt
        // under it) with -32602: not a K2 question.
        (KeyForm::Valid, Some(a), _)
            if code == Some(rpc_code::INVALID_PARAMS) && !recorded_before(f, sent) =>
        {
            Some((
                a.index,
                "a valid key (1 to 255 characters) was rejected -32602 (K2)".to_string(),
                "K2",
            ))
        }
        (KeyForm::Omitted, Some(a), _)
            if code == Some(rpc_code::INVALID_PARAMS)
                && null_key_alone(sent.value["line"].as_str().unwrap_or_default()) =>
        {
            Some((
                a.index,
                "a null key was rejected -32602: it is the same as no key (K1)".to_string(),
                "K1",
            ))
        }
        (KeyForm::NotJson, _, Some(i)) => Some((
            i.index,
            "a frame that is not JSON was parsed anyway and its prompt inserted (K3: -32700, nothing inserted)".to_string(),
            "K3",
        )),
        (KeyForm::NotJson, _, None) if served.is_some() => Some((
            served.map_or(sent.index, |o| o.index),
            "a frame that is not JSON was parsed anyway and answered under its id (K3: -32700 with id null)".to_string(),
            "K3",
        )),
        (KeyForm::NotJson, None, _) if surely_read(f, sent, conn, silent_from) => Some((
            sent.index,
            "a frame that is not JSON got no -32700 (K3)".to_string(),
            "K3",
        )),
        _ => None,
    }
}

/// The (connection, JSON-RPC id) the Agent sees the probe sent at `sent` under: through a
/// proxy, the ones the proxy wrote downstream.
fn agent_side(f: &Facts, sent: &Op, conn: u64) -> (u64, Value) {
    let id = &sent.value["id"];
    f.history.ops[sent.index..]
        .iter()
        .find(|o| {
            o.process == process::PROXY
                && o.f == op::FORWARD
                && o.value["up_conn"].as_u64() == Some(conn)
                && o.value["up_id"] == *id
        })
        .map_or((conn, id.clone()), |o| {
            (
                o.value["down_conn"].as_u64().unwrap_or(0),
                o.value["down_id"].clone(),
            )
        })
}

/// What the Agent wrote at op `o` when it is its answer to `aid` on `aconn`.
fn agent_answer<'o>(o: &'o Op, aconn: u64, aid: &Value) -> Option<&'o Value> {
    written(o).filter(|w| {
        w["conn"].as_u64() == Some(aconn)
            && w["from"] == "agent"
            && w["frame"].get("method").is_none()
            && w["frame"]["id"] == *aid
    })
}

/// The frame sent at `sent` on `conn` surely reached a reader that stayed up to answer it.
/// A connection that ended, before the frame was written (its reader had already left; a
/// one-way partition can keep the writer from hearing so) or after it, may never have
/// delivered it. A crash logs no end of its connections: after one, the frame may never be
/// read, and a frame written after a crash that came after the connection opened (the reader
/// is down, or back on new connections) is never read at all.
fn surely_read(f: &Facts, sent: &Op, conn: u64, silent_from: &BTreeMap<u64, usize>) -> bool {
    let ops = &f.history.ops;
    let opened = ops[..sent.index]
        .iter()
        .rposition(|o| o.f == op::CONN_OPEN && o.value["conn"].as_u64() == Some(conn))
        .unwrap_or(0);
    let since_open = || ops[opened..].iter();
    !since_open().any(|o| o.f == op::CONN_END && o.value["conn"].as_u64() == Some(conn))
        // A silent break after the send swallows what the reader writes there
        // from then on, its -32700 too, unlogged.
        && silent_from.get(&conn).is_none_or(|b| *b <= sent.index)
        && !since_open().any(|o| {
            // The reader (the Agent, or a proxy in front of it) crashed.
            o.f == op::CRASH
                && o.value["host"]
                    .as_str()
                    .is_some_and(|h| h == "proxy" || crate::history::is_agent_host(h))
        })
}

/// K3 on every `session/prompt` the Agent read, whoever wrote it (a user's Client, a proxy,
/// a probe), judged from the frames: one whose key is malformed ([`key_form_of`] on the frame
/// as read) is answered with a result (a `messageId`: inserted, the key treated as omitted or
/// valid), or the Agent's own `insert` effect claims it. An error of any code is not judged
/// here: such a frame may have more than its key wrong (the raw probes, where nothing else
/// is, are held to `-32602` above).
fn prompts_read(f: &Facts) -> Option<Verdict> {
    // (connection, id) of each malformed prompt the Agent read: (its op, what the key was).
    let mut read: std::collections::BTreeMap<(u64, String), (usize, String)> = Default::default();
    for (o, w) in f.ops_with_wire() {
        let bad = match w {
            // What the Agent read (its peer, the Client or a proxy, is `client` to it).
            Some(w) if !w.sent && w.method == Some("session/prompt") && w.from == "client" => {
                if let KeyForm::Malformed(what) = key_form_of(w.frame) {
                    read.insert((w.conn, w.id_key.clone()), (o.index, what));
                }
                None
            }
            Some(w) if w.sent && w.from_agent && !w.has_method => read
                .remove(&(w.conn, w.id_key.clone()))
                .filter(|_| w.frame.get("result").is_some())
                .map(|r| (r, o.index, "was answered with a result")),
            None if o.process == process::AGENT && o.f == op::INSERT => {
                let k = (
                    o.value["conn"].as_u64().unwrap_or(0),
                    o.value["id"].to_string(),
                );
                read.get(&k)
                    .cloned()
                    .map(|r| (r, o.index, "was inserted (the Agent's insert)"))
            }
            _ => None,
        };
        if let Some(((at, what), by, how)) = bad {
            let mut v = Verdict::valid("P5");
            v.breach(
                Status::Invalid,
                Party::Agent,
                vec!["K3".into()],
                vec![at, by],
                f.fault_before(by),
                format!(
                "a session/prompt read with a malformed key ({what}, op {at}) {how} (op {by}): K3 wants an error and nothing inserted"
            ),
            );
            return Some(v);
        }
    }
    None
}

/// Whether the raw probe at `sent` carries a key already recorded (an insertion under it) in
/// its session before it was sent.
fn recorded_before(f: &Facts, sent: &Op) -> bool {
    let line = sent.value["line"].as_str().unwrap_or_default();
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return false;
    };
    let (key, sid) = (&v["params"]["idempotencyKey"], &v["params"]["sessionId"]);
    f.inserts.iter().any(|i| {
        i.op < sent.index
            && i.key.as_deref().is_some_and(|k| key == k)
            && sid.as_str() == Some(i.session.as_str())
    })
}
