//! The `adapter` design (`process` retention): the proposal's "Adapter validation" design over
//! a runtime store it does not control. The runtime keeps user messages under an id the adapter
//! picks (`UUIDv5(sessionId, key)`), never keys, and syncs lazily (at the end of a turn); the
//! adapter finds retries in its pending prompts and in an in-memory id set that it fills from
//! the runtime's history once, on the first keyed prompt after a restart.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::{Durability, Insertion};
use crate::action::Action;
use crate::agent::{derive_id, Retention};

/// An adapter over a runtime store: derived ids, lazy runtime sync, history fill.
#[derive(Debug, Clone, Copy)]
pub struct Adapter;

impl Durability for Adapter {
    fn retention(&self) -> Retention {
        Retention::Process
    }

    fn summary(&self) -> &'static str {
        "process retention: runtime keeps messages under UUIDv5(sessionId, key), synced at turn end; id set filled from history after restart"
    }

    fn persists(&self) -> bool {
        true
    }

    fn recovers_from_disk(&self) -> bool {
        true
    }

    fn shared_store(&self) -> bool {
        false
    }

    fn derived_id(&self, sid: &str, key: &str) -> Option<String> {
        Some(derive_id(sid, key))
    }

    /// Keyed: the derived id. Unkeyed: a random UUID, drawn from the Agent's stream.
    fn message_id(&self, sid: &str, key: Option<&str>, rng: &mut ChaCha8Rng) -> Option<String> {
        Some(match key {
            Some(k) => derive_id(sid, k),
            None => uuid::Builder::from_random_bytes(rng.gen())
                .into_uuid()
                .to_string(),
        })
    }

    fn fills_from_history(&self) -> bool {
        true
    }

    /// The runtime stores the message under the adapter's id, never the key, and syncs lazily
    /// (at the end of the turn: [`Durability::turn_end_sync`]).
    fn write_insertion(&self, w: &Insertion<'_>, out: &mut Vec<Action>) -> bool {
        out.push(Action::Persist {
            record: json!({"t": "msg", "session": w.sid, "messageId": w.message_id, "text": w.text}),
            sync: false,
        });
        false
    }

    fn turn_end_sync(&self, sid: &str) -> Option<Value> {
        Some(json!({"t": "turn-end", "session": sid}))
    }

    fn asks_again_ms(&self) -> Option<u64> {
        None
    }

    fn discards_itself(&self) -> bool {
        true
    }
}
