//! The model Agents and their mutants.
//!
//! A sans-IO state machine: [`AgentModel::handle`] takes one [`AgentInput`] and appends
//! [`Action`]s. One protocol core serves every design; a [`Design`] differs from another only
//! where the proposal says designs differ: where sessions and keys live and when they are
//! durable. Those answers are the design's [`Durability`], one file per design under
//! `design/`: `in_memory.rs` (`process`: nothing on disk), `stored.rs` (`durable`: key and
//! message in one synced record), `adapter.rs` (`process`: a runtime store under derived ids,
//! synced at turn end) and `cluster.rs` (`durable`: one node of a remote Agent whose store host,
//! [`crate::cluster`], keeps sessions and keys).

mod config;
mod design;
mod meta;
mod prompt;
mod session;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use agent_client_protocol_schema::v2::{
    self, AgentCapabilities, ClientNotification, ClientRequest, Implementation, InitializeResponse,
    NewSessionResponse, SessionCapabilities, SessionUpdate, UpdateSessionNotification,
};
use agent_client_protocol_schema::ProtocolVersion;
use indexmap::IndexMap;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use serde_json::{json, Value};

use crate::action::{effect, Action, ConnId, Point};
use crate::rpc::{self, code, Frame};

use crate::op;
pub use config::{
    AgentConfig, AgentMutant, CancelRequest, Design, DuringTurn, HeldOnDisconnect, Retention,
    WorkOnDisconnect,
};
pub use design::{Durability, Insertion};

/// What the driver feeds an Agent.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentInput {
    /// A Client connected.
    Connected(ConnId),
    /// One line arrived on a connection.
    Frame(ConnId, String),
    /// The connection ended (EOF, reset or heartbeat timeout).
    Disconnected(ConnId),
    /// A timer set with [`Action::Timer`] fired.
    Timer(u64),
    /// Nemesis: reject the next `session/prompt` with a transient `-32603`, inserting nothing.
    InjectTransientError,
    /// Cluster node: the connection belongs to this logical connection (remote transport).
    Logical(ConnId, String),
    /// Cluster node: the store's view (the `load` reply), given before each request.
    StoreSnapshot(Value),
    /// Remote transport: a request this Agent wrote was not accepted (X5); it reached nobody,
    /// so it may be sent again on the same connection.
    NotAccepted {
        /// The connection.
        conn: ConnId,
        /// The request's JSON-RPC id.
        id: Value,
    },
    /// Cluster node: the reply to [`Action::Store`] `req`, `None` if none came in time.
    StoreReply {
        /// The op's number.
        req: u64,
        /// The store's reply.
        reply: Option<Value>,
    },
}

