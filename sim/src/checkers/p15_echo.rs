//! P15 echo (A14): [`p15_echo`].

use acp_chaos_models::Party;

use super::facts::Facts;
use super::verdict::{Status, Verdict};
use crate::history::{is_agent_host, op, process};

/// P15 echo (A14): every `user_message` update an Agent host writes (live, or replayed on a
/// resume) carries a `messageId`, and that message was inserted before the update was
/// written (in any session: a fork copies messages under their ids). The echo may come before
/// or after the prompt's response; a user shown an echo of a message that was never inserted
/// would see input the Agent never took.
///
/// Under `probe` a real Agent's insertions are inferred from its echoes themselves, so only
/// the `messageId` is judged there, not the order.
pub fn p15_echo(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P15", &["A14"]);
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
    for o in &f.history.ops {
        let val = &o.value;
        if !(o.process == process::NET
            && o.f == op::SEND
            && val["from"].as_str().is_some_and(is_agent_host)
            && val["frame"]["method"] == "session/update"
            && val["frame"]["params"]["update"]["sessionUpdate"] == "user_message")
        {
            continue;
        }
        let message = match val["frame"]["params"]["update"]["messageId"].as_str() {
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
