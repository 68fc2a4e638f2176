//! One run's contribution to each claim: its counters, and the ops that show the claim's
//! statement in it (its witness, when it is the shortest; those ops are what its diagram
//! draws). Read off the history as the checkers read it ([`acp_chaos::checkers::agent_view`]).
//!
//! The runs it reads have no raw probes ([`super::measure`] leaves them out): every
//! `session/cancel` is a user's stop and every prompt a user's submission.

use std::collections::BTreeMap;

use super::Claim;
use acp_chaos::checkers::{agent_view, Status, SubmissionClass, Verdict};
use acp_chaos::history::{is_agent_host, op, process, History, Op};

/// What a run showed of each claim: counters, and the ops that show its statement.
pub(super) type Seen = BTreeMap<&'static str, (Claim, Option<Vec<usize>>)>;

/// The witness key of a cancelled prompt the Agent inserted anyway (A5's MAY taken): shown
/// under the `ignore` policy.
pub(super) const IGNORED: &str = "cancel-request-effect/ignored";

/// A request on the Agent's side: (connection, JSON-RPC id as text).
type Attempt = (u64, String);

/// The run's counters and witnesses ops, by claim. `verdicts` and `classes` are its
/// checkers' verdicts and its submissions' classes.
pub(super) fn observe(
    h: &History,
    verdicts: &[Verdict],
    classes: &BTreeMap<SubmissionClass, u32>,
) -> Seen {
    let h = agent_view(h);
    let mut o = Observer::default();
    for op in &h.ops {
        o.op(op);
    }
    o.finish(&h, verdicts, classes)
}

/// One held prompt of the Agent's: its session and the op that held it.
#[derive(Debug, Clone)]
struct Held {
    session: String,
    at: usize,
}

/// A user stop the Agent read: the ops on its way, and whether a prompt of its session was
/// held then.
#[derive(Debug, Clone, Default)]
struct StopRead {
    user: Option<usize>,
    sent: Option<usize>,
    read: usize,
    held: bool,
}

/// A user cancel of a submission: the ops on its way and what became of the prompt it named.
#[derive(Debug, Clone, Default)]
struct CancelOf {
    user: usize,
    sent: Option<usize>,
    /// The Agent read it while the named attempt was held (held op, read op).
    held_read: Option<(usize, usize)>,
    /// What the Agent then did with the held attempt: `withdrawn` or `inserted`, and where.
    fate: Option<(&'static str, usize)>,
}

#[derive(Debug, Default)]
struct Observer {
    out: Seen,
    /// The Client's attempts → submission (through a proxy, its rewritten ids too).
    submission_of: BTreeMap<Attempt, u64>,
    /// Each submission's last outcome at the Client: (what, op).
    outcome: BTreeMap<u64, (&'static str, usize)>,
    /// Prompts the Agent holds (and retries waiting on them), by attempt.
    held: BTreeMap<Attempt, Held>,
    /// The last user stop, and the last `session/cancel` the Client wrote.
    last_stop: Option<usize>,
    last_stop_sent: Option<usize>,
    /// The last stop the Agent read, per session.
    stop_read: BTreeMap<String, StopRead>,
    stops: Vec<StopRead>,
    /// Prompts a stop withdrew: (attempt, withdraw op, the op that held it, the stop).
    by_stop: Vec<(Attempt, usize, Option<usize>, StopRead)>,
    /// The Agent's `-32800` answers, by attempt.
    cancelled_answer: BTreeMap<Attempt, usize>,
    /// User cancels, by submission (the last one of each).
    cancels: BTreeMap<u64, CancelOf>,
    /// X3: each insertion's connection, running turns by messageId, and at the Agent's end
    /// of a connection what was running or held on it.
    conn_of_message: BTreeMap<String, u64>,
    running: BTreeMap<String, u64>,
    cut_turns: BTreeMap<String, usize>,
    cut_held: BTreeMap<Attempt, usize>,
    /// X5: requests the transport refused, and those resent on the same connection.
    refused: u64,
    resent: Vec<(Attempt, usize)>,
}

impl Observer {
    fn claim(&mut self, id: &'static str) -> &mut (Claim, Option<Vec<usize>>) {
        self.out.entry(id).or_default()
    }

