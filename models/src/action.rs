//! What a sans-IO model asks its driver to do, and the effects it reports to the ledger.

use serde_json::Value;

/// A connection, numbered by the driver; the same number on both ends.
pub type ConnId = u64;

/// A named protocol point where the nemesis may crash the Agent (turmoil barriers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Point {
    /// A `session/prompt` request was read, nothing done yet.
    AfterReceive,
    /// The message is inserted in memory, its record not yet written or synced.
    AfterInsertBeforeSync,
    /// The record is written (and synced, if the model syncs); no echo or response sent yet.
    AfterSyncBeforeResponse,
    /// Adapter: the history fill after a restart has started and not finished.
    DuringHistoryFill,
    /// A `session/prompt` was just held behind a running turn (not inserted).
    WhileHeld,
    /// The prompt's response is written; its `user_message` echo is not yet.
    AfterResponseBeforeUpdate,
    /// Cluster store: an insertion is written and synced; the reply to the node is not sent.
    /// (A cluster node passes the other points: `after-insert-before-sync` before its store
    /// write, `after-sync-before-response` once the store answered.)
    AfterStoreWrite,
}

impl Point {
    /// Every point, for `acp-chaos list`.
    pub const ALL: [Point; 7] = [
        Point::AfterReceive,
        Point::AfterInsertBeforeSync,
        Point::AfterSyncBeforeResponse,
        Point::DuringHistoryFill,
        Point::WhileHeld,
        Point::AfterResponseBeforeUpdate,
        Point::AfterStoreWrite,
    ];

    /// The points an Agent process passes (`crash-agent`); `after-store-write` is the store's.
    pub const AGENT: [Point; 6] = [
        Point::AfterReceive,
        Point::AfterInsertBeforeSync,
        Point::AfterSyncBeforeResponse,
        Point::DuringHistoryFill,
        Point::WhileHeld,
        Point::AfterResponseBeforeUpdate,
    ];

    /// The kebab-case name used in scenario files.
    pub fn as_str(self) -> &'static str {
        match self {
            Point::AfterReceive => "after-receive",
            Point::AfterInsertBeforeSync => "after-insert-before-sync",
            Point::AfterSyncBeforeResponse => "after-sync-before-response",
            Point::DuringHistoryFill => "during-history-fill",
            Point::WhileHeld => "while-held",
            Point::AfterResponseBeforeUpdate => "after-response-before-update",
            Point::AfterStoreWrite => "after-store-write",
        }
    }
}

/// An effect the model reports for the history (an `info` op of its process).
///
/// `f` is the op's function name (`insert`, `durable`, `visible`, `dedup-hit`, `ack`, ...),
/// `value` its JSON payload. Effects are ground truth for the checkers, never sent on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Effect {
    /// Op name.
    pub f: &'static str,
    /// Op payload.
    pub value: Value,
}

/// One thing a model asks its driver to do, executed in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Write one JSON-RPC line on a connection (dropped if the connection is gone).
    Send { conn: ConnId, line: String },
    /// Append a record to the model's store; `sync` means `sync_all` (+ `sync_dir` on create)
    /// before the next action runs.
    Persist { record: Value, sync: bool },
    /// Deliver `Timer(id)` back after `after_ms` simulated milliseconds.
    Timer { id: u64, after_ms: u64 },
    /// Pass a named protocol point (the nemesis may crash the process here).
    Point(Point),
    /// Report an effect to the ledger.
    Effect(Effect),
    /// Open a new connection to the next hop after `after_ms`; `tag` comes back with the
    /// result (the proxy names the upstream connection it serves; the Client uses 0).
    Connect { after_ms: u64, tag: u64 },
    /// Close a connection (the peer sees EOF).
    Close { conn: ConnId },
    /// Cluster node: send `op` to the store host once. The driver answers with
    /// `AgentInput::StoreReply { req, reply }`: the store's reply, or `None` when none came
    /// within the store timeout (the op may or may not have applied). Always the last action of
    /// its batch: what follows depends on the reply.
    Store { req: u64, op: Value },
}

/// Shorthand for an effect action.
pub fn effect(f: &'static str, value: Value) -> Action {
    Action::Effect(Effect { f, value })
}
