//! The model Agents and their mutants.
//!
//! A sans-IO state machine: [`AgentModel::handle`] takes one [`AgentInput`] and appends
//! [`Action`]s. One protocol core serves every design; a [`Design`] differs from another only
//! where the proposal says designs differ: where sessions and keys live and when they are
//! durable.
//!
//! - `stored` (`durable`): key and message in one framed record, synced before the insertion
//!   becomes visible (A10, A13, D1).
//! - `in-memory` (`process`): nothing on disk; a restart loses every session.
//! - `adapter` (`process`): the proposal's "Adapter validation" design over a runtime store it
//!   does not control: the runtime keeps user messages under an id the adapter picks
//!   (`UUIDv5(sessionId, key)`), never keys, and persists lazily (synced at turn end); the
//!   adapter finds retries in its pending prompts and in an in-memory id set that it fills from
//!   the runtime's history once, on the first keyed prompt after a restart.
//! - `cluster` (`durable`): one node of a remote Agent. Sessions, key records and which logical
//!   connection has which session active live in the store host ([`crate::cluster`]), never in
//!   the node (A13). Before each request the node loads the store's view; an insertion is one
//!   insert-if-absent at the store. A node that cannot learn whether its store write applied
//!   sends it again until it knows, never answering with an error (A2).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use agent_client_protocol_schema::v2::{
    self, AgentCapabilities, ClientNotification, ClientRequest, ContentBlock, Implementation,
    InitializeResponse, NewSessionResponse, PromptResponse, ReplayComplete, ResumeSessionResponse,
    SessionCapabilities, SessionUpdate, StateUpdate, StopReason, UpdateSessionNotification,
    UserMessage,
};
use agent_client_protocol_schema::ProtocolVersion;
use indexmap::IndexMap;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::action::{effect, Action, ConnId, Point};
use crate::rpc::{self, code, Frame};

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
/// ground truth to the history. The checkers read these effects of an Agent (each a JSON
/// object; `conn` and `id` are the attempt's connection and JSON-RPC id, as received):
///
/// - `insert` `{session, messageId, key, conn, id, mode: "direct", live_only: false}`: a user
///   message was inserted (P1 counts these per submission);
/// - `durable` or `visible` `{session, messageId}`: the insertion took effect (synced, or
///   shown); an insertion that never took effect (a crash came first) is not a duplicate;
/// - `dedup-hit` `{session, key, messageId, conn, id}`: a retry was answered with the messageId
///   recorded for its key;
/// - `reject` `{conn, id, code}` (with `transient: true` for an injected
///   [`AgentInput::InjectTransientError`]): a prompt was refused before insertion.
pub trait AgentModel {
    /// Handle one input; push the actions to run, in order.
    fn handle(&mut self, input: AgentInput, out: &mut Vec<Action>);
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
}

/// What the design promises to keep (RULES.md "Retention").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Retention {
    /// Keeps every message whose insertion took effect, across restarts.
    Durable,
    /// Keeps messages while its process lives.
    Process,
}

/// An Agent design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Design {
    /// Keys and sessions in memory: a stdio agent whose restart loses everything.
    InMemory,
    /// Stored sessions: key and message in one fsynced record.
    Stored,
    /// An adapter over a runtime store it does not control (derived ids, lazy runtime sync).
    Adapter,
    /// A node of a remote Agent: N nodes share one store host (insert-if-absent, A13).
    Cluster,
}

impl Design {
    /// Every design, for `acp-chaos list`.
    pub const ALL: [Design; 4] = [
        Design::InMemory,
        Design::Stored,
        Design::Adapter,
        Design::Cluster,
    ];

    /// The retention the design declares.
    pub fn retention(self) -> Retention {
        match self {
            Design::Stored | Design::Cluster => Retention::Durable,
            Design::InMemory | Design::Adapter => Retention::Process,
        }
    }

    /// Name used in scenario files and `--agent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Design::InMemory => "in-memory",
            Design::Stored => "stored",
            Design::Adapter => "adapter",
            Design::Cluster => "cluster",
        }
    }

    /// One line for `acp-chaos list`.
    pub fn summary(self) -> &'static str {
        match self {
            Design::InMemory => "process retention: sessions and keys in memory; a restart loses them (resume gets -32002)",
            Design::Stored => "durable retention: key + message in one fsynced record before the echo, response or work (A10 A13 D1)",
            Design::Adapter => "process retention: runtime keeps messages under UUIDv5(sessionId, key), synced at turn end; id set filled from history after restart",
            Design::Cluster => "durable retention: N nodes, one store host; insert-if-absent at the store; requests and retries routed to any node (A13 A2)",
        }
    }
}

/// O1: held prompts when their connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeldOnDisconnect {
    /// Keep the held prompt; it is inserted in turn and a retry gets its outcome.
    Keep,
    /// Drop it; a waiting retry becomes the submission (A7), otherwise a retry is new.
    Drop,
}

/// O2: foreground work when its connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkOnDisconnect {
    /// The turn runs to its end.
    Continue,
    /// The turn is cancelled (`stopReason: cancelled`).
    Cancel,
}

/// O4: prompts that arrive during a running turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DuringTurn {
    /// Hold until the running turn ends.
    Hold,
    /// Insert into the running turn (steering); no new turn starts.
    Steer,
}

/// Agent mutants: each a small named difference from the correct model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentMutant {
    /// Ignores `idempotencyKey`: every attempt inserts. Breaks A1/A4 (P1, Agent at fault).
    NoDedup,
    /// Writes message and key without `sync_all`: a crash loses an acknowledged message and the
    /// retry inserts it again. Breaks D1/A10 (P11 and P1, Agent at fault).
    RecordUnsynced,
    /// A failure after insertion is answered with an error (`-32603`) instead of the
    /// `messageId`. Breaks A3/A2 (P4, Agent at fault).
    ErrorAfterInsert,
    /// `$/cancel_request` withdraws the prompt but answers only the attempt it named, leaving
    /// the key's other pending attempts unanswered. Breaks A5 (P6, Agent at fault).
    CancelAnswersOne,
    /// Echoes the key in the `user_message` update's `_meta`. Breaks A8 (P8, Agent at fault).
    KeyInUpdates,
    /// Adapter trusts only its in-memory id set after a restart (never reads the history).
    /// Breaks A10 (P1, Agent at fault).
    AdapterNoHistoryFill,
    /// Cluster node keeps key records in its own memory: a retry routed to another node (or
    /// after a restart) inserts again. Breaks A13/A10 (P1, Agent at fault).
    ClusterNodeLocalKeys,
    /// Cluster node reads "key absent" from the store, then inserts in a second step: two nodes
    /// handling attempts of one key at once both insert. Breaks A4/A13 (P1, Agent at fault).
    ClusterCheckThenInsert,
    /// Cluster node whose store write timed out answers the prompt with an error although the
    /// store may have applied it. Breaks A2 (P4, Agent at fault).
    ClusterErrorOnStoreTimeout,
    /// `session/close` drops the held prompts without answering them (A15 says `-32800`).
    /// Breaks A15 (P7, Agent at fault).
    CloseForgetsHeld,
    /// A malformed `idempotencyKey` (`""`, 256+ characters, a number, ...) is dropped and the
    /// prompt handled as unkeyed. Breaks K3 (P5, Agent at fault).
    InvalidKeyAsOmitted,
    /// Key records are looked up in every session, not only the prompt's own: the same key
    /// string in another session (or a fork) is answered with that session's messageId.
    /// Breaks A9 (P9, Agent at fault).
    KeysAcrossSessions,
    /// `session/cancel` also withdraws the next prompt that arrives for the session. Breaks A6
    /// (P6, Agent at fault).
    StopCancelsLater,
    /// `stored`: the key is recorded (synced) when the prompt arrives, before it is inserted;
    /// after a crash in between, a retry finds the record and is answered with a messageId no
    /// message has. Breaks A12 (P2, Agent at fault).
    KeyRecordedOnArrival,
    /// A locally handled command's key is forgotten as soon as it is answered, while its
    /// session is still active: a retry of the command runs it again. Breaks A11 (P1, Agent).
    ForgetsLiveWhileActive,
    /// A retry that arrives while the original is held is answered at once with `-32603`
    /// ("in progress") instead of waiting for the original's outcome. Breaks A7 (P3, Agent).
    HeldRetryErrors,
    /// Key records are kept per connection: a retry on another connection (after a reconnect
    /// or a restart) does not find its key and inserts again. Breaks A10 (P1, Agent).
    KeysPerConnection,
    /// `stored`: the message and its key are written in two steps (message, then key); a crash
    /// between them keeps the message without its key, and the retry inserts it again.
    /// Breaks A13 (P1, Agent at fault).
    TwoStepWrite,
    /// `session/cancel` stops the running turn but leaves earlier held prompts queued: they are
    /// inserted after the cancel. Breaks A6 (P6, Agent at fault).
    CancelSkipsHeld,
    /// `$/cancel_request` withdraws the held prompt and answers none of its attempts. Breaks
    /// A5 (P7, Agent at fault).
    CancelAnswersNone,
    /// Duplicates are detected by (session, JSON-RPC id) instead of (session, key): a new
    /// prompt that happens to reuse an id on another connection gets the old messageId.
    /// Breaks A1/A4 (P3, Agent at fault).
    DedupById,
    /// `session/resume` of a session still active on another connection is refused
    /// (`-32603`, "attached elsewhere") instead of synchronizing it again. Breaks the
    /// idempotent class of `session/resume` (P10, Agent at fault).
    ResumeActiveErrors,
}

