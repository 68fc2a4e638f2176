//! P11 durability (D1): [`p11_durability`].

use acp_chaos_models::Party;

use super::facts::Facts;
use super::verdict::{Status, Verdict};

/// P11 durability: a `durable` design never loses a message whose insertion took effect (D1).
/// For other designs, work that started on a message a crash then lost, redone by a retry, is a
/// finding: nothing in the spec requires durability before visible effects.
pub fn p11_durability(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P11");
    let durable = f.retention == acp_chaos_models::Retention::Durable;
    for i in f.inserts.iter().filter(|i| !i.live_only) {
        let (Some(t), Some(lost)) = (i.took_effect, i.lost_at) else {
            continue;
        };
        if durable {
            v.breach(
                Status::Invalid,
                Party::Agent,
                vec!["D1".into()],
                vec![i.op, t, lost],
                f.fault_before(lost),
                format!(
                "message {} (session {}) took effect at op {t} but was gone when the Agent restarted (op {lost})",
                i.message_id, i.session
            ),
            );
            return v;
        }
        let redone = f
            .inserts
            .iter()
            .find(|r| r.op > lost && r.submission.is_some() && r.submission == i.submission);
        if let (Some(r), Status::Valid) = (redone, v.status) {
            v.breach(
                Status::Finding,
                Party::Spec,
                vec!["A16".into()],
                vec![i.op, t, lost, r.op],
                f.fault_before(lost),
                format!(
                "message {} became visible, a restart lost it (process retention), and a retry inserted it again as {}: nothing requires durability before visible effects",
                i.message_id, r.message_id
            ),
            );
        }
    }
    v
}
