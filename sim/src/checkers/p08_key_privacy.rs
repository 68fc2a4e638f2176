//! P8 key-privacy (A8): [`p8_key_privacy`].

use std::collections::BTreeSet;

use acp_chaos_models::Party;
use serde_json::Value;

use super::facts::Facts;
use super::verdict::{Status, Verdict};
use crate::history::{op, process};

/// P8 key-privacy: no JSON string equal to a key the Client sent appears in anything the Agent
/// sends: notifications, list and resume results, replay, frames to another Client (A8).
pub fn p8_key_privacy(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P8");
    let keys: BTreeSet<&str> = f
        .attempt_keys
        .values()
        .flatten()
        .map(String::as_str)
        .collect();
    fn find<'a>(x: &'a Value, keys: &BTreeSet<&str>) -> Option<&'a str> {
        match x {
            Value::String(s) => keys.contains(s.as_str()).then_some(s.as_str()),
            Value::Array(a) => a.iter().find_map(|y| find(y, keys)),
            Value::Object(o) => o.values().find_map(|y| find(y, keys)),
            _ => None,
        }
    }
    for op in f
        .history
        .ops
        .iter()
        .filter(|o| o.process == process::NET && o.f == op::SEND && o.value["from"] == "agent")
    {
        if let Some(k) = find(&op.value["frame"], &keys) {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec!["A8".into()];
            v.witnesses = vec![op.index];
            v.message = format!(
                "the Agent sent the key {k:?} in a {} frame on connection {}",
                op.value["frame"]["method"].as_str().unwrap_or("response"),
                op.value["conn"]
            );
            return v;
        }
    }
    v
}
