//! The out-of-band ledger shared by every host of one run: it appends the history, numbers
//! connections, and arms the nemesis's event-triggered faults (frame and submission triggers).
//!
//! One simulation runs on one thread, so the ledger is an `Rc<RefCell<_>>`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use acp_chaos_models::ConnId;
use indexmap::IndexMap;
use serde_json::{json, Value};

use super::snapshot::{of_debug, Snapshots};
use super::trace::{Accepted, PointPass, Trace};
use crate::history::{is_agent_host, op, process, Op, OpType};
use crate::models::Point;
use crate::nemesis::{
    fault_line, Exchange, ExchangeCount, FaultKind, FaultSpec, FrameDecision, NemesisAction,
    Sender, Side,
};
use crate::plan::{Plan, UserEvent};

/// The shared run state.
pub struct Ledger {
    /// Simulated time, set by the step loop before each step.
    pub now_ms: u64,
    /// The history so far.
    pub ops: Vec<Op>,
    faults: Vec<FaultSpec>,
    fired: Vec<bool>,
    armed: bool,
    rendezvous: IndexMap<String, ConnId>,
    next_conn: ConnId,
    blackholed: BTreeSet<ConnId>,
    /// Which exchange each frame written is part of, for frame triggers.
    exchanges: ExchangeCount,
    /// Transient errors armed for the next `session/prompt` requests the Agent reads.
    transient: u32,
    /// Process-level faults triggered by events, for the step loop.
    pub queue: Vec<(usize, NemesisAction)>,
    /// Workload (at_ms, submission, slot, text).
    pub workload: Vec<(u64, UserEvent)>,
    /// How many workload entries were delivered to the Client.
    pub delivered: usize,
    /// Submissions the Client holds pending (published after every event it handles).
    pub client_pending: Vec<u64>,
    /// Per Agent host (the agent, or each cluster node): no running turn, no held prompt.
    pub idle: IndexMap<&'static str, bool>,
    /// Cluster: the node the Client's newest connection was routed to (crashes and store
    /// partitions aimed at "the Agent" hit it).
    pub serving: &'static str,
    routing: rand_chacha::ChaCha8Rng,
    /// Cluster: a fault with `reroute` fired while the Client was on this node, so its next
    /// connection goes elsewhere.
    avoid: Option<&'static str>,
    nodes: usize,
    /// The Client talks the remote transport straight to the nodes (lose-exchange applies).
    remote: bool,
    /// Requests written toward the Agent (by the Client, the proxy or the watcher) whose answer
    /// has not arrived, with their sender: the run is not quiet while one is out.
    pub outstanding: IndexMap<(ConnId, String), String>,
    /// Stdio: the Agent's pipe ended, so the process exits; the Client starts it again.
    pub stdio_exit: bool,
    /// A disk fault fired (`flip-bit`, `zero-sector`, `lose-synced-record`): the Agent host
    /// damages its log so before it next recovers.
    pub disk_fault: Option<crate::nemesis::DiskDamage>,
    /// Remote transport: connections whose update stream died (`drop-updates`).
    updates_dead: BTreeSet<ConnId>,
    /// Frames handed to a connection's writer and not yet written, dropped or lost, by
    /// (connection, writer): a stalled writer keeps the run from being quiet.
    pub queued: IndexMap<(ConnId, &'static str), VecDeque<u64>>,
    /// The first session the user's Client created (the watcher resumes it).
    pub known_session: Option<String>,
    boots: IndexMap<&'static str, u32>,
    /// Frames logged as sent so far (a sequence number for `reorder-frame`).
    sends: u64,
    /// What the run did that the history does not hold (points passed, submissions accepted).
    pub trace: Trace,
    /// Per connection: (sequence number, op index) of its newest send.
    last_send: IndexMap<ConnId, (u64, usize)>,
    /// Frames written and not yet read, by their line: the reader takes the value the writer
    /// parsed instead of parsing the same text again ([`Ledger::take_written`]). Keyed by the
    /// whole line, so a reader only ever gets what parsing its own line would give.
    written: BTreeMap<String, Vec<Value>>,
    /// In a run exploration places faults over: what a snapshot of the world needs beside
    /// the ledger ([`super::snapshot`]).
    pub snapshots: Option<Snapshots>,
}

impl Ledger {
    /// A fresh ledger for a plan.
    pub fn new(plan: &Plan) -> Ledger {
        Ledger {
            now_ms: 0,
            ops: Vec::with_capacity(512),
            written: BTreeMap::new(),
            faults: plan.faults.clone(),
            fired: vec![false; plan.faults.len()],
            armed: true,
            rendezvous: IndexMap::new(),
            next_conn: 1,
            blackholed: BTreeSet::new(),
            exchanges: ExchangeCount::default(),
            transient: 0,
            queue: Vec::new(),
            workload: plan.user_events(),
            delivered: 0,
            client_pending: Vec::new(),
            idle: IndexMap::new(),
            serving: crate::history::NODES[0],
            routing: crate::plan::stream(plan.seed, "routing"),
            avoid: None,
            remote: plan.topology().acts(crate::nemesis::Reach::Remote),
            outstanding: IndexMap::new(),
            updates_dead: BTreeSet::new(),
            stdio_exit: false,
            disk_fault: None,
            queued: IndexMap::new(),
            nodes: if plan.agent.design == acp_chaos_models::Design::Cluster {
                plan.nodes
            } else {
                0
            },
            known_session: None,
            boots: IndexMap::new(),
            sends: 0,
            last_send: IndexMap::new(),
            trace: Trace::default(),
            snapshots: None,
        }
    }