/// A sans-IO Agent. Implement this to plug your own Agent design into the simulator
/// (`acp_chaos::world::run_with` runs one; the `acp-chaos` crate docs show a whole example).
///
/// The driver feeds [`AgentInput`]s and runs the [`Action`]s pushed to `out`, in order:
/// [`Action::Send`] writes a JSON-RPC line, [`Action::Persist`] appends a record to the
/// simulated disk (only `sync: true` survives a crash; the records come back at the next start),
/// [`Action::Point`] lets the nemesis crash the process there, and [`Action::Effect`] reports
/// ground truth to the history.
///
/// # The effect contract
///
/// The checkers judge an Agent by the effects it reports (an [`Action::Effect`] with the op
/// name of [`crate::op`] and a JSON object; `conn` and `id` are the attempt's connection and
/// JSON-RPC id, as received). An Agent that never emits an effect a checker reads is checked
/// against nothing on that point, so `check_all` (`acp_chaos::checkers`) says so: when the
/// wire shows the Agent owed one of the effects in the last column (it answered a prompt with a
/// `messageId`, said a turn is `running`, ...) and it never emitted that effect anywhere in
/// the run, each property listed there is reported `unknown`, "not checked: the Agent never
/// emitted ...", instead of valid; a violation stays a violation, with a note. Emit each effect
/// every time it applies: the rule only sees one that is never emitted at all.
///
/// | Effect | Fields | Emit it when | Read by (rules) | Not checked without it, once owed |
/// |---|---|---|---|---|
/// | `insert` | `session, messageId, key, conn, id, mode, live_only` | a user message is inserted (`mode`: `direct`, or `held` when it comes from the queue of held prompts; `live_only`: a locally handled command, kept only while its session is active, A11) | P1 (A1 A4 A10 A11 A13), P2 (A1 A9 C8), P3 (A1 A4 A7), P4 (A2 A3), P5 (K3), P6 (A5 A6), P9 (A9), P11 (D1), P12 (A11 A16), P15 (A14: an echo before its `insert` is a violation) | P1 P2 P3 P4 P6 P9 P11 P12 P15, owed once a prompt is answered with a `messageId` (not as a `dedup-hit`) or a `user_message` is echoed |
/// | `durable` or `visible` | `session, messageId` | the insertion took effect: synced (`durable`) or shown (answered, echoed or worked on: `visible`); an insertion that never took effect (a crash came first) is not a duplicate | P1, P2, P3, P11, P12 | P1 P11 P12, owed once a prompt is answered with an inserted `messageId` |
/// | `dedup-hit` | `session, key, messageId, conn, id` | a retry is answered with the `messageId` recorded for its key, inserting nothing | P3 and P6 (the attempt was decided), P9 (A9) | P9, owed once a retry is answered with a `messageId` another attempt got, and neither `insert` nor `wait-held` names the retry |
/// | `wait-held` | `session, key, conn, id` | a retry waits for the held attempt of its key and gets its outcome (A7) | the contract (such a repeated answer is no `dedup-hit`) | |
/// | `reject` | `conn, id, code` (`transient: true` for an [`AgentInput::InjectTransientError`]) | a prompt is refused before insertion | P3 (A7: an injected transient failure is excused), P6 | none: without `transient` P3 blames the injected failure (stricter) |
/// | `turn-start` | `session, messageId, ms, tool` | a round of work begins for a message | P1 (A1: one round per message), P17 (A6) | P1 P17, owed once a `state_update` `running` is sent |
/// | `turn-end` | `session, messageId, stopReason` | the round ends (the `stopReason` of its idle `state_update`) | P1 (a turn a restart stopped may be continued), P17 (A3 A6) | P17, owed once a `state_update` with a `stopReason` is sent |
/// | `work-failed` | `session, messageId` | the work of a turn failed (it must end `stopReason: "error"`) | P17 (A3) | none: nothing on the wire shows a failure |
/// | `tool-effect` | `session, messageId, toolCallId` | a tool call's side effect happens | P1 (A1: one side effect per message) | P1, owed once a tool call is sent `completed` |
/// | `hold` | `session, conn, id` | a prompt is held behind a running turn (not inserted) | P6 (A6: a stop withdraws the prompts held before it) | P6, owed once an `insert` has `mode: "held"` |
/// | `release` | `session, conn, id` | a held prompt leaves the queue to be inserted later (a cluster node) | P6 | |
/// | `withdraw` | `session, key, conn, id, by` | a held prompt is withdrawn and answered `-32800` (`by`: `session/cancel`, `$/cancel_request`, the close, ...) | P3, P6 (A5 A6) | P6, owed once a prompt is answered `-32800` |
/// | `drop-held` | `session, conn, id` | a held prompt is dropped, unanswered, as its connection ends | P3, P6 | |
/// | `activate` | `session, conn` | a session becomes active on a connection (`session/new`, `session/fork`, `session/resume`) | P1 (A11), P6 (A6: a cancel counts where its session is active), P10 (X4), P17 (A6) | P6 P10 P17, owed once `session/new`, `session/fork`, `session/load` or `session/resume` is answered with a success |
/// | `deactivate` | `session, conn` | a session stops being active on a connection (`session/close`; the connection's end needs none) | P1 (A11), P6, P10, P17 | none: without it the checkers keep the session active (stricter) |
/// | `discard` | `session, messageId` | a retention window lets a message go with its key record | P1, P2, P3, P11, P12 (A16: a later insertion of its key is a finding) | |
///
/// The driver logs `recover` `{boot, retained}` at each start from [`AgentModel::retained`]
/// (P1, P2, P3, P6, P11, P12, P17) and the connections' ends; the frames themselves are on the
/// wire for every checker. `docs/effects.md` has the same table with the Client's effects.
pub trait AgentModel {
    /// Handle one input; push the actions to run, in order.
    fn handle(&mut self, input: AgentInput, out: &mut Vec<Action>);
    /// [`AgentInput::Frame`]`(conn, line)` from a driver that has already decoded the line:
    /// `decoded` is exactly `serde_json::from_str(&line)` (given only when that succeeded), so
    /// a model may read it instead of parsing the same text again. The default hands the line
    /// to [`AgentModel::handle`] as is.
    fn handle_decoded(
        &mut self,
        conn: ConnId,
        line: String,
        decoded: Value,
        out: &mut Vec<Action>,
    ) {
        let _ = decoded;
        self.handle(AgentInput::Frame(conn, line), out);
    }
    /// No foreground work and no held prompts (used to decide quiescence).
    fn is_idle(&self) -> bool;
    /// The user messages this process holds, as `{sessionId: [messageId, ...]}`, logged in the
    /// `recover` op at each start (called once, right after the Agent is built from its
    /// records). The checkers compare it with earlier insertions to tell a message a restart
    /// lost (P11; a retry inserting it again is then not a duplicate under process retention)
    /// from one still held (a second insertion is a P1 violation).
    ///
    /// Default: `Value::Null`, "not reported": the checkers then assume every message that
    /// took effect was kept across the restart.
    fn retained(&self) -> Value {
        Value::Null
    }
    /// Everything this model holds that what it does next can depend on, as one number
    /// ([`crate::digest::of`]): exploration merges two placements of a fault only when every
    /// party's digest (and the rest of the world's state) is equal. Default `None`: unknown,
    /// so exploration never merges a placement in a run with this model, it runs each one.
    fn state_digest(&self) -> Option<u64> {
        None
    }
}

#[derive(Debug, Clone)]
struct Msg {
    message_id: String,
    key: Option<String>,
    text: String,
}

#[derive(Debug, Clone, Default)]
struct Held {
    conn: ConnId,
    id: Value,
    key: Option<String>,
    text: String,
    /// Retries with the same key waiting for this prompt's outcome (A7).
    waiters: Vec<(ConnId, Value)>,
    /// Cluster: the session's stop count in the store when this prompt arrived (A6).
    stops_seen: u64,
}

#[derive(Debug, Clone)]
enum TurnPhase {
    /// Waiting for the Client's answer to a permission request (agent request id).
    AwaitPermission { conn: ConnId, req: u64 },
    /// Working; ends when the timer fires.
    Working { timer: u64 },
}

