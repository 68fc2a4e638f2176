//! Determinism is tested, not assumed: the same seeds give the same history hashes, whatever the
//! number of worker threads, and a printed repro line replays the same run.

use crate::common;

use acp_chaos::models::Design;
use acp_chaos_cli::campaign::{self, CampaignSpec};
use acp_chaos_cli::commands;

fn spec(jobs: usize, out: &str) -> CampaignSpec {
    CampaignSpec {
        scenarios: vec![common::scenario("swarm-basic")],
        seed_start: 0,
        seeds: 50,
        jobs,
        mutant: None,
        out: std::env::temp_dir().join(out),
        keep_per_property: 1,
        agent: None,
        check_determinism: false,
        shrink: true,
        name: out.to_string(),
        shard: None,
        progress: false,
        stop: None,
        regressions: Vec::new(),
    }
}

/// A campaign shrinks the first failing seed of each (scenario@design, property) into its run
/// folder; the schedule replays to the same property, and the summary points at it.
#[test]
fn a_failing_campaign_shrinks_its_first_failing_seed() {
    let mut s = spec(2, "acp-chaos-det-shrink");
    s.scenarios = vec![common::scenario("rfd-02-retry-after-resume-new-connection")];
    s.seeds = 3;
    s.mutant = Some("no-dedup".into());
    s.agent = Some(Design::Stored);
    let _ = std::fs::remove_dir_all(&s.out);
    let sum = campaign::run(&s).unwrap();
    let f = sum
        .failures
        .iter()
        .find(|f| f["property"] == "P1")
        .expect("no-dedup fails P1");
    let path = f["shrunk"]["schedule"].as_str().expect("shrunk");
    let text = std::fs::read_to_string(path).unwrap();
    let plan: acp_chaos::plan::Plan = toml::from_str(&text).unwrap();
    assert!(plan.faults.len() + plan.workload.len() <= 3, "{text}");
    let target = acp_chaos::explore::shrink::Target::new(
        "P1",
        acp_chaos::checkers::Status::Invalid,
        Some(acp_chaos::models::Party::Agent),
    );
    assert!(acp_chaos::explore::shrink::failing(&plan, &target).is_some());
}

#[test]
fn fifty_swarm_seeds_twice_with_one_and_two_jobs_give_equal_hashes() {
    let a = campaign::run(&spec(1, "acp-chaos-det-a")).unwrap();
    let b = campaign::run(&spec(2, "acp-chaos-det-b")).unwrap();
    let designs = Design::ALL.len();
    assert_eq!(a.hashes.len(), 50 * designs, "50 seeds x every design");
    assert_eq!(a.hashes, b.hashes, "jobs=1 and jobs=2 differ");
    // Distinct seeds really are distinct runs (the hash is not a constant).
    let map = a.hashes.to_map().unwrap();
    let distinct: std::collections::BTreeSet<_> = map.values().collect();
    assert!(
        distinct.len() > 47 * designs,
        "only {} distinct histories",
        distinct.len()
    );
}

#[test]
fn a_seed_run_twice_in_one_thread_gives_the_same_history() {
    let s = common::scenario("swarm-basic");
    for seed in [3, 17, 99] {
        let (h1, _) = acp_chaos::run::run_one(&s, seed, None, Design::Adapter);
        let (h2, _) = acp_chaos::run::run_one(&s, seed, None, Design::Adapter);
        assert_eq!(h1.hash(), h2.hash(), "seed {seed}");
        assert_eq!(h1.ops, h2.ops, "seed {seed}");
    }
}

