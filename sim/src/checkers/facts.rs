//! The index every checker reads: [`Facts`], extracted once from a history (insertions,
//! submissions, acknowledgements, attempts, turns, recoveries), and the history as the checkers
//! see it ([`agent_view`]: a cluster's nodes and store are one Agent).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::wire::{wire_of, WireFrame};
use crate::history::{is_agent_host, op, process, History, Op};

/// The history as the checkers read it: a cluster's nodes and store are one Agent (the rules
/// are about the Agent, whatever its design). Op indices are unchanged.
pub fn agent_view(h: &History) -> std::borrow::Cow<'_, History> {
    // (One pass over an op's few members reads `from` and `host`: cheaper than two lookups,
    // and this runs on every op of every run.)
    let renamed = |op: &Op| {
        (op.process != process::AGENT && is_agent_host(&op.process))
            || op.value.as_object().is_some_and(|m| {
                m.iter().any(|(k, v)| {
                    (k == "from" || k == "host")
                        && v.as_str().is_some_and(|f| f != "agent" && is_agent_host(f))
                })
            })
    };
    if !h.ops.iter().any(renamed) {
        return std::borrow::Cow::Borrowed(h);
    }
    let mut h = h.clone();
    for op in h.ops.iter_mut().filter(|o| renamed(o)) {
        if is_agent_host(&op.process) {
            if op.process != process::AGENT && op.value.is_object() {
                // Checkers that must tell the store from a node read it here.
                op.value["renamed_from"] = op.process.clone().into();
            }
            op.process = "agent".into();
        }
        if op.value["host"]
            .as_str()
            .is_some_and(|h| h != "agent" && is_agent_host(h))
        {
            // Which node a fault hit (P6 reads it: a stop dies with the node that read it).
            op.value["host_was"] = op.value["host"].clone();
        }
        for field in ["from", "host"] {
            if op.value[field].as_str().is_some_and(is_agent_host) {
                op.value[field] = "agent".into();
            }
        }
    }
    std::borrow::Cow::Owned(h)
}

/// One insertion as the Agent reported it.
#[derive(Debug, Clone)]
pub struct Insert {
    /// Op index of the `insert` effect.
    pub op: usize,
    /// Session.
    pub session: String,
    /// The message id.
    pub message_id: String,
    /// Key it carried.
    pub key: Option<String>,
    /// The submission its attempt belongs to (from the ledger's attempt links).
    pub submission: Option<u64>,
    /// Op index where it took effect (became durable or visible), if it did.
    pub took_effect: Option<usize>,
    /// A live-only message (a locally handled command, never retained: A11).
    pub live_only: bool,
    /// The key the Client put on the attempt (`None` inside: unknown attempt; `Some(None)`:
    /// sent without a key). Differs from `key` when an intermediary changed it (X1).
    pub sent_key: Option<Option<String>>,
    /// Op index of the Agent restart whose recovery no longer had it.
    pub lost_at: Option<usize>,
    /// Live-only: op index where its session became active on no connection (key forgettable).
    pub forgotten_at: Option<usize>,
    /// Op index where the Agent discarded it at the end of its retention window (`discard`):
    /// the message and its key record are gone, as A16 allows.
    pub discarded_at: Option<usize>,
}

impl Insert {
    /// Op index from which the Agent may have forgotten it (lost in a restart, a live-only key
    /// forgotten, or discarded by its retention window), if before `before`.
    pub fn gone_before(&self, before: usize) -> Option<usize> {
        [self.lost_at, self.forgotten_at, self.discarded_at]
            .into_iter()
            .flatten()
            .filter(|g| *g < before)
            .min()
    }
}

/// How one submission ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SubmissionClass {
    /// Inserted, and the Client holds its messageId.
    Acknowledged,
    /// Shown to the user as failed.
    Surfaced,
    /// Withdrawn by its own user's cancel (`-32800`).
    Withdrawn,
    /// Inserted more than once (P1).
    Duplicated,
    /// Inserted again after the first was lost or forgotten as the rules allow (a finding).
    Reinserted,
    /// Never inserted, never shown (P2).
    Lost,
    /// Inserted, but the Client never learned its id and no longer holds the input (P2).
    Unacknowledged,
    /// Still pending at the liveness bound.
    Pending,
}

