//! Each claim's witness: the shortest run that shows its statement, shrunk
//! ([`acp_chaos::explore::shrink::shrink_while`]) to the fewest faults and submissions that still
//! show it, kept as a schedule file (`acp-chaos replay --schedule FILE` runs it) and drawn cut
//! to the ops the statement names ([`acp_chaos::report::Diagram::only`]).

use std::collections::BTreeSet;

use super::observe::observe;
use super::plan_of;
use acp_chaos::explore::shrink::shrink_while;
use acp_chaos::history::History;
use acp_chaos::models::{CancelRequest, Design};
use acp_chaos::plan::Plan;
use acp_chaos::report::Diagram;
use acp_chaos::scenario::Scenario;
use acp_chaos::world::{self, Parties};

/// A claim's witness, shrunk.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The schedule (the plan, its faults and submissions shrunk).
    pub plan: Plan,
    /// Faults and submissions before shrinking.
    pub before: (usize, usize),
    /// Faults and submissions after.
    pub after: (usize, usize),
    /// Ops of the shrunk run.
    pub ops: usize,
    /// The ops that show the statement in the shrunk run.
    pub named: Vec<usize>,
    /// The shrunk run cut to those ops.
    pub diagram: Diagram,
}

/// The ops of `h` that show the statement `key` (a claim id, or an observation's own key),
/// if its run shows it.
fn shows(h: &History, key: &str) -> Option<Vec<usize>> {
    let view = acp_chaos::checkers::agent_view(h);
    let facts = acp_chaos::checkers::Facts::of(&view);
    let verdicts = acp_chaos::checkers::check_view(&facts);
    let mut classes = std::collections::BTreeMap::new();
    for c in acp_chaos::checkers::Facts::of(h).classes().values() {
        *classes.entry(*c).or_insert(0u32) += 1;
    }
    observe(h, &verdicts, &classes)
        .remove(key)
        .and_then(|(_, named)| named)
}

/// Shrink the run of (`s`, `seed`, `design`, `cancel`) that shows `key`, and draw it. `None`
/// when that run does not show it (it always does for a witness [`super::measure`] chose).
pub fn shrink(
    s: &Scenario,
    seed: u64,
    design: Design,
    cancel: CancelRequest,
    key: &str,
) -> Option<Shrunk> {
    let plan = plan_of(s, seed, design, cancel);
    let k = shrink_while(&plan, &Parties::default(), &|h| shows(h, key).is_some()).ok()?;
    let h = world::run(&k.plan);
    let named = shows(&h, key)?;
    let diagram = Diagram::of(&h, None).only(&named.iter().copied().collect::<BTreeSet<_>>());
    Some(Shrunk {
        before: (plan.faults.len(), plan.workload.len()),
        after: (k.plan.faults.len(), k.plan.workload.len()),
        ops: h.ops.len(),
        plan: k.plan,
        named,
        diagram,
    })
}

/// The schedule file of a witness: a comment with what it shows and how to replay it, then
/// the plan as TOML.
pub fn schedule_file(w: &Shrunk, what: &str, path: &str) -> String {
    format!(
        "# a witness of the findings page (docs/findings/spec.md): {what}\n# replay: acp-chaos replay --schedule {path}\n{}",
        acp_chaos::plan::file::to_toml(&w.plan).expect("a plan serializes")
    )
}
