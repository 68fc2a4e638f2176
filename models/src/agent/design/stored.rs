//! The `stored` design (`durable` retention): key and message in one framed record, synced
//! before the insertion becomes visible (A10, A13, D1); a restart rebuilds every session from
//! the records.

use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::{Durability, Insertion};
use crate::action::{effect, Action, Point};
use crate::agent::{AgentMutant, Retention};
use crate::op;

/// Stored sessions: every record synced on the process's own disk.
#[derive(Debug, Clone, Copy)]
pub struct Stored;

impl Durability for Stored {
    fn retention(&self) -> Retention {
        Retention::Durable
    }

    fn summary(&self) -> &'static str {
        "durable retention: key + message in one fsynced record before the echo, response or work (A10 A13 D1)"
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

    fn derived_id(&self, _sid: &str, _key: &str) -> Option<String> {
        None
    }

    fn message_id(&self, _sid: &str, _key: Option<&str>, _rng: &mut ChaCha8Rng) -> Option<String> {
        None
    }

    fn fills_from_history(&self) -> bool {
        false
    }

    /// One `msg` record with the key, synced, then `durable` (A13). The mutants: the record
    /// unsynced (`record-unsynced`), or the message and its key in two synced writes with the
    /// crash point between them (`two-step-write`, a keyed prompt only).
    fn write_insertion(&self, w: &Insertion<'_>, out: &mut Vec<Action>) -> bool {
        let (sid, mid) = (w.sid, w.message_id);
        if w.mutant == Some(AgentMutant::TwoStepWrite) && w.key.is_some() {
            // Mutant: the message first, its key in a second write (breaks A13).
            out.push(Action::Persist {
                record: json!({"t": "msg", "session": sid, "messageId": mid, "key": null, "text": w.text}),
                sync: true,
            });
            out.push(effect(
                op::DURABLE,
                json!({"session": sid, "messageId": mid}),
            ));
            out.push(Action::Point(Point::AfterSyncBeforeResponse));
            out.push(Action::Persist {
                record: json!({"t": "msg-key", "session": sid, "messageId": mid, "key": w.key}),
                sync: true,
            });
            return true;
        }
        let sync = w.mutant != Some(AgentMutant::RecordUnsynced);
        out.push(Action::Persist {
            record: json!({"t": "msg", "session": sid, "messageId": mid, "key": w.key, "text": w.text}),
            sync,
        });
        if sync {
            out.push(effect(
                op::DURABLE,
                json!({"session": sid, "messageId": mid}),
            ));
        }
        false
    }

    fn turn_end_sync(&self, _sid: &str) -> Option<Value> {
        None
    }

    fn asks_again_ms(&self) -> Option<u64> {
        None
    }

    fn discards_itself(&self) -> bool {
        true
    }
}