/// Facts extracted once from a history; the checkers read only these and the ops.
pub struct Facts<'a> {
    /// The history.
    pub history: &'a History,
    /// The frame of each op, by position in `history.ops` (`None`: not a `send` or `recv`).
    pub wire: Vec<Option<WireFrame<'a>>>,
    /// [`prompt_answers`], made on first use.
    answers: std::cell::OnceCell<Vec<Answer>>,
    /// [`Facts::raw_probes`], made on first use.
    raw_probes: std::cell::OnceCell<BTreeSet<(u64, String)>>,
    /// Every insertion, in order.
    pub inserts: Vec<Insert>,
    /// User submissions: number → op index of the `submit` invoke.
    pub submissions: BTreeMap<u64, usize>,
    /// Submission → op index of the Client's `ack`, and the messageId it holds.
    pub acks: BTreeMap<u64, (usize, String)>,
    /// Submission → op index where it was shown to the user as failed.
    pub surfaced: BTreeMap<u64, usize>,
    /// Submission → op index where its own user's cancel withdrew it.
    pub withdrawn: BTreeMap<u64, usize>,
    /// (connection, JSON-RPC id) of every attempt, also as the Agent saw it through a proxy →
    /// its submission.
    pub attempts: BTreeMap<(u64, String), u64>,
    /// Keys the Client put on each submission's attempts.
    pub attempt_keys: BTreeMap<u64, BTreeSet<String>>,
    /// Insertion (index into `inserts`) → op indices of `turn-start` ops for it (rounds of
    /// work). Keyed by insertion, not id: a design that derives ids repeats them.
    pub turns: BTreeMap<usize, Vec<usize>>,
    /// Insertion → op indices of `tool-effect` ops for it (side effects).
    pub tool_effects: BTreeMap<usize, Vec<usize>>,
    /// The design's declared retention (from the history header).
    pub retention: acp_chaos_models::Retention,
    /// The Agent's retention window in simulated ms, if it has one (the header's
    /// `plan.agent.retention_ms`): what it declares holds that long after an insertion.
    pub retention_ms: Option<u64>,
    /// Submissions the Client still held at the end.
    pub pending_at_end: BTreeSet<u64>,
    /// `recover` ops: (op index, session → retained messageIds).
    pub recoveries: Vec<(usize, BTreeMap<String, BTreeSet<String>>)>,
}

impl<'a> Facts<'a> {
    /// Extract the facts: one pass over the ops, then when each insertion was lost.
    pub fn of(h: &'a History) -> Facts<'a> {
        let mut scan = Scan::default();
        for op in &h.ops {
            if op.process == process::AGENT {
                scan.agent_op(op);
            } else {
                scan.other_op(op);
            }
        }
        let Scan {
            attempts,
            mut inserts,
            submissions,
            acks,
            surfaced,
            pending_at_end,
            recoveries,
            unreported,
            attempt_keys,
            withdrawn,
            turns,
            tool_effects,
            ..
        } = scan;
        // When did each insertion get lost? The first restart after it took effect (and
        // before any discard of it: a discarded message is not lost) whose recovery does not
        // have it.
        for i in inserts.iter_mut() {
            let Some(t) = i.took_effect else { continue };
            let discarded = i.discarded_at.unwrap_or(usize::MAX);
            i.lost_at = recoveries
                .iter()
                .find(|(rop, kept)| {
                    *rop > t
                        && *rop < discarded
                        && !unreported.contains(rop)
                        && !kept
                            .get(&i.session)
                            .is_some_and(|s: &BTreeSet<String>| s.contains(&i.message_id))
                })
                .map(|(rop, _)| *rop);
        }
        let retention = match h.header["plan"]["retention"].as_str() {
            Some("process") => acp_chaos_models::Retention::Process,
            _ => acp_chaos_models::Retention::Durable,
        };
        let retention_ms = h.header["plan"]["agent"]["retention_ms"]
            .as_u64()
            .filter(|w| *w > 0);
        Facts {
            answers: std::cell::OnceCell::new(),
            raw_probes: std::cell::OnceCell::new(),
            wire: wire_of(&h.ops),
            history: h,
            inserts,
            submissions,
            acks,
            surfaced,
            withdrawn,
            attempts,
            attempt_keys,
            turns,
            tool_effects,
            retention,
            retention_ms,
            pending_at_end,
            recoveries,
        }
    }

    /// Each op with its frame, if it is a `send` or `recv` ([`WireFrame`]).
    pub fn ops_with_wire(&self) -> impl Iterator<Item = (&'a Op, Option<&WireFrame<'a>>)> + '_ {
        self.history
            .ops
            .iter()
            .zip(self.wire.iter().map(Option::as_ref))
    }

