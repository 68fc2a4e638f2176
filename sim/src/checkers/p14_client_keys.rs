//! P14 client-keys (C2 C3 C5 A17): [`p14_client_keys`].

use std::collections::BTreeMap;

use acp_chaos_models::Party;

use super::facts::Facts;
use super::verdict::{Status, Verdict};
use crate::history::{op, process};

/// P14 client-keys *(ours, from C2 C3 C5)*: read from the Client's frames (C3: one key, in
/// one session, is never written with two different prompts; the swarm's raw probes aside)
/// and from its own log, one key names one
/// submission in its session. A key the Client sends for a second submission with another
/// prompt breaks C3; with the same prompt (the user sent the text again on purpose) it breaks
/// C2, the mark of a key derived from content (C5). Keys are scoped per session (A9), so the
/// same string in two sessions, or in a fork, is fine. And what a key stands for is never
/// empty: the Client never sends `session/prompt` with `prompt: []` (A17). The Client is at
/// fault.
pub fn p14_client_keys(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P14");
    // submission → (slot, text), from the user's submits.
    let mut sub: BTreeMap<u64, (u64, String, usize)> = BTreeMap::new();
    // (slot, key) → (submission, attempt op).
    let mut owner: BTreeMap<(u64, String), (u64, usize)> = BTreeMap::new();
    // (session, key) → (the prompt as written, the op), from the Client's own frames: C3 is
    // about what it sent, so it is judged on the wire whatever its `attempt` reports say.
    let mut written: BTreeMap<(String, String), (String, usize)> = BTreeMap::new();
    // The swarm's raw probes send odd prompts on purpose (to judge the Agent): not C3's.
    let raw = f.raw_probes();
    for (op, w) in f.ops_with_wire() {
        match (op.process.as_str(), op.f.as_str(), w) {
            (process::NET, op::SEND, Some(w))
                if w.from == "client"
                    && w.method == Some("session/prompt")
                    && w.frame["params"]["prompt"]
                        .as_array()
                        .is_some_and(|p| p.is_empty()) =>
            {
                v.breach(
                    Status::Invalid,
                    Party::Client,
                    vec!["A17".into()],
                    vec![op.index],
                    f.fault_before(op.index),
                    format!(
                    "the Client sent session/prompt #{} with `prompt: []` (A17: Clients MUST NOT send an empty prompt)",
                    op.value["frame"]["id"]
                ),
                );
                return v;
            }
            (process::NET, op::SEND, Some(w))
                if w.from == "client"
                    && w.method == Some("session/prompt")
                    && !raw.contains(&w.key()) =>
            {
                let p = &w.frame["params"];
                let (Some(sid), Some(key)) =
                    (p["sessionId"].as_str(), p["idempotencyKey"].as_str())
                else {
                    continue;
                };
                let prompt = p["prompt"].to_string();
                match written.get(&(sid.to_string(), key.to_string())) {
                    Some((first, at)) if *first != prompt => {
                        v.breach(
                            Status::Invalid,
                            Party::Client,
                            vec!["C3".into()],
                            vec![*at, op.index],
                            f.fault_before(op.index),
                            format!(
                            "the Client wrote session/prompt #{} in session {sid} with key {key:?} and another prompt than the one it wrote with that key at op {at} (C3), judged from its frames",
                            w.id_key
                        ),
                        );
                        return v;
                    }
                    Some(_) => {}
                    None => {
                        written.insert((sid.to_string(), key.to_string()), (prompt, op.index));
                    }
                }
            }
            (process::USER, op::SUBMIT, _) => {
                if let Some(n) = op.value["submission"].as_u64() {
                    sub.insert(
                        n,
                        (
                            op.value["slot"].as_u64().unwrap_or(0),
                            op.value["text"].as_str().unwrap_or_default().to_string(),
                            op.index,
                        ),
                    );
                }
            }
            (process::CLIENT, op::ATTEMPT, _) => {
                let (Some(n), Some(key)) =
                    (op.value["submission"].as_u64(), op.value["key"].as_str())
                else {
                    continue;
                };
                let Some((slot, text, _)) = sub.get(&n).cloned() else {
                    continue;
                };
                match owner.get(&(slot, key.to_string())).copied() {
                    Some((first, at)) if first != n => {
                        let same_text = sub.get(&first).is_some_and(|s| s.1 == text);
                        v.breach(
                            Status::Invalid,
                            Party::Client,
                            if same_text {
                            vec!["C2".into(), "C5".into()]
                        } else {
                            vec!["C3".into()]
                        },
                            vec![at, op.index],
                            f.fault_before(op.index),
                            if same_text {
                            format!(
                                "submission {n} reuses the key of submission {first} because its text is the same: a new submission needs a new key (C2); a key derived from content does this (C5)"
                            )
                        } else {
                            format!(
                                "submission {n} was sent with the key of submission {first} and a different prompt (C3)"
                            )
                        },
                        );
                        return v;
                    }
                    Some(_) => {}
                    None => {
                        owner.insert((slot, key.to_string()), (n, op.index));
                    }
                }
            }
            _ => {}
        }
    }
    v
}