    /// Whether every Agent host is idle.
    pub fn agents_idle(&self) -> bool {
        self.idle.values().all(|i| *i)
    }

    /// The host a new connection from `from` goes to: `agent`, or a cluster node drawn from
    /// the run's routing stream (every connection, so each retry may land on any node).
    pub fn route(&mut self, from: &str) -> &'static str {
        if self.nodes == 0 {
            return "agent";
        }
        use rand::Rng;
        let mut i = self.routing.gen_range(0..self.nodes);
        let mut value = json!({"from": from, "to": crate::history::NODES[i]});
        if from == "client" || from == "proxy" {
            // The draw is made either way, so a reroute moves this connection only.
            if self.avoid.take() == Some(crate::history::NODES[i]) && self.nodes > 1 {
                i = (i + 1) % self.nodes;
                value = json!({"from": from, "to": crate::history::NODES[i], "rerouted": true});
            }
            self.serving = crate::history::NODES[i];
        }
        self.record(process::NET, OpType::Info, op::ROUTE, value);
        crate::history::NODES[i]
    }

    /// Append one op.
    pub fn record(&mut self, process: &str, kind: OpType, f: &str, value: Value) -> usize {
        if process == "client" && f == "attempt" {
            if let (Some(c), Some(n)) = (value["conn"].as_u64(), value["submission"].as_u64()) {
                self.exchanges.attempt(c, value["id"].to_string(), n as u32);
            }
        }
        let index = self.ops.len();
        self.ops.push(Op {
            index,
            time_ms: self.now_ms,
            process: process.to_string(),
            kind,
            f: f.to_string(),
            value,
        });
        index
    }

    /// Count a process start; returns the boot number (0 for the first).
    pub fn boot(&mut self, host: &'static str) -> u32 {
        let b = self.boots.entry(host).or_insert(0);
        let n = *b;
        *b += 1;
        n
    }

    /// The connection number for the client-side socket address `client_addr`: the first end
    /// to ask allocates it, the second end claims it.
    pub fn conn_id(&mut self, client_addr: &str, opener: &str) -> ConnId {
        if let Some(id) = self.rendezvous.shift_remove(client_addr) {
            return id;
        }
        let id = self.next_conn;
        self.next_conn += 1;
        self.rendezvous.insert(client_addr.to_string(), id);
        self.record(
            process::NET,
            OpType::Info,
            op::CONN_OPEN,
            json!({"conn": id, "client_addr": client_addr, "seen_by": opener}),
        );
        id
    }

    /// Whether a silent break swallowed this connection.
    pub fn is_blackholed(&self, conn: ConnId) -> bool {
        self.blackholed.contains(&conn)
    }

    /// Stop firing faults (heal). Silently broken connections stay broken: their lost frames
    /// are gone, so they may only end (by heartbeat), never flow again.
    pub fn disarm(&mut self) {
        self.armed = false;
    }

