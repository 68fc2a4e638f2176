//! The `cluster` design (`durable` retention): one node of a remote Agent. Sessions, key
//! records and which logical connection has which session active live in the store host
//! ([`crate::cluster`]), never in the node (A13). Before each request the node loads the
//! store's view; an insertion is one insert-if-absent at the store. A node that cannot learn
//! whether its store write applied sends it again until it knows, never answering with an
//! error (A2).

use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::{Durability, Insertion};
use crate::action::Action;
use crate::agent::{Retention, ASK_AGAIN_MS};

/// A node of a remote Agent: N nodes share one store host.
#[derive(Debug, Clone, Copy)]
pub struct Cluster;

impl Durability for Cluster {
    fn retention(&self) -> Retention {
        Retention::Durable
    }

    fn summary(&self) -> &'static str {
        "durable retention: N nodes, one store host; insert-if-absent at the store; requests and retries routed to any node (A13 A2)"
    }

    /// Its records go to the store host.
    fn persists(&self) -> bool {
        true
    }

    /// The store's snapshot, not a disk, gives a node its sessions.
    fn recovers_from_disk(&self) -> bool {
        false
    }

    fn shared_store(&self) -> bool {
        true
    }

    fn derived_id(&self, _sid: &str, _key: &str) -> Option<String> {
        None
    }

    fn message_id(&self, _sid: &str, _key: Option<&str>, _rng: &mut ChaCha8Rng) -> Option<String> {
        None
    }

    fn fills_from_history(&self) -> bool {
        false
    }

    /// Nothing: the store wrote it when it inserted (the insert-if-absent, A13).
    fn write_insertion(&self, _w: &Insertion<'_>, _out: &mut Vec<Action>) -> bool {
        false
    }

    fn turn_end_sync(&self, _sid: &str) -> Option<Value> {
        None
    }

    fn asks_again_ms(&self) -> Option<u64> {
        Some(ASK_AGAIN_MS)
    }

    fn discards_itself(&self) -> bool {
        false
    }
}
