//! P8 key-privacy (A8): [`p8_key_privacy`].

use std::collections::BTreeSet;

use acp_chaos_models::Party;
use serde_json::Value;

use super::facts::Facts;
use super::verdict::{Status, Verdict};
use crate::history::{op, process};

/// P8 key-privacy: no JSON string equal to a key the Client sent (as its frames show, and its
/// `attempt` reports) appears in anything the Agent sends: notifications, list and resume
/// results, replay, frames to another Client (A8).
pub fn p8_key_privacy(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P8");
    let mut keys: BTreeSet<&str> = f
        .attempt_keys
        .values()
        .flatten()
        .map(String::as_str)
        .collect();
    // And every key the Client wrote on the wire, whatever its `attempt` reports say: A8 is
    // about what the Agent was sent. Not the swarm's raw probes (odd keys sent on purpose,
    // which an Agent may quote when it refuses them), nor `""` (it equals any empty string).
    let raw = f.raw_probes();
    for o in f
        .history
        .ops
        .iter()
        .filter(|o| o.process == process::NET && o.f == op::SEND && o.value["from"] == "client")
    {
        let fr = &o.value["frame"];
        let attempt = (o.value["conn"].as_u64().unwrap_or(0), fr["id"].to_string());
        if fr["method"] == "session/prompt" && !raw.contains(&attempt) {
            if let Some(k) = fr["params"]["idempotencyKey"]
                .as_str()
                .filter(|k| !k.is_empty())
            {
                keys.insert(k);
            }
        }
    }
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
