//! What distinguishes one model Agent from another: its [`Design`] (and the [`Retention`] it
//! declares), the policies the proposal leaves open (O1 [`HeldOnDisconnect`], O2
//! [`WorkOnDisconnect`], O4 [`DuringTurn`]), its [`AgentMutant`] if any, and the timing of its
//! turns ([`AgentConfig`]).

use serde::{Deserialize, Serialize};

/// What the design promises to keep (RULES.md "Retention"). A retention window
/// ([`AgentConfig::retention_ms`]) bounds either: the design keeps what it declares for that
/// long after an insertion, then discards it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Retention {
    /// Keeps every message whose insertion took effect, across restarts.
    Durable,
    /// Keeps messages while its process lives.
    Process,
}

/// An Agent design: its name in scenario files and on the command line. How it behaves is its
/// [`super::Durability`] ([`Design::durability`], one file per design under `design/`).
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

    /// Name used in scenario files and `--agent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Design::InMemory => "in-memory",
            Design::Stored => "stored",
            Design::Adapter => "adapter",
            Design::Cluster => "cluster",
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

/// Agent mutants: each a small named difference from the correct model. What each breaks (its
/// rules, property and party) is its row in [`crate::mutant::MUTANTS`], and only there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentMutant {
    /// Ignores `idempotencyKey`: every attempt inserts.
    NoDedup,
    /// Writes message and key without `sync_all`: a crash loses an acknowledged message and the
    /// retry inserts it again.
    RecordUnsynced,
    /// A failure after insertion is answered with an error (`-32603`) instead of the `messageId`.
    ErrorAfterInsert,
    /// `$/cancel_request` withdraws the prompt but answers only the attempt it named, leaving the
    /// key's other pending attempts unanswered.
    CancelAnswersOne,
    /// Echoes the key in the `user_message` update's `_meta`.
    KeyInUpdates,
    /// Adapter trusts only its in-memory id set after a restart (never reads the history).
    AdapterNoHistoryFill,
    /// Cluster node keeps key records in its own memory: a retry routed to another node (or after a
    /// restart) inserts again.
    ClusterNodeLocalKeys,
    /// Cluster node reads "key absent" from the store, then inserts in a second step: two nodes
    /// handling attempts of one key at once both insert.
    ClusterCheckThenInsert,
    /// Cluster node whose store write timed out answers the prompt with an error although the store
    /// may have applied it.
    ClusterErrorOnStoreTimeout,
    /// Cluster node honours `session/cancel` on its own held prompts only and writes no stop to the
    /// store: a prompt held on another node before the stop is inserted after it.
    ClusterStopNodeLocal,
    /// A `session/prompt` for a session that exists but is not active on its connection (never
    /// resumed there, or closed there) is served instead of answered `-32002`.
    ServesInactiveSession,
    /// A key's length is counted in UTF-8 bytes instead of characters: a key of 128 to 255 two-byte
    /// characters is rejected `-32602` though K2 allows it.
    KeyLengthInBytes,
    /// `session/close` drops the held prompts without answering them (A15 says `-32800`).
    CloseForgetsHeld,
    /// A malformed `idempotencyKey` (`""`, 256+ characters, a number, ...) is dropped and the
    /// prompt handled as unkeyed.
    InvalidKeyAsOmitted,
    /// `idempotencyKey: null` is rejected `-32602` instead of being handled as no key.
    NullKeyRejected,
    /// A prompt held behind a turn is echoed (`user_message`) as it arrives, before any insertion:
    /// a stop or close that withdraws it leaves the user an echo of input the Agent never took.
    EchoBeforeInsert,
    /// Key records are looked up in every session, not only the prompt's own: the same key string
    /// in another session (or a fork) is answered with that session's messageId.
    KeysAcrossSessions,
    /// `session/cancel` also withdraws the next prompt that arrives for the session.
    StopCancelsLater,
    /// `stored`: the key is recorded (synced) when the prompt arrives, before it is inserted; after
    /// a crash in between, a retry finds the record and is answered with a messageId no message
    /// has.
    KeyRecordedOnArrival,
    /// A locally handled command's key is forgotten as soon as it is answered, while its session is
    /// still active: a retry of the command runs it again.
    ForgetsLiveWhileActive,
    /// A retry that arrives while the original is held is answered at once with `-32603` ("in
    /// progress") instead of waiting for the original's outcome.
    HeldRetryErrors,
    /// O1 drop: when a held prompt's connection ends, its waiting retries (attempts of the same key
    /// on other connections) are dropped with it, unanswered, instead of the first of them becoming
    /// the submission.
    DropHeldDropsRetries,
    /// Key records are kept per connection: a retry on another connection (after a reconnect or a
    /// restart) does not find its key and inserts again.
    KeysPerConnection,
    /// `stored`: the message and its key are written in two steps (message, then key); a crash
    /// between them keeps the message without its key, and the retry inserts it again.
    TwoStepWrite,
    /// `session/cancel` stops the running turn but leaves earlier held prompts queued: they are
    /// inserted after the cancel.
    CancelSkipsHeld,
    /// `$/cancel_request` withdraws the held prompt and answers none of its attempts.
    CancelAnswersNone,
    /// Duplicates are detected by (session, JSON-RPC id) instead of (session, key): a new prompt
    /// that happens to reuse an id on another connection gets the old messageId.
    DedupById,
    /// `session/resume` of a session still active on another connection is refused (`-32603`,
    /// "attached elsewhere") instead of synchronizing it again.
    ResumeActiveErrors,
    /// A recorded key that arrives with a different prompt is taken for a new submission: the Agent
    /// compares prompts and inserts the new one as a second message under the key, instead of
    /// answering it as a retry or rejecting it `-32602`.
    InsertsOtherPrompt,
    /// A `$/cancel_request` naming a request the Agent cannot match (unknown, or already answered)
    /// is answered with an error under the named id, instead of ignored: a response to nothing, or
    /// a second response to an answered request.
    AnswersUnknownCancel,
    /// Frames are parsed as JavaScript's `JSON.parse` does: a lone surrogate escape (`"\ud800"`) is
    /// taken for a character (here U+FFFD) instead of failing the frame, so a key made of one is a
    /// valid one-character key.
    LenientJson,
    /// `session/cancel` ends the running turn with `stopReason: "error"` (the abort's exception
    /// leaks into the stop reason) instead of `cancelled`.
    CancelEndsAsError,
    /// `session/cancel` during a turn that waits on `session/request_permission` ends the turn but
    /// never withdraws the request with `$/cancel_request` (the question stays open on the Client).
    CancelKeepsAsking,
    /// `session/close` is answered first and the session's work cancelled after: the final updates
    /// and the idle `cancelled` state reach the connection after the close response.
    CloseAnswersFirst,
    /// A prompt rejected with a transient error leaves its key recorded (the record written before
    /// the failure): a retry with the same key is answered with a `messageId` no message has.
    ErrorRecordsKey,
    /// `session/close` of a session that is missing or not active on the connection is answered
    /// `-32002` instead of succeeding.
    CloseInactiveErrors,
    /// Work that failed ends with `stopReason: "end_turn"`, as if it had succeeded, instead of
    /// `error`.
    FailureEndsAsEndTurn,
    /// `session/resume` is answered first, and the replay, `replay_complete` and the state snapshot
    /// follow the response instead of preceding it.
    ResumeAnswersFirst,
}