#[derive(Debug, Clone)]
struct Turn {
    message_id: String,
    /// The connection whose prompt started it (asked for permission).
    owner: ConnId,
    phase: TurnPhase,
    ms: u64,
    tool: bool,
    /// The work fails when it ends (`fail_rate`).
    fails: bool,
}

#[derive(Debug, Default)]
struct Session {
    /// Retained user messages, in order.
    messages: Vec<Msg>,
    /// Live-only messages (locally handled commands), kept while the session is active (A11).
    live: Vec<Msg>,
    held: VecDeque<Held>,
    turn: Option<Turn>,
    next_msg: u64,
    config: BTreeMap<String, Value>,
    /// Adapter: ids of user messages known to the adapter (the cache over the runtime history).
    ids: BTreeSet<String>,
    /// Adapter: whether `ids` covers the runtime history (false after a restart until filled).
    filled: bool,
    /// Adapter: prompts waiting for the history fill (conn, id, request).
    fill_queue: Vec<(ConnId, Value, v2::PromptRequest)>,
    filling: bool,
    /// Cluster: an insertion is out at the store (the session is busy until it answers).
    storing: bool,
    /// Cluster: how many `session/cancel`s the store had recorded for the session at the last
    /// read (A6: a held prompt is withdrawn by any later one).
    stops_seen: u64,
    /// The working directory it was created with (`session/list` reports and filters by it).
    cwd: String,
    /// Its title (`session/set_title`).
    title: Option<String>,
    /// Hidden from the default `session/list` (`session/archive`).
    archived: bool,
}

/// Cluster: an insertion waiting for the store's answer.
#[derive(Debug, Clone)]
struct Storing {
    sid: String,
    held: Held,
    mode: &'static str,
    message_id: String,
    /// Start a turn for it once inserted (on behalf of this connection).
    turn: Option<ConnId>,
    op: Value,
}

impl Storing {
    /// A store step that inserts nothing (a withdrawal, a stop): no messageId, no turn.
    fn without_insertion(sid: &str, held: Held, mode: &'static str, op: Value) -> Storing {
        Storing {
            sid: sid.to_string(),
            held,
            mode,
            message_id: String::new(),
            turn: None,
            op,
        }
    }
}

/// Why a prompt's wait ended without insertion.
const CANCELLED: &str = "Request cancelled";

/// Mutant `key-recorded-on-arrival`: (session, key) → (the messageId recorded on arrival, the
/// boot that recorded it).
type Arrivals = BTreeMap<(String, String), (String, u32)>;

/// The model Agent for every [`Design`].
#[derive(Debug)]
pub struct ModelAgent {
    cfg: AgentConfig,
    boot: u32,
    rng: ChaCha8Rng,
    sessions: IndexMap<String, Session>,
    /// Sessions active on each open connection (X2).
    conns: IndexMap<ConnId, BTreeSet<String>>,
    next_session: u64,
    next_timer: u64,
    next_req: u64,
    /// timer id → (session, what).
    timers: IndexMap<u64, (String, TimerKind)>,
    /// Agent-side request id → session (permission requests awaiting an answer).
    asks: IndexMap<u64, String>,
    /// Cluster: permission requests asked again ([`ASK_AGAIN_MS`]) and not answered yet: a
    /// copy may still be open at the Client after the first answer arrives.
    reasked: BTreeSet<u64>,
    transient_errors: u32,
    tool_effects: u64,
    /// Mutant `error-after-insert`: answer the next insertion with an error.
    fail_next_insert: bool,
    /// Messages inserted by this process (message ids).
    next_message: u64,
    /// Prefix of this process's session and message ids (the boot; node and boot for a
    /// cluster node, so ids stay unique across nodes).
    prefix: String,
    /// Cluster: the logical connection of each connection.
    logical: IndexMap<ConnId, String>,
    /// Cluster: insertions out at the store, by op number.
    storing: IndexMap<u64, Storing>,
    next_store: u64,
    /// Cluster: stops this process sent to the store (the next stop's id).
    next_stop: u64,
    /// Mutant `cluster-node-local-keys`: (session, key) → messageId, in this node's memory.
    local_keys: BTreeMap<(String, String), String>,
    /// Mutant `stop-cancels-later`: sessions whose next prompt a past stop withdraws.
    cancel_later: BTreeSet<String>,
    /// Mutant `key-recorded-on-arrival`: (session, key) → (the messageId recorded on arrival,
    /// the boot that recorded it).
    arrivals: Arrivals,
    /// Mutant `keys-per-connection`: the (session, key) pairs inserted on each connection.
    conn_keys: BTreeMap<ConnId, BTreeSet<(String, String)>>,
    /// Mutant `dedup-by-id`: (session, JSON-RPC id) → messageId.
    id_records: BTreeMap<(String, String), String>,
    /// Connections whose last `initialize` failed: nothing else is served there until one
    /// succeeds *(ours: the TypeScript SDK's v2 client saw requests served after a failed
    /// `initialize`)*.
    init_failed: BTreeSet<ConnId>,
    /// Retention window: discard timer → the messageId it discards.
    discards: IndexMap<u64, String>,
    /// Retention window: the recovered messages' discard timers are set (on the first input).
    armed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum TimerKind {
    TurnEnd,
    HistoryFill,
    /// Remote transport: no answer to permission request `req` yet; ask again.
    AskAgain(u64),
    /// Retention window: discard a message (which one: [`ModelAgent::discards`]).
    Discard,
}

/// Remote transport: how long a cluster node waits for the answer to its
/// `session/request_permission` before it asks again (its answer may be lost while the
/// logical connection lives), in simulated ms.
pub const ASK_AGAIN_MS: u64 = 200;

/// The stored-session Agent: the `stored` design of [`ModelAgent`].
pub type StoredAgent = ModelAgent;

impl ModelAgent {
    /// Rebuild from the records recovered from disk (read only by a design that recovers from
    /// disk, [`Durability::recovers_from_disk`]: none for `in-memory`). `boot` numbers the
    /// process start (ids stay unique across restarts); `seed` seeds turn durations and tools.
    pub fn recover(cfg: AgentConfig, boot: u32, seed: u64, records: &[Value]) -> Self {
        let (sessions, arrivals) = if cfg.design.durability().recovers_from_disk() {
            Self::replay(records)
        } else {
            (IndexMap::new(), BTreeMap::new())
        };
        ModelAgent {
            cfg,
            boot,
            rng: ChaCha8Rng::seed_from_u64(seed ^ u64::from(boot).wrapping_mul(0x9E37_79B9)),
            sessions,
            conns: IndexMap::new(),
            next_session: 0,
            next_timer: 0,
            next_req: 0,
            timers: IndexMap::new(),
            asks: IndexMap::new(),
            reasked: BTreeSet::new(),
            transient_errors: 0,
            tool_effects: 0,
            fail_next_insert: false,
            next_message: 0,
            prefix: boot.to_string(),
            logical: IndexMap::new(),
            storing: IndexMap::new(),
            next_store: 0,
            next_stop: 0,
            local_keys: BTreeMap::new(),
            cancel_later: BTreeSet::new(),
            arrivals,
            conn_keys: BTreeMap::new(),
            id_records: BTreeMap::new(),
            init_failed: BTreeSet::new(),
            discards: IndexMap::new(),
            armed: false,
        }
    }

