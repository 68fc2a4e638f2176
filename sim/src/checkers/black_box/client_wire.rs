//! The Client rules a served Agent's wire log shows: `acp-chaos probe --client`'s checkers.
//!
//! A pure function of one trial's wire log (what our model Agent read and wrote, boot by boot,
//! as `acp-chaos agent --wire-log` writes it: `acp_chaos_cli::probe::wire_log`) and the Client process's exit status. The Client is a black box, so a
//! submission is what the wire shows: **one prompt text in one session is one submission**
//! (the Client under test is driven with a distinct text per submission, as `acp-chaos client`
//! does; a Client that sends one text twice on purpose is judged as retrying it). Each verdict's
//! property is the rule it enforces, its witnesses are line numbers of the log (from 0):
//!
//! | rule | level | what the wire must show |
//! |---|---|---|
//! | `C4` | MUST | no request id reused on a connection while a request with that id awaits its response |
//! | `K2` | MUST | every `idempotencyKey` sent is a string of 1 to 255 characters |
//! | `C1` | MUST | every attempt of one submission carries the same key (none dropped, none added later) |
//! | `C3` | MUST | one key never names two submissions (with `C2`: a new submission gets a new key) |
//! | `C9` | SHOULD NOT | a prompt sent without a key is not resent automatically |
//! | `C6` | SHOULD | after a reconnect, no prompt before the response to `session/resume` there |
//! | `C8` | ours, P2 | a submission never acknowledged was resent or shown to the user: the Client exited non-zero; exit 0 with it unacknowledged is a silent drop |
//!
//! A rule the trial gave nothing to judge (no retry, no restart) is `unknown` with a
//! `vacuous:` message, never `valid`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::VACUOUS;
use crate::checkers::{Status, Verdict};
use crate::models::mutant::Party;

/// The rules [`judge`] decides, in report order.
pub const RULES: &[&str] = &["C4", "K2", "C1", "C3", "C9", "C6", "C8"];

/// One `session/prompt` the Client wrote.
struct Attempt {
    line: usize,
    boot: u64,
    id: String,
    session: String,
    text: String,
    key: Option<Value>,
    /// The line of the success response, and its `messageId`.
    ok: Option<(usize, String)>,
    /// The line of the error response.
    err: Option<usize>,
}

fn verdict(
    rule: &str,
    status: Status,
    rules: &[&str],
    witnesses: Vec<usize>,
    m: String,
) -> Verdict {
    Verdict {
        property: rule.into(),
        status,
        rules: rules.iter().map(|r| r.to_string()).collect(),
        witnesses,
        fault: None,
        party: (status != Status::Valid).then_some(Party::Client),
        message: m,
    }
}

