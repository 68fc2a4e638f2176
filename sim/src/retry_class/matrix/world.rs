//! One matrix run's world: a discrete-event loop (1 ms per hop, simulated ms, no wall
//! clock) over the model Agent and the scripted Client.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::space::*;
use super::*;
use crate::models::rpc;
use crate::models::store::Disk;
use crate::models::{AgentConfig, AgentMutant, ConnId, Effect, ModelAgent};

/// How a Client frame is sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Tx {
    /// Setup, reconnect and next-op frames: no fault applies (but a partition does).
    Plain,
    /// The op's first frame: the fault applies.
    OpFirst,
    /// A resend of the op.
    OpAgain,
}

#[derive(Debug, Clone)]
pub(super) enum Ev {
    ToAgent {
        conn: ConnId,
        line: String,
        op: bool,
    },
    ToClient {
        conn: ConnId,
        line: String,
    },
    AgentTimer {
        boot: u32,
        id: u64,
    },
    Eof {
        conn: ConnId,
    },
    PartitionDrop {
        conn: ConnId,
    },
    OpTimeout {
        attempt: usize,
    },
    NotifyTimeout {
        sent: usize,
    },
    Reconnect,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum OpState {
    NotSent,
    Pending,
    Answered(Result<Value, Value>),
    GaveUp(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Recon {
    Init(u64),
    Resume(u64),
}

/// What the Agent state looked like once the op settled and the fault healed.
#[derive(Debug, Clone, Default)]
pub(super) struct AfterOp {
    pub(super) active: bool,
    pub(super) exists: bool,
    pub(super) autosave: Option<bool>,
    pub(super) synced: bool,
    /// The session's title and whether it is archived, from the Agent (`None`: no session).
    pub(super) meta: Option<(Option<String>, bool)>,
}

/// A line in the verbose log (`acp-chaos matrix --seed N ...`), formatted only when logging.
macro_rules! note {
    ($w:expr, $($arg:tt)*) => {
        if $w.log.is_some() {
            let s = format!($($arg)*);
            $w.push_note(s);
        }
    };
}
pub(super) use note;

pub struct EventWorld {
    pub(super) method: Method,
    pub(super) fault: Fault,
    pub(super) policy: Policy,
    pub(super) var: Variation,
    pub(super) seed: u64,
    pub(super) cfg: AgentConfig,
    pub(super) now: u64,
    pub(super) seq: u64,
    pub(super) queue: BTreeMap<(u64, u64), Ev>,
    pub(super) agent: ModelAgent,
    pub(super) boot: u32,
    /// The Agent's records on its simulated disk.
    pub(super) disk: Disk,
    pub(super) crashed: bool,
    pub(super) agent_conns: BTreeSet<ConnId>,
    pub(super) client_conn: Option<ConnId>,
    pub(super) next_conn: ConnId,
    pub(super) next_id: u64,
    /// Client requests: (conn, id) → (method, params, sent at).
    pub(super) sent: BTreeMap<(ConnId, u64), (String, Value, u64)>,
    /// First answer per (conn, id) as the Client got it, with the time.
    pub(super) answers: BTreeMap<(ConnId, u64), (u64, Result<Value, Value>)>,
    /// `session/update` params the Client got: (time, conn, params).
    pub(super) updates: Vec<(u64, ConnId, Value)>,
    pub(super) sid: String,
    pub(super) s_open: bool,
    pub(super) recon: Option<Recon>,
    pub(super) session_lost: bool,
    pub(super) state: OpState,
    pub(super) attempts: Vec<(ConnId, u64)>,
    pub(super) notif_sends: usize,
    pub(super) op_at: u64,
    pub(super) late_copy: Option<(ConnId, String)>,
    pub(super) p2: Option<(ConnId, u64)>,
    pub(super) next: Option<(ConnId, u64)>,
    pub(super) busy_mid: Option<String>,
    pub(super) pre_sessions: BTreeSet<String>,
    pub(super) after_op: AfterOp,
    pub(super) armed: bool,
    pub(super) fired: bool,
    pub(super) partition: Option<(ConnId, u64, u64)>,
    /// Ground truth: every effect the Agent reported, with its boot.
    pub(super) effects: Vec<(u32, Effect)>,
    /// Sessions active per connection, from `activate`/`deactivate` effects and disconnects.
    pub(super) active: BTreeSet<(String, ConnId)>,
    /// `autosave` per session, from the Agent's own `set_config_option` answers (config lives
    /// in memory in every design: a crash resets it).
    pub(super) autosave: BTreeMap<String, bool>,
    pub(super) log: Option<Vec<String>>,
}

pub(super) fn text_prompt(sid: &str, text: &str, key: Option<&str>) -> Value {
    rpc::prompt_params(sid, text, key.map(|k| json!(k)))
}

pub(super) fn init_params() -> Value {
    rpc::initialize_params("matrix-client", "1")
}

/// The op prompt's text (unique in the session: history, busy and next prompts differ).
pub(super) const OP_TEXT: &str = "op";

impl EventWorld {
    pub(super) fn new(
        method: Method,
        fault: Fault,
        policy: Policy,
        seed: u64,
        var: Variation,
        mutant: Option<AgentMutant>,
        verbose: bool,
    ) -> EventWorld {
        let mut cfg = AgentConfig::simple(var.design, var.o1, var.o4, mutant);
        cfg.o2 = var.o2;
        (cfg.turn_ms_min, cfg.turn_ms_max) = var.turn_ms();
        let agent = ModelAgent::recover(cfg.clone(), 0, seed, &[]);
        EventWorld {
            method,
            fault,
            policy,
            var,
            seed,
            cfg,
            now: 0,
            seq: 0,
            queue: BTreeMap::new(),
            agent,
            boot: 0,
            disk: Disk::default(),
            crashed: false,
            agent_conns: BTreeSet::new(),
            client_conn: None,
            next_conn: 1,
            next_id: 1,
            sent: BTreeMap::new(),
            answers: BTreeMap::new(),
            updates: Vec::new(),
            sid: String::new(),
            s_open: false,
            recon: None,
            session_lost: false,
            state: OpState::NotSent,
            attempts: Vec::new(),
            notif_sends: 0,
            op_at: 0,
            late_copy: None,
            p2: None,
            next: None,
            busy_mid: None,
            pre_sessions: BTreeSet::new(),
            after_op: AfterOp::default(),
            armed: false,
            fired: false,
            partition: None,
            effects: Vec::new(),
            active: BTreeSet::new(),
            autosave: BTreeMap::new(),
            log: verbose.then(Vec::new),
        }
    }

    pub(super) fn push_note(&mut self, s: String) {
        let now = self.now;
        if let Some(l) = &mut self.log {
            l.push(format!("{now:>6} ms  {s}"));
        }
    }

    pub(super) fn at(&mut self, t: u64, ev: Ev) {
        self.queue.insert((t, self.seq), ev);
        self.seq += 1;
    }

    /// Process events until `done` holds, nothing is queued, or the cap.
    pub(super) fn run_until(&mut self, done: impl Fn(&EventWorld) -> bool) {
        while !done(self) {
            let Some((&(t, s), _)) = self.queue.first_key_value() else {
                return;
            };
            if t > CAP_MS {
                return;
            }
            let ev = self.queue.remove(&(t, s)).expect("just seen");
            self.now = self.now.max(t);
            self.handle(ev);
        }
    }

    pub(super) fn run_to(&mut self, t: u64) {
        self.run_until(|w| w.queue.first_key_value().is_none_or(|(k, _)| k.0 > t));
        self.now = self.now.max(t);
    }
}
