//! The nemesis in one run: its schedule, what has fired, and the fate it decides for each
//! frame written, each submission accepted, each protocol point passed and each instant
//! reached. The world's ledger holds one [`Nemesis`]; the world carries out what it decides
//! (loses or stalls the frame, crashes the host, logs the `nemesis` op) and decides nothing
//! about faults itself.

use std::collections::{BTreeMap, BTreeSet};

use acp_chaos_models::{ConnId, Point};
use serde_json::{json, Value};

use super::action::NemesisAction;
use super::count::{Exchange, ExchangeCount};
use super::frame::FrameDecision;
use super::kinds::{Effect, Setting};
use super::spec::{fault_line, FaultSpec};
use super::trigger::{Side, Trigger};

/// The nemesis's state in one run (one per ledger).
#[derive(Debug)]
pub struct Nemesis {
    faults: Vec<FaultSpec>,
    fired: Vec<bool>,
    armed: bool,
    /// Connections a silent `lose-frame` broke: every later frame on them is lost unseen.
    blackholed: BTreeSet<ConnId>,
    /// Of those, the ones `half-open` broke: their connecting end saw a close (not in a
    /// snapshot: the fault's firing, which is, says it).
    half_open: BTreeSet<ConnId>,
    /// Which exchange each frame written is part of, for frame triggers.
    exchanges: ExchangeCount,
    /// Transient errors armed for the next `session/prompt` requests the Agent reads.
    transient: u32,
    /// Process-level faults triggered by events, for the step loop ([`Nemesis::take_queued`]).
    queue: Vec<(usize, NemesisAction)>,
    /// Remote transport: connections whose update stream died (`drop-updates`).
    updates_dead: BTreeSet<ConnId>,
    /// The Client talks the remote transport straight to the nodes (`lose-exchange` and
    /// `drop-updates` act).
    remote: bool,
}

/// What the nemesis decided for one frame a writer is about to send.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameFate {
    /// What the writer does with the frame.
    pub decision: FrameDecision,
    /// The faults that fired at this frame, in schedule order: the world logs each.
    pub fired: Vec<usize>,
    /// The connection swallowed the frame before any fault was asked: the world only logs
    /// a dead stream's frame (as `dropped`), and the frame is never in flight.
    pub swallowed: Option<Swallowed>,
    /// `lose-exchange` lost a response: its request will never be answered.
    pub answer_gone: bool,
    /// `half-open` broke the connection: its connecting end is to see it close, the other
    /// end nothing.
    pub half_open: bool,
}

impl FrameFate {
    fn of(decision: FrameDecision) -> FrameFate {
        FrameFate {
            decision,
            fired: Vec::new(),
            swallowed: None,
            answer_gone: false,
            half_open: false,
        }
    }
}

/// Why a connection swallowed a frame before any fault was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swallowed {
    /// A silent `lose-frame` broke the connection earlier.
    Blackholed,
    /// `drop-updates` killed the connection's update stream earlier (an update or an Agent
    /// request on it).
    StreamDead,
}

/// The faults of a schedule that wait for a protocol point, by point (in the points' name
/// order) and then by pass number (the first fault scheduled for a pass wins); and the faults
/// that wait for a time, as `(at_ms, fault index)`.
pub type PointsAndTimes = (Vec<(Point, BTreeMap<u32, usize>)>, Vec<(u64, usize)>);

impl Nemesis {
    /// The nemesis of a schedule. `remote`: the Client reaches the Agent over the cluster's
    /// remote transport ([`super::Topology::acts`] for [`super::Reach::Remote`]).
    pub fn new(faults: &[FaultSpec], remote: bool) -> Nemesis {
        Nemesis {
            faults: faults.to_vec(),
            fired: vec![false; faults.len()],
            armed: true,
            blackholed: BTreeSet::new(),
            half_open: BTreeSet::new(),
            exchanges: ExchangeCount::default(),
            transient: 0,
            queue: Vec::new(),
            updates_dead: BTreeSet::new(),
            remote,
        }
    }