/// Settings of a model Agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentConfig {
    /// The design.
    pub design: Design,
    /// O1 policy.
    pub o1: HeldOnDisconnect,
    /// O2 policy.
    pub o2: WorkOnDisconnect,
    /// O4 policy.
    pub o4: DuringTurn,
    /// Shortest simulated turn, in ms.
    pub turn_ms_min: u64,
    /// Longest simulated turn, in ms.
    pub turn_ms_max: u64,
    /// Chance that a turn makes a tool call with a side effect (counted in the ledger).
    pub tool_rate: f64,
    /// Chance that a tool call first asks the Client with `session/request_permission`.
    pub permission_rate: f64,
    /// The mutant, if any.
    pub mutant: Option<AgentMutant>,
}

impl AgentConfig {
    /// A config with the given design and policies and no tools, for tests.
    pub fn simple(
        design: Design,
        o1: HeldOnDisconnect,
        o4: DuringTurn,
        mutant: Option<AgentMutant>,
    ) -> AgentConfig {
        AgentConfig {
            design,
            o1,
            o2: WorkOnDisconnect::Continue,
            o4,
            turn_ms_min: 10,
            turn_ms_max: 10,
            tool_rate: 0.0,
            permission_rate: 0.0,
            mutant,
        }
    }
}

#[derive(Debug, Clone)]
struct Msg {
    message_id: String,
    key: Option<String>,
    text: String,
}

