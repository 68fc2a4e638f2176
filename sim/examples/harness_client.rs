//! Test your own Client with [`Harness`]: `cargo run --example harness_client [-- --bug]`.
//!
//! The Client under test (`examples/parties/undefined_key_client.rs`) is the model Client
//! behind a wire layer that serialises its keys; `--bug` makes that layer write every key as
//! the literal `"undefined"`. Two different inputs then share one key, the Agent answers the
//! second with the first's `messageId`, and the second input is gone (P2, the Client at
//! fault): the harness catches it, shrinks it and prints the line that reruns it.

#[path = "parties/undefined_key_client.rs"]
mod undefined_key_client;

use acp_chaos::harness::Harness;
use acp_chaos::models::Design;
use undefined_key_client::wire_client;

/// The swarm's drawn runs: several sessions and submissions over a lossy network, with
/// crashes (the Agent is the project's `stored` model).
fn harness(bug: bool) -> Harness {
    Harness::scenario("swarm-basic")
        .expect("the project's scenarios folder")
        .design(Design::Stored)
        .client(wire_client(bug))
        .seeds(0..20)
}

fn main() -> anyhow::Result<()> {
    let bug = std::env::args().any(|a| a == "--bug");
    let outcome = harness(bug).run()?;
    println!(
        "{} runs, failing seeds {:?}",
        outcome.runs, outcome.failing_seeds
    );
    if outcome.failure.is_some() {
        std::process::exit(1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_chaos::checkers::{self, Status};
    use acp_chaos::models::Party;
    use acp_chaos::plan::Plan;

    /// The guided swarm with the Client under test: the correct Client's runs hold P2, and
    /// the planted bug is caught with the property the test expects (not whichever verdict
    /// comes first), at a run the search counts.
    #[test]
    fn guided_search_catches_the_undefined_keys() {
        use acp_chaos::harness::Mode;
        let mode = Mode::Guided { runs: 40 };
        harness(false)
            .quiet(true)
            .expect_holds("P2")
            .explore(mode)
            .unwrap()
            .assert_expected();
        let bad = harness(true)
            .quiet(true)
            .shrink(false)
            .expect("P2")
            .explore(mode)
            .unwrap();
        bad.assert_expected();
        let f = bad.failure.as_ref().unwrap();
        assert_eq!(
            (f.verdict.property.as_str(), f.verdict.party),
            ("P2", Some(Party::Client)),
            "{}",
            f.describe()
        );
        assert!(bad.first_catch.is_some_and(|n| n <= 40));
    }

    #[test]
    fn the_client_holds_every_property() {
        harness(false).quiet(true).run().unwrap().assert_valid();
    }

    #[test]
    fn a_client_that_sends_undefined_keys_is_caught_and_shrunk() {
        let outcome = harness(true).run().unwrap();
        let f = outcome
            .failure
            .expect("the planted bug is caught in 20 seeds");
        assert_eq!(f.verdict.party, Some(Party::Client), "{}", f.describe());
        let sh = f.shrunk.as_ref().expect("shrunk");
        assert!(sh.after.1 <= sh.before.1, "{}", f.describe());
        let plan = Plan::load(&f.report.join("schedule.toml")).unwrap();
        let status = |bug| {
            checkers::check_all(&harness(bug).run_plan(&plan))
                .into_iter()
                .find(|v| v.property == f.verdict.property)
                .unwrap()
                .status
        };
        assert_eq!(
            (status(true), status(false)),
            (Status::Invalid, Status::Valid)
        );
    }
}