    /// The fate of `frame`, written on `conn` by `from` (`id`: its JSON-RPC id as text), in
    /// the order the decision is made: a silently broken connection, a dead update stream,
    /// which exchange the frame belongs to, then each armed frame-triggered fault in schedule
    /// order (the first fault that changes the frame's fate wins; a process-level fault is
    /// queued for the step loop).
    pub fn on_frame(
        &mut self,
        conn: ConnId,
        from: &str,
        frame: &Value,
        id: Option<&String>,
    ) -> FrameFate {
        if self.blackholed.contains(&conn) {
            let mut fate = FrameFate::of(FrameDecision::Lose { silent: true });
            fate.swallowed = Some(Swallowed::Blackholed);
            return fate;
        }
        let method = frame.get("method");
        if self.updates_dead.contains(&conn)
            && crate::history::is_agent_host(from)
            && method.is_some()
        {
            // An update or an Agent request on the dead update stream: lost unseen.
            let mut fate = FrameFate::of(FrameDecision::Drop {
                not_accepted: false,
            });
            fate.swallowed = Some(Swallowed::StreamDead);
            return fate;
        }
        // Which exchange is this frame part of, and whose frames does it count among?
        let exchange = self
            .exchanges
            .frame(conn, from, method.and_then(Value::as_str), id);
        let mut fate = FrameFate::of(FrameDecision::Deliver);
        let (true, Some(exchange)) = (self.armed, exchange) else {
            return fate;
        };
        for i in 0..self.faults.len() {
            if !self.fired[i] && self.fires_at(i, &exchange) {
                self.fire_at_frame(i, conn, exchange.side, &mut fate);
            }
        }
        fate
    }

    /// Whether armed fault `i`'s frame trigger names this exchange.
    fn fires_at(&self, i: usize, e: &Exchange) -> bool {
        self.faults[i].on.frame().is_some_and(|t| e.is(t))
    }

    /// Fault `i` is triggered at a frame of `side` on `conn`: what it does to the frame's fate
    /// (a frame fault that comes second to another leaves the frame alone and does not fire).
    fn fire_at_frame(&mut self, i: usize, conn: ConnId, side: Side, fate: &mut FrameFate) {
        let f = &self.faults[i];
        let free = fate.decision == FrameDecision::Deliver;
        match f.kind.effect() {
            Effect::Break if free => {
                fate.decision = FrameDecision::Lose { silent: f.silent };
                if f.silent {
                    self.blackholed.insert(conn);
                }
            }
            // Lost as a silent break is, for both ends' writers; the world tells the
            // connecting end it closed.
            Effect::HalfOpen if free => {
                fate.decision = FrameDecision::Lose { silent: true };
                fate.half_open = true;
                self.blackholed.insert(conn);
                self.half_open.insert(conn);
            }
            Effect::LoseExchange if free && self.remote => {
                fate.decision = FrameDecision::Drop {
                    not_accepted: side == Side::Request,
                };
                // At a response the exchange is over: its answer is gone.
                fate.answer_gone = side == Side::Response;
            }
            Effect::KillUpdates if self.remote => {
                self.updates_dead.insert(conn);
            }
            Effect::Stall if free => {
                fate.decision = FrameDecision::Stall(f.ms(Setting::StallMs));
            }
            Effect::Reorder if free => {
                fate.decision = FrameDecision::Reorder {
                    bound_ms: f.ms(Setting::StallMs),
                    after: 0,
                };
            }
            // The Agent rejects the next prompt it reads (the one this request becomes, also
            // through a proxy that rewrites its id).
            Effect::RejectPrompt => self.transient += 1,
            Effect::Break
            | Effect::HalfOpen
            | Effect::LoseExchange
            | Effect::KillUpdates
            | Effect::Stall
            | Effect::Reorder => return,
            Effect::Crash { .. }
            | Effect::Partition
            | Effect::PartitionOneway
            | Effect::Hold
            | Effect::PartitionStore
            | Effect::Pause => {
                // Logged when the step loop carries it out.
                if let Some(a) = NemesisAction::of(f) {
                    self.queue.push((i, a));
                }
                return;
            }
        }
        fate.fired.push(i);
    }

    /// The Client logged an attempt of submission `n` with request `id` on `conn` (prompt
    /// attempts are what `attempt_of` counts).
    pub fn on_attempt(&mut self, conn: ConnId, id: String, n: u32) {
        self.exchanges.attempt(conn, id, n);
    }

    /// The Client accepted submission `n`: queue the faults it triggers.
    pub fn on_submission(&mut self, n: u64) {
        if !self.armed {
            return;
        }
        for (i, f) in self.faults.iter().enumerate() {
            if !self.fired[i] && f.on.submission().map(u64::from) == Some(n) {
                if let Some(a) = NemesisAction::of(f) {
                    self.queue.push((i, a));
                }
            }
        }
    }