    /// The swarm's raw probes the Client wrote, as (connection, JSON-RPC id as its JSON text):
    /// `session/prompt` frames sent on purpose with odd keys or prompts to judge the Agent,
    /// which no rule about the Client's own keys (C3, A8's key list, its `attempt`s) covers.
    pub fn raw_probes(&self) -> &BTreeSet<(u64, String)> {
        self.raw_probes.get_or_init(|| {
            self.history
                .ops
                .iter()
                .filter(|o| o.process == process::CLIENT && o.f == op::RAW_SENT)
                .map(|o| {
                    (
                        o.value["conn"].as_u64().unwrap_or(0),
                        o.value["id"].to_string(),
                    )
                })
                .collect()
        })
    }

    /// The submission an attempt (connection, JSON-RPC id) belongs to, through proxy rewrites.
    pub fn attempt_submission(&self, attempt: &(u64, String)) -> Option<u64> {
        self.attempts.get(attempt).copied()
    }

    /// The last nemesis op strictly before `index`.
    pub fn fault_before(&self, index: usize) -> Option<usize> {
        self.history.ops[..index.min(self.history.ops.len())]
            .iter()
            .rev()
            .find(|o| {
                o.process == process::NEMESIS
                    && o.f != op::HEAL
                    && o.f != op::RESTART
                    && o.f != op::HEAL_PARTITION
            })
            .map(|o| o.index)
    }

    /// The class of each submission (Jepsen set-full style).
    pub fn classes(&self) -> BTreeMap<u64, SubmissionClass> {
        let mut per_sub: BTreeMap<u64, Vec<&Insert>> = BTreeMap::new();
        for i in self.inserts.iter().filter(|i| i.took_effect.is_some()) {
            if let Some(s) = i.submission {
                per_sub.entry(s).or_default().push(i);
            }
        }
        self.submissions
            .keys()
            .map(|n| {
                let ins = per_sub.get(n).map(Vec::as_slice).unwrap_or_default();
                // A second insertion while the first was still there is a duplicate; one
                // after the rules let the Agent forget the first (A11, A16) is a reinsertion.
                let dup = ins
                    .iter()
                    .enumerate()
                    .any(|(j, l)| ins[..j].iter().any(|e| e.gone_before(l.op).is_none()));
                let c = if dup {
                    SubmissionClass::Duplicated
                } else if ins.len() > 1 {
                    SubmissionClass::Reinserted
                } else {
                    self.settlement(*n, !ins.is_empty())
                };
                (*n, c)
            })
            .collect()
    }

    /// How the user's side of submission `n` ended, whatever happened to its insertions:
    /// acknowledged, surfaced, withdrawn, still pending, or neither (unacknowledged when it was
    /// inserted, lost when not).
    pub fn settlement(&self, n: u64, inserted: bool) -> SubmissionClass {
        if self.acks.contains_key(&n) {
            SubmissionClass::Acknowledged
        } else if self.surfaced.contains_key(&n) {
            SubmissionClass::Surfaced
        } else if self.withdrawn.contains_key(&n) {
            SubmissionClass::Withdrawn
        } else if self.pending_at_end.contains(&n) {
            SubmissionClass::Pending
        } else if inserted {
            SubmissionClass::Unacknowledged
        } else {
            SubmissionClass::Lost
        }
    }
}