#[test]
fn printed_repro_line_replays_the_same_verdict_and_history() {
    let mut sp = spec(2, "acp-chaos-det-repro");
    sp.scenarios = vec![common::scenario("rfd-02-retry-after-resume-new-connection")];
    sp.seeds = 3;
    sp.mutant = Some("no-dedup".into());
    let summary = campaign::run(&sp).unwrap();
    assert_eq!(summary.exit_code, acp_chaos::exit::INVALID);
    let f = summary
        .failures
        .iter()
        .find(|f| f["property"] == "P1")
        .expect("a P1 failure");
    let line = f["repro"].as_str().unwrap();
    assert!(
        line.starts_with("acp-chaos replay rfd-02-retry-after-resume-new-connection --seed "),
        "{line}"
    );
    assert!(
        line.contains(" --agent ") && line.ends_with("--mutant no-dedup"),
        "{line}"
    );
    for _ in 0..2 {
        let (code, hash) = commands::replay_line(line, &common::scenarios_dir()).unwrap();
        assert_eq!(code, acp_chaos::exit::INVALID);
        assert_eq!(hash, f["hash"].as_str().unwrap());
    }
}

#[test]
fn check_determinism_runs_two_hundred_swarm_seeds_twice_with_equal_hashes() {
    let mut s = spec(2, "acp-chaos-det-twice");
    s.seeds = 200;
    s.agent = Some(Design::Stored);
    s.check_determinism = true;
    let summary = campaign::run(&s).unwrap();
    assert_eq!(summary.hashes.len(), 200);
    assert!(
        summary.nondeterministic.is_empty(),
        "{:?}",
        summary.nondeterministic
    );
}

/// The step loop skips the ticks where nothing can happen; stepping every tick is the
/// reference. Both give the same history, byte for byte, for every design, for scenarios with
/// every kind of fault (crashes at points, partitions one way and both, holds, stalls,
/// reorders, torn writes, a flipped bit, a pipe break, the cluster store cut, a watcher, a
/// proxy), and for a mutant; and the skipping really skips.
#[test]
fn skipping_idle_ticks_gives_the_histories_of_stepping_every_tick() {
    use acp_chaos::plan::Plan;
    use acp_chaos::world;
    let mut runs = 0;
    let jsonl = |h: &acp_chaos::history::History| {
        let mut v = Vec::new();
        h.write_jsonl(&mut v).unwrap();
        v
    };
    let _ = world::take_steps();
    let mut check = |name: &str, seeds: std::ops::Range<u64>, mutant: Option<&str>| {
        let s = common::scenario(name);
        for design in s.agent.designs.clone() {
            for seed in seeds.clone() {
                let plan = Plan::derive(&s, seed, mutant, design);
                let skipped = jsonl(&world::run(&plan));
                let every = jsonl(&world::Run::new(&plan).every_tick().history());
                if skipped != every {
                    let (a, b) = (
                        String::from_utf8_lossy(&skipped),
                        String::from_utf8_lossy(&every),
                    );
                    let at = a.lines().zip(b.lines()).position(|(x, y)| x != y);
                    let line =
                        |t: &str| at.and_then(|i| t.lines().nth(i)).unwrap_or("").to_string();
                    panic!(
                        "{name}@{}/{seed}: skipping idle ticks changed the history at line {at:?}:\n  skipping: {}\n  every tick: {}",
                        design.as_str(),
                        line(&a),
                        line(&b)
                    );
                }
                runs += 1;
            }
        }
    };
    check("swarm-basic", 0..12, None);
    check("swarm-basic", 0..4, Some("no-dedup"));
    for name in [
        "net-01-oneway-and-hold",
        "net-02-reorder-across-connections",
        "disk-01-torn-writes",
        "disk-02-flipped-bit",
        "disk-03-zeroed-sector",
        "disk-04-lost-synced-record",
        "stdio-01-pipe-break-ends-agent",
        "cluster-02-store-answer-lost",
        "multi-01-watcher-key-privacy",
        "proxy-01-retry-through-rewritten-ids",
        "retention-01-resend-after-window",
        "session-01-close-fork-list",
    ] {
        check(name, 0..2, None);
    }
    assert!(runs > 100, "{runs} runs compared");
    let steps = world::take_steps();
    assert_eq!(steps.runs, 2 * runs);
    assert!(steps.skips > 0, "no idle tick skipped: {steps:?}");
}