    /// What the nemesis applied in the safety phase, logged with `heal`:
    /// `{"planned": n, "applied": {kind: count}, "not_applied": [fault line, ...]}` (a fault
    /// whose trigger never came up, e.g. a frame the run never sent).
    pub fn applied(&self) -> Value {
        let mut applied: std::collections::BTreeMap<&str, u32> = Default::default();
        let mut not_applied = Vec::new();
        for (f, fired) in self.faults.iter().zip(&self.fired) {
            if *fired {
                *applied.entry(f.kind.as_str()).or_default() += 1;
            } else {
                not_applied.push(fault_line(f));
            }
        }
        json!({"planned": self.faults.len(), "applied": applied, "not_applied": not_applied})
    }

    /// Mark fault `i` as fired and log it.
    pub fn fire(&mut self, i: usize, detail: Value) {
        self.fired[i] = true;
        if self.faults[i].reroute && self.nodes > 1 {
            self.avoid = Some(self.serving);
        }
        let line = fault_line(&self.faults[i]);
        self.record(
            "nemesis",
            OpType::Info,
            self.faults[i].kind.as_str(),
            json!({"fault": i, "spec": line, "detail": detail}),
        );
    }

    /// A writer is about to send `frame`, parsed from `line`, on `conn`; `from` is `client` or
    /// `agent`. Logs the send (the frame moves into its op), keeps a copy for the reader of a
    /// frame that is on its way ([`Ledger::take_written`]), and decides the frame's fate.
    ///
    /// Long on purpose: the per-frame decision in the order it is made: a silently broken
    /// connection, a dead update stream, which exchange the frame belongs to, each armed fault,
    /// what is in flight, the log.
    pub fn on_send(&mut self, conn: ConnId, from: &str, line: &str, frame: Value) -> FrameDecision {
        // The state where this frame's place is: the op that logs it is the `nemesis` op of a
        // fault that loses it (the first op this call records), or its `send` (below).
        if self.snapshots.is_some() {
            let s = self.snapshot();
            self.trace.frame_states.insert(self.ops.len(), s);
        }
        if self.blackholed.contains(&conn) {
            return FrameDecision::Lose { silent: true };
        }
        let id_key = frame.get("id").map(|i| i.to_string());
        if self.updates_dead.contains(&conn) && is_agent_host(from) && frame.get("method").is_some()
        {
            // On the dead update stream: an update or an Agent request, lost unseen (logged so
            // a reader sees what the dead stream swallowed).
            self.record(process::NET,
                OpType::Info,
                op::DROPPED,
                json!({"conn": conn, "from": from, "method": frame["method"], "why": "update stream dead"}),
            );
            return FrameDecision::Drop {
                not_accepted: false,
            };
        }
        // Which exchange is this frame part of, and whose frames does it count among?
        let exchange = self.exchanges.frame(
            conn,
            from,
            frame.get("method").and_then(Value::as_str),
            id_key.as_ref(),
        );
        let mut decision = FrameDecision::Deliver;
        if let (
            true,
            Some(Exchange {
                side,
                method,
                nth,
                of,
                by: sender,
            }),
        ) = (self.armed, exchange)
        {
            for i in 0..self.faults.len() {
                let f = &self.faults[i];
                let t = &f.on;
                let counted = match t.attempt_of {
                    Some(s) => of == Some((s, t.nth)),
                    None => t.nth == nth,
                };
                if self.fired[i]
                    || t.by.unwrap_or(Sender::Client) != sender
                    || t.frame != Some(side)
                    || t.method.as_deref() != Some(method.as_str())
                    || !counted
                {
                    continue;
                }
                let detail = frame_op(conn, from, frame.clone());
                match f.kind {
                    FaultKind::LoseFrame if decision == FrameDecision::Deliver => {
                        decision = FrameDecision::Lose { silent: f.silent };
                        if f.silent {
                            self.blackholed.insert(conn);
                        }
                        self.fire(i, detail);
                    }
                    FaultKind::LoseExchange
                        if decision == FrameDecision::Deliver && self.remote =>
                    {
                        decision = FrameDecision::Drop {
                            not_accepted: side == Side::Request,
                        };
                        if side == Side::Response {
                            // The exchange is over: its answer is gone.
                            if let Some(id) = &id_key {
                                self.outstanding.shift_remove(&(conn, id.clone()));
                            }
                        }
                        self.fire(i, detail);
                    }
                    FaultKind::DropUpdates if self.remote => {
                        self.updates_dead.insert(conn);
                        self.fire(i, detail);
                    }
                    FaultKind::StallFrame if decision == FrameDecision::Deliver => {
                        decision = FrameDecision::Stall(f.stall_ms.unwrap_or(100));
                        self.fire(i, detail);
                    }
                    FaultKind::ReorderFrame if decision == FrameDecision::Deliver => {
                        decision = FrameDecision::Reorder {
                            bound_ms: f.stall_ms.unwrap_or(40),
                            after: 0,
                        };
                        self.fire(i, detail);
                    }
                    FaultKind::TransientError => {
                        // The Agent rejects the next prompt it reads (the one this request
                        // becomes, also through a proxy that rewrites its id).
                        self.transient += 1;
                        self.fire(i, detail);
                    }
                    k => {
                        if let Some(a) = NemesisAction::of(f) {
                            self.queue.push((i, a));
                        } else {
                            tracing::debug!(?k, "fault kind ignores frame triggers");
                        }
                    }
                }
            }
        }
        let is_request =
            frame.get("method").is_some() && frame.get("id").is_some_and(|i| !i.is_null());
        if is_request && !is_agent_host(from) && !matches!(decision, FrameDecision::Drop { .. }) {
            if let Some(id) = &id_key {
                self.outstanding
                    .insert((conn, id.clone()), from.to_string());
            }
        }
        // A line that is not JSON has no id, but the Agent still owes it a `-32700`: it is in
        // flight until the Agent reads it, or the run could end before that answer.
        if let (Value::String(line), false) = (&frame, is_agent_host(from)) {
            if !matches!(decision, FrameDecision::Drop { .. }) {
                self.outstanding
                    .insert((conn, format!("raw:{line}")), from.to_string());
            }
        }
        if !matches!(
            decision,
            FrameDecision::Lose { .. } | FrameDecision::Drop { .. }
        ) {
            // On its way (now, or after a stall or reorder): its reader will want it parsed.
            self.written
                .entry(line.to_string())
                .or_default()
                .push(frame.clone());
            if self.snapshots.is_some() {
                // After any fault that fired at this frame, with what it decided (a stall's
                // length is the writer's, not yet a timer).
                let s = self.snapshot().map(|s| of_debug(&(s, decision)));
                self.trace.frame_states.insert(self.ops.len(), s);
            }
            self.record(
                process::NET,
                OpType::Info,
                op::SEND,
                frame_op(conn, from, frame),
            );
            self.sends += 1;
            self.last_send
                .insert(conn, (self.sends, self.ops.len() - 1));
            if let FrameDecision::Reorder { after, .. } = &mut decision {
                *after = self.sends;
            }
        }
        decision
    }

