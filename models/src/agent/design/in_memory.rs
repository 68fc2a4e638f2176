//! The `in-memory` design (`process` retention): a stdio Agent that keeps sessions and keys in
//! memory only; a restart loses them (a resume then gets `-32002`).

use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::{Durability, Insertion};
use crate::action::Action;
use crate::agent::Retention;

/// Sessions and keys in memory: nothing is written, nothing recovered.
#[derive(Debug, Clone, Copy)]
pub struct InMemory;

impl Durability for InMemory {
    fn retention(&self) -> Retention {
        Retention::Process
    }

    fn summary(&self) -> &'static str {
        "process retention: sessions and keys in memory; a restart loses them (resume gets -32002)"
    }

    fn persists(&self) -> bool {
        false
    }

    fn recovers_from_disk(&self) -> bool {
        false
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

    fn write_insertion(&self, _w: &Insertion<'_>, _out: &mut Vec<Action>) -> bool {
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
