//! P4 error-means-not-inserted (A2 A3 A12): [`p4_error_means_not_inserted`].

use std::collections::BTreeMap;

use acp_chaos_models::Party;

use super::facts::{prompt_answers, Facts};
use super::verdict::{Status, Verdict};
use crate::history::{op, process};

/// P4 error-means-not-inserted: an Agent error to a `session/prompt` attempt means that
/// attempt inserted nothing (A2, A3, A12). Errors from a proxy or Client timeouts are not
/// Agent errors; `-32800` is P6's.
pub fn p4_error_means_not_inserted(f: &Facts) -> Verdict {
    let mut v = Verdict::valid("P4");
    let inserted: BTreeMap<(u64, String), usize> = f
        .history
        .ops
        .iter()
        .filter(|o| o.process == process::AGENT && o.f == op::INSERT)
        .map(|o| {
            (
                (
                    o.value["conn"].as_u64().unwrap_or(0),
                    o.value["id"].to_string(),
                ),
                o.index,
            )
        })
        .collect();
    for &(ref attempt, op, ref ans) in prompt_answers(f) {
        let &Err(code) = ans else { continue };
        if code == acp_chaos_models::rpc::code::REQUEST_CANCELLED {
            continue;
        }
        if let Some(&i) = inserted.get(attempt) {
            v.status = Status::Invalid;
            v.party = Some(Party::Agent);
            v.rules = vec!["A2".into(), "A3".into()];
            v.witnesses = vec![i, op];
            v.fault = f.fault_before(op);
            let attempt_name = super::facts::attempt_name(attempt);
            v.message = format!("attempt {attempt_name} was answered with error {code} after it had inserted a message");
            return v;
        }
    }
    v
}