    /// The frame a writer parsed from `line` ([`Ledger::on_send`]), if one such line is still
    /// unread; the reader parses the line itself otherwise (a line written before the
    /// connection's writer ran, or split or joined on the way).
    pub fn take_written(&mut self, line: &str) -> Option<Value> {
        let frames = self.written.get_mut(line)?;
        let frame = frames.pop();
        if frames.is_empty() {
            self.written.remove(line);
        }
        frame
    }

    /// `reorder-frame`: a connection other than `conn` that has sent a frame after send number
    /// `after`, with the op index of that send.
    pub fn overtaken(&self, conn: ConnId, after: u64) -> Option<(ConnId, usize)> {
        self.last_send
            .iter()
            .find(|(c, (seq, _))| **c != conn && *seq > after)
            .map(|(c, (_, op))| (*c, *op))
    }

    /// A process read `frame` on `conn`. A request the Agent read is no longer in flight (from
    /// then on the Agent's idleness says whether work is left: an idle Agent that never
    /// answers is P7's violation, not a run that never ends); an answer settles its request.
    pub fn on_recv(&mut self, conn: ConnId, process: &str, frame: &Value) {
        if let (Value::String(line), true) = (frame, is_agent_host(process) || process == "proxy") {
            // A line that is not JSON, read by the Agent (it answers at once, -32700) or by a
            // proxy in front of it (which answers it or writes it on, in flight again).
            self.outstanding
                .shift_remove(&(conn, format!("raw:{line}")));
            if let Some(i) = self.idle.get_mut(process) {
                *i = false;
            }
            return;
        }
        let Some(id) = frame.get("id") else { return };
        let agent_reads_request = is_agent_host(process) && frame.get("method").is_some();
        let answer_arrives = !is_agent_host(process) && frame.get("method").is_none();
        if agent_reads_request || answer_arrives {
            self.outstanding.shift_remove(&(conn, id.to_string()));
        }
        if agent_reads_request {
            // Busy until it has handled the request (it may await its store first).
            if let Some(i) = self.idle.get_mut(process) {
                *i = false;
            }
        }
    }