fn text_of(params: &Value) -> String {
    match &params["prompt"] {
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

fn short(s: &str) -> String {
    let t: String = s.chars().take(60).collect();
    if t.len() < s.len() {
        format!("{t}…")
    } else {
        t
    }
}

fn key_text(k: &Option<Value>) -> String {
    match k {
        None => "no key".into(),
        Some(Value::String(s)) => format!("key `{}`", short(s)),
        Some(v) => format!("key {v}"),
    }
}

/// What one trial's wire log shows, read once: each prompt the Client wrote with its answer,
/// the ids it reused while their request awaited an answer, the prompts it wrote after a
/// restart before their session was active there, and what the Agent inserted.
struct Wire<'a> {
    log: &'a [Value],
    attempts: Vec<Attempt>,
    /// Every request the Client wrote, by (boot, id): (method, params, line).
    requests: BTreeMap<(u64, String), (String, Value, usize)>,
    /// (line awaiting, line reusing its id).
    reused: Vec<(usize, usize)>,
    early: Vec<usize>,
    /// (boot, request id) → the `messageId` the Agent inserted for it.
    inserted: BTreeMap<(u64, String), String>,
    boots: BTreeSet<u64>,
}

impl<'a> Wire<'a> {
    /// Read the log once.
    ///
    /// Long on purpose: one pass over the log, each line read in place.
    fn read(log: &'a [Value]) -> Wire<'a> {
        let boot = |v: &Value| v["boot"].as_u64().unwrap_or(0);
        let mut attempts: Vec<Attempt> = Vec::new();
        // (boot, id) → the attempt awaiting its answer, and → (method, params) of any request.
        let mut open: BTreeMap<(u64, String), usize> = BTreeMap::new();
        let mut requests: BTreeMap<(u64, String), (String, Value, usize)> = BTreeMap::new();
        // C4: per (boot, id), the line of a request still awaiting its response.
        let mut awaiting: BTreeMap<(u64, String), usize> = BTreeMap::new();
        let mut reused: Vec<(usize, usize)> = Vec::new();
        // C6: sessions activated on each boot, and prompts written before their activation.
        let mut active: BTreeSet<(u64, String)> = BTreeSet::new();
        let mut early: Vec<usize> = Vec::new();
        let mut inserted: BTreeMap<(u64, String), String> = BTreeMap::new();
        let boots: BTreeSet<u64> = log.iter().map(boot).collect();
        for (i, v) in log.iter().enumerate() {
            let b = boot(v);
            if let Some(f) = v.get("in") {
                let (Some(m), Some(id)) = (f["method"].as_str(), f.get("id")) else {
                    continue;
                };
                if id.is_null() {
                    continue;
                }
                let id = id.to_string();
                if let Some(first) = awaiting.insert((b, id.clone()), i) {
                    reused.push((first, i));
                }
                requests.insert((b, id.clone()), (m.to_string(), f["params"].clone(), i));
                if m == "session/prompt" {
                    let session = f["params"]["sessionId"].as_str().unwrap_or("").to_string();
                    if b > *boots.first().unwrap_or(&b) && !active.contains(&(b, session.clone())) {
                        early.push(i);
                    }
                    let key = match f["params"].get("idempotencyKey") {
                        None | Some(Value::Null) => None,
                        Some(k) => Some(k.clone()),
                    };
                    open.insert((b, id.clone()), attempts.len());
                    attempts.push(Attempt {
                        line: i,
                        boot: b,
                        id,
                        session,
                        text: text_of(&f["params"]),
                        key,
                        ok: None,
                        err: None,
                    });
                }
            } else if let Some(f) = v.get("out") {
                if f.get("method").is_some() || f.get("id").is_none() {
                    continue;
                }
                let id = f["id"].to_string();
                awaiting.remove(&(b, id.clone()));
                if let Some((m, params, _)) = requests.get(&(b, id.clone())) {
                    if f.get("result").is_some() {
                        let s = f["result"]["sessionId"]
                            .as_str()
                            .or(params["sessionId"].as_str())
                            .unwrap_or("");
                        if matches!(
                            m.as_str(),
                            "session/new" | "session/load" | "session/resume" | "session/fork"
                        ) {
                            active.insert((b, s.to_string()));
                        }
                    }
                }
                if let Some(a) = open.remove(&(b, id)) {
                    match f["result"]["messageId"].as_str() {
                        Some(mid) if f.get("result").is_some() => {
                            attempts[a].ok = Some((i, mid.into()))
                        }
                        _ => attempts[a].err = Some(i),
                    }
                }
            } else if v["effect"] == "insert" {
                let id = v["value"]["id"].to_string();
                let mid = v["value"]["messageId"].as_str().unwrap_or("").to_string();
                inserted.insert((b, id), mid);
            }
        }
        Wire {
            log,
            attempts,
            requests,
            reused,
            early,
            inserted,
            boots,
        }
    }
}

/// Judge one trial: `log` is the wire log's lines (parsed), `exit` the Client's exit code
/// (`None`: it did not exit within the bound and was killed). One verdict per rule of [`RULES`],
/// in its order.
pub fn judge(log: &[Value], exit: Option<i32>) -> Vec<Verdict> {
    let w = Wire::read(log);
    let by_text = submissions(&w.attempts);
    vec![
        c4_own_ids(&w),
        k2_key_form(&w),
        c1_same_key(&w, &by_text),
        c3_one_key_one_submission(&w, &by_text),
        c9_no_unkeyed_resend(&by_text),
        c6_resume_first(&w),
        c8_no_silent_drop(&w, &by_text, exit),
    ]
}

/// The submissions of a trial: (session, text) → its attempts in order.
type Submissions<'a> = BTreeMap<(&'a str, &'a str), Vec<&'a Attempt>>;

/// The submissions (one text in one session), each with its attempts in order.
fn submissions(attempts: &[Attempt]) -> Submissions<'_> {
    let mut by_text: BTreeMap<(&str, &str), Vec<&Attempt>> = BTreeMap::new();
    for a in attempts {
        by_text.entry((&a.session, &a.text)).or_default().push(a);
    }
    by_text
}

fn at(a: &Attempt) -> String {
    format!("boot {} id {}", a.boot, a.id)
}

fn keyed(w: &Wire) -> usize {
    w.attempts.iter().filter(|a| a.key.is_some()).count()
}

/// C4: no request id reused on a connection while a request with it awaits its response.
fn c4_own_ids(w: &Wire) -> Verdict {
    match w.reused.first() {
        Some(&(first, again)) => verdict(
            "C4",
            Status::Invalid,
            &["C4"],
            vec![first, again],
            format!(
                "the Client reused request id {} on one connection while its request of line {first} still awaited a response (line {again}; {} time(s) in all)",
                w.log[again]["in"]["id"], w.reused.len()
            ),
        ),
        None if w.requests.is_empty() => verdict(
            "C4",
            Status::Unknown,
            &["C4"],
            vec![],
            format!("{VACUOUS}the Client sent no request"),
        ),
        None => verdict("C4", Status::Valid, &["C4"], vec![], String::new()),
    }
}

/// K2: every `idempotencyKey` sent is a string of 1 to 255 characters (K3 for the rest).
fn k2_key_form(w: &Wire) -> Verdict {
    let bad: Vec<&Attempt> = w
        .attempts
        .iter()
        .filter(|a| match &a.key {
            Some(Value::String(s)) => !(1..=255).contains(&s.chars().count()),
            Some(_) => true,
            None => false,
        })
        .collect();
    let keyed = keyed(w);
    match bad.first() {
        Some(a) => verdict(
            "K2",
            Status::Invalid,
            &["K2", "K3"],
            bad.iter().map(|a| a.line).collect(),
            format!(
                "the Client sent a malformed idempotencyKey: {} ({}); {} malformed in all",
                key_text(&a.key),
                at(a),
                bad.len()
            ),
        ),
        None if keyed == 0 => verdict(
            "K2",
            Status::Unknown,
            &["K2"],
            vec![],
            format!(
                "{VACUOUS}the Client sent no idempotencyKey on any of its {} prompts",
                w.attempts.len()
            ),
        ),
        None => verdict("K2", Status::Valid, &["K2"], vec![], String::new()),
    }
}

/// C1: every attempt of one submission carries the same key.
fn c1_same_key(w: &Wire, by_text: &Submissions) -> Verdict {
    let retried: Vec<&Vec<&Attempt>> = by_text.values().filter(|v| v.len() > 1).collect();
    let keyed = keyed(w);
    let split = retried.iter().find(|v| {
        let keys: BTreeSet<String> = v.iter().map(|a| key_text(&a.key)).collect();
        keys.len() > 1
    });
    match split {
        Some(v) => {
            let keys: Vec<String> = v
                .iter()
                .map(|a| format!("{} ({})", key_text(&a.key), at(a)))
                .collect();
            let mids: BTreeSet<&String> = v
                .iter()
                .filter_map(|a| w.inserted.get(&(a.boot, a.id.clone())))
                .collect();
            let twice = if mids.len() > 1 {
                format!(
                    "; the Agent inserted it {} times ({})",
                    mids.len(),
                    mids.iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                String::new()
            };
            verdict(
                "C1",
                Status::Invalid,
                &["C1"],
                v.iter().map(|a| a.line).collect(),
                format!(
                    "one submission (`{}`) went out under different keys: {}{twice}",
                    short(&v[0].text),
                    keys.join(", then ")
                ),
            )
        }
        None if keyed == 0 => verdict(
            "C1",
            Status::Unknown,
            &["C1"],
            vec![],
            format!("{VACUOUS}the Client sent no idempotencyKey, so no attempt could keep one"),
        ),
        None if retried.is_empty() => verdict(
            "C1",
            Status::Unknown,
            &["C1"],
            vec![],
            format!("{VACUOUS}no submission was sent twice"),
        ),
        None => verdict("C1", Status::Valid, &["C1"], vec![], String::new()),
    }
}

/// C3 (with C2): one key never names two submissions.
fn c3_one_key_one_submission(w: &Wire, by_text: &Submissions) -> Verdict {
    let mut by_key: BTreeMap<String, Vec<&Attempt>> = BTreeMap::new();
    for a in &w.attempts {
        if let Some(Value::String(k)) = &a.key {
            by_key
                .entry(format!("{}\u{0}{k}", a.session))
                .or_default()
                .push(a);
        }
    }
    let shared = by_key.values().find(|v| {
        v.iter()
            .map(|a| a.text.as_str())
            .collect::<BTreeSet<_>>()
            .len()
            > 1
    });
    let keyed_submissions = by_text
        .values()
        .filter(|v| v.iter().any(|a| a.key.is_some()))
        .count();
    match shared {
        Some(v) => {
            let texts: BTreeSet<&str> = v.iter().map(|a| a.text.as_str()).collect();
            verdict(
                "C3",
                Status::Invalid,
                &["C2", "C3"],
                v.iter().map(|a| a.line).collect(),
                format!(
                    "{} named {} submissions with different prompts ({})",
                    key_text(&v[0].key),
                    texts.len(),
                    texts
                        .iter()
                        .map(|t| format!("`{}`", short(t)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        }
        None if keyed_submissions < 2 => verdict(
            "C3",
            Status::Unknown,
            &["C2", "C3"],
            vec![],
            format!("{VACUOUS}fewer than two submissions carried a key"),
        ),
        None => verdict("C3", Status::Valid, &["C2", "C3"], vec![], String::new()),
    }
}

/// C9: a prompt sent without a key is not resent automatically (a finding).
fn c9_no_unkeyed_resend(by_text: &Submissions) -> Verdict {
    let retried: Vec<&Vec<&Attempt>> = by_text.values().filter(|v| v.len() > 1).collect();
    let unkeyed = retried.iter().find(|v| v.iter().all(|a| a.key.is_none()));
    match unkeyed {
        Some(v) => verdict(
            "C9",
            Status::Finding,
            &["C9"],
            v.iter().map(|a| a.line).collect(),
            format!(
                "the prompt `{}` was sent {} times without a key: a retry the Agent cannot tell from a new submission",
                short(&v[0].text),
                v.len()
            ),
        ),
        None => verdict("C9", Status::Valid, &["C9"], vec![], String::new()),
    }
}

/// C6: after a reconnect, no prompt before the session is resumed there (a finding).
fn c6_resume_first(w: &Wire) -> Verdict {
    if w.boots.len() < 2 {
        verdict(
            "C6",
            Status::Unknown,
            &["C6"],
            vec![],
            format!("{VACUOUS}the Agent was started once: no reconnect to judge"),
        )
    } else if let Some(&i) = w.early.first() {
        verdict(
            "C6",
            Status::Finding,
            &["C6", "X2"],
            w.early.clone(),
            format!(
                "after the Agent restarted, the Client wrote session/prompt (line {i}) before the session was resumed on that connection ({} such prompt(s))",
                w.early.len()
            ),
        )
    } else {
        verdict("C6", Status::Valid, &["C6"], vec![], String::new())
    }
}

/// C8 (P2): a submission never acknowledged was resent or shown to the user: the Client
/// exited non-zero; exit 0 with it unacknowledged is a silent drop.
fn c8_no_silent_drop(w: &Wire, by_text: &Submissions, exit: Option<i32>) -> Verdict {
    let lost: Vec<&Vec<&Attempt>> = by_text
        .values()
        .filter(|v| v.iter().all(|a| a.ok.is_none()))
        .collect();
    let interrupted = w.attempts.iter().any(|a| a.ok.is_none() && a.err.is_none());
    match (lost.first(), exit) {
        (Some(v), Some(0)) => verdict(
            "C8",
            Status::Invalid,
            &["C1", "C6", "C8"],
            v.iter().map(|a| a.line).collect(),
            format!(
                "the submission `{}` was never acknowledged ({} attempt(s), the last at {}), yet the Client exited 0 without resending it: a silent drop",
                short(&v[0].text),
                v.len(),
                at(v[v.len() - 1])
            ),
        ),
        (Some(v), code) => verdict(
            "C8",
            Status::Finding,
            &["C8"],
            v.iter().map(|a| a.line).collect(),
            format!(
                "the submission `{}` was never acknowledged; the Client {} (shown to the user, as C8 allows)",
                short(&v[0].text),
                match code {
                    Some(c) => format!("exited {c}"),
                    None => "did not exit in time".into(),
                }
            ),
        ),
        (None, _) if !interrupted => verdict(
            "C8",
            Status::Unknown,
            &["C8"],
            vec![],
            format!("{VACUOUS}no attempt lost its answer"),
        ),
        (None, _) => verdict("C8", Status::Valid, &["C8"], vec![], String::new()),
    }
}
