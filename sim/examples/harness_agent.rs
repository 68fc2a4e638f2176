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

    /// Exhaustive exploration of the trace with the Agent under test certifies the correct
    /// one, naming the party that was yours.
    #[test]
    fn exploring_certifies_the_notes_agent() {
        use acp_chaos::harness::Mode;
        if std::env::var_os("ACP_CHAOS_SCHEDULE").is_some() {
            return; // the rerun below is of the other test's schedule
        }
        let ok = harness(false)
            .quiet(true)
            .explore(Mode::Exhaustive {
                faults: 1,
                audit: usize::MAX,
            })
            .unwrap();
        ok.assert_expected();
        let cert = ok
            .certificate
            .clone()
            .expect("a full exploration certifies");
        assert!(
            cert.contains(", 0 violations;") && cert.ends_with("parties yours: agent"),
            "{cert}"
        );
        assert!(ok.runs > 50, "{cert}");
    }

    /// The planted bug, caught by the same exploration with the property the test expects,
    /// shrunk, and rerun from the printed line (the schedule file it wrote).
    #[test]
    fn exploring_catches_the_forgotten_keys() {
        use acp_chaos::harness::Mode;
        let name = "tests::exploring_catches_the_forgotten_keys";
        let bad = harness(true)
            .name(name)
            .expect("P1")
            .explore(Mode::Exhaustive {
                faults: 2,
                audit: 0,
            })
            .unwrap();
        bad.assert_expected();
        let f = bad.failure.as_ref().expect("caught");
        assert_eq!(f.verdict.property, "P1", "{}", f.describe());
        assert!(f.shrunk.is_some(), "{}", f.describe());
        if std::env::var_os("ACP_CHAOS_SCHEDULE").is_none() {
            // Found by exploring (not a full one: no certificate), at a run it counts.
            assert!(bad.first_catch.is_some() && bad.certificate.is_none());
            assert!(f.report.join("explored.toml").is_file());
            let file = f.report.join("explored.toml");
            assert!(f.rerun.starts_with("ACP_CHAOS_SCHEDULE="), "{}", f.rerun);
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .env("ACP_CHAOS_SCHEDULE", &file)
                .args([name, "--exact", "--nocapture"])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&child.stderr);
            assert!(child.status.success(), "{err}");
            assert!(err.contains("P1 invalid at seed"), "{err}");
        }
    }

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
