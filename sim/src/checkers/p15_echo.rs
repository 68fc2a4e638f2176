//! P15 echo (A14): [`p15_echo`].

use acp_chaos_models::Party;

use super::facts::Facts;
use super::verdict::{Status, Verdict};
use crate::history::op;

/// P15 echo (A14): every `user_message` update an Agent host writes (live, or replayed on a
/// resume) carries a `messageId`, and that message was inserted before the update was
/// written (in any session: a fork copies messages under their ids). The echo may come before
/// or after the prompt's response; a user shown an echo of a message that was never inserted
/// would see input the Agent never took.
///
/// Under `probe` a real Agent's insertions are inferred from its echoes themselves, so only
/// the `messageId` is judged there, not the order.
pub fn p15_echo(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P15");
    let inferred = f
        .history
        .ops
        .iter()
        .any(|o| o.f == op::INSERT && o.value["inferred"] == true);
    // Each message's first insertion (op index).
    let mut inserted: std::collections::BTreeMap<&str, usize> = Default::default();
    for i in &f.inserts {
        inserted.entry(i.message_id.as_str()).or_insert(i.op);
    }
    for (o, w) in f.ops_with_wire() {
        let Some(w) = w.filter(|w| {
            w.sent
                && w.from_agent
                && w.method == Some("session/update")
                && w.frame["params"]["update"]["sessionUpdate"] == "user_message"
        }) else {
            continue;
        };
        let message = match w.frame["params"]["update"]["messageId"].as_str() {
            None => "a user_message update carries no messageId".to_string(),
            Some(mid) if !inferred && inserted.get(mid).is_none_or(|at| *at > o.index) => {
                format!("the user_message echo of {mid} was written before {mid} was inserted")
            }
            Some(_) => continue,
        };
        v.status = Status::Invalid;
        v.party = Some(Party::Agent);
        v.witnesses = vec![o.index];
        v.fault = f.fault_before(o.index);
        v.message = message;
        return v;
    }
    v
}
