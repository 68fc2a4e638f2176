//! A scenario against a real Agent process: the project's model Client ([`SpecClient`]) driven
//! in real time on the process's stdio, with the scenario's faults injected at the pipe.
//!
//! This is the conformance kit's world (`acp-chaos probe --scenario NAME`, `--suite
//! conformance`). It plays the scenario's [`Plan`] (seed, workload, Client settings, faults)
//! the way the simulator's world does, but the Agent is a process and time is the wall clock
//! (scaled by `--time-scale`: a plan's millisecond is that many real ones). Between the
//! Client model and the process sits a small in-process proxy that injects the faults a
//! black box allows:
//!
//! - `lose-frame`: the frame is dropped; not `silent`, the pipe breaks with it (the process
//!   is killed, as a stdio Agent dies with its pipe), and the Client starts it again;
//! - `stall-frame`: the frame and every later one in that direction wait `stall_ms`;
//! - `crash-agent` on a frame: the process group gets SIGKILL there (a response is dropped
//!   with it), and a new process may start `restart_after_ms` later; on a protocol point, the
//!   point is mapped to the wire: `after-receive` is the nth `session/prompt` request,
//!   `after-insert-before-sync` and `after-sync-before-response` its response;
//! - `restart-client`: the Client process restarts from what it stored (its Agent, a child
//!   on stdio, dies with it).
//!
//! Every other fault kind needs the inside of a process or more than one connection
//! ([`unsupported`] says which and why). The run records the same ops as the simulator's
//! Client and frame layer, and [`super::infer`] adds the Agent's side from what it sent.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::Write;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::driver::{Ev, Launch, Proc, RawOp};
use acp_chaos::history::{op, process, OpType};
use acp_chaos::models::{Action, ClientInput, ClientModel, Point, SpecClient};
use acp_chaos::nemesis::{AtPipe, Exchange, ExchangeCount, FaultSpec, Sender, Side, Trigger};
use acp_chaos::plan::{Plan, UserEvent};

/// Why a plan cannot run against a black box, or `None` when it can.
pub fn unsupported(plan: &Plan) -> Option<String> {
    if plan.cluster() || plan.proxy || plan.watcher {
        return Some("it needs more than one Client connection or a cluster".into());
    }
    if !plan.raw.is_empty() {
        return Some("raw probes are run by the probe's key-validation trace".into());
    }
    for f in &plan.faults {
        if f.on
            .frame()
            .is_some_and(|t| t.attempt_of.is_some() || t.by.is_some())
        {
            return Some(format!(
                "fault `{}`: a trigger on one submission's attempts or on the Agent's own frames needs the Client's inside",
                acp_chaos::nemesis::fault_line(f)
            ));
        }
        let ok = match f.kind.at_pipe() {
            Some(AtPipe::LoseFrame | AtPipe::StallFrame) => f.on.frame().is_some(),
            Some(AtPipe::CrashAgent) => {
                f.on.frame().is_some()
                    || matches!(
                        f.on.point(),
                        Some(
                            Point::AfterReceive
                                | Point::AfterInsertBeforeSync
                                | Point::AfterSyncBeforeResponse
                        )
                    )
            }
            Some(AtPipe::RestartClient) => f.on.submission().is_some() || f.on.frame().is_some(),
            // It acts on the network, the store, a proxy or the disk, inside the simulator.
            None => false,
        };
        if !ok {
            return Some(format!(
                "fault `{}` needs the inside of the Agent or of the network (not a pipe)",
                acp_chaos::nemesis::fault_line(f)
            ));
        }
    }
    None
}

/// What one real-time run recorded.
pub struct RealtimeRun {
    /// The ops, in the probe's raw format (times in plan ms).
    pub ops: Vec<RawOp>,
    /// Remarks for the report.
    pub notes: Vec<String>,
    /// Why the run could not finish, if it could not.
    pub aborted: Option<String>,
    /// The Agent's stderr (last process).
    pub stderr: String,
    /// Wall time, ms.
    pub wall_ms: u64,
}

enum Due {
    Timer(u64),
    Connect,
    ClientBoot,
}

/// One direction of the pipe.
#[derive(Clone, Copy, PartialEq)]
enum Dir {
    ToAgent,
    ToClient,
}