/// The working state of [`Facts::of`]'s pass over the ops.
#[derive(Default)]
struct Scan {
    attempts: BTreeMap<(u64, String), u64>,
    inserts: Vec<Insert>,
    by_mid: BTreeMap<String, usize>,
    submissions: BTreeMap<u64, usize>,
    acks: BTreeMap<u64, (usize, String)>,
    surfaced: BTreeMap<u64, usize>,
    pending_at_end: BTreeSet<u64>,
    recoveries: Vec<(usize, BTreeMap<String, BTreeSet<String>>)>,
    unreported: BTreeSet<usize>,
    attempt_keys: BTreeMap<u64, BTreeSet<String>>,
    sent_keys: BTreeMap<(u64, String), Option<String>>,
    withdrawn: BTreeMap<u64, usize>,
    turns: BTreeMap<usize, Vec<usize>>,
    tool_effects: BTreeMap<usize, Vec<usize>>,
    /// Which connections each session is active on, for A11's forgetting of live-only keys.
    active: BTreeMap<String, BTreeSet<u64>>,
    live_pending: BTreeMap<String, Vec<usize>>,
}

impl Scan {
    /// A user, Client or proxy op: submissions, attempts (also through a proxy's rewrite), acks,
    /// surfaced and withdrawn inputs, what was pending at the end.
    fn other_op(&mut self, op: &Op) {
        let v = &op.value;
        match (op.process.as_str(), op.f.as_str()) {
            (process::USER, op::SUBMIT) => {
                if let Some(n) = v["submission"].as_u64() {
                    self.submissions.insert(n, op.index);
                }
            }
            (process::CLIENT, op::ATTEMPT) => {
                if let (Some(c), Some(s)) = (v["conn"].as_u64(), v["submission"].as_u64()) {
                    self.attempts.insert((c, v["id"].to_string()), s);
                    self.sent_keys.insert(
                        (c, v["id"].to_string()),
                        v["key"].as_str().map(str::to_string),
                    );
                    if let Some(k) = v["key"].as_str() {
                        self.attempt_keys
                            .entry(s)
                            .or_default()
                            .insert(k.to_string());
                    }
                }
            }
            (process::PROXY, op::FORWARD) if v["method"] == "session/prompt" => {
                // The proxy rewrote the id: the Agent's (conn, id) is the same attempt.
                let up = (v["up_conn"].as_u64().unwrap_or(0), v["up_id"].to_string());
                let down = (
                    v["down_conn"].as_u64().unwrap_or(0),
                    v["down_id"].to_string(),
                );
                if let Some(&s) = self.attempts.get(&up) {
                    self.attempts.insert(down.clone(), s);
                }
                if let Some(k) = self.sent_keys.get(&up).cloned() {
                    self.sent_keys.insert(down, k);
                }
            }
            (process::CLIENT, op::WITHDRAWN) => {
                if let Some(n) = v["submission"].as_u64() {
                    self.withdrawn.insert(n, op.index);
                }
            }
            (process::CLIENT, op::ACK) => {
                if let Some(n) = v["submission"].as_u64() {
                    self.acks.insert(
                        n,
                        (
                            op.index,
                            v["messageId"].as_str().unwrap_or_default().to_string(),
                        ),
                    );
                }
            }
            (process::CLIENT, op::SURFACE) => {
                if let Some(n) = v["submission"].as_u64() {
                    self.surfaced.insert(n, op.index);
                }
            }
            (process::CLIENT, op::PENDING_AT_END) => {
                self.pending_at_end = v["submissions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_u64)
                    .collect();
            }
            _ => {}
        }
    }

    /// An Agent op: activations, insertions and when they took effect, turns and tool effects,
    /// recoveries.
    fn agent_op(&mut self, op: &Op) {
        let v = &op.value;
        match (op.process.as_str(), op.f.as_str()) {
            (process::AGENT, op::ACTIVATE) => {
                if let (Some(sid), Some(c)) = (v["session"].as_str(), v["conn"].as_u64()) {
                    self.active.entry(sid.to_string()).or_default().insert(c);
                }
            }
            (process::AGENT, op::DEACTIVATE) => {
                if let (Some(sid), Some(c)) = (v["session"].as_str(), v["conn"].as_u64()) {
                    self.active.entry(sid.to_string()).or_default().remove(&c);
                    self.forget_if_inactive(sid, op.index);
                }
            }
            (process::AGENT, op::CONN_END) => {
                if let Some(c) = v["conn"].as_u64() {
                    self.conn_ended(c, op.index);
                }
            }
            (process::AGENT, op::TOOL_EFFECT) => {
                if let Some(&i) = v["messageId"].as_str().and_then(|m| self.by_mid.get(m)) {
                    self.tool_effects.entry(i).or_default().push(op.index);
                }
            }
            (process::AGENT, op::INSERT) => self.inserted(op),
            ("agent", "durable") | (process::AGENT, op::VISIBLE) => {
                // A fork copies messages under their ids into another session: only the
                // insertion's own session dates it (an op that names none dates it too).
                if let Some(&i) = v["messageId"].as_str().and_then(|m| self.by_mid.get(m)) {
                    if v["session"]
                        .as_str()
                        .is_none_or(|s| s == self.inserts[i].session)
                    {
                        self.inserts[i].took_effect.get_or_insert(op.index);
                    }
                }
            }
            (process::AGENT, op::DISCARD) => {
                if let Some(&i) = v["messageId"].as_str().and_then(|m| self.by_mid.get(m)) {
                    if self.inserts[i].session == v["session"].as_str().unwrap_or_default() {
                        self.inserts[i].discarded_at.get_or_insert(op.index);
                    }
                }
            }
            (process::AGENT, op::TURN_START) => {
                if let Some(&i) = v["messageId"].as_str().and_then(|m| self.by_mid.get(m)) {
                    self.turns.entry(i).or_default().push(op.index);
                }
            }
            (process::AGENT, op::RECOVER) => self.recovered(op),
            _ => {}
        }
    }

    /// The Agent's end of connection `c` (op `at`): its sessions are no longer active there.
    fn conn_ended(&mut self, c: u64, at: usize) {
        let sids: Vec<String> = self
            .active
            .iter()
            .filter(|(_, cs)| cs.contains(&c))
            .map(|(s, _)| s.clone())
            .collect();
        for sid in sids {
            self.active.entry(sid.clone()).or_default().remove(&c);
            self.forget_if_inactive(&sid, at);
        }
    }

    /// An `insert`: a new [`Insert`], found again by its messageId.
    fn inserted(&mut self, op: &Op) {
        let v = &op.value;
        let mid = v["messageId"].as_str().unwrap_or_default().to_string();
        let live_only = v["live_only"] == true;
        if live_only {
            let sid = v["session"].as_str().unwrap_or_default().to_string();
            self.live_pending
                .entry(sid)
                .or_default()
                .push(self.inserts.len());
        }
        let submission = v["conn"]
            .as_u64()
            .and_then(|c| self.attempts.get(&(c, v["id"].to_string())).copied());
        self.by_mid.insert(mid.clone(), self.inserts.len());
        let sent_key = v["conn"]
            .as_u64()
            .and_then(|c| self.sent_keys.get(&(c, v["id"].to_string())).cloned());
        self.inserts.push(Insert {
            sent_key,
            op: op.index,
            session: v["session"].as_str().unwrap_or_default().to_string(),
            message_id: mid,
            key: v["key"].as_str().map(str::to_string),
            submission,
            took_effect: None,
            live_only,
            lost_at: None,
            forgotten_at: None,
            discarded_at: None,
        });
    }

    /// A `recover`: a restart, with what it recovered.
    fn recovered(&mut self, op: &Op) {
        let v = &op.value;
        // A restart: the session is active nowhere any more.
        for cs in self.active.values_mut() {
            cs.clear();
        }
        for (_, idx) in std::mem::take(&mut self.live_pending) {
            for i in idx {
                self.inserts[i].forgotten_at.get_or_insert(op.index);
            }
        }
        let mut m = BTreeMap::new();
        if let Some(o) = v["retained"].as_object() {
            for (sid, ids) in o {
                let set = ids
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect();
                m.insert(sid.clone(), set);
            }
        }
        // What a restart recovered had taken effect by then at the latest, though the
        // Agent may log it `durable` only later in this boot (the adapter's history
        // read): a crash between sync and response leaves no earlier op to date it.
        for (sid, set) in &m {
            for mid in set {
                if let Some(&i) = self.by_mid.get(mid) {
                    if self.inserts[i].session == *sid {
                        self.inserts[i].took_effect.get_or_insert(op.index);
                    }
                }
            }
        }
        if !v["retained"].is_object() {
            // A user Agent that does not report what it kept (`AgentModel::retained`
            // left at its default): assume it kept everything.
            self.unreported.insert(op.index);
        }
        self.recoveries.push((op.index, m));
    }

    /// A session became active on no connection: its live-only keys may be forgotten (A11).
    fn forget_if_inactive(&mut self, sid: &str, at: usize) {
        if self.active.get(sid).is_none_or(|s| s.is_empty()) {
            for i in self.live_pending.remove(sid).unwrap_or_default() {
                self.inserts[i].forgotten_at.get_or_insert(at);
            }
        }
    }
}

/// One Agent answer to a `session/prompt` attempt: (conn, id), op index, messageId or code.
pub(super) type Answer = ((u64, String), usize, Result<String, i64>);

/// Agent answers to `session/prompt` attempts, in order (made once per [`Facts`]: P3 and P4
/// read them).
pub(super) fn prompt_answers<'f>(f: &'f Facts) -> &'f [Answer] {
    f.answers.get_or_init(|| answers_of(f))
}