    fn count(&mut self, id: &'static str, row: &'static str, n: u64) {
        self.claim(id).0.add(row, n);
    }

    /// Keep `ops` as the claim's witness ops in this run, unless it has some already.
    fn show(&mut self, id: &'static str, ops: Vec<usize>) {
        self.claim(id).1.get_or_insert(ops);
    }

    fn op(&mut self, o: &Op) {
        let v = &o.value;
        let attempt = || (v["conn"].as_u64().unwrap_or(0), v["id"].to_string());
        match (o.process.as_str(), o.f.as_str()) {
            (process::CLIENT, op::ATTEMPT) => {
                if let Some(n) = v["submission"].as_u64() {
                    self.submission_of.insert(attempt(), n);
                }
            }
            // A proxy rewrote the attempt's id on its own connection to the Agent.
            (process::PROXY, op::FORWARD) if v["method"] == "session/prompt" => {
                let up = (v["up_conn"].as_u64().unwrap_or(0), v["up_id"].to_string());
                if let Some(&n) = self.submission_of.get(&up) {
                    let down = (
                        v["down_conn"].as_u64().unwrap_or(0),
                        v["down_id"].to_string(),
                    );
                    self.submission_of.insert(down, n);
                }
            }
            (process::CLIENT, f @ (op::ACK | op::SURFACE | op::WITHDRAWN)) => {
                if let Some(n) = v["submission"].as_u64() {
                    let what = match f {
                        op::ACK => "acknowledged",
                        op::SURFACE => "surfaced",
                        _ if v["local"] == true => "withdrawn before it was sent",
                        _ => "withdrawn",
                    };
                    self.outcome.insert(n, (what, o.index));
                }
            }
            (process::USER, op::STOP) => {
                self.count("stop-withdraws-earlier", "user stops", 1);
                self.last_stop = Some(o.index);
            }
            (process::USER, op::CANCEL) => {
                if let Some(n) = v["submission"].as_u64() {
                    self.count("cancel-request-effect", "user cancels of a submission", 1);
                    self.cancels.insert(
                        n,
                        CancelOf {
                            user: o.index,
                            ..CancelOf::default()
                        },
                    );
                }
            }
            (process::NET, op::SEND) => self.sent(o),
            (process::NET, op::RECV) => self.read(o),
            (process::AGENT, _) => self.agent(o),
            (process::CLIENT, op::NOT_ACCEPTED) => self.refused += 1,
            (process::CLIENT, op::RESEND_NOT_ACCEPTED) => self.resent.push((attempt(), o.index)),
            _ => {}
        }
    }

    /// A frame written: the Client's stops and cancels, the Agent's `-32800` answers.
    fn sent(&mut self, o: &Op) {
        let v = &o.value;
        let from = v["from"].as_str().unwrap_or_default();
        let fr = &v["frame"];
        let conn = v["conn"].as_u64().unwrap_or(0);
        match fr["method"].as_str() {
            Some("session/cancel") if from == process::CLIENT => {
                self.count(
                    "stop-withdraws-earlier",
                    "user stops the Client wrote as session/cancel",
                    1,
                );
                self.last_stop_sent = Some(o.index);
            }
            Some("$/cancel_request") if from == process::CLIENT => {
                let named = (conn, fr["params"]["requestId"].to_string());
                if let Some(c) = self
                    .submission_of
                    .get(&named)
                    .and_then(|n| self.cancels.get_mut(n))
                {
                    c.sent.get_or_insert(o.index);
                }
            }
            None if is_agent_host(from)
                && fr["error"]["code"] == acp_chaos_models::rpc::code::REQUEST_CANCELLED =>
            {
                self.cancelled_answer
                    .entry((conn, fr["id"].to_string()))
                    .or_insert(o.index);
            }
            _ => {}
        }
    }

