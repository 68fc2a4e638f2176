//! Durability designs: where a model Agent keeps its sessions and keys, and when they are
//! durable. The protocol core ([`super::ModelAgent`]) asks a [`Durability`] each question on
//! which designs differ and never compares [`Design`] variants; each design answers in its own
//! file (`in_memory.rs`, `stored.rs`, `adapter.rs`, `cluster.rs`), and [`Design::durability`] is
//! the one place that maps a design to its answers.

mod adapter;
mod cluster;
mod in_memory;
mod stored;

use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::config::{AgentMutant, Design, Retention};
use crate::action::Action;

/// How one Agent design keeps what it keeps: the answers the protocol core asks of a design.
/// Every method is a question the core asks at one point of a rule; none holds state (a design
/// is a unit struct).
pub trait Durability {
    /// What the design promises to keep (RULES.md "Retention"; P11 and P1 read it, D1).
    fn retention(&self) -> Retention;

    /// One line for `acp-chaos list`: the retention and how the design gets it.
    fn summary(&self) -> &'static str;

    /// Whether the process writes its sessions' records (`session`, `fork`, `delete`, `title`,
    /// `archive`, a retention window's `discard`) as [`Action::Persist`]; `false`: nothing
    /// leaves the process's memory.
    fn persists(&self) -> bool;

    /// Whether a new process rebuilds its sessions and keys from the records on its disk
    /// (`ModelAgent::recover`, A10 D1); `false`: it starts empty, or (a cluster node) learns
    /// them from the store's snapshot.
    fn recovers_from_disk(&self) -> bool;

    /// A13 across nodes: whether sessions, key records, withdrawals (A5), stops (A6) and which
    /// logical connection has which session active (X2) live in one store host that every node
    /// shares, never in the process. Then an insertion is one insert-if-absent at the store,
    /// which reports it (`insert`); a held prompt's withdrawal and a `session/cancel` are
    /// decided there; and the node keeps no retention window of its own.
    fn shared_store(&self) -> bool;

    /// A1 A4: the messageId a key's message is kept under when the design derives it from
    /// session `sid` and `key` (the adapter: `UUIDv5(sid, key)`, see [`super::derive_id`]), so
    /// that a retry is found by that id instead of a key record; `None`: the key is recorded
    /// with its message and a retry is found by the key.
    fn derived_id(&self, sid: &str, key: &str) -> Option<String>;

    /// A13: the messageId of a new insertion in session `sid` (`key`: its idempotency key, if
    /// any), when the design picks it itself; `None`: the process numbers it
    /// (`m<prefix>.<n>`, unique across sessions and restarts). A design that draws its ids
    /// draws from `rng`, the Agent's one stream, at this point of the insertion.
    fn message_id(&self, sid: &str, key: Option<&str>, rng: &mut ChaCha8Rng) -> Option<String>;

    /// Whether the first keyed prompt of a session after a restart waits while the process
    /// reads the history once, to learn the messageIds kept before the restart (A1 after a
    /// crash, for a design whose id set lives in memory: the adapter).
    fn fills_from_history(&self) -> bool;

    /// A13 D1: write insertion `w` (a retained message, not a live-only command) before it
    /// becomes visible: the records as [`Action::Persist`], a `durable` effect for what is
    /// synced, and any crash point between the steps of the write. Returns whether the write
    /// already passed [`crate::action::Point::AfterSyncBeforeResponse`] (a write in two steps
    /// puts it between them); `false`: the core puts it after the write.
    fn write_insertion(&self, w: &Insertion<'_>, out: &mut Vec<Action>) -> bool;

    /// The record the design syncs when a turn ends, after which every message of the session
    /// is durable (the adapter's runtime syncs lazily, at turn end); `None`: nothing is
    /// written then (what is durable already was at insertion).
    fn turn_end_sync(&self, sid: &str) -> Option<Value>;

    /// Remote transport: how long a turn waits for the answer to its
    /// `session/request_permission` before it asks again (a cluster node: the answer may be
    /// lost while the logical connection lives, [`super::ASK_AGAIN_MS`]); `None`: it asks
    /// once.
    fn asks_again_ms(&self) -> Option<u64>;

    /// A16: whether the process itself discards a message when the retention window
    /// (`AgentConfig::retention_ms`) has passed since it inserted, copied or recovered it;
    /// `false` for a design whose records live elsewhere (a cluster's store).
    fn discards_itself(&self) -> bool;
}

/// One insertion as [`Durability::write_insertion`] writes it (A13: key and message together).
#[derive(Debug, Clone, Copy)]
pub struct Insertion<'a> {
    /// The session.
    pub sid: &'a str,
    /// Its messageId.
    pub message_id: &'a str,
    /// Its idempotency key, if any.
    pub key: Option<&'a str>,
    /// The prompt's text.
    pub text: &'a str,
    /// The Agent's mutant, if any (a mutant may change how the design writes).
    pub mutant: Option<AgentMutant>,
}

impl Design {
    /// The design's answers: the one place a [`Design`] is mapped to its [`Durability`].
    pub fn durability(self) -> &'static dyn Durability {
        match self {
            Design::InMemory => &in_memory::InMemory,
            Design::Stored => &stored::Stored,
            Design::Adapter => &adapter::Adapter,
            Design::Cluster => &cluster::Cluster,
        }
    }

    /// The retention the design declares ([`Durability::retention`]).
    pub fn retention(self) -> Retention {
        self.durability().retention()
    }

    /// One line for `acp-chaos list` ([`Durability::summary`]).
    pub fn summary(self) -> &'static str {
        self.durability().summary()
    }
}