fn answers_of(f: &Facts) -> Vec<Answer> {
    let mut prompts: BTreeSet<(u64, String)> = BTreeSet::new();
    let mut out = Vec::new();
    for (op, w) in f.ops_with_wire() {
        let Some(w) = w.filter(|w| w.sent) else {
            continue;
        };
        if w.from == "proxy" || w.from == "client" {
            if w.method == Some("session/prompt") {
                prompts.insert(w.key());
            }
            continue;
        }
        if w.from != "agent" {
            continue;
        }
        let key = w.key();
        if !prompts.contains(&key) {
            continue;
        }
        let fr = w.frame;
        if let Some(m) = fr["result"]["messageId"].as_str() {
            out.push((key, op.index, Ok(m.to_string())));
        } else if let Some(c) = fr["error"]["code"].as_i64() {
            out.push((key, op.index, Err(c)));
        }
    }
    out
}

/// Session → the connections it is active on, from the Agent's own log (`activate`,
/// `deactivate`, `conn-end`; an Agent restart, not the cluster store's, clears it). Returns
/// whether `op` was one of those.
pub(super) fn track_active(active: &mut BTreeMap<String, BTreeSet<u64>>, op: &Op) -> bool {
    if op.process != process::AGENT {
        return false;
    }
    // (Read only by the ops below: most Agent ops are none of them.)
    let conn = || op.value["conn"].as_u64().unwrap_or(0);
    let sid = || op.value["session"].as_str().unwrap_or_default();
    match op.f.as_str() {
        "recover" if is_store_op(op) => {}
        "recover" => active.clear(),
        "activate" => {
            active.entry(sid().to_string()).or_default().insert(conn());
        }
        "deactivate" => {
            if let Some(c) = active.get_mut(sid()) {
                c.remove(&conn());
            }
        }
        "conn-end" => {
            let conn = conn();
            for c in active.values_mut() {
                c.remove(&conn);
            }
        }
        _ => return false,
    }
    true
}

/// Whether a JSON-RPC error code says the request itself was malformed (`-32700` parse
/// error, `-32600` invalid request, `-32601` method not found): an answer about the frame,
/// never about the prompt it may have carried. Each checker adds the codes its rule allows.
pub(super) fn malformed_request(code: i64) -> bool {
    use acp_chaos_models::rpc::code as c;
    [c::PARSE_ERROR, c::INVALID_REQUEST, c::METHOD_NOT_FOUND].contains(&code)
}

/// Whether an op renamed `agent` by [`agent_view`] was the cluster store's.
pub(super) fn is_store_op(op: &Op) -> bool {
    op.value["renamed_from"] == "store"
}

/// An attempt as messages name it: `(conn 11, id 112)`, its connection and its JSON-RPC id
/// (as the frame wrote it: a number bare, a string quoted).
pub fn attempt_name(attempt: &(u64, String)) -> String {
    format!("(conn {}, id {})", attempt.0, attempt.1)
}
