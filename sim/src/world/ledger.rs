//! The out-of-band ledger shared by every host of one run: it appends the history, numbers
//! connections, tracks what is in flight, and holds the run's [`Nemesis`], which decides each
//! frame's and submission's fate; the ledger logs what fired.
//!
//! One simulation runs on one thread, so the ledger is an `Rc<RefCell<_>>`.

use std::collections::{BTreeMap, VecDeque};

use acp_chaos_models::ConnId;
use indexmap::IndexMap;
use serde_json::{json, Value};

use tokio::sync::mpsc::UnboundedSender;

use super::event::Ev;
use super::snapshot::{of_debug, Snapshots};
use super::trace::{
    store_op_name, store_op_session, Accepted, PointPass, StoreStep, StoreStepKind, Trace,
};
use crate::history::{is_agent_host, op, process, Op, OpType};
use crate::models::Point;
use crate::nemesis::{fault_line, FrameDecision, Nemesis, Swallowed};
use crate::plan::{Plan, UserEvent};

/// The shared run state.
pub struct Ledger {
    /// Simulated time, set by the step loop before each step.
    pub now_ms: u64,
    /// The history so far.
    pub ops: Vec<Op>,
    /// The nemesis: its schedule, what fired, and each frame's and submission's fate.
    pub nemesis: Nemesis,
    rendezvous: IndexMap<String, ConnId>,
    next_conn: ConnId,
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
    /// Requests written toward the Agent (by the Client, the proxy or the watcher) whose answer
    /// has not arrived, with their sender: the run is not quiet while one is out.
    pub outstanding: IndexMap<(ConnId, String), String>,
    /// Stdio: the Agent's pipe ended, so the process exits; the Client starts it again.
    pub stdio_exit: bool,
    /// A disk fault fired (`flip-bit`, `zero-sector`, `lose-synced-record`): the Agent host
    /// damages its log so before it next recovers.
    pub disk_fault: Option<crate::nemesis::DiskDamage>,
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
    /// Hosts a `stall-point` stops at the point they passed, ms ([`Ledger::take_pause`]).
    pub pauses: BTreeMap<&'static str, u64>,
    /// Per connection: (sequence number, op index) of its newest send.
    last_send: IndexMap<ConnId, (u64, usize)>,
    /// Frames written and not yet read, by their line: the reader takes the value the writer
    /// parsed instead of parsing the same text again ([`Ledger::take_written`]). Keyed by the
    /// whole line, so a reader only ever gets what parsing its own line would give.
    written: BTreeMap<String, Vec<Value>>,
    /// In a run exploration places faults over: what a snapshot of the world needs beside
    /// the ledger ([`super::snapshot`]).
    pub snapshots: Option<Snapshots>,
    /// With a `half-open` fault in the schedule (`None` without): each open connection's
    /// connecting end, told when the fault breaks it, whichever end wrote the frame.
    connecting: Option<BTreeMap<ConnId, (&'static str, UnboundedSender<Ev>)>>,
}

impl Ledger {
    /// A fresh ledger for a plan.
    pub fn new(plan: &Plan) -> Ledger {
        Ledger {
            now_ms: 0,
            ops: Vec::with_capacity(512),
            written: BTreeMap::new(),
            nemesis: Nemesis::new(
                &plan.faults,
                plan.topology().acts(crate::nemesis::Reach::Remote),
            ),
            rendezvous: IndexMap::new(),
            next_conn: 1,
            workload: plan.user_events(),
            delivered: 0,
            client_pending: Vec::new(),
            idle: IndexMap::new(),
            serving: crate::history::NODES[0],
            routing: crate::plan::stream(plan.seed, "routing"),
            avoid: None,
            outstanding: IndexMap::new(),
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
            pauses: BTreeMap::new(),
            snapshots: None,
            connecting: plan
                .faults
                .iter()
                .any(|f| f.kind.effect() == crate::nemesis::kinds::Effect::HalfOpen)
                .then(BTreeMap::new),
        }
    }

    /// A host opened connection `conn` (its events go to `tx`): with a `half-open` fault in
    /// the schedule, kept to tell it when the fault breaks the connection.
    pub(super) fn on_connect(
        &mut self,
        conn: ConnId,
        host: &'static str,
        tx: &UnboundedSender<Ev>,
    ) {
        if let Some(c) = &mut self.connecting {
            c.insert(conn, (host, tx.clone()));
        }
    }