    /// A frame read: by the Agent, a stop or a `$/cancel_request`.
    fn read(&mut self, o: &Op) {
        let v = &o.value;
        let from = v["from"].as_str().unwrap_or_default();
        if is_agent_host(from) {
            return;
        }
        let fr = &v["frame"];
        let conn = v["conn"].as_u64().unwrap_or(0);
        match fr["method"].as_str() {
            Some("session/cancel") => {
                let session = fr["params"]["sessionId"].as_str().unwrap_or_default();
                let held = self.held.values().any(|h| h.session == session);
                let s = StopRead {
                    user: self.last_stop,
                    sent: self.last_stop_sent,
                    read: o.index,
                    held,
                };
                self.stops.push(s.clone());
                self.stop_read.insert(session.to_string(), s);
            }
            Some("$/cancel_request") => {
                let named = (conn, fr["params"]["requestId"].to_string());
                // Through a proxy the id is the proxy's: the attempt it forwarded.
                let held = self.held.get(&named).map(|h| h.at);
                let sub = self.submission_of.get(&named).copied();
                if let (Some(at), Some(c)) = (held, sub.and_then(|n| self.cancels.get_mut(&n))) {
                    c.held_read.get_or_insert((at, o.index));
                }
            }
            _ => {}
        }
    }

    /// The Agent's effects: holds, insertions, withdrawals, turns, connection ends.
    fn agent(&mut self, o: &Op) {
        let v = &o.value;
        let attempt = (v["conn"].as_u64().unwrap_or(0), v["id"].to_string());
        match o.f.as_str() {
            op::HOLD | op::WAIT_HELD => {
                let session = v["session"].as_str().unwrap_or_default().to_string();
                self.held.insert(
                    attempt,
                    Held {
                        session,
                        at: o.index,
                    },
                );
            }
            op::RELEASE => {
                self.held.remove(&attempt);
            }
            op::INSERT => self.inserted(o, attempt),
            op::WITHDRAW => self.withdrawn(o, attempt),
            op::DROP_HELD => {
                self.held.remove(&attempt);
                if self.cut_held.remove(&attempt).is_some() {
                    self.count(
                        "connection-ends-mid-work",
                        "of the held, dropped unanswered",
                        1,
                    );
                }
            }
            op::STOP_RECORDED => {
                self.count("stop-reaches-other-nodes", "stops recorded at the store", 1);
            }
            op::RECOVER if v["renamed_from"] != "store" => {
                // A restart ends what the process was running or holding.
                self.running.clear();
                self.held.clear();
            }
            op::TURN_START => {
                if let Some(m) = v["messageId"].as_str() {
                    if let Some(&c) = self.conn_of_message.get(m) {
                        self.running.insert(m.to_string(), c);
                    }
                }
            }
            op::TURN_END => {
                let m = v["messageId"].as_str().unwrap_or_default();
                self.running.remove(m);
                if let Some(at) = self.cut_turns.remove(m) {
                    let row = if v["stopReason"] == "cancelled" {
                        "of the turns, cancelled"
                    } else {
                        "of the turns, ran to their end"
                    };
                    self.count("connection-ends-mid-work", row, 1);
                    self.show("connection-ends-mid-work", vec![at, o.index]);
                }
            }
            op::CONN_END => self.conn_ended(o),
            _ => {}
        }
    }

    /// A prompt `attempt` inserted: its message's connection noted, its cancel's fate, and
    /// counted when it was held as its connection ended.
    fn inserted(&mut self, o: &Op, attempt: Attempt) {
        let v = &o.value;
        if let (Some(m), Some(c)) = (v["messageId"].as_str(), v["conn"].as_u64()) {
            self.conn_of_message.insert(m.to_string(), c);
        }
        self.fate(&attempt, "inserted", o.index);
        self.held.remove(&attempt);
        if let Some(at) = self.cut_held.remove(&attempt) {
            self.count(
                "connection-ends-mid-work",
                "of the held, kept and inserted after the end",
                1,
            );
            self.show("connection-ends-mid-work", vec![at, o.index]);
        }
    }