#[derive(Debug, Clone)]
struct Held {
    conn: ConnId,
    id: Value,
    key: Option<String>,
    text: String,
    /// Retries with the same key waiting for this prompt's outcome (A7).
    waiters: Vec<(ConnId, Value)>,
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

/// Why a prompt's wait ended without insertion.
const CANCELLED: &str = "Request cancelled";

/// The model Agent for every [`Design`].
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
    /// Mutant `cluster-node-local-keys`: (session, key) → messageId, in this node's memory.
    local_keys: BTreeMap<(String, String), String>,
    /// Mutant `stop-cancels-later`: sessions whose next prompt a past stop withdraws.
    cancel_later: BTreeSet<String>,
    /// Mutant `key-recorded-on-arrival`: (session, key) → (the messageId recorded on arrival,
    /// the boot that recorded it).
    arrivals: BTreeMap<(String, String), (String, u32)>,
    /// Mutant `keys-per-connection`: the (session, key) pairs inserted on each connection.
    conn_keys: BTreeMap<ConnId, BTreeSet<(String, String)>>,
    /// Mutant `dedup-by-id`: (session, JSON-RPC id) → messageId.
    id_records: BTreeMap<(String, String), String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum TimerKind {
    TurnEnd,
    HistoryFill,
}

/// The stored-session Agent: the `stored` design of [`ModelAgent`].
pub type StoredAgent = ModelAgent;

impl ModelAgent {
    /// Rebuild from the records recovered from disk (none for `in-memory`). `boot` numbers the
    /// process start (ids stay unique across restarts); `seed` seeds turn durations and tools.
    pub fn recover(cfg: AgentConfig, boot: u32, seed: u64, records: &[Value]) -> Self {
        let mut sessions: IndexMap<String, Session> = IndexMap::new();
        let mut arrivals: BTreeMap<(String, String), (String, u32)> = BTreeMap::new();
        if !matches!(cfg.design, Design::InMemory | Design::Cluster) {
            for r in records {
                let sid = r["id"]
                    .as_str()
                    .or(r["session"].as_str())
                    .unwrap_or_default()
                    .to_string();
                match r["t"].as_str() {
                    Some("session") => {
                        sessions.entry(sid).or_default();
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
                        sessions.entry(sid).or_default().messages = msgs;
                    }
                    Some("delete") => {
                        sessions.shift_remove(&sid);
                    }
                    Some("arrival") => {
                        if let (Some(k), Some(mid)) = (r["key"].as_str(), r["messageId"].as_str()) {
                            let b = r["boot"].as_u64().unwrap_or(0) as u32;
                            arrivals.insert((sid.clone(), k.to_string()), (mid.to_string(), b));
                        }
                    }
                    // Mutant `two-step-write`: the key written after its message.
                    Some("msg-key") => {
                        let (Some(mid), Some(k)) = (r["messageId"].as_str(), r["key"].as_str())
                        else {
                            continue;
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
                            continue;
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
        }
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
            transient_errors: 0,
            tool_effects: 0,
            fail_next_insert: false,
            next_message: 0,
            prefix: boot.to_string(),
            logical: IndexMap::new(),
            storing: IndexMap::new(),
            next_store: 0,
            local_keys: BTreeMap::new(),
            cancel_later: BTreeSet::new(),
            arrivals,
            conn_keys: BTreeMap::new(),
            id_records: BTreeMap::new(),
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
        let mut m = serde_json::Map::new();
        for (sid, s) in &self.sessions {
            m.insert(
                sid.clone(),
                s.messages
                    .iter()
                    .map(|x| Value::from(x.message_id.clone()))
                    .collect(),
            );
        }
        Value::Object(m)
    }

    /// The design's declared retention.
    pub fn retention(&self) -> Retention {
        self.cfg.design.retention()
    }

    fn persists(&self) -> bool {
        self.cfg.design != Design::InMemory
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
        rpc::notification(
            "session/update",
            to_value(UpdateSessionNotification::new(sid.to_string(), update)),
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

    fn frame(&mut self, conn: ConnId, line: &str, out: &mut Vec<Action>) {
        if line.trim().is_empty() {
            return;
        }
        let frame = match rpc::parse(line) {
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

    fn request(
        &mut self,
        conn: ConnId,
        id: Value,
        method: &str,
        params: Value,
        out: &mut Vec<Action>,
    ) {
        if method == "session/prompt" {
            out.push(Action::Point(Point::AfterReceive));
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
                // K3: a malformed key is never treated as omitted; nothing is inserted.
                let l = rpc::err(
                    &id,
                    code::INVALID_PARAMS,
                    "Invalid params",
                    Some(json!(e.to_string())),
                );
                if method == "session/prompt" {
                    out.push(effect(
                        "reject",
                        json!({"conn": conn, "id": id, "code": code::INVALID_PARAMS}),
                    ));
                }
                return self.send(conn, l, out);
            }
        };
        let not_found = |sid: &str| Some(json!({"sessionId": sid}));
        match req {
            ClientRequest::InitializeRequest(_) => {
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
            ClientRequest::NewSessionRequest(_) => {
                let sid = self.new_session_id();
                self.sessions.insert(
                    sid.clone(),
                    Session {
                        filled: true,
                        ..Session::default()
                    },
                );
                if self.persists() {
                    out.push(Action::Persist {
                        record: json!({"t": "session", "id": sid}),
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
                let sid = self.new_session_id();
                self.sessions.insert(
                    sid.clone(),
                    Session {
                        messages,
                        ids,
                        filled: true,
                        ..Session::default()
                    },
                );
                if self.persists() {
                    out.push(Action::Persist {
                        record: json!({"t": "fork", "id": sid, "from": from}),
                        sync: true,
                    });
                }
                self.activate(conn, &sid, out);
                self.send(
                    conn,
                    rpc::ok(&id, to_value(v2::ForkSessionResponse::new(sid))),
                    out,
                );
            }
            ClientRequest::ListSessionsRequest(_) => {
                // A8: no keys in list results.
                let infos: Vec<v2::SessionInfo> = self
                    .sessions
                    .keys()
                    .map(|s| v2::SessionInfo::new(s.clone(), "/work"))
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
                // A15: closing a missing or inactive session succeeds and changes nothing.
                if self.is_active(conn, &sid) {
                    self.cancel_work(&sid, true, "close", out);
                    if let Some(a) = self.conns.get_mut(&conn) {
                        a.remove(&sid);
                    }
                    out.push(effect("deactivate", json!({"session": sid, "conn": conn})));
                    self.persist_activity(conn, &sid, "deactivate", out);
                    self.forget_live_if_inactive(&sid);
                }
                self.send(
                    conn,
                    rpc::ok(&id, to_value(v2::CloseSessionResponse::new())),
                    out,
                );
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
                    out.push(effect("session-delete", json!({"session": sid})));
                }
                self.send(
                    conn,
                    rpc::ok(&id, to_value(v2::DeleteSessionResponse::new())),
                    out,
                );
            }
            ClientRequest::PromptRequest(r) => self.prompt(conn, id, *r, out),
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
        let approved = matches!(&result, Ok(v) if v["outcome"]["outcome"] == "selected" && v["outcome"]["optionId"] == "allow");
        let Some(turn) = self.sessions.get(&sid).and_then(|s| s.turn.clone()) else {
            return;
        };
        if let TurnPhase::AwaitPermission { conn: c, req: r } = turn.phase {
            if c == conn && r == req {
                out.push(effect(
                    "permission",
                    json!({"session": sid, "messageId": turn.message_id, "approved": approved}),
                ));
                self.work(&sid, approved, out);
            }
        }
    }

    fn new_session_id(&mut self) -> String {
        let sid = format!("s{}.{}", self.prefix, self.next_session);
        self.next_session += 1;
        sid
    }

    fn is_active(&self, conn: ConnId, sid: &str) -> bool {
        self.sessions.contains_key(sid) && self.conns.get(&conn).is_some_and(|a| a.contains(sid))
    }

    fn activate(&mut self, conn: ConnId, sid: &str, out: &mut Vec<Action>) {
        self.conns.entry(conn).or_default().insert(sid.to_string());
        out.push(effect("activate", json!({"session": sid, "conn": conn})));
        self.persist_activity(conn, sid, "activate", out);
    }

    /// Cluster: which logical connection has the session active lives in the store (X2, A13).
    fn persist_activity(&self, conn: ConnId, sid: &str, t: &str, out: &mut Vec<Action>) {
        if let (Design::Cluster, Some(l)) = (self.cfg.design, self.logical.get(&conn)) {
            out.push(Action::Persist {
                record: json!({"t": t, "session": sid, "logical": l}),
                sync: true,
            });
        }
    }

    /// Cluster: a withdrawn key is recorded at the store before the `-32800`s go out, so an
    /// attempt of it pending on another node is withdrawn too when it reaches the store (A5
    /// across nodes).
    fn persist_withdrawal(&self, sid: &str, key: Option<&str>, out: &mut Vec<Action>) {
        if let (Design::Cluster, Some(k)) = (self.cfg.design, key) {
            out.push(Action::Persist {
                record: json!({"t": "withdraw", "session": sid, "key": k}),
                sync: true,
            });
        }
    }

    /// Cluster: take the store's view of sessions, key records and active logical connections.
    fn merge_snapshot(&mut self, v: &Value) {
        let Some(map) = v["sessions"].as_object() else {
            return;
        };
        for (sid, sv) in map {
            let s = self.sessions.entry(sid.clone()).or_insert_with(|| Session {
                filled: true,
                ..Session::default()
            });
            s.messages = msgs_of(&sv["messages"]);
            s.ids = s.messages.iter().map(|m| m.message_id.clone()).collect();
            s.live = msgs_of(&sv["live"]);
        }
        // Deleted through another node.
        let gone: Vec<String> = self
            .sessions
            .iter()
            .filter(|(sid, s)| {
                !map.contains_key(sid.as_str())
                    && s.turn.is_none()
                    && s.held.is_empty()
                    && !s.storing
            })
            .map(|(sid, _)| sid.clone())
            .collect();
        for sid in gone {
            self.sessions.shift_remove(&sid);
        }
        for (c, active) in self.conns.iter_mut() {
            if let Some(l) = self.logical.get(c) {
                *active = map
                    .iter()
                    .filter(|(_, sv)| {
                        sv["active"]
                            .as_array()
                            .is_some_and(|a| a.iter().any(|x| x == l.as_str()))
                    })
                    .map(|(sid, _)| sid.clone())
                    .collect();
            }
        }
    }

    /// A11: live-only keys may be forgotten once the session is active on no connection.
    fn forget_live_if_inactive(&mut self, sid: &str) {
        if !self.conns.values().any(|a| a.contains(sid)) {
            if let Some(s) = self.sessions.get_mut(sid) {
                s.live.clear();
            }
        }
    }

    fn snapshot(s: &Session) -> StateUpdate {
        if s.turn.is_some() {
            StateUpdate::Running(v2::RunningStateUpdate::new())
        } else {
            StateUpdate::Idle(v2::IdleStateUpdate::new())
        }
    }

    fn resume(
        &mut self,
        conn: ConnId,
        id: Value,
        r: &v2::ResumeSessionRequest,
        out: &mut Vec<Action>,
    ) {
        let sid = r.session_id.0.to_string();
        let elsewhere = self
            .conns
            .iter()
            .any(|(c, a)| *c != conn && a.contains(&sid));
        if elsewhere && self.cfg.mutant == Some(AgentMutant::ResumeActiveErrors) {
            // Mutant: one attachment per session (a resume is not a repeat it accepts).
            return self.fail(
                conn,
                &id,
                code::INTERNAL_ERROR,
                "Internal error",
                Some(json!({"reason": "session attached to another connection"})),
                out,
            );
        }
        let Some(s) = self.sessions.get(&sid) else {
            return self.fail(
                conn,
                &id,
                code::RESOURCE_NOT_FOUND,
                "Session not found",
                Some(json!({"sessionId": sid})),
                out,
            );
        };
        // X4: replay (user messages keep their messageId, never their key), replay_complete,
        // then the current state snapshot, then the response.
        let mut lines = Vec::new();
        if r.replay_from.is_some() {
            for m in &s.messages {
                let um = UserMessage::new(m.message_id.clone())
                    .content(vec![ContentBlock::from(m.text.clone())]);
                lines.push(Self::note(&sid, SessionUpdate::UserMessage(um)));
            }
            lines.push(Self::note(
                &sid,
                SessionUpdate::ReplayComplete(ReplayComplete::new()),
            ));
        }
        lines.push(Self::note(
            &sid,
            SessionUpdate::StateUpdate(Self::snapshot(s)),
        ));
        self.activate(conn, &sid, out);
        for l in lines {
            self.send(conn, l, out);
        }
        self.send(
            conn,
            rpc::ok(&id, to_value(ResumeSessionResponse::new())),
            out,
        );
    }

    fn prompt(&mut self, conn: ConnId, id: Value, r: v2::PromptRequest, out: &mut Vec<Action>) {
        let sid = r.session_id.0.to_string();
        if !self.is_active(conn, &sid) {
            // X2: the session must be active on this connection.
            out.push(effect(
                "reject",
                json!({"conn": conn, "id": id, "code": code::RESOURCE_NOT_FOUND}),
            ));
            return self.fail(
                conn,
                &id,
                code::RESOURCE_NOT_FOUND,
                "Session not active on this connection",
                Some(json!({"sessionId": sid})),
                out,
            );
        }
        if r.prompt.is_empty() {
            // A17: may reject `prompt: []` without inserting.
            out.push(effect(
                "reject",
                json!({"conn": conn, "id": id, "code": code::INVALID_PARAMS}),
            ));
            return self.send(
                conn,
                rpc::err(
                    &id,
                    code::INVALID_PARAMS,
                    "Invalid params",
                    Some(json!("empty prompt")),
                ),
                out,
            );
        }
        if self.transient_errors > 0 && self.cfg.mutant == Some(AgentMutant::ErrorAfterInsert) {
            // The mutant's failure comes after the insertion (see `insert`).
            self.transient_errors -= 1;
            self.fail_next_insert = true;
        } else if self.transient_errors > 0 {
            // A2: an error means this attempt inserted nothing and recorded nothing.
            self.transient_errors -= 1;
            return self.reject_internal(conn, &id, "transient", json!({"transient": true}), out);
        }
        let keyed = r.idempotency_key.is_some();
        if self.cfg.design == Design::Adapter && keyed {
            let s = self.sessions.get_mut(&sid).expect("active sessions exist");
            if !s.filled && self.cfg.mutant != Some(AgentMutant::AdapterNoHistoryFill) {
                // The first keyed prompt after a restart reads the runtime history once; prompts
                // arriving meanwhile wait for the fill.
                s.fill_queue.push((conn, id, r));
                if !s.filling {
                    s.filling = true;
                    out.push(effect("history-read-start", json!({"session": sid})));
                    self.timer(&sid, TimerKind::HistoryFill, 5, out);
                    out.push(Action::Point(Point::DuringHistoryFill));
                }
                return;
            }
        }
        self.admit(conn, id, r, out);
    }

    /// Answer a prompt attempt `-32603` before inserting it, logging the rejection with `why`
    /// set (checkers read `transient` to excuse the nemesis's errors).
    fn reject_internal(
        &mut self,
        conn: ConnId,
        id: &Value,
        why: &str,
        data: Value,
        out: &mut Vec<Action>,
    ) {
        let mut log = json!({"conn": conn, "id": id, "code": code::INTERNAL_ERROR});
        log[why] = true.into();
        out.push(effect("reject", log));
        self.send(
            conn,
            rpc::err(id, code::INTERNAL_ERROR, "Internal error", Some(data)),
            out,
        );
    }

    /// Dedup, then insert, hold or steer (the prompt passed validation and any history fill).
    fn admit(&mut self, conn: ConnId, id: Value, r: v2::PromptRequest, out: &mut Vec<Action>) {
        let sid = r.session_id.0.to_string();
        let key = r.idempotency_key.as_ref().map(|k| k.as_str().to_string());
        let text = r
            .prompt
            .iter()
            .find_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let dedup = self.cfg.mutant != Some(AgentMutant::NoDedup);
        if let (Some(k), Some(AgentMutant::KeyRecordedOnArrival)) = (&key, self.cfg.mutant) {
            if self.persists() {
                // Mutant: a key recorded by an earlier process "counts as inserted", message
                // or not (this process's own prompts are held or inserting: the usual paths).
                if let Some((mid, boot)) = self.arrivals.get(&(sid.clone(), k.clone())).cloned() {
                    let earlier = boot < self.boot;
                    let inserted = self.sessions.get(&sid).is_some_and(|s| {
                        s.messages
                            .iter()
                            .any(|m| m.key.as_deref() == Some(k.as_str()))
                    });
                    if earlier && !inserted {
                        out.push(effect(
                            "dedup-hit",
                            json!({"session": sid, "key": k, "messageId": mid, "conn": conn, "id": id}),
                        ));
                        return self.send(
                            conn,
                            rpc::ok(&id, to_value(PromptResponse::new(mid))),
                            out,
                        );
                    }
                } else {
                    let mid = format!("arrival-{}-{}", self.boot, self.arrivals.len());
                    self.arrivals
                        .insert((sid.clone(), k.clone()), (mid.clone(), self.boot));
                    out.push(Action::Persist {
                        record: json!({"t": "arrival", "session": sid, "key": k, "messageId": mid, "boot": self.boot}),
                        sync: true,
                    });
                }
            }
        }
        // Mutant: a key recorded in any other session counts too (breaks A9).
        let elsewhere = match (&key, self.cfg.mutant) {
            (Some(k), Some(AgentMutant::KeysAcrossSessions)) => self
                .sessions
                .iter()
                .filter(|(other, _)| **other != sid)
                .find_map(|(_, s)| {
                    s.messages
                        .iter()
                        .find(|m| m.key.as_deref() == Some(k))
                        .map(|m| m.message_id.clone())
                }),
            _ => None,
        };
        if self.cfg.mutant == Some(AgentMutant::DedupById) {
            // Mutant: the JSON-RPC id, not the key, names the submission.
            if let Some(mid) = self.id_records.get(&(sid.clone(), id.to_string())).cloned() {
                out.push(effect(
                    "dedup-hit",
                    json!({"session": sid, "key": key, "messageId": mid, "conn": conn, "id": id}),
                ));
                return self.send(conn, rpc::ok(&id, to_value(PromptResponse::new(mid))), out);
            }
        }
        if self.cfg.mutant == Some(AgentMutant::StopCancelsLater) && self.cancel_later.remove(&sid)
        {
            // Mutant: the stop pressed before this prompt arrived withdraws it too.
            out.push(effect(
                "withdraw",
                json!({"session": sid, "conn": conn, "id": id, "key": key, "by": "session/cancel"}),
            ));
            return self.send(
                conn,
                rpc::err(&id, code::REQUEST_CANCELLED, CANCELLED, None),
                out,
            );
        }
        let design = self.cfg.design;
        let local_keys = self.cfg.mutant == Some(AgentMutant::ClusterNodeLocalKeys);
        // Mutant `keys-per-connection`: only keys inserted on this connection are known.
        let conn_known = |k: &str| {
            self.cfg.mutant != Some(AgentMutant::KeysPerConnection)
                || self
                    .conn_keys
                    .get(&conn)
                    .is_some_and(|ks| ks.contains(&(sid.clone(), k.to_string())))
        };
        let known_here = key.as_deref().is_some_and(conn_known);
        let Some(s) = self.sessions.get_mut(&sid) else {
            return;
        };
        if let (Some(k), true) = (&key, dedup) {
            // A1/A4: a recorded key gets the original messageId and nothing else. Live-only
            // keys are known while the session is active (A11); retained ones per design.
            let live = s
                .live
                .iter()
                .find(|m| m.key.as_deref() == Some(k))
                .map(|m| m.message_id.clone());
            let found = live.or_else(|| {
                if design == Design::Adapter {
                    let derived = derive_id(&sid, k);
                    s.ids.contains(&derived).then_some(derived)
                } else if local_keys {
                    // Mutant: the record lives in this node's memory only.
                    self.local_keys.get(&(sid.clone(), k.clone())).cloned()
                } else {
                    s.messages
                        .iter()
                        .find(|m| m.key.as_deref() == Some(k))
                        .map(|m| m.message_id.clone())
                }
            });
            let found = found.filter(|_| known_here).or(elsewhere);
            if let Some(mid) = found {
                out.push(effect(
                    "dedup-hit",
                    json!({"session": sid, "key": k, "messageId": mid, "conn": conn, "id": id}),
                ));
                return self.send(conn, rpc::ok(&id, to_value(PromptResponse::new(mid))), out);
            }
            // A7: a retry of a held prompt waits for the original's outcome.
            let storing = self
                .storing
                .values_mut()
                .find(|x| x.sid == sid && x.held.key.as_deref() == Some(k))
                .map(|x| &mut x.held);
            if let Some(h) = s
                .held
                .iter_mut()
                .find(|h| h.key.as_deref() == Some(k))
                .or(storing)
            {
                if self.cfg.mutant == Some(AgentMutant::HeldRetryErrors) {
                    // Mutant: "still in progress" instead of the original's outcome.
                    let data =
                        json!({"reason": "a request with this idempotencyKey is in progress"});
                    return self.reject_internal(conn, &id, "in_progress", data, out);
                }
                h.waiters.push((conn, id.clone()));
                out.push(effect(
                    "wait-held",
                    json!({"session": sid, "key": k, "conn": conn, "id": id}),
                ));
                return;
            }
        }
        let held = Held {
            conn,
            id,
            key,
            text,
            waiters: Vec::new(),
        };
        if held.text.starts_with('/') {
            // A locally handled command: answered and echoed, not retained, no turn (A11).
            return self.insert_turn(&sid, held, "live", None, out);
        }
        if s.turn.is_none() && !s.storing {
            self.insert_turn(&sid, held, "direct", Some(conn), out);
        } else if self.cfg.o4 == DuringTurn::Steer && !s.storing {
            self.insert_turn(&sid, held, "steer", None, out);
        } else {
            out.push(effect(
                "hold",
                json!({"session": sid, "conn": held.conn, "id": held.id}),
            ));
            s.held.push_back(held);
            out.push(Action::Point(Point::WhileHeld));
        }
    }

    /// Insert one prompt and, with `turn`, start a turn for it on behalf of that connection.
    /// A cluster node first inserts at the store (the rest follows its answer).
    fn insert_turn(
        &mut self,
        sid: &str,
        p: Held,
        mode: &'static str,
        turn: Option<ConnId>,
        out: &mut Vec<Action>,
    ) {
        let mid = self.new_message_id(sid, &p);
        if self.cfg.design == Design::Cluster {
            // Live-only keys too: A11 holds while the session is active on any logical
            // connection, through any node (A13).
            return self.store_insert(sid, p, mode, mid, turn, out);
        }
        self.insert(sid, p, mode, mid, out);
        if let Some(owner) = turn {
            self.start_turn(sid, owner, out);
        }
    }

    fn new_message_id(&mut self, sid: &str, p: &Held) -> String {
        match (&p.key, self.cfg.design) {
            (Some(k), Design::Adapter) => derive_id(sid, k),
            (None, Design::Adapter) => uuid::Builder::from_random_bytes(self.rng.gen())
                .into_uuid()
                .to_string(),
            _ => {
                // Unique per Agent process (boot) across sessions, and across restarts.
                self.next_message += 1;
                format!("m{}.{}", self.prefix, self.next_message)
            }
        }
    }

    /// Cluster: one insert-if-absent at the store (A13); the session is busy until it answers.
    fn store_insert(
        &mut self,
        sid: &str,
        p: Held,
        mode: &'static str,
        mid: String,
        turn: Option<ConnId>,
        out: &mut Vec<Action>,
    ) {
        if let Some(s) = self.sessions.get_mut(sid) {
            s.storing = true;
        }
        let m = self.cfg.mutant;
        let op = json!({
            "op": "insert", "session": sid, "messageId": mid, "key": p.key, "text": p.text,
            "conn": p.conn, "id": p.id, "mode": mode, "node": self.prefix, "live": mode == "live",
            // The mutants: a plain insert after the node's own check, and no key at the store.
            "if_absent": !matches!(m, Some(AgentMutant::ClusterCheckThenInsert | AgentMutant::ClusterNodeLocalKeys | AgentMutant::NoDedup)),
            "store_key": m != Some(AgentMutant::ClusterNodeLocalKeys),
        });
        out.push(Action::Point(Point::AfterInsertBeforeSync));
        self.store_op(
            Storing {
                sid: sid.to_string(),
                held: p,
                mode,
                message_id: mid,
                turn,
                op,
            },
            out,
        );
    }

    fn store_op(&mut self, st: Storing, out: &mut Vec<Action>) {
        self.next_store += 1;
        let req = self.next_store;
        out.push(Action::Store {
            req,
            op: st.op.clone(),
        });
        self.storing.insert(req, st);
    }

    /// Cluster: the store answered an insertion (or did not, in time).
    fn store_reply(&mut self, req: u64, reply: Option<Value>, out: &mut Vec<Action>) {
        let Some(st) = self.storing.shift_remove(&req) else {
            return;
        };
        let sid = st.sid.clone();
        let attempts: Vec<(ConnId, Value)> = std::iter::once((st.held.conn, st.held.id.clone()))
            .chain(st.held.waiters.iter().cloned())
            .collect();
        let Some(r) = reply else {
            if self.cfg.mutant == Some(AgentMutant::ClusterErrorOnStoreTimeout) {
                // Mutant: an error although the store may have inserted it (breaks A2).
                out.push(effect(
                    "store-timeout",
                    json!({"session": sid, "conn": st.held.conn, "id": st.held.id, "answer": "error"}),
                ));
                for (c, id) in &attempts {
                    self.fail(
                        *c,
                        id,
                        code::INTERNAL_ERROR,
                        "Internal error",
                        Some(json!({"store": "timeout"})),
                        out,
                    );
                }
                return self.store_done(&sid, out);
            }
            // A2: it may have applied, so no error; insert-if-absent is safe to send again.
            out.push(effect(
                "store-retry",
                json!({"session": sid, "messageId": st.message_id}),
            ));
            return self.store_op(st, out);
        };
        if r["withdrawn"] == true {
            // A5: the key was withdrawn through another node; this attempt is withdrawn too.
            out.push(effect(
                "withdraw",
                json!({"session": sid, "conn": st.held.conn, "id": st.held.id, "key": st.held.key, "by": "store"}),
            ));
            for (c, id) in &attempts {
                self.send(
                    *c,
                    rpc::err(id, code::REQUEST_CANCELLED, CANCELLED, None),
                    out,
                );
            }
            return self.store_done(&sid, out);
        }
        if r["missing"] == true {
            for (c, id) in &attempts {
                out.push(effect(
                    "reject",
                    json!({"conn": c, "id": id, "code": code::RESOURCE_NOT_FOUND}),
                ));
                self.fail(
                    *c,
                    id,
                    code::RESOURCE_NOT_FOUND,
                    "Session not found",
                    Some(json!({"sessionId": sid})),
                    out,
                );
            }
            return self.store_done(&sid, out);
        }
        let got = r["inserted"]
            .as_str()
            .or(r["exists"].as_str())
            .unwrap_or_default()
            .to_string();
        if got == st.message_id {
            // Ours (also an earlier send of ours that applied while its answer was lost).
            if let Some(s) = self.sessions.get_mut(&sid) {
                s.storing = false;
            }
            self.insert(&sid, st.held, st.mode, got, out);
            match st.turn {
                Some(owner) => self.start_turn(&sid, owner, out),
                None => self.store_done(&sid, out),
            }
        } else {
            // Another attempt of this key was inserted first, through another node: A1.
            let key = st.held.key.clone();
            for (c, id) in &attempts {
                out.push(effect(
                    "dedup-hit",
                    json!({"session": sid, "key": key, "messageId": got, "conn": c, "id": id}),
                ));
                self.send(
                    *c,
                    rpc::ok(id, to_value(PromptResponse::new(got.clone()))),
                    out,
                );
            }
            self.store_done(&sid, out);
        }
    }

    /// Cluster: the session's store insertion is settled; held prompts may go on.
    fn store_done(&mut self, sid: &str, out: &mut Vec<Action>) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        s.storing = false;
        if s.turn.is_none() {
            self.next_held(sid, out);
        }
    }

    /// Insert one prompt as `mid`: record (key + message in one write), sync, then make it
    /// visible. A cluster node calls it once the store has inserted it.
    fn insert(&mut self, sid: &str, p: Held, mode: &str, mid: String, out: &mut Vec<Action>) {
        let live = mode == "live";
        let design = self.cfg.design;
        if let (Some(AgentMutant::ClusterNodeLocalKeys), Some(k)) = (self.cfg.mutant, &p.key) {
            self.local_keys
                .insert((sid.to_string(), k.clone()), mid.clone());
        }
        if let (Some(AgentMutant::KeysPerConnection), Some(k)) = (self.cfg.mutant, &p.key) {
            for c in std::iter::once(p.conn).chain(p.waiters.iter().map(|(c, _)| *c)) {
                self.conn_keys
                    .entry(c)
                    .or_default()
                    .insert((sid.to_string(), k.clone()));
            }
        }
        if self.cfg.mutant == Some(AgentMutant::DedupById) {
            self.id_records
                .insert((sid.to_string(), p.id.to_string()), mid.clone());
        }
        let two_step = self.cfg.mutant == Some(AgentMutant::TwoStepWrite)
            && design == Design::Stored
            && !live
            && p.key.is_some();
        let s = self
            .sessions
            .entry(sid.to_string())
            .or_insert_with(|| Session {
                filled: true,
                ..Session::default()
            });
        s.next_msg += 1;
        let msg = Msg {
            message_id: mid.clone(),
            key: p.key.clone(),
            text: p.text.clone(),
        };
        if live {
            if self.cfg.mutant != Some(AgentMutant::ForgetsLiveWhileActive) {
                s.live.push(msg);
            }
        } else {
            s.messages.push(msg);
            s.ids.insert(mid.clone());
        }
        let stored = design == Design::Cluster;
        if !stored {
            // A cluster's store reports its own insertions.
            out.push(effect(
                "insert",
                json!({"session": sid, "messageId": mid, "key": p.key, "conn": p.conn, "id": p.id, "mode": mode, "live_only": live}),
            ));
            out.push(Action::Point(Point::AfterInsertBeforeSync));
        }
        if !live {
            match design {
                Design::Stored if two_step => {
                    // Mutant: the message first, its key in a second write (breaks A13).
                    out.push(Action::Persist {
                        record: json!({"t": "msg", "session": sid, "messageId": mid, "key": null, "text": p.text}),
                        sync: true,
                    });
                    out.push(effect("durable", json!({"session": sid, "messageId": mid})));
                    out.push(Action::Point(Point::AfterSyncBeforeResponse));
                    out.push(Action::Persist {
                        record: json!({"t": "msg-key", "session": sid, "messageId": mid, "key": p.key}),
                        sync: true,
                    });
                }
                Design::Stored => {
                    let sync = self.cfg.mutant != Some(AgentMutant::RecordUnsynced);
                    out.push(Action::Persist {
                        record: json!({"t": "msg", "session": sid, "messageId": mid, "key": p.key, "text": p.text}),
                        sync,
                    });
                    if sync {
                        out.push(effect("durable", json!({"session": sid, "messageId": mid})));
                    }
                }
                // The runtime stores the message under the adapter's id, never the key, and
                // syncs lazily (at the end of the turn).
                Design::Adapter => out.push(Action::Persist {
                    record: json!({"t": "msg", "session": sid, "messageId": mid, "text": p.text}),
                    sync: false,
                }),
                Design::InMemory | Design::Cluster => {}
            }
        }
        if !two_step {
            out.push(Action::Point(Point::AfterSyncBeforeResponse));
        }
        out.push(effect("visible", json!({"session": sid, "messageId": mid})));
        let ok = to_value(PromptResponse::new(mid.clone()));
        if std::mem::take(&mut self.fail_next_insert) {
            // Mutant: a failure after insertion answered as an error (breaks A3).
            let e = rpc::err(
                &p.id,
                code::INTERNAL_ERROR,
                "Internal error",
                Some(json!({"transient": true})),
            );
            self.send(p.conn, e, out);
        } else {
            self.send(p.conn, rpc::ok(&p.id, ok.clone()), out);
        }
        for (c, id) in &p.waiters {
            self.send(*c, rpc::ok(id, ok.clone()), out);
        }
        // A14 lets the echo come before or after the response: after, so a crash can land
        // between them.
        out.push(Action::Point(Point::AfterResponseBeforeUpdate));
        // A14: the echo carries the messageId and never precedes insertion. A8: no key.
        let um = UserMessage::new(mid.clone()).content(vec![ContentBlock::from(p.text.clone())]);
        if let (Some(AgentMutant::KeyInUpdates), Some(k)) = (self.cfg.mutant, &p.key) {
            // Mutant: the echo carries the key in `_meta` (breaks A8).
            let mut n = to_value(UpdateSessionNotification::new(
                sid.to_string(),
                SessionUpdate::UserMessage(um),
            ));
            n["update"]["_meta"] = json!({"idempotencyKey": k});
            let line = rpc::notification("session/update", n);
            for (conn, active) in &self.conns {
                if active.contains(sid) {
                    out.push(Action::Send {
                        conn: *conn,
                        line: line.clone(),
                    });
                }
            }
        } else {
            self.update_all(sid, SessionUpdate::UserMessage(um), out);
        }
    }

    fn start_turn(&mut self, sid: &str, owner: ConnId, out: &mut Vec<Action>) {
        let ms = self
            .rng
            .gen_range(self.cfg.turn_ms_min..=self.cfg.turn_ms_max.max(self.cfg.turn_ms_min));
        let tool = self.rng.gen_bool(self.cfg.tool_rate.clamp(0.0, 1.0));
        let ask = tool && self.rng.gen_bool(self.cfg.permission_rate.clamp(0.0, 1.0));
        let Some(mid) = self.sessions[sid]
            .messages
            .last()
            .map(|m| m.message_id.clone())
        else {
            return;
        };
        out.push(effect(
            "turn-start",
            json!({"session": sid, "messageId": mid, "ms": ms, "tool": tool}),
        ));
        self.update_all(
            sid,
            SessionUpdate::StateUpdate(StateUpdate::Running(v2::RunningStateUpdate::new())),
            out,
        );
        let placeholder = TurnPhase::Working { timer: u64::MAX };
        self.sessions[sid].turn = Some(Turn {
            message_id: mid,
            owner,
            phase: placeholder,
            ms,
            tool,
        });
        // Ask on the prompt's connection, or another one where the session is active; with
        // none, nobody can approve (a connection that ended is never approval).
        let asker = Some(owner)
            .filter(|c| self.conns.contains_key(c))
            .or_else(|| {
                self.conns
                    .iter()
                    .find(|(_, a)| a.contains(sid))
                    .map(|(c, _)| *c)
            });
        if !self.conns.contains_key(&owner) && self.cfg.o2 == WorkOnDisconnect::Cancel {
            // O2 cancel: work whose connection already ended is cancelled at once.
            out.push(effect(
                "permission",
                json!({"session": sid, "approved": false, "reason": "connection ended"}),
            ));
            self.end_turn(sid, StopReason::Cancelled, out);
            return self.next_held(sid, out);
        }
        if let (true, None) = (ask, asker) {
            out.push(effect(
                "permission",
                json!({"session": sid, "approved": false, "reason": "no connection to ask"}),
            ));
            return self.work(sid, false, out);
        }
        if let (true, Some(owner)) = (ask, asker) {
            self.next_req += 1;
            let req = self.next_req;
            self.asks.insert(req, sid.to_string());
            let opts = vec![
                v2::PermissionOption::new("allow", "Allow", v2::PermissionOptionKind::AllowOnce),
                v2::PermissionOption::new("reject", "Reject", v2::PermissionOptionKind::RejectOnce),
            ];
            let params = to_value(v2::RequestPermissionRequest::new(
                sid.to_string(),
                "write a file",
                opts,
            ));
            self.sessions[sid].turn.as_mut().expect("set above").phase =
                TurnPhase::AwaitPermission { conn: owner, req };
            self.send(
                owner,
                rpc::request(req, "session/request_permission", params),
                out,
            );
        } else {
            self.work(sid, tool, out);
        }
    }

    /// Run the turn's tool (if any and approved) and set the timer for the rest of the work.
    fn work(&mut self, sid: &str, run_tool: bool, out: &mut Vec<Action>) {
        let Some(turn) = self.sessions.get(sid).and_then(|s| s.turn.clone()) else {
            return;
        };
        if run_tool && turn.tool {
            // The side effect the user cares about: counted in the ledger (A1: never twice).
            self.tool_effects += 1;
            let tc = format!("tool-{}", turn.message_id);
            out.push(effect(
                "tool-effect",
                json!({"session": sid, "messageId": turn.message_id, "toolCallId": tc}),
            ));
            let upd = v2::ToolCallUpdate::new(tc)
                .title("write a file")
                .status(v2::ToolCallStatus::Completed);
            self.update_all(sid, SessionUpdate::ToolCallUpdate(upd), out);
        }
        let timer = self.timer(sid, TimerKind::TurnEnd, turn.ms, out);
        if let Some(t) = self.sessions[sid].turn.as_mut() {
            t.phase = TurnPhase::Working { timer };
        }
    }

    fn end_turn(&mut self, sid: &str, stop: StopReason, out: &mut Vec<Action>) {
        let Some(turn) = self.sessions.get_mut(sid).and_then(|s| s.turn.take()) else {
            return;
        };
        // The idle update's own field, as a plain string.
        let reason =
            to_value(v2::IdleStateUpdate::new().stop_reason(stop.clone()))["stopReason"].clone();
        out.push(effect(
            "turn-end",
            json!({"session": sid, "messageId": turn.message_id, "stopReason": reason}),
        ));
        let chunk =
            v2::ContentChunk::new(ContentBlock::from("done"), format!("a-{}", turn.message_id));
        self.update_all(sid, SessionUpdate::AgentMessageChunk(chunk), out);
        let idle = v2::IdleStateUpdate::new().stop_reason(stop);
        self.update_all(
            sid,
            SessionUpdate::StateUpdate(StateUpdate::Idle(idle)),
            out,
        );
        if self.cfg.design == Design::Adapter {
            // The runtime syncs at the end of a turn: everything written so far is durable.
            out.push(Action::Persist {
                record: json!({"t": "turn-end", "session": sid}),
                sync: true,
            });
            let s = &self.sessions[sid];
            for m in &s.messages {
                out.push(effect(
                    "durable",
                    json!({"session": sid, "messageId": m.message_id}),
                ));
            }
        }
    }

    fn next_held(&mut self, sid: &str, out: &mut Vec<Action>) {
        let next = self
            .sessions
            .get_mut(sid)
            .filter(|s| !s.storing)
            .and_then(|s| s.held.pop_front());
        if let Some(h) = next {
            let owner = h.conn;
            if self.cfg.design == Design::Cluster {
                // Its insertion completes at the store, later: the log shows it left the queue.
                out.push(effect(
                    "release",
                    json!({"session": sid, "conn": h.conn, "id": h.id}),
                ));
            }
            self.insert_turn(sid, h, "held", Some(owner), out);
        }
    }

    /// `session/cancel` (A6) or close/delete (A15): cancel the foreground work and every
    /// prompt not yet inserted (all were received earlier), answering each `-32800`.
    fn cancel_work(&mut self, sid: &str, closing: bool, why: &str, out: &mut Vec<Action>) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        // Mutant `cancel-skips-held`: a stop leaves the held prompts queued (breaks A6).
        let skip = !closing && self.cfg.mutant == Some(AgentMutant::CancelSkipsHeld);
        let held: Vec<Held> = if skip {
            Vec::new()
        } else {
            s.held.drain(..).collect()
        };
        let queued: Vec<(ConnId, Value, v2::PromptRequest)> = s.fill_queue.drain(..).collect();
        let turn = s.turn.clone();
        let forget = closing && self.cfg.mutant == Some(AgentMutant::CloseForgetsHeld);
        for h in held {
            if forget {
                // Mutant: gone without an answer.
                out.push(effect(
                    "drop-held",
                    json!({"session": sid, "conn": h.conn, "id": h.id, "by": why}),
                ));
                continue;
            }
            out.push(effect(
                "withdraw",
                json!({"session": sid, "conn": h.conn, "id": h.id, "key": h.key, "by": why}),
            ));
            self.persist_withdrawal(sid, h.key.as_deref(), out);
            self.send(
                h.conn,
                rpc::err(&h.id, code::REQUEST_CANCELLED, CANCELLED, None),
                out,
            );
            for (c, id) in h.waiters {
                self.send(
                    c,
                    rpc::err(&id, code::REQUEST_CANCELLED, CANCELLED, None),
                    out,
                );
            }
        }
        for (c, id, _) in queued {
            out.push(effect(
                "withdraw",
                json!({"session": sid, "conn": c, "id": id, "by": why}),
            ));
            self.send(
                c,
                rpc::err(&id, code::REQUEST_CANCELLED, CANCELLED, None),
                out,
            );
        }
        if let Some(t) = turn {
            if let TurnPhase::AwaitPermission { conn, req } = t.phase {
                // Stop waiting: not approved, and withdraw the request itself.
                self.asks.shift_remove(&req);
                self.send(
                    conn,
                    rpc::notification("$/cancel_request", json!({"requestId": req})),
                    out,
                );
            }
            self.end_turn(sid, StopReason::Cancelled, out);
        }
        if skip {
            // Mutant: the prompts left in the queue go on as if nothing was cancelled.
            self.next_held(sid, out);
        }
    }

    /// `$/cancel_request` for a prompt attempt: withdraw the un-inserted prompt and answer every
    /// pending attempt for its key `-32800` (A5). Inserted or unknown: ignored.
    fn cancel_request(&mut self, conn: ConnId, rid: &Value, out: &mut Vec<Action>) {
        for sid in self.sessions.keys().cloned().collect::<Vec<_>>() {
            let s = self.sessions.get_mut(&sid).expect("listed");
            let pos = s.held.iter().position(|h| {
                (h.conn == conn && &h.id == rid)
                    || h.waiters.iter().any(|(c, i)| *c == conn && i == rid)
            });
            if let Some(pos) = pos {
                let h = s.held.remove(pos).expect("position is valid");
                out.push(effect("withdraw", json!({"session": sid, "conn": h.conn, "id": h.id, "key": h.key, "by": "$/cancel_request"})));
                self.persist_withdrawal(&sid, h.key.as_deref(), out);
                let only_named = self.cfg.mutant == Some(AgentMutant::CancelAnswersOne);
                let none = self.cfg.mutant == Some(AgentMutant::CancelAnswersNone);
                let attempts = std::iter::once((h.conn, h.id)).chain(h.waiters);
                for (c, id) in attempts.filter(|_| !none) {
                    // A5: every pending attempt for the key gets -32800 (the mutant answers
                    // only the one the cancel named).
                    if !only_named || (c == conn && &id == rid) {
                        self.send(
                            c,
                            rpc::err(&id, code::REQUEST_CANCELLED, CANCELLED, None),
                            out,
                        );
                    }
                }
                return;
            }
        }
    }

    fn disconnected(&mut self, conn: ConnId, out: &mut Vec<Action>) {
        let was_active = self.conns.shift_remove(&conn).unwrap_or_default();
        self.logical.shift_remove(&conn);
        self.conn_keys.remove(&conn);
        let o1 = self.cfg.o1;
        let o2 = self.cfg.o2;
        let sids: Vec<String> = self.sessions.keys().cloned().collect();
        for sid in sids {
            let s = self.sessions.get_mut(&sid).expect("listed");
            for h in s.held.iter_mut() {
                h.waiters.retain(|(c, _)| *c != conn);
            }
            for st in self.storing.values_mut() {
                st.held.waiters.retain(|(c, _)| *c != conn);
            }
            s.fill_queue.retain(|(c, _, _)| *c != conn);
            if o1 == HeldOnDisconnect::Drop {
                let mut kept = VecDeque::new();
                while let Some(mut h) = s.held.pop_front() {
                    if h.conn != conn {
                        kept.push_back(h);
                    } else if !h.waiters.is_empty() {
                        // A7: a waiting retry becomes the submission.
                        let (c, id) = h.waiters.remove(0);
                        h.conn = c;
                        h.id = id;
                        kept.push_back(h);
                    } else {
                        out.push(effect(
                            "drop-held",
                            json!({"session": sid, "conn": conn, "id": h.id}),
                        ));
                    }
                }
                s.held = kept;
            }
            // A connection that ends is never approval.
            let waiting = matches!(s.turn.as_ref().map(|t| &t.phase), Some(TurnPhase::AwaitPermission { conn: c, .. }) if *c == conn);
            let owned = s.turn.as_ref().is_some_and(|t| t.owner == conn);
            if waiting {
                if let Some(TurnPhase::AwaitPermission { req, .. }) =
                    s.turn.as_ref().map(|t| t.phase.clone())
                {
                    self.asks.shift_remove(&req);
                }
                out.push(effect(
                    "permission",
                    json!({"session": sid, "approved": false, "reason": "connection ended"}),
                ));
                if o2 == WorkOnDisconnect::Cancel {
                    self.end_turn(&sid, StopReason::Cancelled, out);
                    self.next_held(&sid, out);
                } else {
                    self.work(&sid, false, out);
                }
            } else if owned && o2 == WorkOnDisconnect::Cancel && was_active.contains(&sid) {
                self.end_turn(&sid, StopReason::Cancelled, out);
                self.next_held(&sid, out);
            }
            self.forget_live_if_inactive(&sid);
        }
    }

    fn timer_fired(&mut self, t: u64, out: &mut Vec<Action>) {
        let Some((sid, kind)) = self.timers.shift_remove(&t) else {
            return;
        };
        match kind {
            TimerKind::TurnEnd => {
                let current = self
                    .sessions
                    .get(&sid)
                    .and_then(|s| s.turn.as_ref())
                    .map(|t| t.phase.clone());
                if matches!(current, Some(TurnPhase::Working { timer }) if timer == t) {
                    self.end_turn(&sid, StopReason::EndTurn, out);
                    self.next_held(&sid, out);
                }
            }
            TimerKind::HistoryFill => {
                let Some(s) = self.sessions.get_mut(&sid) else {
                    return;
                };
                // The cache over the runtime history: every stored user message id.
                s.ids = s.messages.iter().map(|m| m.message_id.clone()).collect();
                s.filled = true;
                s.filling = false;
                let n = s.ids.len();
                let queued: Vec<_> = s.fill_queue.drain(..).collect();
                out.push(effect(
                    "history-read",
                    json!({"session": sid, "messages": n}),
                ));
                for (c, id, r) in queued {
                    if self.conns.contains_key(&c) {
                        self.admit(c, id, r, out);
                    }
                }
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
        match input {
            AgentInput::Connected(c) => {
                self.conns.insert(c, BTreeSet::new());
            }
            AgentInput::Frame(c, line) => self.frame(c, &line, out),
            AgentInput::Disconnected(c) => self.disconnected(c, out),
            AgentInput::Timer(t) => self.timer_fired(t, out),
            AgentInput::InjectTransientError => self.transient_errors += 1,
            AgentInput::Logical(c, l) => {
                self.logical.insert(c, l);
            }
            AgentInput::StoreSnapshot(v) => self.merge_snapshot(&v),
            AgentInput::StoreReply { req, reply } => self.store_reply(req, reply, out),
        }
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
}

fn to_value<T: Serialize>(v: T) -> Value {
    serde_json::to_value(v).expect("schema types serialize")
}

#[cfg(test)]
mod tests;
