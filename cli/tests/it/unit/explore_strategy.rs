//! The unit tests of `sim/src/explore/strategy.rs`.

use acp_chaos::explore::strategy::*;
use acp_chaos::models::{Design, KeyScheme};
use acp_chaos::plan::Plan;
use acp_chaos::scenario::Scenario;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngSeed, TestRunner};

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(0x5EED),
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn every_drawn_plan_is_valid_and_round_trips_through_toml() {
    for design in Design::ALL {
        let b = base(design);
        let mut space = Space::of(&b);
        space.cancel = 0.3;
        let s = plan(&b, &space);
        let mut r = runner(1);
        let mut kinds = std::collections::BTreeSet::new();
        for _ in 0..300 {
            let p = s.new_tree(&mut r).unwrap().current();
            assert_eq!(p.check(), None, "{design:?}: {:?}", p.faults);
            assert!(p.workload.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
            assert!(p.workload.iter().all(|w| w.at_ms < p.safety_ms));
            kinds.extend(p.faults.iter().map(|f| f.kind.as_str()));
            let text = toml::to_string(&p).unwrap();
            let back: Plan = toml::from_str(&text).unwrap();
            assert_eq!(back.faults, p.faults);
        }
        assert_eq!(kinds.len(), space.kinds.len(), "{design:?}: {kinds:?}");
    }
}

#[test]
fn the_correct_model_agents_have_no_violation_on_drawn_plans() {
    for design in Design::ALL {
        let b = base(design);
        let mut space = Space::of(&b);
        space.cancel = 0.2;
        space.seeds = 0..=1000;
        let s = plan(&b, &space);
        let mut r = runner(1);
        let n = plans_per_design();
        for _ in 0..n {
            let p = s.new_tree(&mut r).unwrap().current();
            assert_no_violation(design, &p);
        }
    }
}

#[test]
fn the_correct_model_agents_have_no_violation_on_swarm_drawn_plans() {
    for design in Design::ALL {
        let b = base(design);
        let mut space = Space::swarm(&b);
        space.seeds = 0..=1000;
        let s = plan(&b, &space);
        let mut r = runner(1);
        let (mut forks, mut counters) = (0, 0);
        let n = plans_per_design();
        for _ in 0..n {
            let p = s.new_tree(&mut r).unwrap().current();
            assert_eq!(p.check(), None);
            forks += p.workload.iter().filter(|w| w.fork.is_some()).count();
            counters += usize::from(p.client.keys == KeyScheme::SessionCounter);
            assert_no_violation(design, &p);
        }
        assert!(
            forks > 0 && counters > 0,
            "{design:?}: {forks} forks, {counters} counter-keyed plans"
        );
    }
}

/// A bug only two sessions with the same key strings reach (A9): the swarm's space finds
/// it; the one-session space of `Space::of` never can.
#[test]
fn the_swarm_space_finds_keys_shared_across_sessions() {
    let s = Scenario::parse(std::path::Path::new("strategy.toml"), BASE).unwrap();
    let b = Plan::derive(&s, 0, Some("keys-across-sessions"), Design::Stored);
    let caught = |space: &Space| {
        let st = plan(&b, space);
        let mut r = runner(1);
        (1..=256).find(|_| {
            let p = st.new_tree(&mut r).unwrap().current();
            let h = acp_chaos::world::run(&p);
            acp_chaos::checkers::check_all(&h)
                .iter()
                .any(|v| v.status == acp_chaos::checkers::Status::Invalid)
        })
    };
    let mut swarm = Space::swarm(&b);
    swarm.seeds = 0..=1000;
    let mut one = Space::of(&b);
    one.seeds = 0..=1000;
    assert!(
        caught(&swarm).is_some(),
        "not caught in 256 swarm-space plans"
    );
    assert_eq!(caught(&one), None);
}

#[test]
fn shrinking_removes_faults_and_submissions() {
    let b = base(Design::Stored);
    let space = Space::of(&b);
    let mut r = runner(1);
    let s = plan(&b, &space);
    let mut tree = s.new_tree(&mut r).unwrap();
    while tree.current().faults.is_empty() {
        tree = s.new_tree(&mut r).unwrap();
    }
    // Reject every simplification that empties the schedule or the workload: what is left
    // is one fault and one submission.
    let mut steps = 0;
    while steps < 10_000 {
        steps += 1;
        let p = tree.current();
        let ok = !p.faults.is_empty() && !p.workload.is_empty();
        if !(if ok {
            tree.simplify()
        } else {
            tree.complicate()
        }) {
            break;
        }
    }
    let p = tree.current();
    assert_eq!((p.faults.len(), p.workload.len(), p.raw.len()), (1, 1, 0));
    assert_eq!(p.check(), None);
}

/// How many plans each design draws: `ACP_CHAOS_STRATEGY_PLANS`, 40 unless set.
fn plans_per_design() -> usize {
    std::env::var("ACP_CHAOS_STRATEGY_PLANS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

/// Runs `p` and asserts no checker finds it invalid, naming the plan when one does.
fn assert_no_violation(design: Design, p: &acp_chaos::plan::Plan) {
    let h = acp_chaos::world::run(p);
    for v in acp_chaos::checkers::check_all(&h) {
        assert!(
            v.status != acp_chaos::checkers::Status::Invalid,
            "{design:?} seed {}: {} {}\n{}",
            p.seed,
            v.property,
            v.message,
            toml::to_string(p).unwrap()
        );
    }
}