struct World<'a> {
    plan: &'a Plan,
    launch: Launch,
    t0: Instant,
    scale: u64,
    ops: Vec<RawOp>,
    notes: Vec<String>,
    client: SpecClient,
    client_boot: u32,
    client_up: bool,
    records: Vec<Value>,
    proc: Option<Proc>,
    conn: u64,
    live: bool,
    agent_up_at: u64,
    due: BTreeMap<(u64, u64), Due>,
    seq: u64,
    fired: Vec<bool>,
    /// Which exchange each line is part of, counted as the simulator counts
    /// ([`ExchangeCount`]), so a frame trigger fires on the same frame in both.
    exchanges: ExchangeCount,
    /// Lines held by a stall: (release at, direction, connection, line).
    stalled: VecDeque<(u64, Dir, u64, String)>,
    healed: bool,
    /// A line ever came from the Agent (a command that never speaks is not an agent).
    heard: bool,
    /// The last process's stderr, kept when it goes.
    stderr: String,
    /// The pipe carried a line at this plan ms (the end waits for it to go quiet).
    traffic_ms: u64,
    /// The final read of every session (`session/resume` with `replayFrom: start` once the
    /// run is quiet): the ids still unanswered; `None` before it.
    read_back: Option<BTreeSet<u64>>,
    /// Whether this run ends with that read.
    read_back_wanted: bool,
}

/// JSON-RPC ids of the final read's requests start here, far above the model Client's own.
const READ_BACK_ID: u64 = 1 << 40;

/// Run `plan` against the process `launch` starts; a plan millisecond lasts `scale` real ones.
/// With `read_back`, a quiet run ends with the final read of every session (the conformance
/// kit's; the model Client served as a process, `acp-chaos client`, does not add frames).
pub fn run(plan: &Plan, launch: Launch, scale: u64, read_back: bool) -> RealtimeRun {
    let mut w = World {
        plan,
        launch,
        t0: crate::wall_clock::now(),
        scale: scale.max(1),
        ops: Vec::new(),
        notes: Vec::new(),
        client: SpecClient::recover(plan.client.clone(), 0, plan.seed, &[]),
        client_boot: 0,
        client_up: true,
        records: Vec::new(),
        proc: None,
        conn: 0,
        live: false,
        agent_up_at: 0,
        due: BTreeMap::new(),
        seq: 0,
        fired: vec![false; plan.faults.len()],
        exchanges: ExchangeCount::default(),
        stalled: VecDeque::new(),
        healed: plan.faults.is_empty(),
        heard: false,
        stderr: String::new(),
        traffic_ms: 0,
        read_back_wanted: read_back,
        read_back: None,
    };
    let mut aborted = w.main_loop().err();
    if let Some(mut p) = w.proc.take() {
        p.kill_group();
        w.stderr = p.stderr_text();
    }
    if aborted.is_none() && !w.heard {
        let tail = super::driver::last_line(&w.stderr);
        aborted = Some(if tail.is_empty() {
            "the agent never answered initialize (nothing came on its stdout)".into()
        } else {
            format!("the agent never answered initialize; stderr: {tail}")
        });
    }
    if let Some(n) = slow_setup_note(&w.ops, w.scale) {
        w.notes.push(n);
    }
    if let Some(why) = &aborted {
        // The abort is part of the history, so the probe's verdicts are the history's alone
        // (`check` re-derives them): the run's `end` says so, and why.
        let mut end = json!({"outcome": "aborted", "reason": why});
        match w
            .ops
            .iter_mut()
            .rev()
            .find(|o| o.process == process::WORLD && o.f == op::END)
        {
            Some(o) => {
                // How the loop had ended (`bound`, `quiescent`), kept beside the abort.
                end["ended"] = o.value["outcome"].clone();
                o.value = end;
            }
            None => w.op(process::WORLD, OpType::Info, op::END, end),
        }
    }
    let stderr = std::mem::take(&mut w.stderr);
    RealtimeRun {
        wall_ms: w.t0.elapsed().as_millis() as u64,
        ops: w.ops,
        notes: w.notes,
        aborted,
        stderr,
    }
}