    /// The sessions and the arrival records (mutant `key-recorded-on-arrival`) a process
    /// rebuilds from the records on its disk, in the order they were written (A10 D1).
    fn replay(records: &[Value]) -> (IndexMap<String, Session>, Arrivals) {
        let mut sessions = IndexMap::new();
        let mut arrivals = Arrivals::new();
        for r in records {
            Self::replay_record(&mut sessions, &mut arrivals, r);
        }
        (sessions, arrivals)
    }

    /// Apply one recovered record `r` to `sessions` and `arrivals`.
    fn replay_record(sessions: &mut IndexMap<String, Session>, arrivals: &mut Arrivals, r: &Value) {
        let sid = r["id"]
            .as_str()
            .or(r["session"].as_str())
            .unwrap_or_default()
            .to_string();
        match r["t"].as_str() {
            Some("session") => {
                let cwd = r["cwd"].as_str().unwrap_or_default().to_string();
                sessions.entry(sid).or_default().cwd = cwd;
            }
            Some("fork") => {
                let from = r["from"].as_str().unwrap_or_default();
                let msgs: Vec<Msg> = sessions
                    .get(from)
                    .map(|s| {
                        s.messages
                            .iter()
                            .map(|m| Msg {
                                key: None,
                                ..m.clone()
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let s = sessions.entry(sid).or_default();
                s.messages = msgs;
                s.cwd = r["cwd"].as_str().unwrap_or_default().to_string();
            }
            Some("delete") => {
                sessions.shift_remove(&sid);
            }
            Some("title") => {
                if let Some(s) = sessions.get_mut(&sid) {
                    s.title = r["title"].as_str().map(str::to_string);
                }
            }
            Some("archive") => {
                if let Some(s) = sessions.get_mut(&sid) {
                    s.archived = r["on"].as_bool().unwrap_or(false);
                }
            }
            // Retention window: a message discarded with its key.
            Some("discard") => {
                let mid = r["messageId"].as_str().unwrap_or_default();
                if let Some(s) = sessions.get_mut(&sid) {
                    if let Some(i) = s.messages.iter().position(|m| m.message_id == mid) {
                        s.messages.remove(i);
                    }
                }
            }
            Some("arrival") => {
                if let (Some(k), Some(mid)) = (r["key"].as_str(), r["messageId"].as_str()) {
                    let b = r["boot"].as_u64().unwrap_or(0) as u32;
                    arrivals.insert((sid.clone(), k.to_string()), (mid.to_string(), b));
                }
            }
            // Mutant `two-step-write`: the key written after its message.
            Some("msg-key") => {
                let (Some(mid), Some(k)) = (r["messageId"].as_str(), r["key"].as_str()) else {
                    return;
                };
                if let Some(m) = sessions
                    .entry(sid)
                    .or_default()
                    .messages
                    .iter_mut()
                    .find(|m| m.message_id == mid)
                {
                    m.key = Some(k.to_string());
                }
            }
            Some("msg") => {
                let Some(mid) = r["messageId"].as_str() else {
                    return;
                };
                sessions.entry(sid).or_default().messages.push(Msg {
                    message_id: mid.to_string(),
                    key: r["key"].as_str().map(str::to_string),
                    text: r["text"].as_str().unwrap_or_default().to_string(),
                });
            }
            _ => {}
        }
    }

    /// Name this process as cluster node `node` (ids become `s<node>b<boot>.n`, unique across
    /// nodes).
    pub fn node(mut self, node: &str) -> Self {
        self.prefix = format!("{node}b{}", self.boot);
        self
    }

    /// Retained messages per session, as `{sessionId: [messageId...]}` (for the `recover` op).
    pub fn retained(&self) -> Value {
        retained_ids(
            self.sessions
                .iter()
                .map(|(sid, s)| (sid, s.messages.iter().map(|m| &m.message_id))),
        )
    }

    /// The design's declared retention.
    pub fn retention(&self) -> Retention {
        self.durability().retention()
    }

    /// The design's answers ([`Design::durability`]).
    fn durability(&self) -> &'static dyn Durability {
        self.cfg.design.durability()
    }

    /// Whether the design writes its sessions' records ([`Durability::persists`]).
    fn persists(&self) -> bool {
        self.durability().persists()
    }

    fn send(&self, conn: ConnId, line: String, out: &mut Vec<Action>) {
        if self.conns.contains_key(&conn) {
            out.push(Action::Send { conn, line });
        }
    }

    /// Answer request `id` on `conn` with a JSON-RPC error.
    fn fail(
        &self,
        conn: ConnId,
        id: &Value,
        code: i64,
        message: &str,
        data: Option<Value>,
        out: &mut Vec<Action>,
    ) {
        self.send(conn, rpc::err(id, code, message, data), out);
    }

    fn note(sid: &str, update: SessionUpdate) -> String {
        rpc::notification_of(
            "session/update",
            &UpdateSessionNotification::new(sid.to_string(), update),
        )
    }

    fn update_all(&self, sid: &str, update: SessionUpdate, out: &mut Vec<Action>) {
        let line = Self::note(sid, update);
        for (conn, active) in &self.conns {
            if active.contains(sid) {
                out.push(Action::Send {
                    conn: *conn,
                    line: line.clone(),
                });
            }
        }
    }

    fn timer(&mut self, sid: &str, kind: TimerKind, after_ms: u64, out: &mut Vec<Action>) -> u64 {
        let t = self.next_timer;
        self.next_timer += 1;
        self.timers.insert(t, (sid.to_string(), kind));
        out.push(Action::Timer { id: t, after_ms });
        t
    }

    /// What runs before every input: a restart starts the retention window again for what it
    /// recovered (the process does not know when an earlier one inserted it): kept at least
    /// the window.
    fn before_input(&mut self, out: &mut Vec<Action>) {
        if self.cfg.retention_ms > 0 && !std::mem::replace(&mut self.armed, true) {
            self.arm_recovered(out);
        }
    }

    /// One line read on `conn`; `decoded` is the line's JSON when the driver already decoded it
    /// ([`AgentModel::handle_decoded`]).
    fn frame(&mut self, conn: ConnId, line: &str, decoded: Option<Value>, out: &mut Vec<Action>) {
        if line.trim().is_empty() {
            return;
        }
        let lenient = self.cfg.mutant == Some(AgentMutant::LenientJson);
        // The envelope is checked: a bad id or version is -32600, never executed.
        let parsed = match decoded {
            Some(v) if !lenient => Ok(rpc::decode_request(v)),
            // Mutant: lone surrogates read as a character.
            _ if lenient => rpc::parse_request(&replace_lone_surrogates(line)),
            _ => rpc::parse_request(line),
        };
        let frame = match parsed {
            Ok(f) => f,
            Err(e) => {
                return self.fail(
                    conn,
                    &Value::Null,
                    code::PARSE_ERROR,
                    "Parse error",
                    Some(json!(e.0)),
                    out,
                );
            }
        };
        match frame {
            Frame::Request { id, method, params } => self.request(conn, id, &method, params, out),
            Frame::Notification { method, params } => {
                self.notification(conn, &method, &params, out)
            }
            Frame::Response { id, result } => self.client_response(conn, &id, result, out),
            Frame::Invalid { id } => self.send(
                conn,
                rpc::err(&id, code::INVALID_REQUEST, "Invalid Request", None),
                out,
            ),
        }
    }

    /// Long on purpose: one arm per ACP method the Agent serves, each a few lines; the dispatch is
    /// the table of contents of the protocol core.
    fn request(
        &mut self,
        conn: ConnId,
        id: Value,
        method: &str,
        params: Value,
        out: &mut Vec<Action>,
    ) {
        if method != "initialize" && self.init_failed.contains(&conn) {
            let data = json!({"reason": "initialize failed on this connection"});
            return self.fail(
                conn,
                &id,
                code::INVALID_REQUEST,
                "Invalid Request",
                Some(data),
                out,
            );
        }
        if method == "session/prompt" {
            out.push(Action::Point(Point::AfterReceive));
        }
        // The key-validation mutants: a key K1/K2 allow, refused -32602.
        let key = params.get("idempotencyKey");
        let refused = match self.cfg.mutant {
            // `null` is the same as no key (K1).
            Some(AgentMutant::NullKeyRejected) if key == Some(&Value::Null) => {
                Some("idempotencyKey: null")
            }
            // Bytes, not characters (K2).
            Some(AgentMutant::KeyLengthInBytes)
                if key.and_then(Value::as_str).is_some_and(|k| k.len() > 255) =>
            {
                Some("idempotencyKey: longer than 255")
            }
            _ => None,
        };
        if let (Some(why), "session/prompt") = (refused, method) {
            return self.fail(
                conn,
                &id,
                code::INVALID_PARAMS,
                "Invalid params",
                Some(json!(why)),
                out,
            );
        }
        let mut params = params;
        if self.cfg.mutant == Some(AgentMutant::InvalidKeyAsOmitted) && method == "session/prompt" {
            let malformed = match params.get("idempotencyKey") {
                None | Some(Value::Null) => false,
                Some(Value::String(s)) => !(1..=255).contains(&s.chars().count()),
                Some(_) => true,
            };
            if malformed {
                if let Some(o) = params.as_object_mut() {
                    o.remove("idempotencyKey");
                }
            }
        }
        let req = match ClientRequest::from_method_and_params(method, &params) {
            Ok(r) => r,
            Err(agent_client_protocol_schema::MethodDispatchError::UnknownMethod { .. }) => {
                return self.fail(
                    conn,
                    &id,
                    code::METHOD_NOT_FOUND,
                    "Method not found",
                    Some(json!(method)),
                    out,
                );
            }
            Err(e) => {
                if method == "initialize" {
                    self.init_failed.insert(conn);
                }
                // K3: a malformed key is never treated as omitted; nothing is inserted.
                let l = rpc::err(
                    &id,
                    code::INVALID_PARAMS,
                    "Invalid params",
                    Some(json!(e.to_string())),
                );
                if method == "session/prompt" {
                    out.push(effect(
                        op::REJECT,
                        json!({"conn": conn, "id": id, "code": code::INVALID_PARAMS}),
                    ));
                }
                return self.send(conn, l, out);
            }
        };
        let not_found = |sid: &str| Some(json!({"sessionId": sid}));
        match req {
            ClientRequest::InitializeRequest(_) => {
                self.init_failed.remove(&conn);
                let resp = InitializeResponse::new(
                    ProtocolVersion::V2,
                    Implementation::new(
                        format!("acp-chaos-{}-agent", self.cfg.design.as_str()),
                        env!("CARGO_PKG_VERSION"),
                    ),
                )
                .capabilities(AgentCapabilities::new().session(SessionCapabilities::new()));
                self.send(conn, rpc::ok(&id, to_value(resp)), out);
            }
            ClientRequest::NewSessionRequest(r) => {
                let sid = self.new_session_id();
                let cwd = r.cwd.0.to_string_lossy().into_owned();
                self.sessions.insert(
                    sid.clone(),
                    Session {
                        filled: true,
                        cwd: cwd.clone(),
                        ..Session::default()
                    },
                );
                if self.persists() {
                    out.push(Action::Persist {
                        record: json!({"t": "session", "id": sid, "cwd": cwd}),
                        sync: true,
                    });
                }
                self.activate(conn, &sid, out);
                self.send(
                    conn,
                    rpc::ok(&id, to_value(NewSessionResponse::new(sid))),
                    out,
                );
            }
            ClientRequest::ForkSessionRequest(r) => {
                let from = r.session_id.0.to_string();
                let Some(src) = self.sessions.get(&from) else {
                    return self.fail(
                        conn,
                        &id,
                        code::RESOURCE_NOT_FOUND,
                        "Session not found",
                        not_found(&from),
                        out,
                    );
                };
                // A9: the fork copies the history, never the keys.
                let messages: Vec<Msg> = src
                    .messages
                    .iter()
                    .map(|m| Msg {
                        key: None,
                        ..m.clone()
                    })
                    .collect();
                let ids = messages.iter().map(|m| m.message_id.clone()).collect();
                let copied: Vec<String> = messages.iter().map(|m| m.message_id.clone()).collect();
                let sid = self.new_session_id();
                let cwd = r.cwd.0.to_string_lossy().into_owned();
                self.sessions.insert(
                    sid.clone(),
                    Session {
                        messages,
                        ids,
                        filled: true,
                        cwd: cwd.clone(),
                        ..Session::default()
                    },
                );
                if self.persists() {
                    out.push(Action::Persist {
                        record: json!({"t": "fork", "id": sid, "from": from, "cwd": cwd}),
                        sync: true,
                    });
                }
                // Retention window: the copies are kept the window from the fork on.
                for mid in copied {
                    self.arm_discard(&sid, &mid, out);
                }
                self.activate(conn, &sid, out);
                self.send(
                    conn,
                    rpc::ok(&id, to_value(v2::ForkSessionResponse::new(sid))),
                    out,
                );
            }
            ClientRequest::ListSessionsRequest(r) => {
                // A8: no keys in list results; each session with its own cwd, and only those
                // under the `cwd` filter when one is given (archived ones on request).
                let infos: Vec<v2::SessionInfo> = self
                    .sessions
                    .iter()
                    .filter(|(_, s)| Self::listed(r.archived.as_ref(), s.archived))
                    .filter(|(_, s)| {
                        r.cwd
                            .as_ref()
                            .is_none_or(|c| std::path::Path::new(&s.cwd) == c.0.as_path())
                    })
                    .map(|(sid, s)| {
                        v2::SessionInfo::new(sid.clone(), s.cwd.clone())
                            .title(s.title.clone())
                            .archived(s.archived.then_some(true))
                    })
                    .collect();
                self.send(
                    conn,
                    rpc::ok(&id, to_value(v2::ListSessionsResponse::new(infos))),
                    out,
                );
            }
            ClientRequest::ResumeSessionRequest(r) => self.resume(conn, id, &r, out),
            ClientRequest::SessionStatusRequest(r) => {
                let sid = r.session_id.0.to_string();
                let Some(s) = self.sessions.get(&sid) else {
                    return self.fail(
                        conn,
                        &id,
                        code::RESOURCE_NOT_FOUND,
                        "Session not found",
                        not_found(&sid),
                        out,
                    );
                };
                let resp = v2::SessionStatusResponse::new(v2::SessionStatus::Open)
                    .state(Self::snapshot(s));
                self.send(conn, rpc::ok(&id, to_value(resp)), out);
            }
            ClientRequest::SetSessionConfigOptionRequest(r) => {
                let sid = r.session_id.0.to_string();
                if !self.is_active(conn, &sid) {
                    return self.fail(
                        conn,
                        &id,
                        code::RESOURCE_NOT_FOUND,
                        "Session not active on this connection",
                        not_found(&sid),
                        out,
                    );
                }
                let value = serde_json::to_value(&r.value).unwrap_or(Value::Null);
                let s = self.sessions.get_mut(&sid).expect("active sessions exist");
                s.config.insert(r.config_id.0.to_string(), value);
                let on = s
                    .config
                    .get("autosave")
                    .and_then(|v| v["value"].as_bool())
                    .unwrap_or(false);
                let resp = v2::SetSessionConfigOptionResponse::new(vec![
                    v2::SessionConfigOption::boolean("autosave", "Autosave", on),
                ]);
                self.send(conn, rpc::ok(&id, to_value(resp)), out);
            }
            ClientRequest::CloseSessionRequest(r) => {
                let sid = r.session_id.0.to_string();
                // A15: closing a missing or inactive session succeeds and changes nothing; the
                // final updates go before the response (the mutant answers first).
                let first = self.cfg.mutant == Some(AgentMutant::CloseAnswersFirst);
                if self.cfg.mutant == Some(AgentMutant::CloseInactiveErrors)
                    && !self.is_active(conn, &sid)
                {
                    // Mutant: refused, though nothing is wrong to close.
                    let data = Some(json!({"sessionId": sid}));
                    let e = rpc::err(&id, code::RESOURCE_NOT_FOUND, "Session not active", data);
                    return self.send(conn, e, out);
                }
                if !first {
                    self.close_on(conn, &sid, "close", out);
                }
                self.send(
                    conn,
                    rpc::ok(&id, to_value(v2::CloseSessionResponse::new())),
                    out,
                );
                if first {
                    self.close_on(conn, &sid, "close", out);
                }
            }
            ClientRequest::DeleteSessionRequest(r) => {
                let sid = r.session_id.0.to_string();
                if self.sessions.contains_key(&sid) {
                    self.cancel_work(&sid, true, "delete", out);
                    self.sessions.shift_remove(&sid);
                    for a in self.conns.values_mut() {
                        a.remove(&sid);
                    }
                    if self.persists() {
                        out.push(Action::Persist {
                            record: json!({"t": "delete", "id": sid}),
                            sync: true,
                        });
                    }
                    out.push(effect(op::SESSION_DELETE, json!({"session": sid})));
                }
                self.send(
                    conn,
                    rpc::ok(&id, to_value(v2::DeleteSessionResponse::new())),
                    out,
                );
            }
            ClientRequest::PromptRequest(r) => self.prompt(conn, id, *r, out),
            ClientRequest::SetSessionTitleRequest(r) => self.set_title(conn, id, &r, out),
            ClientRequest::ArchiveSessionRequest(r) => {
                self.archive(conn, id, &r.session_id.0, true, out)
            }
            ClientRequest::UnarchiveSessionRequest(r) => {
                self.archive(conn, id, &r.session_id.0, false, out)
            }
            ClientRequest::SessionOptionsRequest(r) => self.options(conn, id, &r, out),
            _ => {
                self.fail(
                    conn,
                    &id,
                    code::METHOD_NOT_FOUND,
                    "Method not found",
                    Some(json!(method)),
                    out,
                );
            }
        }
    }

    fn notification(&mut self, conn: ConnId, method: &str, params: &Value, out: &mut Vec<Action>) {
        if method == "$/cancel_request" {
            // A5: about a request the sender issued; unknown or answered ids are ignored.
            if let Some(rid) = params.get("requestId") {
                self.cancel_request(conn, rid, out);
            }
            return;
        }
        if let Ok(ClientNotification::CancelSessionNotification(n)) =
            ClientNotification::from_method_and_params(method, params)
        {
            let sid = n.session_id.0.to_string();
            if self.is_active(conn, &sid) {
                self.cancel_work(&sid, false, "session/cancel", out);
                if self.cfg.mutant == Some(AgentMutant::StopCancelsLater) {
                    self.cancel_later.insert(sid);
                }
            }
        }
    }

    /// A Client's answer to one of our requests (permission).
    /// X5: the remote transport did not accept a request of ours: send the permission request
    /// it was again, if the turn still waits for it on that connection.
    fn not_accepted(&mut self, conn: ConnId, id: &Value, out: &mut Vec<Action>) {
        let Some(req) = id.as_u64() else { return };
        let Some(sid) = self.asks.get(&req).cloned() else {
            return;
        };
        let waits = self.sessions.get(&sid).and_then(|s| s.turn.as_ref()).is_some_and(
            |t| matches!(t.phase, TurnPhase::AwaitPermission { conn: c, req: r } if c == conn && r == req),
        );
        if waits {
            self.send(conn, prompt::permission_request(req, &sid), out);
        }
    }

    fn client_response(
        &mut self,
        conn: ConnId,
        id: &Value,
        result: Result<Value, Value>,
        out: &mut Vec<Action>,
    ) {
        let Some(req) = id.as_u64() else { return };
        let Some(sid) = self.asks.shift_remove(&req) else {
            return;
        };
        if self.reasked.remove(&req) {
            // A copy asked again may still be open at the Client (the first answer crossed
            // it, or it was decided while the node awaited its store): the question is
            // settled, so withdraw it, or the turn ends with a request of its own open (A6).
            self.send(
                conn,
                rpc::notification("$/cancel_request", json!({"requestId": req})),
                out,
            );
        }
        let approved = matches!(&result, Ok(v) if v["outcome"]["outcome"] == "selected" && v["outcome"]["optionId"] == "allow");
        let Some(turn) = self.sessions.get(&sid).and_then(|s| s.turn.clone()) else {
            return;
        };
        if let TurnPhase::AwaitPermission { conn: c, req: r } = turn.phase {
            if c == conn && r == req {
                out.push(effect(
                    op::PERMISSION,
                    json!({"session": sid, "messageId": turn.message_id, "approved": approved}),
                ));
                self.work(&sid, approved, out);
            }
        }
    }
}

/// Messages in the cluster store's `load` shape (`[{messageId, key, text}]`).
fn msgs_of(v: &Value) -> Vec<Msg> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|m| Msg {
                    message_id: m["messageId"].as_str().unwrap_or_default().to_string(),
                    key: m["key"].as_str().map(str::to_string),
                    text: m["text"].as_str().unwrap_or_default().to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The adapter's message id for a key: `UUIDv5(sessionId, key)` (the RFD's derived id).
pub fn derive_id(session: &str, key: &str) -> String {
    let ns = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, session.as_bytes());
    uuid::Uuid::new_v5(&ns, key.as_bytes()).to_string()
}

impl AgentModel for ModelAgent {
    fn handle(&mut self, input: AgentInput, out: &mut Vec<Action>) {
        // Whatever must run before every input goes in `before_input`: `handle_decoded`
        // (a frame that skips this match) calls it too.
        self.before_input(out);
        match input {
            AgentInput::Connected(c) => {
                self.conns.insert(c, BTreeSet::new());
            }
            AgentInput::Frame(c, line) => self.frame(c, &line, None, out),
            AgentInput::Disconnected(c) => self.disconnected(c, out),
            AgentInput::Timer(t) => self.timer_fired(t, out),
            AgentInput::InjectTransientError => self.transient_errors += 1,
            AgentInput::Logical(c, l) => {
                self.logical.insert(c, l);
            }
            AgentInput::StoreSnapshot(v) => self.merge_snapshot(&v),
            AgentInput::StoreReply { req, reply } => self.store_reply(req, reply, out),
            AgentInput::NotAccepted { conn, id } => self.not_accepted(conn, &id, out),
        }
    }

    fn handle_decoded(
        &mut self,
        conn: ConnId,
        line: String,
        decoded: Value,
        out: &mut Vec<Action>,
    ) {
        self.before_input(out);
        self.frame(conn, &line, Some(decoded), out);
    }

    fn retained(&self) -> Value {
        ModelAgent::retained(self)
    }

    fn is_idle(&self) -> bool {
        self.storing.is_empty()
            && self
                .sessions
                .values()
                .all(|s| s.turn.is_none() && s.held.is_empty() && s.fill_queue.is_empty())
    }

    fn state_digest(&self) -> Option<u64> {
        Some(crate::digest::of(self, &[self.rng.get_word_pos()]))
    }
}

fn to_value<T: Serialize>(v: T) -> Value {
    serde_json::to_value(v).expect("schema types serialize")
}

/// Mutant `lenient-json`: every `\uXXXX` escape of a surrogate that is not half of a pair
/// becomes `\ufffd` (what a parser that accepts lone surrogates ends up holding).
fn replace_lone_surrogates(line: &str) -> String {
    let hex = |s: &str| u16::from_str_radix(s, 16).ok();
    let escape_at = |i: usize| {
        line.get(i..i + 6)
            .filter(|e| e.starts_with("\\u"))
            .and_then(|e| hex(&e[2..]))
    };
    let (mut out, mut i) = (String::with_capacity(line.len()), 0);
    while i < line.len() {
        if line[i..].starts_with("\\\\") {
            out.push_str("\\\\");
            i += 2;
            continue;
        }
        match escape_at(i) {
            Some(0xD800..=0xDBFF)
                if escape_at(i + 6).is_some_and(|lo| (0xDC00..=0xDFFF).contains(&lo)) =>
            {
                out.push_str(&line[i..i + 12]);
                i += 12;
            }
            Some(0xD800..=0xDFFF) => {
                out.push_str("\\ufffd");
                i += 6;
            }
            _ => {
                let c = line[i..].chars().next().expect("in bounds");
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// `{sessionId: [messageId...]}`, in the sessions' order: what a `recover` op says a process
/// (or the cluster's store) kept.
pub(crate) fn retained_ids<'a, M>(sessions: impl Iterator<Item = (&'a String, M)>) -> Value
where
    M: Iterator<Item = &'a String>,
{
    Value::Object(
        sessions
            .map(|(sid, ids)| (sid.clone(), ids.cloned().map(Value::from).collect()))
            .collect(),
    )
}