    /// A frame was handed to the writer of `conn` at `from`.
    ///
    /// `line` is the frame's hash in a snapshotting run (the snapshot holds what is queued,
    /// not only how much); `None` otherwise.
    pub fn frame_queued(&mut self, conn: ConnId, from: &'static str, line: Option<u64>) {
        self.queued
            .entry((conn, from))
            .or_default()
            .push_back(line.unwrap_or(0));
    }

    /// The writer is done with one frame (written, dropped or lost).
    pub fn frame_done(&mut self, conn: ConnId, from: &'static str) {
        if let Some(q) = self.queued.get_mut(&(conn, from)) {
            q.pop_front();
            if q.is_empty() {
                self.queued.shift_remove(&(conn, from));
            }
        }
    }

    /// The writer is gone (connection closed, broken, or its process crashed): its queue with it.
    pub fn writer_gone(&mut self, conn: ConnId, from: &'static str) {
        self.queued.shift_remove(&(conn, from));
    }

    /// A connection ended: nothing on it will be answered.
    pub fn on_conn_end(&mut self, conn: ConnId) {
        self.outstanding.retain(|(c, _), _| *c != conn);
    }

    /// A host crashed: the requests it wrote will never be read as answered.
    pub fn on_crash(&mut self, host: &str) {
        if let Some(s) = &mut self.snapshots {
            s.crashed(host);
        }
        self.outstanding.retain(|_, from| from != host);
    }

    /// The Agent read a request: must it reject it with a transient error?
    pub fn take_transient(&mut self, frame: &Value) -> bool {
        if self.transient > 0 && frame["method"] == "session/prompt" && frame.get("id").is_some() {
            self.transient -= 1;
            return true;
        }
        false
    }

    /// The Client accepted submission `n`: queue faults triggered by it.
    pub fn on_submission(&mut self, n: u64) {
        let state = self.snapshot();
        self.trace.accepted.push(Accepted {
            submission: n,
            ops_before: self.ops.len(),
            time_ms: self.now_ms,
            state,
        });
        if !self.armed {
            return;
        }
        for i in 0..self.faults.len() {
            if !self.fired[i] && self.faults[i].on.submission.map(u64::from) == Some(n) {
                if let Some(a) = NemesisAction::of(&self.faults[i]) {
                    self.queue.push((i, a));
                }
            }
        }
    }

    /// Host `host` passed protocol point `point` (the trace, not the history, keeps it).
    pub fn on_point(&mut self, point: Point, host: &'static str) {
        let state = self.snapshot();
        self.trace.points.push(PointPass {
            point,
            host,
            ops_before: self.ops.len(),
            time_ms: self.now_ms,
            state,
        });
    }

    /// The world's state now as one number ([`super::snapshot`]): `None` in a run that takes
    /// no snapshots, or when a party gives no digest.
    pub fn snapshot(&self) -> Option<u64> {
        let s = self.snapshots.as_ref()?;
        let ledger = of_debug(&(
            (
                self.now_ms,
                &self.fired,
                self.armed,
                self.transient,
                &self.queue,
            ),
            (self.delivered, &self.client_pending, &self.idle),
            (self.serving, self.routing.get_word_pos(), self.avoid),
            (&self.outstanding, self.stdio_exit, self.disk_fault),
            (&self.updates_dead, &self.queued, &self.known_session),
            (&self.boots, &self.blackholed),
        ));
        s.take(ledger)
    }

    /// Whether fault `i` may still fire (used by the step loop for time and point triggers).
    pub fn may_fire(&self, i: usize) -> bool {
        self.armed && !self.fired[i]
    }
}

/// A frame op's value, `{"conn", "from", "frame"}` in that order (as `json!` writes it: the
/// same bytes). Built by hand because `json!` copies an interpolated `Value` by serializing it,
/// which costs far more than a clone, once per frame sent and read.
pub(super) fn frame_op(conn: ConnId, from: &str, frame: Value) -> Value {
    let mut m = serde_json::Map::with_capacity(3);
    m.insert("conn".into(), Value::from(conn));
    m.insert("from".into(), Value::from(from));
    m.insert("frame".into(), frame);
    Value::Object(m)
}
