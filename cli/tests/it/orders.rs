//! `explore --orders`: races of concurrent deliveries reversed, and what only a reversal shows.
//! Two races: two cluster nodes' store ops (a node's insert delayed by `stall-point`), which
//! catches a mutant no schedule of faults alone shows on the same trace; and two connections'
//! frames at one host (a frame delayed by `stall-frame`), whose reversal delivers them in the
//! other order. The counts are the same for any `--jobs` and for merged shards.

use acp_chaos::explore::exhaustive::{self, Exploration, Explored, Options};
use acp_chaos::explore::{certificate, orders};
use acp_chaos::models::Design;
use acp_chaos::nemesis::FaultKind;
use acp_chaos::plan::Plan;

use crate::common::scenario;

const RFD04: &str = "rfd-04-retry-while-held";

fn pool(jobs: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .unwrap()
}

fn plan(name: &str, design: Design, mutant: Option<&str>) -> Plan {
    Plan::derive(&scenario(name), 0, mutant, design)
}

fn with_orders(plan: &Plan) -> Options {
    Options {
        faults: 1,
        kinds: exhaustive::default_kinds(plan),
        shard: None,
        audit: 0,
        stop_at_first: false,
        target: None,
        budget: None,
        merge: Default::default(),
        orders: true,
    }
}

fn lines(e: &Explored) -> Vec<String> {
    e.plan
        .faults
        .iter()
        .map(acp_chaos::nemesis::fault_line)
        .collect()
}

/// The failing reversals by `delay` whose schedule without the delay (their parent, explored
/// at the same level) passed: what only the other order shows.
fn only_reversed(x: &Exploration, delay: FaultKind) -> Vec<Vec<String>> {
    let failed: Vec<Vec<String>> = x.violations.iter().map(lines).collect();
    x.violations
        .iter()
        .filter(|e| e.id.contains('o'))
        .filter(|e| e.plan.faults.last().map(|f| f.kind) == Some(delay))
        .map(lines)
        .filter(|l| !failed.contains(&l[..l.len() - 1].to_vec()))
        .collect()
}

#[test]
fn reversing_two_nodes_store_ops_shows_check_then_insert_and_certifies_the_correct_cluster() {
    let p = plan(RFD04, Design::Cluster, Some("cluster-check-then-insert"));
    let x = exhaustive::explore(&p, &with_orders(&p), &pool(2));
    let shown = only_reversed(&x, FaultKind::StallPoint);
    assert!(
        !shown.is_empty(),
        "no reversal of a node's insert caught the mutant where its schedule alone did not: {}",
        x.certificate()
    );
    // The correct cluster: the same schedules and reversals, none failing, and the line says
    // how many orders it covers.
    let p = plan(RFD04, Design::Cluster, None);
    let x = exhaustive::explore(&p, &with_orders(&p), &pool(2));
    assert!(x.violations.is_empty(), "{}", x.certificate());
    assert!(x.orders() > 0, "no race reversed: {}", x.certificate());
    // Most delays come out as the reversal they were placed for.
    assert!(x.orders_reversed() * 2 > x.orders(), "{}", x.certificate());
    assert!(
        x.certificate().contains(&format!(
            "<=1 faults and {} race reversals ({} came out reversed)",
            x.orders(),
            x.orders_reversed()
        )),
        "{}",
        x.certificate()
    );
}

/// Frames: a watcher and the Client each have a connection to the Agent from the start, so the
/// trace itself has races between their frames; reversing one (a `stall-frame` on the first)
/// delivers the second first, which the trace did not, and the correct model certifies every
/// reversal of every schedule of one fault.
#[test]
fn two_connections_frames_are_reversed_and_the_correct_model_certifies_them() {
    let p = plan("net-02-reorder-across-connections", Design::Stored, None);
    let trace = exhaustive::trace_plan(&p);
    let (h, t) = acp_chaos::world::Run::new(&trace).traced();
    let races = orders::races(&h, &t);
    let frames: Vec<&orders::Race> = races.iter().filter(|r| !r.store).collect();
    assert!(!frames.is_empty(), "no frame race in the trace");
    let mut reversed = 0;
    for r in &frames {
        assert_eq!(r.delay.kind, FaultKind::StallFrame);
        assert!(
            !r.reversed_in(&h, &t),
            "the trace already has the other order"
        );
        let mut q = trace.clone();
        q.faults.push(r.delay.clone());
        let (h2, t2) = acp_chaos::world::Run::new(&q).traced();
        reversed += usize::from(r.reversed_in(&h2, &t2));
    }
    assert!(
        reversed * 2 > frames.len(),
        "{reversed} of {}",
        frames.len()
    );
    let x = exhaustive::explore(&p, &with_orders(&p), &pool(2));
    assert!(x.violations.is_empty(), "{}", x.certificate());
    assert!(x.orders_reversed() > 0, "{}", x.certificate());
}

#[test]
fn a_run_on_one_connection_and_one_node_has_no_race() {
    let p = exhaustive::trace_plan(&plan(RFD04, Design::Stored, None));
    let (h, t) = acp_chaos::world::Run::new(&p).traced();
    assert_eq!(orders::races(&h, &t), Vec::new());
}

#[test]
fn orders_are_the_same_for_any_jobs_and_for_merged_shards() {
    let p = plan(RFD04, Design::Cluster, Some("cluster-check-then-insert"));
    let opts = with_orders(&p);
    let counts = |x: &Exploration| {
        (
            x.levels
                .iter()
                .map(|l| {
                    (
                        l.explored,
                        l.pruned,
                        (l.orders, l.orders_not_fired, l.orders_reversed),
                    )
                })
                .collect::<Vec<_>>(),
            x.order_hash.clone(),
            x.violations
                .iter()
                .map(|e| e.id.clone())
                .collect::<Vec<_>>(),
        )
    };
    let one = exhaustive::explore(&p, &opts, &pool(1));
    let two = exhaustive::explore(&p, &opts, &pool(2));
    assert_eq!(counts(&one), counts(&two));
    let tmp = std::env::temp_dir().join(format!("acp-chaos-orders-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let whole = certificate::write(&tmp.join("whole"), &one, None).unwrap();
    let mut dirs = Vec::new();
    for k in 1..=2u64 {
        let shard = Some((k, 2));
        let x = exhaustive::explore(
            &p,
            &Options {
                shard,
                ..opts.clone()
            },
            &pool(1),
        );
        let d = tmp.join(format!("shard{k}"));
        certificate::write(&d, &x, shard).unwrap();
        dirs.push(d);
    }
    let merged = certificate::merge(&dirs, &tmp.join("merged")).unwrap();
    assert_eq!(merged.levels, whole.levels);
    assert_eq!(merged.line, whole.line);
    let ids = |c: &certificate::Certificate| -> Vec<String> {
        c.violations.iter().map(|v| v.id.clone()).collect()
    };
    assert_eq!(ids(&merged), ids(&whole), "violations in another order");
    let _ = std::fs::remove_dir_all(&tmp);
}
