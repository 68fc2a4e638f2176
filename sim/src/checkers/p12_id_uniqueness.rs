//! P12 id-uniqueness (A11 A16): [`p12_id_uniqueness`].

use acp_chaos_models::Party;

use super::facts::Facts;
use super::verdict::{Status, Verdict};

/// P12 id-uniqueness: `messageId`s of user messages are unique within a session. A design that
/// derives ids from keys repeats one when a forgotten key is used again: a finding when the
/// rules allowed forgetting (A11, A16), otherwise a violation.
pub fn p12_id_uniqueness(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P12");
    for (j, later) in f.inserts.iter().enumerate() {
        // An insertion that never took effect (a crash before its sync and echo) never happened.
        let Some(e) = f.inserts[..j].iter().find(|e| {
            e.session == later.session
                && e.message_id == later.message_id
                && e.took_effect.is_some_and(|t| t < later.op)
        }) else {
            continue;
        };
        let allowed = e.gone_before(later.op).is_some();
        let status = if allowed {
            Status::Finding
        } else {
            Status::Invalid
        };
        if status > v.status {
            v.status = status;
            v.party = Some(if allowed { Party::Spec } else { Party::Agent });
            v.rules = if allowed {
                vec!["A11".into(), "A16".into()]
            } else {
                vec!["A1".into()]
            };
            v.witnesses = vec![e.op, later.op];
            v.fault = f.fault_before(later.op);
            let note = if allowed {
                " (the first was forgotten, as the rules allow, and its key was used again)"
            } else {
                ""
            };
            v.message = format!(
                "messageId {} names two user messages in session {}{note}",
                e.message_id, e.session
            );
            if status == Status::Invalid {
                return v;
            }
        }
    }
    v
}
