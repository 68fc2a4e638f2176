//! Testing your own ACP Agent with acp-chaos, as an SDK author would.
//!
//! `NotesAgent` (`sim/examples/parties/notes_agent.rs`, shared with the harness example) is an
//! Agent written from scratch against acp-chaos's sans-IO `AgentModel` trait: it gets
//! connections, JSON-RPC lines and timers as inputs and answers with actions (lines to send,
//! records to write to its disk, effects for the history).
//!
//! proptest draws fault schedules and workloads ([`acp_chaos::explore::strategy`]), the simulator runs
//! each against the Agent ([`world::run_with`]: a Client with retries, a network that loses
//! and stalls frames and partitions, crashes and restarts of both processes) and the checkers
//! judge the history ([`checkers::check_all`]: P1 at-most-once, P2 no-silent-drop, ...). The
//! first test shows the Agent holds every property; the second flips one flag that plants a
//! classic bug and shows proptest finding it and shrinking the schedule to a handful of
//! faults and inputs.

use acp_chaos::checkers::{self, Status, Verdict};
use acp_chaos::explore::strategy::{self, Space};
use acp_chaos::models::{Design, Party, Point};
use acp_chaos::plan::Plan;
use acp_chaos::world;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestError, TestRunner};

#[path = "../../examples/parties/notes_agent.rs"]
mod notes;
use notes::notes_agent;

/// One Client, one Agent keeping its sessions on disk (`stored`: durable retention).
fn base() -> Plan {
    strategy::base(Design::Stored)
}

/// Every fault kind a single Agent can meet; crashes also at the three protocol points
/// `NotesAgent` passes.
fn space() -> Space {
    let mut s = Space::of(&base());
    s.points = vec![
        Point::AfterReceive,
        Point::AfterInsertBeforeSync,
        Point::AfterSyncBeforeResponse,
    ];
    s
}

/// Seeded, and nothing written to the source tree: the same cases on every machine.
fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0xAC9),
        failure_persistence: None,
        ..Config::default()
    }
}

fn line(v: &Verdict) -> String {
    format!(
        "{} {:?} ({:?}): {}",
        v.property, v.status, v.party, v.message
    )
}

proptest! {
    #![proptest_config(config(64))]

    /// The correct Agent: every checker is valid on every drawn schedule and workload.
    #[test]
    fn the_notes_agent_holds_every_property_under_drawn_faults(plan in strategy::plan(&base(), &space())) {
        let history = world::run_with(&plan, notes_agent(false));
        for v in checkers::check_all(&history) {
            prop_assert_eq!(v.status, Status::Valid, "{}", line(&v));
        }
    }
}

/// The bug: proptest finds a schedule where a restart makes the Agent insert a retry again
/// (P1 at-most-once, the Agent at fault), shrinks it, and the schedule replays.
#[test]
fn a_notes_agent_that_forgets_its_keys_on_restart_is_caught_with_a_small_schedule() {
    let mut runner = TestRunner::new(config(256));
    let found = runner.run(&strategy::plan(&base(), &space()), |plan| {
        let history = world::run_with(&plan, notes_agent(true));
        match checkers::check_all(&history)
            .iter()
            .find(|v| v.status == Status::Invalid)
        {
            Some(v) => Err(TestCaseError::fail(line(v))),
            None => Ok(()),
        }
    });
    let (reason, plan) = match found {
        Err(TestError::Fail(reason, plan)) => (reason, plan),
        other => panic!("the planted bug was not found in 256 cases: {other:?}"),
    };
    let schedule = toml::to_string(&plan).expect("a plan is TOML");
    println!("shrunk: {reason}\n{schedule}");
    assert!(
        plan.faults.len() <= 2 && plan.workload.len() <= 2 && plan.raw.is_empty(),
        "not small: {} faults, {} inputs, {} probes\n{schedule}",
        plan.faults.len(),
        plan.workload.len(),
        plan.raw.len()
    );
    // The schedule file replays to the same history and the same verdict.
    let file = std::env::temp_dir().join("acp-chaos-sdk-author.schedule.toml");
    std::fs::write(&file, &schedule).unwrap();
    let replayed: Plan = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let a = world::run_with(&plan, notes_agent(true));
    let b = world::run_with(&replayed, notes_agent(true));
    assert_eq!(a.hash(), b.hash());
    let verdicts = checkers::check_all(&b);
    let p1 = verdicts.iter().find(|v| v.property == "P1").unwrap();
    assert_eq!(
        (p1.status, p1.party),
        (Status::Invalid, Some(Party::Agent)),
        "{}",
        line(p1)
    );
    // The correct Agent passes the same schedule.
    let fixed = checkers::check_all(&world::run_with(&replayed, notes_agent(false)));
    assert!(fixed.iter().all(|v| v.status == Status::Valid));
}