/// The hint for a run whose model Client gave up connections before the agent answered their
/// `initialize`: the agent is slower than the scenario's timeouts at this `--time-scale`, and
/// what follows (inputs still pending, P2 unknown) says more about the scale than the agent.
pub fn slow_setup_note(ops: &[RawOp], scale: u64) -> Option<String> {
    fn frame<'a>(o: &'a RawOp, from: &str) -> Option<(u64, &'a Value)> {
        (o.process == process::NET && o.f == op::SEND && o.value["from"] == from)
            .then(|| (o.value["conn"].as_u64().unwrap_or(0), &o.value["frame"]))
    }
    let mut asked: BTreeSet<(u64, String)> = BTreeSet::new();
    let mut answered: BTreeSet<u64> = BTreeSet::new();
    let mut gave_up = 0usize;
    for o in ops {
        if let Some((conn, fr)) = frame(o, "client") {
            if fr["method"] == "initialize" {
                asked.insert((conn, fr["id"].to_string()));
            }
        } else if let Some((conn, fr)) = frame(o, "agent") {
            if fr.get("result").is_some() && asked.contains(&(conn, fr["id"].to_string())) {
                answered.insert(conn);
            }
        } else if o.process == process::CLIENT && o.f == op::GIVE_UP_CONNECTION {
            let conn = o.value["conn"].as_u64().unwrap_or(0);
            gave_up += usize::from(!answered.contains(&conn));
        }
    }
    (gave_up > 0).then(|| {
        format!(
            "the model Client gave up {gave_up} connection(s) before the agent answered initialize: the agent is slower than the scenario's timeouts at --time-scale {scale}; a larger --time-scale (e.g. {}) gives it that many more real ms per plan ms",
            scale.saturating_mul(4).max(10)
        )
    })
}

