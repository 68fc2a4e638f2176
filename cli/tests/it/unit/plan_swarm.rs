//! The unit tests of `sim/src/plan/swarm.rs`.

use acp_chaos::nemesis::FaultKind;
use acp_chaos::plan::Plan;
use acp_chaos::scenario::Scenario;
use acp_chaos_models::Design;

fn scenario(extra: &str) -> Scenario {
    let text = format!(
        "summary = \"t\"\n[workload]\nsubmissions = 4\n{extra}\n[swarm]\nfaults = [\"lose-frame\", \"crash-agent\", \"partition\"]\n"
    );
    Scenario::parse(std::path::Path::new("t.toml"), &text).expect("parses")
}

#[test]
fn swarm_draws_topology_and_features_per_seed_unless_the_file_pins_them() {
    let s = scenario("");
    let plans: Vec<Plan> = (0..64)
        .map(|seed| Plan::derive(&s, seed, None, Design::Stored))
        .collect();
    // Over 64 seeds each feature is on in some and off in others.
    assert!(plans.iter().any(|p| p.proxy) && plans.iter().any(|p| !p.proxy));
    assert!(plans.iter().any(|p| p.watcher) && plans.iter().any(|p| !p.watcher));
    assert!(plans.iter().any(|p| p.stdio) && plans.iter().any(|p| !p.stdio));
    assert!(plans.iter().all(|p| !(p.stdio && (p.proxy || p.watcher))));
    assert!(plans.iter().any(|p| p.latency_ms_max > 1));
    assert!(plans
        .iter()
        .all(|p| p.drawn.iter().any(|d| d.starts_with("proxy="))));
    // Pinned in the file: never drawn, whatever the seed.
    let pinned = scenario("[topology]\nproxy = true\n[timing]\nlatency_ms_max = 2\n");
    for seed in 0..64 {
        let p = Plan::derive(&pinned, seed, None, Design::Stored);
        assert!(p.proxy && p.latency_ms_max == 2, "seed {seed}");
        assert!(!p.drawn.iter().any(|d| d.starts_with("proxy=")));
    }
}

#[test]
fn pinning_one_setting_does_not_move_the_other_draws() {
    let free = scenario("");
    let pinned = scenario("[topology]\nwatcher = false\n");
    for seed in 0..32 {
        let a = Plan::derive(&free, seed, None, Design::Cluster);
        let b = Plan::derive(&pinned, seed, None, Design::Cluster);
        assert_eq!(a.proxy, b.proxy);
        assert_eq!(a.nodes, b.nodes);
        assert_eq!(a.client.stale_ms, b.client.stale_ms);
        assert_eq!(a.latency_ms_max, b.latency_ms_max);
        if a.watcher == b.watcher {
            assert_eq!(a.faults.len(), b.faults.len(), "seed {seed}");
        }
    }
}

#[test]
fn a_pinned_stdio_transport_or_a_proxy_mutant_never_meets_a_drawn_conflict() {
    let mut s = scenario("[agent]\ndesigns = [\"stored\"]\n[topology]\ntransport = \"stdio\"\n");
    for mix in [
        acp_chaos::scenario::Mix::Swarm,
        acp_chaos::scenario::Mix::Uniform,
    ] {
        s.swarm.as_mut().unwrap().mix = mix;
        for seed in 0..32 {
            let p = Plan::derive(&s, seed, None, Design::Stored);
            assert!(p.stdio && !p.proxy && !p.watcher, "{mix:?} seed {seed}");
        }
    }
    let free = scenario("");
    for seed in 0..32 {
        let p = Plan::derive(&free, seed, Some("proxy-drops-key"), Design::Stored);
        assert!(p.proxy && !p.stdio, "seed {seed}");
    }
}

#[test]
fn uniform_mix_turns_every_fault_kind_and_feature_on() {
    let mut s = scenario("");
    s.swarm.as_mut().unwrap().mix = acp_chaos::scenario::Mix::Uniform;
    for seed in 0..16 {
        let p = Plan::derive(&s, seed, None, Design::Stored);
        assert!(p.proxy && p.watcher && !p.stdio, "seed {seed}");
        for k in [
            FaultKind::LoseFrame,
            FaultKind::CrashAgent,
            FaultKind::Partition,
        ] {
            assert!(
                p.faults.iter().any(|f| f.kind == k),
                "seed {seed}: no {k:?}"
            );
        }
    }
}

/// The swarm's A15 probe (a `session/close` of a session that does not exist, or of slot 0's
/// once closed) comes only in seeds with raw probes, last among them, and names itself in the
/// drawn settings; the seeds without it draw no raw close at all, so their plans are those the
/// swarm drew before the probe existed.
#[test]
fn the_close_probe_comes_last_and_only_with_raw_probes() {
    let s = scenario("");
    let closes = |p: &Plan| {
        p.raw
            .iter()
            .filter(|r| r.line().contains("\"session/close\""))
            .count()
    };
    let mut with = 0;
    for seed in 0..200 {
        let p = Plan::derive(&s, seed, None, Design::Stored);
        let drawn = p.drawn.iter().find(|d| d.starts_with("close_probe="));
        match drawn {
            Some(d) => {
                with += 1;
                assert_eq!(closes(&p), 1, "seed {seed}");
                let last = p.raw.last().expect("the probe").line();
                assert!(last.contains("\"session/close\""), "seed {seed}: {last}");
                let named = if d == "close_probe=missing" {
                    "swarm-no-such-session"
                } else {
                    "$INACTIVE_SESSION"
                };
                assert!(last.contains(named), "seed {seed}: {d} {last}");
                assert!(p.raw.len() > 1, "seed {seed}: the other probes first");
            }
            None => assert_eq!(closes(&p), 0, "seed {seed}"),
        }
    }
    // In 1 of 2 of the seeds with raw probes (1 in 4): about 25 of 200.
    assert!((10..=45).contains(&with), "{with}");
}
