//! Test your own Agent with [`Harness`]: a campaign, a shrink, a replay and the report pages,
//! from your own `cargo test`.
//!
//! `cargo run --example harness_agent` runs the correct `NotesAgent`
//! (`examples/parties/notes_agent.rs`) through the RFD's "retry after the Agent restarted"
//! trace on 20 seeds; `-- --bug` plants the one-flag bug (keys not written with their
//! messages), which the harness catches (P1: a retry inserted a second message), shrinks and
//! prints the line that reruns it. The tests below are the same as a user's `cargo test`
//! would be (`cargo test -p acp-chaos --example harness_agent`).

#[path = "parties/notes_agent.rs"]
mod notes_agent;

use acp_chaos::harness::Harness;
use acp_chaos::models::Design;
use notes_agent::notes_agent;

/// The trace: a prompt answered, the Agent crashed right after writing it, the retry on a new
/// connection after the restart (`scenarios/rfd-03-retry-after-agent-restart.toml`).
fn harness(bug: bool) -> Harness {
    Harness::scenario("rfd-03-retry-after-agent-restart")
        .expect("the project's scenarios folder")
        .design(Design::Stored)
        .agent(notes_agent(bug))
        .seeds(0..20)
}

fn main() -> anyhow::Result<()> {
    let bug = std::env::args().any(|a| a == "--bug");
    let outcome = harness(bug).run()?;
    println!(
        "{} runs; P1 valid in {}, P2 valid in {}",
        outcome.runs,
        outcome.count("P1", acp_chaos::checkers::Status::Valid),
        outcome.count("P2", acp_chaos::checkers::Status::Valid)
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

    #[test]
    fn the_notes_agent_holds_every_property() {
        let outcome = harness(false).quiet(true).run().unwrap();
        outcome.assert_valid();
        assert_eq!(outcome.count("P1", Status::Valid), outcome.runs);
    }

    /// The bug is caught, shrunk, and replays: from the schedule file and from the printed
    /// line itself (this test binary run again with `ACP_CHAOS_SEED`).
    #[test]
    fn an_agent_that_forgets_its_keys_is_caught_shrunk_and_replayed() {
        let outcome = harness(true)
            .name("tests::an_agent_that_forgets_its_keys_is_caught_shrunk_and_replayed")
            .run()
            .unwrap();
        let f = outcome
            .failure
            .expect("the planted bug is caught in 20 seeds");
        assert_eq!(
            (f.verdict.property.as_str(), f.verdict.party),
            ("P1", Some(Party::Agent)),
            "{}",
            f.describe()
        );
        let sh = f.shrunk.as_ref().expect("shrunk");
        assert!(
            sh.after.0 + sh.after.1 <= sh.before.0 + sh.before.1 && sh.after.1 >= 1,
            "{}",
            f.describe()
        );
        // The shrunk schedule file fails the same way, and the correct Agent passes it.
        let plan = Plan::load(&f.report.join("schedule.toml")).unwrap();
        let p1 = |bug| {
            checkers::check_all(&harness(bug).run_plan(&plan))
                .into_iter()
                .find(|v| v.property == "P1")
                .unwrap()
                .status
        };
        assert_eq!((p1(true), p1(false)), (Status::Invalid, Status::Valid));
        for file in ["report.html", "report.md", "history.jsonl", "repro.txt"] {
            assert!(f.report.join(file).is_file(), "{file} missing");
        }
        // The printed line reruns this test at that seed (not again from inside the rerun).
        if std::env::var_os("ACP_CHAOS_SEED").is_none() {
            assert!(f
                .rerun
                .starts_with(&format!("ACP_CHAOS_SEED={} cargo test", f.seed)));
            let exe = std::env::current_exe().unwrap();
            let child = std::process::Command::new(exe)
                .env("ACP_CHAOS_SEED", f.seed.to_string())
                .args([
                    "tests::an_agent_that_forgets_its_keys_is_caught_shrunk_and_replayed",
                    "--exact",
                    "--nocapture",
                ])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&child.stderr);
            assert!(child.status.success(), "{err}");
            assert!(
                err.contains(&format!("P1 invalid at seed {}", f.seed)),
                "{err}"
            );
        }
    }
}