impl World<'_> {
    /// Plan ms since the start.
    fn now(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64 / self.scale
    }

    fn op(&mut self, process: &'static str, kind: OpType, f: &str, value: Value) {
        let time_ms = self.now();
        self.ops.push(RawOp {
            time_ms,
            process,
            kind,
            f: f.to_string(),
            value,
        });
    }

    fn at(&mut self, t: u64, d: Due) {
        self.seq += 1;
        self.due.insert((t, self.seq), d);
    }

    /// Long on purpose: the world's loop (user events, timers, the pipe, the phases), one arm
    /// per kind of event, in the order the simulator's step loop takes them.
    fn main_loop(&mut self) -> Result<(), String> {
        let mut events: VecDeque<(u64, UserEvent)> = self.plan.user_events().into();
        let safety_ms = self.plan.safety_ms;
        let end_ms = safety_ms + self.plan.liveness_ms;
        self.boot_client();
        let mut quiet_since: Option<u64> = None;
        loop {
            let now = self.now();
            if !self.healed && now >= safety_ms {
                self.healed = true;
                self.op(process::NEMESIS, OpType::Info, op::HEAL, json!({}));
                self.op(
                    process::WORLD,
                    OpType::Info,
                    "phase",
                    json!({"phase": "liveness"}),
                );
            }
            if now >= end_ms {
                self.op(
                    process::WORLD,
                    OpType::Info,
                    op::END,
                    json!({"outcome": "bound"}),
                );
                self.log_pending();
                return Ok(());
            }
            // The user acts on everything due (a Client that is down takes it when it is back).
            while self.client_up && events.front().is_some_and(|(t, _)| *t <= now) {
                let (_, e) = events.pop_front().expect("checked");
                self.user(e);
            }
            // Timers, connects and the Client's restart.
            while let Some((&(t, s), _)) = self.due.first_key_value() {
                if t > now {
                    break;
                }
                match self.due.remove(&(t, s)).expect("present") {
                    Due::Timer(id) if self.client_up => self.input(ClientInput::Timer(id)),
                    Due::Timer(_) => {}
                    Due::Connect if self.client_up => self.connect()?,
                    Due::Connect => {}
                    Due::ClientBoot => self.boot_client(),
                }
            }
            // Stalled lines whose time came (all of them once healed), in order per direction;
            // a line of a connection that is gone is gone with it.
            let conn = self.conn;
            self.stalled.retain(|s| s.2 == conn);
            let mut i = 0;
            while i < self.stalled.len() {
                if self.stalled[i].0 <= now || self.healed {
                    let (_, dir, _, line) = self.stalled.remove(i).expect("in range");
                    self.deliver(dir, line);
                } else {
                    i += 1;
                }
            }
            // Done: nothing pending, nothing due from the user, the pipe quiet a while.
            let idle = events.is_empty()
                && self.client.pending().is_empty()
                && self.stalled.is_empty()
                && self.client_up
                && self.read_back.as_ref().is_none_or(BTreeSet::is_empty);
            if self.healed && idle {
                let q = (*quiet_since.get_or_insert(now)).max(self.traffic_ms);
                if now >= q + QUIET_MS
                    && self.read_back_wanted
                    && self.read_back.is_none()
                    && self.live
                {
                    self.read_back_sessions();
                    quiet_since = None;
                    continue;
                }
                if now >= q + QUIET_MS {
                    self.op(
                        process::WORLD,
                        OpType::Info,
                        op::END,
                        json!({"outcome": "quiescent"}),
                    );
                    self.log_pending();
                    return Ok(());
                }
            } else {
                quiet_since = None;
            }
            // Wait for the pipe until the next thing is due (at most a few ms).
            let next = [
                events.front().map(|e| e.0),
                self.due.first_key_value().map(|((t, _), _)| *t),
                self.stalled.front().map(|s| s.0),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now + 5);
            let wait = Duration::from_millis(
                next.saturating_sub(now)
                    .saturating_mul(self.scale)
                    .clamp(1, 5),
            );
            let ev = match self.proc.as_ref() {
                Some(p) => match p.rx.recv_timeout(wait) {
                    Ok(ev) => Some(ev),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => Some(Ev::Eof),
                },
                None => {
                    std::thread::sleep(wait);
                    None
                }
            };
            match ev {
                Some(Ev::Line(line)) if !line.trim().is_empty() => self.pipe(Dir::ToClient, line),
                Some(Ev::Malformed(shown)) => self.malformed(shown),
                Some(Ev::Line(_)) | None => {}
                Some(Ev::Eof) => self.exited(),
            }
        }
    }

    /// The final read, as the probe's traces end: every session the Client wrote to,
    /// resumed with `replayFrom: start` on the live connection, so the history holds every
    /// user message the Agent keeps (A10 across the run's restarts, A12 on this process, X4).
    /// Its answers and replays are logged, not handed to the Client (the run is over for it).
    fn read_back_sessions(&mut self) {
        let mut sessions: Vec<String> = Vec::new();
        // The Client's own working directory, as its session/new and resumes name it.
        let mut cwd = self.launch.cwd.display().to_string();
        for o in &self.ops {
            if !(o.process == process::NET && o.f == op::SEND) {
                continue;
            }
            let fr = &o.value["frame"];
            let (s, c) = match o.value["from"].as_str() {
                Some("client") => (
                    fr["params"]["sessionId"].as_str(),
                    fr["params"]["cwd"].as_str(),
                ),
                Some("agent") => (fr["result"]["sessionId"].as_str(), None),
                _ => (None, None),
            };
            if let Some(c) = c {
                cwd = c.to_string();
            }
            if let Some(s) = s.filter(|s| !sessions.iter().any(|x| x == s)) {
                sessions.push(s.to_string());
            }
        }
        let mut ids = BTreeSet::new();
        for (i, s) in sessions.into_iter().enumerate() {
            let id = READ_BACK_ID + i as u64;
            ids.insert(id);
            let line = json!({"jsonrpc": "2.0", "id": id, "method": "session/resume", "params": {
                "sessionId": s, "cwd": cwd, "mcpServers": [], "replayFrom": {"type": "start"}}});
            self.read_back = Some(ids.clone());
            self.pipe(Dir::ToAgent, line.to_string());
        }
        self.read_back.get_or_insert_with(BTreeSet::new);
    }

    fn log_pending(&mut self) {
        let pending = self.client.pending();
        self.op(
            process::CLIENT,
            OpType::Info,
            op::PENDING_AT_END,
            json!({"submissions": pending}),
        );
    }

    /// A Client process start: recover from its store, connect.
    fn boot_client(&mut self) {
        let boot = self.client_boot;
        self.client_boot += 1;
        let records = self.records.clone();
        self.client = SpecClient::recover(self.plan.client.clone(), boot, self.plan.seed, &records);
        self.client_up = true;
        let pending = self.client.pending();
        self.op(
            process::CLIENT,
            OpType::Info,
            op::BOOT,
            json!({"boot": boot, "pending": pending}),
        );
        self.input(ClientInput::Boot);
    }

    /// The user's event: recorded as the user's invoke, then handed to the Client.
    fn user(&mut self, e: UserEvent) {
        let (f, v, input) = match e {
            UserEvent::Submit { n, slot, text } => {
                let marker = format!("[conformance-{}-s{n}]", self.plan.seed);
                let text = format!("{text} {marker}");
                (
                    op::SUBMIT,
                    json!({"submission": n, "slot": slot, "text": text, "marker": marker}),
                    ClientInput::Submit {
                        submission: n,
                        slot,
                        text,
                    },
                )
            }
            UserEvent::Cancel { n } => (
                op::CANCEL,
                json!({"submission": n}),
                ClientInput::Cancel { submission: n },
            ),
            UserEvent::Stop { slot } => {
                (op::STOP, json!({"slot": slot}), ClientInput::Stop { slot })
            }
            UserEvent::Close { slot } => (
                op::CLOSE,
                json!({"slot": slot}),
                ClientInput::Close { slot },
            ),
            UserEvent::Fork { slot, into } => (
                op::FORK,
                json!({"slot": slot, "into": into}),
                ClientInput::Fork { slot, into },
            ),
            UserEvent::Raw { n, line } => (
                op::RAW,
                json!({"n": n, "line": line}),
                ClientInput::Raw { n, line },
            ),
        };
        let submitted = match &input {
            ClientInput::Submit { submission, .. } => Some(*submission),
            _ => None,
        };
        self.op(process::USER, OpType::Invoke, f, v);
        self.input(input);
        // A restart-client fault on this submission.
        if let Some(n) = submitted {
            self.restart_client_on_submission(n);
        }
    }

    fn restart_client_on_submission(&mut self, n: u64) {
        for i in 0..self.plan.faults.len() {
            let f = &self.plan.faults[i];
            if self.fired[i] || self.healed || f.kind.at_pipe() != Some(AtPipe::RestartClient) {
                continue;
            }
            if f.on.submission().map(u64::from) == Some(n) {
                self.fired[i] = true;
                let f = f.clone();
                self.nemesis(&f, i);
                self.crash_client(f.restart_after_ms.unwrap_or(30));
            }
        }
    }

    /// Hand the Client one input and run its actions.
    fn input(&mut self, input: ClientInput) {
        let mut out = Vec::new();
        let now = self.now();
        self.client.set_clock(now);
        self.client.handle(input, &mut out);
        for a in out {
            // A Client restarted by a fault in the middle of its actions does not finish them.
            if !self.client_up {
                break;
            }
            self.action(a);
        }
    }

    fn action(&mut self, a: Action) {
        let now = self.now();
        match a {
            Action::Send { conn, line } if conn == self.conn && self.live => {
                self.pipe(Dir::ToAgent, line);
            }
            Action::Close { conn } if conn == self.conn && self.live => {
                self.kill("the Client closed the connection");
            }
            Action::Connect { after_ms, .. } => self.at(now + after_ms, Due::Connect),
            Action::Timer { id, after_ms } => self.at(now + after_ms, Due::Timer(id)),
            Action::Persist { record, .. } => self.records.push(record),
            Action::Effect(e) => {
                let kind = match e.f {
                    "attempt" => OpType::Invoke,
                    "ack" => OpType::Ok,
                    "surface" | "withdrawn" => OpType::Fail,
                    _ => OpType::Info,
                };
                self.op(process::CLIENT, kind, e.f, e.value);
            }
            _ => {}
        }
    }

    /// Start the Agent process (waiting out a crash's restart delay) and connect.
    fn connect(&mut self) -> Result<(), String> {
        let now = self.now();
        if self.live {
            return Ok(());
        }
        if now < self.agent_up_at {
            self.at(self.agent_up_at, Due::Connect);
            return Ok(());
        }
        if self.conn > 0 {
            self.op(
                process::NEMESIS,
                OpType::Info,
                op::RESTART,
                json!({"host": "agent"}),
            );
        }
        let p = Proc::start(&self.launch)?;
        self.proc = Some(p);
        self.conn += 1;
        self.live = true;
        let conn = self.conn;
        self.op(
            process::NET,
            OpType::Info,
            op::CONN_OPEN,
            json!({"conn": conn, "seen_by": "agent", "transport": "stdio"}),
        );
        self.input(ClientInput::Connected(conn));
        Ok(())
    }

    /// A line on its way: faults apply here (until the heal).
    fn pipe(&mut self, dir: Dir, line: String) {
        let frame: Option<Value> = serde_json::from_str(&line).ok();
        self.traffic_ms = self.now();
        if dir == Dir::ToClient {
            self.heard = true;
        }
        let from = if dir == Dir::ToAgent {
            "client"
        } else {
            "agent"
        };
        let exchange = frame.as_ref().and_then(|f| {
            let id = f.get("id").map(Value::to_string);
            let method = f["method"].as_str();
            self.exchanges.frame(self.conn, from, method, id.as_ref())
        });
        let hit = exchange
            .filter(|_| !self.healed)
            .and_then(|e| self.fault_at(&e));
        // Sent: its writer wrote it (whether it arrives is the fault's business).
        if self.live {
            let conn = self.conn;
            let logged = frame.clone().unwrap_or_else(|| Value::String(line.clone()));
            self.op(
                process::NET,
                OpType::Info,
                op::SEND,
                json!({"conn": conn, "from": from, "frame": logged}),
            );
        }
        // A line behind a stall in its direction waits its turn, in order.
        let now = self.now();
        let conn = self.conn;
        let behind = self
            .stalled
            .iter()
            .rev()
            .find(|s| s.1 == dir && s.2 == conn)
            .map(|s| s.0);
        match hit {
            Some((i, f)) => {
                self.nemesis(&f, i);
                match f.kind.at_pipe() {
                    Some(AtPipe::StallFrame) => {
                        let until = (now + f.stall_ms.unwrap_or(100)).max(behind.unwrap_or(0));
                        self.stalled.push_back((until, dir, conn, line));
                    }
                    Some(AtPipe::LoseFrame) => {
                        if !f.silent {
                            self.kill("the pipe broke with a lost frame");
                        }
                    }
                    Some(AtPipe::RestartClient) => {
                        // The Client's frame went out; then the Client process restarts.
                        match behind {
                            Some(until) => self.stalled.push_back((until, dir, conn, line)),
                            None => self.deliver(dir, line),
                        }
                        self.crash_client(f.restart_after_ms.unwrap_or(30));
                    }
                    Some(AtPipe::CrashAgent) => {
                        // A request is written first, a response dies with it.
                        if dir == Dir::ToAgent {
                            self.deliver(dir, line);
                        }
                        self.kill("crash");
                        self.agent_up_at = self.now() + f.restart_after_ms.unwrap_or(40);
                    }
                    // [`unsupported`] refuses a plan with any other kind; were one to
                    // reach a pipe, the line passes as if no fault had fired.
                    None => match behind {
                        Some(until) => self.stalled.push_back((until, dir, conn, line)),
                        None => self.deliver(dir, line),
                    },
                }
            }
            None if behind.is_some() => {
                let until = behind.unwrap_or(now);
                self.stalled.push_back((until, dir, conn, line));
            }
            None => self.deliver(dir, line),
        }
    }

    /// The first unfired fault that this frame triggers: a frame trigger that names its
    /// exchange, or a `crash-agent` at a protocol point the wire shows (`after-receive` at the
    /// nth prompt request, the two points after insertion at the response to it).
    fn fault_at(&mut self, e: &Exchange) -> Option<(usize, FaultSpec)> {
        let prompt = e.by == Sender::Client && e.method == "session/prompt";
        for (i, f) in self.plan.faults.iter().enumerate() {
            if self.fired[i] {
                continue;
            }
            let by_frame = f.on.frame().is_some_and(|t| e.is(t));
            let by_point = f.kind.at_pipe() == Some(AtPipe::CrashAgent)
                && prompt
                && match f.on {
                    Trigger::Point { point, nth } if nth == e.nth => match point {
                        Point::AfterReceive => e.side == Side::Request,
                        Point::AfterInsertBeforeSync | Point::AfterSyncBeforeResponse => {
                            e.side == Side::Response
                        }
                        _ => false,
                    },
                    _ => false,
                };
            if by_frame || by_point {
                self.fired[i] = true;
                return Some((i, f.clone()));
            }
        }
        None
    }

    fn nemesis(&mut self, f: &FaultSpec, i: usize) {
        self.op(
            process::NEMESIS,
            OpType::Info,
            f.kind.as_str(),
            json!({"fault": i, "spec": acp_chaos::nemesis::fault_line(f), "detail": {"black_box": true}}),
        );
    }

    /// A line of the Agent's the reader refused (not UTF-8, or past the bound): logged as
    /// sent and received as what it was (a string, as a line that is not JSON is logged), never
    /// repaired into a frame, and not handed to the Client, which could not parse it either.
    fn malformed(&mut self, shown: String) {
        self.traffic_ms = self.now();
        self.heard = true;
        if self.live {
            let conn = self.conn;
            for f in [op::SEND, op::RECV] {
                self.op(
                    process::NET,
                    OpType::Info,
                    f,
                    json!({"conn": conn, "from": "agent", "frame": shown}),
                );
            }
        }
        let n = format!(
            "the agent wrote lines that are not UTF-8 or longer than {} MiB",
            super::line_reader::AGENT_OUTPUT_MAX_LINE_BYTES >> 20
        );
        if !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }

    /// Write to the Agent, or hand to the Client; logged as received (its send was logged
    /// when it entered the pipe).
    fn deliver(&mut self, dir: Dir, line: String) {
        if !self.live {
            return;
        }
        let conn = self.conn;
        let frame: Value =
            serde_json::from_str(&line).unwrap_or_else(|_| Value::String(line.clone()));
        let from = if dir == Dir::ToAgent {
            "client"
        } else {
            "agent"
        };
        self.op(
            process::NET,
            OpType::Info,
            op::RECV,
            json!({"conn": conn, "from": from, "frame": frame}),
        );
        match dir {
            Dir::ToAgent => {
                let ok = self
                    .proc
                    .as_mut()
                    .and_then(|p| p.stdin.as_mut())
                    .is_some_and(|w| {
                        w.write_all(line.as_bytes())
                            .and_then(|_| w.write_all(b"\n"))
                            .and_then(|_| w.flush())
                            .is_ok()
                    });
                if !ok {
                    self.exited();
                }
            }
            Dir::ToClient => match self.read_back.as_mut() {
                // The final read's answers and replays are the history's, not the Client's.
                Some(ids) => {
                    if let Some(id) = frame["id"]
                        .as_u64()
                        .filter(|_| frame.get("method").is_none())
                    {
                        ids.remove(&id);
                    }
                }
                None if self.client_up => self.input(ClientInput::Frame(conn, line)),
                None => {}
            },
        }
    }

    /// SIGKILL to the Agent's process group: its connection ends for the Client.
    fn kill(&mut self, why: &str) {
        if !self.live {
            if let Some(mut p) = self.proc.take() {
                p.kill_group();
                self.stderr = p.stderr_text();
            }
            return;
        }
        self.op(
            process::NEMESIS,
            OpType::Info,
            op::CRASH,
            json!({"host": "agent", "why": why}),
        );
        self.end_conn();
    }

    /// The process ended on its own.
    fn exited(&mut self) {
        if !self.live {
            return;
        }
        let conn = self.conn;
        self.op(
            process::AGENT,
            OpType::Info,
            "exit",
            json!({"conn": conn, "unexpected": true}),
        );
        let n = "the agent process exited on its own".to_string();
        if !self.notes.contains(&n) {
            self.notes.push(n);
        }
        self.end_conn();
    }

    /// The process group is gone (its stderr kept) and its connection ends for the Client;
    /// frames still stalled on it are gone with it.
    fn end_conn(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill_group();
            self.stderr = p.stderr_text();
        }
        self.live = false;
        self.stalled.clear();
        let conn = self.conn;
        self.op(
            process::CLIENT,
            OpType::Info,
            op::CONN_END,
            json!({"conn": conn}),
        );
        if let Some(ids) = self.read_back.as_mut() {
            // The final read lost its connection: it is over (its resumes stay unanswered in
            // the history), and the Client, done already, is not told to reconnect.
            ids.clear();
            self.due.clear();
            return;
        }
        if self.client_up {
            self.input(ClientInput::Disconnected(conn));
        }
    }

    /// The Client process restarts after `restart_ms`: its Agent (a child on stdio) dies now.
    fn crash_client(&mut self, restart_ms: u64) {
        self.client_up = false;
        self.kill("the Client restarted");
        self.due.retain(|_, d| matches!(d, Due::ClientBoot));
        let at = self.now() + restart_ms;
        self.at(at, Due::ClientBoot);
    }
}

/// How long the pipe must stay quiet, with nothing pending, to end the liveness phase (plan ms).
const QUIET_MS: u64 = 200;