    /// The faults of the schedule that wait for a protocol point or a time ([`PointsAndTimes`]).
    pub fn points_and_times(&self) -> PointsAndTimes {
        let mut by_point: BTreeMap<&'static str, (Point, BTreeMap<u32, usize>)> = BTreeMap::new();
        let mut timed = Vec::new();
        for (i, f) in self.faults.iter().enumerate() {
            match f.on {
                Trigger::Point { point, nth } => {
                    by_point
                        .entry(point.as_str())
                        .or_insert((point, BTreeMap::new()))
                        .1
                        .entry(nth)
                        .or_insert(i);
                }
                Trigger::At { at_ms, .. } => timed.push((at_ms, i)),
                Trigger::Frame(_) | Trigger::Submission { .. } => {}
            }
        }
        (by_point.into_values().collect(), timed)
    }

    /// What fault `i` does when host `host` passed its protocol point: `crash-agent` crashes
    /// that host (a cluster node, or the agent); `partition-store` at a node's point cuts that
    /// node from the store; `crash-proxy` crashes the proxy while the Agent waits at the point.
    pub fn at_point(&self, i: usize, host: &'static str) -> Option<NemesisAction> {
        let f = &self.faults[i];
        // An Agent crash (not a disk kind's: a cluster's nodes keep no log) crashes the host that
        // passed the point.
        Some(match NemesisAction::of(f)? {
            NemesisAction::Crash {
                restart_after_ms, ..
            } if f.kind.effect() == Effect::CRASH_AGENT => NemesisAction::Crash {
                host,
                restart_after_ms,
            },
            NemesisAction::Pause { stall_ms, .. } => NemesisAction::Pause { host, stall_ms },
            NemesisAction::PartitionStore { heal_after_ms, .. } if host != "store" => {
                NemesisAction::PartitionStore {
                    heal_after_ms,
                    node: Some(host),
                }
            }
            other => other,
        })
    }

    /// What fault `i`, waiting for a time, does when the time comes.
    pub fn at_time(&self, i: usize) -> Option<NemesisAction> {
        NemesisAction::of(&self.faults[i])
    }

    /// The process-level faults queued since the last call, with their fault index.
    pub fn take_queued(&mut self) -> Vec<(usize, NemesisAction)> {
        std::mem::take(&mut self.queue)
    }

    /// The Agent read `frame`: must it reject it with a transient error (`transient-error`)?
    pub fn take_transient(&mut self, frame: &Value) -> bool {
        if self.transient > 0 && frame["method"] == "session/prompt" && frame.get("id").is_some() {
            self.transient -= 1;
            return true;
        }
        false
    }

    /// Mark fault `i` fired, for the world to log; its spec.
    pub fn fire(&mut self, i: usize) -> &FaultSpec {
        self.fired[i] = true;
        &self.faults[i]
    }

    /// Whether fault `i` may still fire (armed, and not fired yet).
    pub fn may_fire(&self, i: usize) -> bool {
        self.armed && !self.fired[i]
    }

    /// Stop firing faults (heal). Silently broken connections stay broken: their lost frames
    /// are gone, so they may only end (by heartbeat), never flow again.
    pub fn disarm(&mut self) {
        self.armed = false;
    }

    /// Whether a silent break swallowed this connection.
    pub fn is_blackholed(&self, conn: ConnId) -> bool {
        self.blackholed.contains(&conn)
    }

    /// `half-open` breaks `conn` (fired at another event than its frame): every frame on it
    /// is lost unseen from now on.
    pub fn break_half_open(&mut self, conn: ConnId) {
        self.blackholed.insert(conn);
        self.half_open.insert(conn);
    }

    /// Whether `half-open` broke this connection: its connecting end keeps its socket (its
    /// close must not reach the other end) after it saw the connection end.
    pub fn is_half_open(&self, conn: ConnId) -> bool {
        self.half_open.contains(&conn)
    }

    /// What the nemesis applied in the safety phase, logged with `heal`:
    /// `{"planned": n, "applied": {kind: count}, "not_applied": [fault line, ...]}` (a fault
    /// whose trigger never came up, e.g. a frame the run never sent).
    pub fn applied(&self) -> Value {
        let mut applied: BTreeMap<&str, u32> = BTreeMap::new();
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

    /// The parts of this state a snapshot of the world holds, in the order it has always
    /// hashed them: (fired, armed, transient errors armed, queued faults), silently broken
    /// connections, dead update streams.
    #[allow(clippy::type_complexity)]
    pub fn snapshot_parts(
        &self,
    ) -> (
        (&Vec<bool>, bool, u32, &Vec<(usize, NemesisAction)>),
        &BTreeSet<ConnId>,
        &BTreeSet<ConnId>,
    ) {
        (
            (&self.fired, self.armed, self.transient, &self.queue),
            &self.blackholed,
            &self.updates_dead,
        )
    }
}