    /// A held prompt `attempt` withdrawn: its cancel's fate, and by a stop, what the stop
    /// reached.
    fn withdrawn(&mut self, o: &Op, attempt: Attempt) {
        let v = &o.value;
        self.fate(&attempt, "withdrawn", o.index);
        let session = v["session"].as_str().unwrap_or_default();
        if matches!(v["by"].as_str(), Some("session/cancel" | "stop")) {
            if let Some(s) = self.stop_read.get(session).cloned() {
                let hold = self.held.get(&attempt).map(|h| h.at);
                self.by_stop.push((attempt.clone(), o.index, hold, s));
            }
        }
        if v["by"] == "stop" {
            self.count(
                "stop-reaches-other-nodes",
                "held prompts withdrawn on another node than the one that read the stop",
                1,
            );
            let read = self.stop_read.get(session).map_or(o.index, |s| s.read);
            self.show("stop-reaches-other-nodes", vec![read, o.index]);
        }
        self.held.remove(&attempt);
    }

    /// A connection the Agent saw end: the turns running and prompts held on it are cut (each
    /// counted once).
    fn conn_ended(&mut self, o: &Op) {
        let conn = o.value["conn"].as_u64().unwrap_or(0);
        self.count(
            "connection-ends-mid-work",
            "connections the Agent saw end",
            1,
        );
        let turns: Vec<String> = self
            .running
            .iter()
            .filter(|(_, c)| **c == conn)
            .map(|(m, _)| m.clone())
            .collect();
        for m in turns {
            if self.cut_turns.insert(m, o.index).is_none() {
                self.count(
                    "connection-ends-mid-work",
                    "turns running when their connection ended",
                    1,
                );
            }
        }
        let held: Vec<Attempt> = self.held.keys().filter(|a| a.0 == conn).cloned().collect();
        for a in held {
            if self.cut_held.insert(a, o.index).is_none() {
                self.count(
                    "connection-ends-mid-work",
                    "prompts held when their connection ended",
                    1,
                );
            }
        }
    }

    /// A user cancel's named attempt, held when the Agent read the cancel, was `what` at `at`.
    fn fate(&mut self, attempt: &Attempt, what: &'static str, at: usize) {
        if let Some(c) = self
            .submission_of
            .get(attempt)
            .and_then(|n| self.cancels.get_mut(n))
        {
            if c.held_read.is_some() && c.fate.is_none() {
                c.fate = Some((what, at));
            }
        }
    }

    fn finish(
        mut self,
        h: &History,
        verdicts: &[Verdict],
        classes: &BTreeMap<SubmissionClass, u32>,
    ) -> Seen {
        self.stops_seen();
        self.cancels_seen();
        self.ends_seen(h);
        self.resends_seen();
        let forgotten: Vec<&Verdict> = verdicts
            .iter()
            .filter(|v| v.status == Status::Finding && ["P1", "P12"].contains(&v.property.as_str()))
            .collect();
        let submissions: u64 = classes.values().map(|n| u64::from(*n)).sum();
        self.count("forgotten-keys", "submissions", submissions);
        if let Some(v) = forgotten.first() {
            self.count(
                "forgotten-keys",
                "runs with a second insertion the rules allow",
                1,
            );
            self.show("forgotten-keys", v.witnesses.clone());
        }
        let again = classes
            .get(&SubmissionClass::Reinserted)
            .copied()
            .unwrap_or(0);
        self.count(
            "forgotten-keys",
            "submissions inserted a second time, as the rules allow",
            u64::from(again),
        );
        self.out
    }

    fn stops_seen(&mut self) {
        let read_held = self.stops.iter().filter(|s| s.held).count() as u64;
        self.count(
            "stop-withdraws-earlier",
            "of them, read by the Agent while a prompt of the session was held",
            read_held,
        );
        for (a, at, hold, stop) in std::mem::take(&mut self.by_stop) {
            let Some(&n) = self.submission_of.get(&a) else {
                continue;
            };
            self.count(
                "stop-withdraws-earlier",
                "queued prompts those stops withdrew",
                1,
            );
            let (what, end) = self.outcome.get(&n).copied().unwrap_or(("pending", at));
            let row = match what {
                "withdrawn" => "of the withdrawn, shown to the user as withdrawn by its user",
                "acknowledged" => {
                    "of the withdrawn, acknowledged anyway (another attempt inserted)"
                }
                "surfaced" => "of the withdrawn, shown to the user as failed",
                _ => "of the withdrawn, still pending at the end",
            };
            self.count("stop-withdraws-earlier", row, 1);
            if what == "withdrawn" {
                let answer = self.cancelled_answer.get(&a).copied();
                let ops = [
                    stop.user,
                    stop.sent,
                    Some(stop.read),
                    hold,
                    Some(at),
                    answer,
                    Some(end),
                ];
                self.show(
                    "stop-withdraws-earlier",
                    ops.into_iter().flatten().collect(),
                );
            }
        }
    }