/// Settings of a model Agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// Retention window, in simulated ms (0: none). Each retained message is discarded, key
    /// and all, this long after this process inserted it (or copied it into a fork, or
    /// recovered it: a restart starts the window again), and a retry of it may be inserted
    /// again (A16). The design's declared
    /// [`Retention`] then holds only within the window. Not for `cluster` (its key records
    /// live in the store). Left out of the history header when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retention_ms: u64,
    /// Chance that a turn's work fails (after insertion: the prompt's answer stays a success,
    /// and the work ends with `stopReason: "error"`, A3). Drawn only when above 0, and left
    /// out of the history header then.
    #[serde(default, skip_serializing_if = "is_zero_rate")]
    pub fail_rate: f64,
    /// What the Agent does with a `$/cancel_request` naming a held prompt: honour it (withdraw
    /// the prompt, `-32800`) or take the MAY of A5 and ignore it (the prompt is inserted when
    /// its turn comes and answered with its `messageId`). Left out of the history header when
    /// `honour`, the default.
    #[serde(default, skip_serializing_if = "CancelRequest::is_honour")]
    pub cancel_request: CancelRequest,
}

/// A5's MAY: what the Agent does with a `$/cancel_request` for a prompt it holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CancelRequest {
    /// Withdraw the held prompt and answer every pending attempt of its key `-32800`.
    #[default]
    Honour,
    /// Ignore it: the prompt stays held, is inserted in turn and answered with its
    /// `messageId` (A5: the receiver MAY cancel; it still answers exactly once).
    Ignore,
}

impl CancelRequest {
    /// Whether this is the default (`honour`).
    pub fn is_honour(&self) -> bool {
        *self == CancelRequest::Honour
    }

    /// `honour` or `ignore`.
    pub fn as_str(self) -> &'static str {
        match self {
            CancelRequest::Honour => "honour",
            CancelRequest::Ignore => "ignore",
        }
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_zero_rate(v: &f64) -> bool {
    *v == 0.0
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
            retention_ms: 0,
            fail_rate: 0.0,
            cancel_request: CancelRequest::Honour,
        }
    }
}
