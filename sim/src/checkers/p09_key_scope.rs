//! P9 key-scope (A9): [`p9_key_scope`].

use std::collections::BTreeMap;

use acp_chaos_models::Party;

use super::facts::Facts;
use super::verdict::{Status, Verdict};
use crate::history::process;

/// P9 key-scope (A9): a key suppresses a prompt only in its own session. From the Agent's log:
/// every `dedup-hit` answers with a messageId inserted in the same session (a fork copies the
/// history, never the keys, so a hit on a copied message is out of scope too).
pub fn p9_key_scope(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P9");
    // messageId → sessions it was inserted in (with the op).
    let mut inserted: BTreeMap<String, Vec<(String, usize)>> = BTreeMap::new();
    for op in &f.history.ops {
        if op.process != process::AGENT {
            continue;
        }
        let (Some(sid), Some(mid)) = (op.value["session"].as_str(), op.value["messageId"].as_str())
        else {
            continue;
        };
        match op.f.as_str() {
            "insert" => inserted
                .entry(mid.to_string())
                .or_default()
                .push((sid.to_string(), op.index)),
            "dedup-hit" => {
                let at = inserted.get(mid).map(Vec::as_slice).unwrap_or_default();
                if at.iter().any(|(s, _)| s == sid) {
                    continue;
                }
                if let Some((other, first)) = at.first() {
                    v.status = Status::Invalid;
                    v.party = Some(Party::Agent);
                    v.witnesses = vec![*first, op.index];
                    v.fault = f.fault_before(op.index);
                    v.message = format!(
                        "key {} in session {sid} was answered with {mid}, a message of session {other}: keys are scoped per session (A9)",
                        op.value["key"]
                    );
                    return v;
                }
            }
            _ => {}
        }
    }
    v
}
