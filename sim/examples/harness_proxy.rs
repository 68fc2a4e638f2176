//! Test your own proxy with [`Harness`]: `cargo run --example harness_proxy [-- --bug]`.
//!
//! The proxy under test (`examples/parties/relay_proxy.rs`) is written from scratch against
//! the `ProxyModel` trait; `--bug` makes it forward `$/cancel_request` under the Client's id
//! instead of the one it rewrote the request to, so the Agent never cancels the request the
//! user withdrew (P6, the proxy at fault): the harness catches it, shrinks it and prints the
//! line that reruns it.

#[path = "parties/relay_proxy.rs"]
mod relay_proxy;

use acp_chaos::harness::Harness;
use acp_chaos::models::Design;
use relay_proxy::relay_proxy;

/// A user cancels a prompt whose answer was lost, through a proxy that rewrites ids.
fn harness(bug: bool) -> Harness {
    Harness::scenario("proxy-02-cancel-through-rewritten-ids")
        .expect("the project's scenarios folder")
        .design(Design::Stored)
        .proxy(relay_proxy(bug))
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

    /// Lineage with the proxy under test: faults cut from what the trace's good outcomes
    /// depended on find the planted bug (P6, the proxy at fault), and every schedule it tries
    /// holds with the correct proxy.
    #[test]
    fn lineage_catches_the_unmapped_cancel() {
        use acp_chaos::harness::Mode;
        let mode = Mode::Lineage {
            faults: 2,
            budget: 300,
        };
        let ok = harness(false).quiet(true).explore(mode).unwrap();
        ok.assert_expected();
        assert!(ok.runs > 1 && ok.first_catch.is_none(), "{ok:?}");
        let bad = harness(true)
            .quiet(true)
            .shrink(false)
            .expect("P6")
            .explore(mode)
            .unwrap();
        bad.assert_expected();
        let f = bad.failure.as_ref().unwrap();
        assert_eq!(
            f.verdict.party,
            Some(Party::Intermediary),
            "{}",
            f.describe()
        );
    }

    #[test]
    fn the_relay_proxy_holds_every_property() {
        harness(false).quiet(true).run().unwrap().assert_valid();
    }

    #[test]
    fn a_proxy_that_forwards_cancels_unmapped_is_caught_and_shrunk() {
        let outcome = harness(true).run().unwrap();
        let f = outcome
            .failure
            .expect("the planted bug is caught in 20 seeds");
        assert_eq!(
            (f.verdict.property.as_str(), f.verdict.party),
            ("P6", Some(Party::Intermediary)),
            "{}",
            f.describe()
        );
        assert!(f.shrunk.is_some(), "{}", f.describe());
        let plan = Plan::load(&f.report.join("schedule.toml")).unwrap();
        let p6 = |bug| {
            checkers::check_all(&harness(bug).run_plan(&plan))
                .into_iter()
                .find(|v| v.property == "P6")
                .unwrap()
                .status
        };
        assert_eq!((p6(true), p6(false)), (Status::Invalid, Status::Valid));
    }
}
