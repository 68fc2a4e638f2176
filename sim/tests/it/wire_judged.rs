//! Rules about what a party sent, judged from the frames it wrote and read, not from its own
//! report of them (issue 38): a user's Client whose wire layer writes every key as `""` (K3
//! makes it malformed) talks to an Agent that inserts such a prompt anyway. No raw probe is
//! in the plan, so only the frames can show the Agent's part.

use acp_chaos::checkers::{self, Status, Verdict};
use acp_chaos::harness::Harness;
use acp_chaos::models::{Design, Party};

#[path = "../../examples/parties/undefined_key_client.rs"]
mod wire_client;
use wire_client::wire_client_writing;

fn harness(mutant: Option<&str>) -> Harness {
    let h = Harness::scenario("rfd-01-retry-same-connection")
        .expect("the project's scenarios folder")
        .design(Design::Stored)
        .client(wire_client_writing(Some("")));
    match mutant {
        Some(m) => h.mutant(m),
        None => h,
    }
}

fn verdict(h: &Harness, seed: u64, property: &str) -> Verdict {
    let history = h.run_plan(&h.plan(seed));
    checkers::check_all(&history)
        .into_iter()
        .find(|v| v.property == property)
        .expect("every property is judged")
}

#[test]
fn an_agent_that_inserts_a_prompt_sent_with_an_empty_key_is_blamed_from_the_frames() {
    let plan = harness(None).plan(0);
    assert!(
        plan.raw.is_empty(),
        "no raw probe: the frames alone show it"
    );
    // The Agent that treats a malformed key as omitted inserts it: P5 names it, under K3.
    let bad = verdict(&harness(Some("invalid-key-as-omitted")), 0, "P5");
    assert_eq!(
        (bad.status, bad.party, bad.rules.clone()),
        (Status::Invalid, Some(Party::Agent), vec!["K3".to_string()]),
        "{}",
        bad.message
    );
    assert!(bad.message.contains("malformed key"), "{}", bad.message);
    // The correct Agent rejects it: nothing for P5 to blame it for.
    let good = verdict(&harness(None), 0, "P5");
    assert_eq!(good.status, Status::Valid, "{}", good.message);
}
