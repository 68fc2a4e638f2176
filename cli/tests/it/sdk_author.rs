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
//!
//! The checkers see the Agent through the effects it reports (the effect contract, in the
//! [`AgentModel`] docs and `docs/effects.md`): the last tests show that the same Agent with its
//! effects left out is reported "not checked" (unknown) on every property that rests on them,
//! never valid, and that the project's model Agent owes none it does not emit.

use acp_chaos::checkers::{self, contract, Status, Verdict};
use acp_chaos::explore::strategy::{self, Space};
use acp_chaos::models::{Action, AgentInput, AgentModel, Design, Party, Point};
use acp_chaos::plan::Plan;
use acp_chaos::world::{self, AgentBoot};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestError, TestRunner};
use serde_json::Value;

#[path = "../../../sim/examples/parties/notes_agent.rs"]
mod notes;
use notes::{notes_agent, NotesAgent};

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

/// `NotesAgent` with every effect left out: the same frames on the wire, nothing reported to
/// the history. What an Agent written without reading the effect contract looks like.
struct Silent(NotesAgent);

impl AgentModel for Silent {
    fn handle(&mut self, input: AgentInput, out: &mut Vec<Action>) {
        let from = out.len();
        self.0.handle(input, out);
        crate::common::drop_effects_from(out, from);
    }

    fn is_idle(&self) -> bool {
        self.0.is_idle()
    }

    fn retained(&self) -> Value {
        self.0.retained()
    }
}

/// An Agent that emits no effects is not checked on the properties that rest on them: each
/// says "not checked" and names the effect it owed (`insert`: it answered the prompt with a
/// messageId; `activate`: it answered `session/new`), instead of valid, and never invalid for
/// want of a report: P2, which cannot find the acknowledged message among insertions that were
/// never reported, says unknown and keeps what it saw. The properties judged on the wire and
/// the Client alone stay valid.
#[test]
fn an_agent_that_emits_no_effects_is_reported_not_checked_rather_than_valid() {
    let plan = base();
    let silent = world::run_with(&plan, |boot: AgentBoot<'_>| -> Box<dyn AgentModel> {
        Box::new(Silent(NotesAgent::recover(&boot, false)))
    });
    assert!(
        !silent
            .ops
            .iter()
            .any(|o| o.process == "agent"
                && ["insert", "durable", "activate"].contains(&o.f.as_str())),
        "the silent Agent reported an effect"
    );
    let missing: Vec<String> = contract::missing(&silent)
        .into_iter()
        .map(|m| m.effect)
        .collect();
    assert_eq!(missing, ["`insert`", "`activate`"]);
    let verdicts = checkers::check_all(&silent);
    let status = |p: &str| {
        let v = verdicts.iter().find(|v| v.property == p).unwrap();
        (v.status, v)
    };
    for p in ["P1", "P3", "P4", "P9", "P11", "P12", "P15"] {
        let (s, v) = status(p);
        assert_eq!(s, Status::Unknown, "{}", line(v));
        assert!(
            v.message
                .starts_with("not checked: the Agent never emitted `insert`"),
            "{}",
            line(v)
        );
        assert!(!v.witnesses.is_empty(), "{}", line(v));
    }
    for p in ["P10", "P17"] {
        let (s, v) = status(p);
        assert_eq!(s, Status::Unknown, "{}", line(v));
        assert!(
            v.message
                .starts_with("not checked: the Agent never emitted `activate`"),
            "{}",
            line(v)
        );
    }
    let (s, v) = status("P6");
    assert_eq!(s, Status::Unknown, "{}", line(v));
    assert!(
        v.message.contains("`insert`") && v.message.contains("`activate`"),
        "{}",
        line(v)
    );
    // P2 saw an acknowledged message no insertion has: what the missing `insert` would have
    // said, so not a violation of the rule: unknown, naming the effect, what P2 saw kept.
    let (s, v) = status("P2");
    assert_eq!(
        (s, v.party),
        (Status::Unknown, Some(Party::Agent)),
        "{}",
        line(v)
    );
    assert!(
        v.message
            .starts_with("not checked: the Agent never emitted `insert`")
            && v.message.contains("judged without it, the checker saw: "),
        "{}",
        line(v)
    );
    for p in ["P5", "P7", "P8", "P13", "P14", "P16"] {
        let (s, v) = status(p);
        assert_eq!(s, Status::Valid, "{}", line(v));
    }
    // The same Agent with its effects: every property checked, and valid.
    let full = world::run_with(&plan, notes_agent(false));
    assert!(contract::missing(&full).is_empty());
    for v in checkers::check_all(&full) {
        assert_eq!(v.status, Status::Valid, "{}", line(&v));
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// The project's model Agent, on every design and under drawn faults, emits every effect the
    /// wire shows it owes: the effect contract never reports one of its properties not checked
    /// (so adding the contract changed none of its verdicts).
    #[test]
    fn the_model_agent_owes_no_effect_it_does_not_emit(
        (design, plan) in prop_oneof![
            Just(Design::Stored), Just(Design::InMemory), Just(Design::Adapter), Just(Design::Cluster)
        ].prop_flat_map(|d| {
            let b = strategy::base(d);
            let s = Space::of(&b);
            (Just(d), strategy::plan(&b, &s))
        })
    ) {
        let history = world::run(&plan);
        let missing = contract::missing(&history);
        prop_assert!(missing.is_empty(), "{design:?}: {missing:?}");
        for v in checkers::check_all(&history) {
            prop_assert!(!v.message.contains("never emitted"), "{design:?}: {}", line(&v));
        }
    }
}

/// The silent Agent's silence excuses nothing its frames show: the model Agent with the
/// `no-dedup` mutant (a retry inserted again and answered with a second `messageId`), its
/// effects taken out of the history as an Agent that reports nothing would leave it. The
/// violation that blames the Agent on frames alone stands, with a note naming the effects it
/// never emitted; what rests on them is unknown.
#[test]
fn a_silent_agent_is_still_blamed_for_what_its_frames_show() {
    let s = acp_chaos::scenario::resolve(
        &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios"),
        "rfd-01-retry-same-connection",
    )
    .unwrap();
    let plan = Plan::derive(&s, 0, Some("no-dedup"), Design::Stored);
    let full = world::run(&plan);
    let mut silent = full.clone();
    silent.ops.retain(|o| o.process != "agent");
    for (i, o) in silent.ops.iter_mut().enumerate() {
        o.index = i;
    }
    let vs = checkers::check_all(&silent);
    let stood: Vec<&Verdict> = vs.iter().filter(|v| v.status == Status::Invalid).collect();
    assert!(
        !stood.is_empty(),
        "{:#?}",
        vs.iter().map(line).collect::<Vec<_>>()
    );
    for v in stood {
        assert_eq!(v.party, Some(Party::Agent), "{}", line(v));
        assert!(
            v.message.contains("note: the Agent never emitted"),
            "{}",
            line(v)
        );
        assert!(
            v.witnesses
                .iter()
                .all(|i| ["send", "recv"].contains(&silent.ops[*i].f.as_str())),
            "{}",
            line(v)
        );
    }
}