    fn cancels_seen(&mut self) {
        for (n, c) in std::mem::take(&mut self.cancels) {
            let id = "cancel-request-effect";
            if c.sent.is_some() {
                self.count(id, "of them, written as $/cancel_request", 1);
            }
            let Some((held, read)) = c.held_read else {
                continue;
            };
            self.count(
                id,
                "of those, read by the Agent while the prompt they name was held",
                1,
            );
            let end = self.outcome.get(&n).copied();
            match c.fate {
                Some(("withdrawn", at)) => {
                    self.count(id, "of the held, withdrawn (-32800, nothing inserted)", 1);
                    let ops = [Some(c.user), c.sent, Some(held), Some(read), Some(at)];
                    let mut ops: Vec<usize> = ops.into_iter().flatten().collect();
                    ops.extend(end.map(|e| e.1));
                    self.show(id, ops);
                }
                Some((_, at)) => {
                    self.count(
                        id,
                        "of the held, inserted in turn and answered with its messageId",
                        1,
                    );
                    let ops = [Some(c.user), c.sent, Some(held), Some(read), Some(at)];
                    let mut ops: Vec<usize> = ops.into_iter().flatten().collect();
                    ops.extend(end.map(|e| e.1));
                    self.show(IGNORED, ops);
                }
                None => self.count(id, "of the held, neither (a crash or a close first)", 1),
            }
        }
    }

    /// What became of the work and the held prompts a connection's end cut, by policy.
    fn ends_seen(&mut self, h: &History) {
        let id = "connection-ends-mid-work";
        let left_turns = self.cut_turns.len() as u64;
        let left_held = self.cut_held.len() as u64;
        if left_turns > 0 {
            self.count(
                id,
                "of the turns, still running at the end, or lost in a crash",
                left_turns,
            );
        }
        if left_held > 0 {
            self.count(
                id,
                "of the held, withdrawn by a cancel or close, or still held at the end",
                left_held,
            );
        }
        // The policies the run drew: the rows above split by them.
        let agent = &h.header["plan"]["agent"];
        let tag = |k: &str| agent[k].as_str().map(str::to_string).unwrap_or_default();
        let (o1, o2) = (tag("o1"), tag("o2"));
        let turns = self
            .claim(id)
            .0
            .get("turns running when their connection ended");
        let held = self
            .claim(id)
            .0
            .get("prompts held when their connection ended");
        if o2 == "cancel" {
            self.count(id, "of the turns, under O2 cancel", turns);
        } else {
            self.count(id, "of the turns, under O2 continue", turns);
        }
        if o1 == "drop" {
            self.count(id, "of the held, under O1 drop", held);
        } else {
            self.count(id, "of the held, under O1 keep", held);
        }
    }

    fn resends_seen(&mut self) {
        let id = "resend-before-acceptance";
        let refused = self.refused;
        self.count(
            id,
            "requests the remote transport refused before acceptance",
            refused,
        );
        for (a, at) in std::mem::take(&mut self.resent) {
            self.count(id, "of them, resent on the same connection (X5)", 1);
            let Some(&n) = self.submission_of.get(&a) else {
                self.count(id, "of the resent, not a prompt", 1);
                continue;
            };
            let (what, end) = self.outcome.get(&n).copied().unwrap_or(("pending", at));
            let row = match what {
                "acknowledged" => "of the resent, prompts that ended acknowledged",
                "surfaced" => "of the resent, prompts that ended shown to the user as failed",
                "pending" => "of the resent, prompts still pending at the end",
                _ => "of the resent, prompts that ended withdrawn",
            };
            self.count(id, row, 1);
            if what == "acknowledged" {
                self.show(id, vec![at, end]);
            }
        }
    }
}