    /// `half-open` fired at an event other than a frame: every connection the Client opened
    /// and has open breaks for the Client only (it sees each end; the Agent nothing).
    pub fn half_open_client(&mut self) {
        let Some(c) = &self.connecting else {
            return;
        };
        for (&conn, (host, tx)) in c {
            if *host == process::CLIENT {
                self.nemesis.break_half_open(conn);
                let _ = tx.send(Ev::Closed(conn, "half-open"));
            }
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
                self.nemesis
                    .on_attempt(c, value["id"].to_string(), n as u32);
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

    /// Mark fault `i` as fired and log it.
    pub fn fire(&mut self, i: usize, detail: Value) {
        let f = self.nemesis.fire(i);
        let (reroute, kind, line) = (f.reroute, f.kind, fault_line(f));
        if reroute && self.nodes > 1 {
            self.avoid = Some(self.serving);
        }
        self.record(
            "nemesis",
            OpType::Info,
            kind.as_str(),
            json!({"fault": i, "spec": line, "detail": detail}),
        );
    }

    /// A writer is about to send `frame`, parsed from `line`, on `conn`; `from` is `client` or
    /// `agent`. Asks the nemesis the frame's fate ([`Nemesis::on_frame`]) and logs what fired,
    /// then, for a frame on its way, logs the send (the frame moves into its op), keeps a copy
    /// for its reader ([`Ledger::take_written`]) and notes the request as in flight.
    pub fn on_send(&mut self, conn: ConnId, from: &str, line: &str, frame: Value) -> FrameDecision {
        // The state where this frame's place is: the op that logs it is the `nemesis` op of a
        // fault that loses it (the first op this call records), or its `send` (below).
        if self.snapshots.is_some() {
            let s = self.snapshot();
            self.trace.frame_states.insert(self.ops.len(), s);
        }
        let id_key = frame.get("id").map(|i| i.to_string());
        let fate = self.nemesis.on_frame(conn, from, &frame, id_key.as_ref());
        if let Some(why) = fate.swallowed {
            if why == Swallowed::StreamDead {
                // Logged so a reader sees what the dead stream swallowed.
                self.record(process::NET,
                OpType::Info,
                op::DROPPED,
                json!({"conn": conn, "from": from, "method": frame["method"], "why": "update stream dead"}),
                );
            }
            return fate.decision;
        }
        for &i in &fate.fired {
            self.fire(i, frame_op(conn, from, frame.clone()));
        }
        if fate.half_open {
            // Its connecting end sees it close now (its own writer's frame or the other
            // end's); the other end is told nothing.
            if let Some((_, tx)) = self.connecting.as_ref().and_then(|c| c.get(&conn)) {
                let _ = tx.send(Ev::Closed(conn, "half-open"));
            }
        }
        if let (true, Some(id)) = (fate.answer_gone, &id_key) {
            self.outstanding.shift_remove(&(conn, id.clone()));
        }
        let mut decision = fate.decision;
        if !matches!(decision, FrameDecision::Drop { .. }) {
            self.in_flight(conn, from, &frame, id_key.as_ref());
        }
        if matches!(
            decision,
            FrameDecision::Lose { .. } | FrameDecision::Drop { .. }
        ) {
            return decision;
        }
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
        decision
    }

    /// A frame that was not dropped: a request toward the Agent is in flight until its answer
    /// comes, and so is a line that is not JSON (no id, but the Agent still owes it a
    /// `-32700`, or the run could end before that answer).
    fn in_flight(&mut self, conn: ConnId, from: &str, frame: &Value, id: Option<&String>) {
        if is_agent_host(from) {
            return;
        }
        let is_request =
            frame.get("method").is_some() && frame.get("id").is_some_and(|i| !i.is_null());
        if let (true, Some(id)) = (is_request, id) {
            self.outstanding
                .insert((conn, id.clone()), from.to_string());
        }
        if let Value::String(line) = frame {
            self.outstanding
                .insert((conn, format!("raw:{line}")), from.to_string());
        }
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
        if let Some(c) = &mut self.connecting {
            c.remove(&conn);
        }
    }

    /// A host crashed: the requests it wrote will never be read as answered.
    pub fn on_crash(&mut self, host: &str) {
        if let Some(s) = &mut self.snapshots {
            s.crashed(host);
        }
        self.outstanding.retain(|_, from| from != host);
        // Its connections went with it: a later `half-open` has none of them to break.
        if let Some(c) = &mut self.connecting {
            c.retain(|_, (h, _)| *h != host);
        }
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
        self.nemesis.on_submission(n);
    }

    /// How long `host` stops at the protocol point it just passed (`stall-point`), if at all.
    pub fn take_pause(&mut self, host: &str) -> Option<u64> {
        self.pauses.remove(host)
    }

    /// `host` read a frame: the `recv` op logged next is its ([`Trace::received`]).
    pub fn on_read(&mut self, host: &'static str) {
        self.trace.received.push((self.ops.len(), host));
    }

    /// A step of one of a cluster's store ops ([`Trace::store`]).
    pub fn on_store(&mut self, kind: StoreStepKind, node: &'static str, req: u64, op: &Value) {
        self.trace.store.push(StoreStep {
            kind,
            node,
            req,
            op: store_op_name(op),
            session: store_op_session(op),
            ops_before: self.ops.len(),
            time_ms: self.now_ms,
        });
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
        let ((fired, armed, transient, queue), blackholed, updates_dead) =
            self.nemesis.snapshot_parts();
        let ledger = of_debug(&(
            (self.now_ms, fired, armed, transient, queue),
            (self.delivered, &self.client_pending, &self.idle),
            (self.serving, self.routing.get_word_pos(), self.avoid),
            (&self.outstanding, self.stdio_exit, self.disk_fault),
            (updates_dead, &self.queued, &self.known_session),
            (&self.boots, blackholed),
        ));
        s.take(ledger)
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
