//! `acp-chaos explore`: exhaustive schedules with a certificate that is the same for any
//! `--jobs` and any sharding, pruning that an audit cannot fault, lineage's first cut in the
//! durable-write-to-ack window, the guided swarm, and what a trace lacks for a mutant to show.

use acp_chaos::checkers::Status;
use acp_chaos::explore::exhaustive::{self, Exploration, Options};
use acp_chaos::explore::shrink::Target;
use acp_chaos::explore::{certificate, guided, lineage, needs};
use acp_chaos::models::mutant::MUTANTS;
use acp_chaos::models::Design;
use acp_chaos::nemesis::{FaultKind, FaultSpec, Side, Trigger};
use acp_chaos::plan::Plan;

use crate::common::scenario;

const RFD02: &str = "rfd-02-retry-after-resume-new-connection";

fn pool(jobs: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .unwrap()
}

fn plan(name: &str, design: Design, mutant: Option<&str>) -> Plan {
    Plan::derive(&scenario(name), 0, mutant, design)
}

fn options(plan: &Plan, faults: usize) -> Options {
    Options {
        faults,
        kinds: exhaustive::default_kinds(plan),
        shard: None,
        audit: 0,
        stop_at_first: false,
        target: None,
        budget: None,
        merge: Default::default(),
        orders: false,
    }
}

/// The X4 verdict of one run of `plan`.
fn x4_of(plan: &Plan) -> acp_chaos::checkers::Verdict {
    acp_chaos::checkers::check_all(&acp_chaos::world::run(plan))
        .into_iter()
        .find(|v| v.property.starts_with("X4"))
        .expect("X4 judged")
}

/// Each fault of `p` as its schedule line (`lose-frame on ... (visible close) reroute`).
fn fault_lines(p: &Plan) -> Vec<String> {
    p.faults
        .iter()
        .map(acp_chaos::nemesis::fault_line)
        .collect()
}

fn target(mutant: &str) -> Target {
    Target::of_mutant(MUTANTS.iter().find(|m| m.name == mutant).unwrap())
}

fn counts(x: &Exploration) -> (usize, usize, String, Vec<String>) {
    (
        x.explored(),
        x.pruned(),
        x.order_hash.clone(),
        x.violations.iter().map(|e| e.id.clone()).collect(),
    )
}

#[test]
fn two_fault_certificate_is_the_same_for_any_jobs_and_for_merged_shards() {
    // A mutant, so the certificate has violations to keep in order.
    let p = plan(RFD02, Design::Stored, Some("record-unsynced"));
    let opts = options(&p, 2);
    let one = exhaustive::explore(&p, &opts, &pool(1));
    let two = exhaustive::explore(&p, &opts, &pool(2));
    assert_eq!(counts(&one), counts(&two), "jobs=1 and jobs=2 differ");
    assert!(one.pruned() > 0, "nothing pruned at two faults");
    assert!(!one.violations.is_empty(), "record-unsynced not caught");
    assert_eq!(
        exhaustive::explore(&p, &opts, &pool(2)).order_hash,
        one.order_hash
    );

    let tmp = std::env::temp_dir().join("acp-chaos-it-explore-shards");
    let _ = std::fs::remove_dir_all(&tmp);
    let whole = certificate::write(&tmp.join("whole"), &one, None).unwrap();
    let mut dirs = Vec::new();
    for k in 1..=3u64 {
        let shard = Some((k, 3));
        let x = exhaustive::explore(
            &p,
            &Options {
                shard,
                ..opts.clone()
            },
            &pool(1),
        );
        // A shard streams its slice a chunk at a time too (flat memory): the same slice.
        let streamed = exhaustive::explore_chunked(
            &p,
            &Options {
                shard,
                ..opts.clone()
            },
            &pool(1),
            &acp_chaos::world::Parties::default(),
            7,
        );
        assert_eq!(counts(&streamed), counts(&x), "shard {k} in chunks of 7");
        assert_eq!(streamed.levels, x.levels, "shard {k} in chunks of 7");
        let d = tmp.join(format!("shard{k}"));
        certificate::write(&d, &x, shard).unwrap();
        dirs.push(d);
    }
    let merged = certificate::merge(&dirs, &tmp.join("merged")).unwrap();
    assert_eq!(merged.explored, whole.explored);
    assert_eq!(merged.pruned, whole.pruned);
    assert_eq!(merged.order_hash, whole.order_hash);
    assert_eq!(merged.line, whole.line);
    assert_eq!(merged.exit_code, whole.exit_code);
    let ids = |c: &certificate::Certificate| -> Vec<String> {
        c.violations.iter().map(|v| v.id.clone()).collect()
    };
    assert_eq!(ids(&merged), ids(&whole), "violations in another order");
    // A shard given twice is refused.
    let twice = vec![dirs[0].clone(), dirs[0].clone(), dirs[1].clone()];
    assert!(certificate::merge(&twice, &tmp.join("bad")).is_err());
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn the_correct_model_certifies_rfd02_and_pruned_schedules_agree_with_their_representatives() {
    for design in [Design::Stored, Design::InMemory] {
        let p = plan(RFD02, design, None);
        let x = exhaustive::explore(
            &p,
            &Options {
                audit: 40,
                ..options(&p, 2)
            },
            &pool(2),
        );
        assert!(x.violations.is_empty(), "{design:?}: {}", x.certificate());
        assert_eq!(x.audited, 40, "{design:?}: audit sample not run");
        assert!(
            x.mismatches.is_empty(),
            "{design:?}: pruning merged schedules that differ: {:?}",
            x.mismatches
        );
        assert!(x.certificate().contains("0 violations"));
    }
}

/// A fault at a frame trigger: the `nth` `side` frame of `method` (the Client's).
fn at_frame(kind: FaultKind, side: Side, method: &str, nth: u32) -> FaultSpec {
    FaultSpec::new(kind, Trigger::at_frame(side, method, nth))
}

/// The first unsound merge: a stall that outlasts the Client's 140 ms prompt timeout
/// and one that does not, each followed by a partition at the same frame, were one class
/// (the abstract state counted stalls, not when each ends). Now the stall's end is part of
/// the world's snapshot, and the audit of every pruned schedule under the mutant that needs
/// the long stall finds no placement whose change differs from its representative's.
#[test]
fn a_stall_past_the_clients_timeout_is_never_merged_with_a_shorter_one() {
    let p = exhaustive::trace_plan(&plan(RFD02, Design::Stored, Some("keys-per-connection")));
    let stalled = |ms| {
        let mut q = p.clone();
        let mut f = at_frame(FaultKind::StallFrame, Side::Request, "session/prompt", 2);
        f.stall_ms = Some(ms);
        q.faults.push(f);
        q
    };
    let mut partition = at_frame(FaultKind::Partition, Side::Request, "session/prompt", 2);
    partition.heal_after_ms = Some(100);
    let long = exhaustive::class_of(&stalled(160), &partition).expect("a class");
    let short = exhaustive::class_of(&stalled(100), &partition).expect("a class");
    assert_ne!(long, short, "merged again");
    let x = exhaustive::explore(
        &p,
        &Options {
            audit: usize::MAX,
            ..options(&p, 2)
        },
        &pool(2),
    );
    assert_eq!(x.audited, x.pruned(), "every pruned schedule is run");
    assert!(x.mismatches.is_empty(), "{:?}", x.mismatches);
    // The pruning's mutant: merging by the protocol state alone, the same audit finds
    // placements whose change differs from their representative's (it can fail).
    let coarse = exhaustive::explore(
        &p,
        &Options {
            audit: usize::MAX,
            merge: exhaustive::Merge::ProtocolStateOnly,
            ..options(&p, 2)
        },
        &pool(2),
    );
    assert!(
        !coarse.mismatches.is_empty(),
        "the audit found nothing wrong with the unsound merge"
    );
    let faults = |e: &exhaustive::Explored| {
        e.plan
            .faults
            .iter()
            .map(acp_chaos::nemesis::fault_line)
            .collect::<Vec<_>>()
            .join("; ")
    };
    assert!(
        x.violations.iter().any(|e| faults(e)
            == "stall-frame on request of session/prompt #2 stall_ms=160; partition on request of session/prompt #2 heal_after_ms=100"),
        "the long stall's schedule is run and caught"
    );
}

/// The second: a store cut from a node after its write, then a lost prompt, was
/// merged with a stalled `session/list` (the abstract state held nothing of the store). The
/// cut and its heal are in the nemesis's part of the snapshot, the store's records in the
/// store's digest.
#[test]
fn a_store_cut_is_never_merged_with_a_stalled_list() {
    let p = exhaustive::trace_plan(&plan(
        "rfd-04-retry-while-held",
        Design::Cluster,
        Some("cluster-check-then-insert"),
    ));
    let lost = at_frame(FaultKind::LoseFrame, Side::Request, "session/prompt", 4);
    let mut cut = p.clone();
    cut.faults.push(FaultSpec {
        heal_after_ms: Some(100),
        ..FaultSpec::new(
            FaultKind::PartitionStore,
            Trigger::at_point(acp_chaos::models::Point::AfterStoreWrite, 2),
        )
    });
    let after_cut = exhaustive::class_of(&cut, &lost).expect("a class");
    for side in [Side::Request, Side::Response] {
        let mut stall = p.clone();
        let mut f = at_frame(FaultKind::StallFrame, side, "session/list", 1);
        f.stall_ms = Some(100);
        stall.faults.push(f);
        assert_ne!(exhaustive::class_of(&stall, &lost), Some(after_cut.clone()));
    }
}

/// Found by `--audit-pruning all` under `error-after-insert`: a crash where the Agent passes
/// a point, after a prompt it will answer with an error, was merged with the same crash after
/// a prompt it will answer normally (its memory agreed; the answers it had decided and not
/// sent yet were in no snapshot). What a host holds while it awaits in the middle of an
/// input (its party's actions not run yet, the request or frame it holds) is now part of it.
#[test]
fn decided_actions_not_yet_run_keep_two_placements_apart() {
    let p = exhaustive::trace_plan(&plan(
        "rfd-06-same-key-other-session",
        Design::InMemory,
        Some("error-after-insert"),
    ));
    let crash = FaultSpec {
        restart_after_ms: Some(50),
        ..FaultSpec::new(
            FaultKind::CrashAgent,
            Trigger::at_point(acp_chaos::models::Point::AfterReceive, 3),
        )
    };
    let mut erred = p.clone();
    erred.faults.push(at_frame(
        FaultKind::TransientError,
        Side::Request,
        "session/prompt",
        3,
    ));
    let mut stalled = p.clone();
    let mut f = at_frame(FaultKind::StallFrame, Side::Response, "session/list", 1);
    f.stall_ms = Some(100);
    stalled.faults.push(f);
    let a = exhaustive::class_of(&erred, &crash).expect("a class");
    let b = exhaustive::class_of(&stalled, &crash).expect("a class");
    assert_ne!(a, b, "merged again");
}

/// Found by `--audit-pruning all` on the correct models (rfd-01, in-memory): a resume whose
/// connection a silent lost update broke is never answered, and X4 called it unknown. The
/// connection broke there (P7 reads it the same way): X4 does not judge it.
#[test]
fn a_resume_on_a_connection_a_lost_frame_broke_is_not_judged() {
    let mut p = exhaustive::trace_plan(&plan(
        "rfd-01-retry-same-connection",
        Design::InMemory,
        None,
    ));
    for (nth, silent) in [(1, false), (2, true)] {
        let mut f = at_frame(FaultKind::LoseFrame, Side::Request, "session/update", nth);
        if let acp_chaos::nemesis::Trigger::Frame(t) = &mut f.on {
            t.by = Some(acp_chaos::nemesis::Sender::Agent);
        }
        f.silent = silent;
        p.faults.push(f);
    }
    let x4 = x4_of(&p);
    assert_eq!(x4.status, Status::Valid, "{}", x4.message);
}

/// Every pruned schedule of a cluster certificate, under the mutant whose window needs two
/// nodes deciding at once, changes its parent's verdicts as its representative changes its
/// own (the delta, not the whole-run verdicts: a violation the parent already had is not
/// the placement's).
#[test]
fn every_pruned_cluster_schedule_changes_what_its_representative_changes() {
    let p = plan(
        "rfd-01-retry-same-connection",
        Design::Cluster,
        Some("cluster-check-then-insert"),
    );
    let x = exhaustive::explore(
        &p,
        &Options {
            audit: usize::MAX,
            ..options(&p, 2)
        },
        &pool(2),
    );
    assert!(x.pruned() > 0, "{}", x.certificate());
    assert_eq!(x.audited, x.pruned());
    assert!(x.mismatches.is_empty(), "{:?}", x.mismatches);
}

#[test]
fn one_fault_is_enough_for_the_design_mutants_on_their_trace() {
    for (design, mutant) in [
        (Design::Stored, "record-unsynced"),
        (Design::Stored, "no-dedup"),
        (Design::Stored, "two-step-write"),
    ] {
        let p = plan(RFD02, design, Some(mutant));
        let x = exhaustive::explore(
            &p,
            &Options {
                stop_at_first: true,
                target: Some(target(mutant)),
                ..options(&p, 1)
            },
            &pool(2),
        );
        let at = x
            .first_catch
            .unwrap_or_else(|| panic!("{mutant} not caught"));
        let e = x.violations.last().unwrap();
        assert!(e.catches(Some(&target(mutant))), "{mutant}: {:?}", e.id);
        assert!(e.plan.faults.len() <= 1 && at <= x.runs, "{mutant}");
    }
}

#[test]
fn the_adapter_without_history_fill_survives_every_single_fault_but_not_two() {
    let m = "adapter-no-history-fill";
    let p = plan(RFD02, Design::Adapter, Some(m));
    let run = |faults| {
        exhaustive::explore(
            &p,
            &Options {
                stop_at_first: true,
                target: Some(target(m)),
                ..options(&p, faults)
            },
            &pool(2),
        )
    };
    let one = run(1);
    assert_eq!(one.first_catch, None, "{}", one.certificate());
    let two = run(2);
    let e = two.violations.last().expect("caught with two faults");
    assert_eq!(e.plan.faults.len(), 2);
    assert!(e.catches(Some(&target(m))));
}

#[test]
fn lineage_cuts_the_durable_write_to_ack_window_first() {
    // The correct stored Agent's rfd-02 trace: the first cut crashes it between its sync and
    // its answer, the window where a retry meets a recorded key.
    let cut = lineage::first_cut(&plan(RFD02, Design::Stored, None)).expect("a cut");
    assert!(cut.contains("crash-agent"), "{cut}");
    assert!(cut.contains("after-sync-before-response"), "{cut}");
    // With record-unsynced, lineage catches it within a few runs, sooner than every
    // schedule in order does.
    let p = plan(RFD02, Design::Stored, Some("record-unsynced"));
    let x = lineage::lineage(
        &p,
        &lineage::Options {
            faults: 2,
            budget: 50,
            stop_at_first: true,
            target: Some(target("record-unsynced")),
        },
    );
    let in_order = exhaustive::explore(
        &p,
        &Options {
            stop_at_first: true,
            target: Some(target("record-unsynced")),
            ..options(&p, 2)
        },
        &pool(2),
    );
    let (l, e) = (
        x.first_catch.expect("lineage catches it"),
        in_order.first_catch.unwrap(),
    );
    assert!(l <= 12 && l < e, "lineage at run {l}, in order at run {e}");
    // The correct model: the same budget, no violation.
    let ok = lineage::lineage(
        &plan(RFD02, Design::Stored, None),
        &lineage::Options {
            faults: 2,
            budget: 50,
            stop_at_first: false,
            target: None,
        },
    );
    assert!(ok.violations.is_empty(), "{}", ok.certificate());
}

#[test]
fn lineage_breaks_the_connection_of_a_held_prompt_first() {
    // rfd-04 on the cluster: a prompt is held on the node serving the Client. Its answer
    // depends on that connection staying up while it is held, and a break there makes the
    // Client resend through another node while the first attempt lives on: the window where
    // `cluster-check-then-insert` inserts twice. Lineage tries it before the rest; in order,
    // the first catch comes far later.
    let m = "cluster-check-then-insert";
    let p = plan("rfd-04-retry-while-held", Design::Cluster, Some(m));
    let lineage_options = |target: Option<Target>, budget| lineage::Options {
        faults: 2,
        budget,
        stop_at_first: target.is_some(),
        target,
    };
    let x = lineage::lineage(&p, &lineage_options(Some(target(m)), 60));
    let in_order = exhaustive::explore(
        &p,
        &Options {
            stop_at_first: true,
            target: Some(target(m)),
            ..options(&p, 2)
        },
        &pool(2),
    );
    let (l, e) = (
        x.first_catch.expect("lineage catches it"),
        in_order.first_catch.expect("in order catches it"),
    );
    assert!(l <= 8 && l < e, "lineage at run {l}, in order at run {e}");
    // The correct cluster on the same budget: the breaks it tries first are answered from
    // the store's key record, no violation.
    let ok = lineage::lineage(
        &plan("rfd-04-retry-while-held", Design::Cluster, None),
        &lineage_options(None, 60),
    );
    assert!(ok.violations.is_empty(), "{}", ok.certificate());
    // One node serialises the session's inserts itself: the need says so, and no single
    // fault shows it there (two did on three nodes, above).
    let mut one = p.clone();
    one.nodes = 1;
    let h = acp_chaos::world::run(&exhaustive::trace_plan(&one));
    assert_eq!(needs::missing(m, &one, &h), vec![needs::Need::TwoNodes]);
    let x = exhaustive::explore(
        &one,
        &Options {
            stop_at_first: true,
            target: Some(target(m)),
            ..options(&one, 1)
        },
        &pool(2),
    );
    assert_eq!(x.first_catch, None);
}

#[test]
fn lineage_cuts_the_store_between_a_nodes_check_and_its_write() {
    // swarm-basic's cluster draws at seeds 0, 4 and 5 (3, 2 and 4 nodes; seed 4 behind a
    // proxy): a node decided to insert and its write is cut from the store; the Client's
    // connection breaks and the load balancer moves it (`reroute`), so the resend reaches
    // another node, which decides again. `cluster-check-then-insert` inserts twice; the
    // correct cluster (one insert-if-absent at the store) answers the second from the
    // first's key record.
    let s = scenario("swarm-basic");
    let m = "cluster-check-then-insert";
    for seed in [0, 4, 5] {
        let opts = |target: Option<Target>| lineage::Options {
            faults: 2,
            budget: 20,
            stop_at_first: target.is_some(),
            target,
        };
        let bad = Plan::derive(&s, seed, Some(m), Design::Cluster);
        assert!(bad.nodes >= 2, "seed {seed} draws {} nodes", bad.nodes);
        let x = lineage::lineage(&bad, &opts(Some(target(m))));
        let caught = x
            .violations
            .first()
            .expect("lineage catches it within 20 runs");
        let lines = fault_lines(&caught.plan);
        assert!(
            lines.iter().any(|l| l.ends_with(" reroute")),
            "seed {seed}: {lines:?}"
        );
        let ok = lineage::lineage(&Plan::derive(&s, seed, None, Design::Cluster), &opts(None));
        assert!(
            ok.violations.is_empty(),
            "seed {seed}: {}",
            ok.certificate()
        );
    }
}

#[test]
fn lineage_times_a_client_restart_to_the_users_next_stop() {
    // cluster-06: P2 is held on the node serving the Client (28 ms) and the user stops the
    // session at 50 ms. `cluster-stop-node-local` inserts the held prompt after the stop only
    // when the Client restarted, came back on the other node and resumed there before the
    // stop: a restart of 50 ms ends after it (lineage tried every schedule of <= 2 faults,
    // 2,101, without a catch). The restart timed to the stop (back halfway to it, rerouted)
    // splits the stop from the held prompt, two supports cut at once, so it ranks first with
    // the store cuts: caught at run 12 (36 when it ranked with the 50 ms restart it refines,
    // after every lost answer and stall; the scoreboard's witness column counts the same
    // runs). The correct cluster stays valid on a longer budget.
    let m = "cluster-stop-node-local";
    let opts = |target: Option<Target>, budget| lineage::Options {
        faults: 2,
        budget,
        stop_at_first: target.is_some(),
        target,
    };
    let x = lineage::lineage(
        &plan(
            "cluster-06-stop-reaches-every-node",
            Design::Cluster,
            Some(m),
        ),
        &opts(Some(target(m)), 20),
    );
    let caught = x
        .caught
        .as_ref()
        .expect("lineage catches it within 20 runs");
    assert!(
        x.first_catch.is_some_and(|n| n <= 20),
        "{:?}",
        x.first_catch
    );
    let lines = fault_lines(&caught.plan);
    assert!(
        lines.iter().any(|l| l.starts_with("restart-client")
            && l.contains("reroute")
            && !l.ends_with("restart_after_ms=50")),
        "{lines:?}"
    );
    let ok = lineage::lineage(
        &plan("cluster-06-stop-reaches-every-node", Design::Cluster, None),
        &opts(None, 60),
    );
    assert!(ok.violations.is_empty(), "{}", ok.certificate());
}

#[test]
fn an_answer_the_network_lost_is_not_blamed_on_the_agent() {
    // Lineage breaks connections at the Agent's answers: a -32800 or a -32700 the Agent wrote
    // and the break swallowed, or a probe sent on a connection already broken silently, is
    // not the Agent's fault (P6 and P5 counted them as missing answers before).
    for (name, design) in [
        ("cancel-01-withdraw-every-attempt", Design::Stored),
        ("field-f19-key-validation", Design::InMemory),
    ] {
        let x = lineage::lineage(
            &plan(name, design, None),
            &lineage::Options {
                faults: 2,
                budget: 200,
                stop_at_first: false,
                target: None,
            },
        );
        assert!(x.violations.is_empty(), "{name}: {}", x.certificate());
        assert!(x.runs >= 100, "{name}: only {} runs", x.runs);
    }
}

#[test]
fn a_cancel_on_one_node_never_withdraws_a_key_another_node_inserted() {
    // cancel-01 on the cluster: the original attempt is held on one node, its retry on
    // another; the user cancels the retry after the first node inserted the key. The store
    // decides the withdrawal in one step, so the retry gets the messageId (P3 flagged the
    // -32800 it got before, on the correct model).
    let x = lineage::lineage(
        &plan("cancel-01-withdraw-every-attempt", Design::Cluster, None),
        &lineage::Options {
            faults: 2,
            budget: 300,
            stop_at_first: false,
            target: None,
        },
    );
    assert!(x.violations.is_empty(), "{}", x.certificate());
}

#[test]
fn guided_swarm_catches_no_dedup_and_is_deterministic_across_jobs() {
    let s = scenario("swarm-basic");
    let opts = guided::Options {
        runs: 120,
        seed_start: 0,
        stop_at_first: true,
        target: Some(target("no-dedup")),
        stop_at_full_coverage: false,
    };
    let a = guided::guided(&s, Design::Stored, Some("no-dedup"), &opts, &pool(1));
    let b = guided::guided(&s, Design::Stored, Some("no-dedup"), &opts, &pool(2));
    assert!(a.first_catch.is_some(), "no-dedup not caught in 120 runs");
    assert_eq!(a.first_catch, b.first_catch);
    assert_eq!(a.cells, b.cells, "coverage differs across jobs");
    // The correct model on the same runs: cells covered, nothing invalid.
    let ok = guided::guided(
        &s,
        Design::Stored,
        None,
        &guided::Options {
            runs: 64,
            stop_at_first: false,
            target: None,
            ..opts
        },
        &pool(2),
    );
    assert!(
        ok.violations.is_empty(),
        "correct model failed under guided"
    );
    let allowed = guided::allowed_cells(&s, &[Design::Stored]);
    let hit = allowed.iter().filter(|c| ok.cells.contains_key(*c)).count();
    assert!(hit * 2 > allowed.len(), "{hit} of {} cells", allowed.len());
}

#[test]
fn a_trace_without_a_cancel_says_so_for_cancel_mutants() {
    let p = exhaustive::trace_plan(&plan(RFD02, Design::Stored, None));
    let h = acp_chaos::world::run(&p);
    let lacks = needs::missing("cancel-answers-one", &p, &h);
    assert!(lacks.contains(&needs::Need::CancelRequest), "{lacks:?}");
    assert!(needs::missing("no-dedup", &p, &h).is_empty());
    // And exploring cancel-answers-one there finds nothing, as the need says.
    let m = plan(RFD02, Design::Stored, Some("cancel-answers-one"));
    let x = exhaustive::explore(
        &m,
        &Options {
            stop_at_first: true,
            target: Some(target("cancel-answers-one")),
            ..options(&m, 1)
        },
        &pool(2),
    );
    assert_eq!(x.first_catch, None);
    assert!(x
        .violations
        .iter()
        .all(|e| e.verdicts.iter().all(|v| v.status != Status::Invalid)));
}

/// The matrix: every pruned schedule of the k=2 certificates of the seven RFD traces
/// under the four designs, with the correct models and under the mutants that need a
/// placement, changes its parent as its representative changes its own. About 1,500 CPU
/// seconds in a release build (`scripts/audit-pruning.sh` runs the same with ten mutants and
/// prints the table of docs/explore.md), so it is not in the default run:
/// `cargo test --release -p acp-chaos-cli --test it -- --ignored every_pruned_schedule_of_the_rfd`.
#[test]
#[ignore = "about 1,500 CPU seconds in release: run with --ignored"]
fn every_pruned_schedule_of_the_rfd_certificates_changes_what_its_representative_changes() {
    const TRACES: [&str; 7] = [
        "rfd-01-retry-same-connection",
        RFD02,
        "rfd-03-retry-after-agent-restart",
        "rfd-04-retry-while-held",
        "rfd-05-retry-after-error",
        "rfd-06-same-key-other-session",
        "rfd-07-retry-inserted-during-active-work",
    ];
    let mutants = [
        None,
        Some("keys-per-connection"),
        Some("held-retry-errors"),
        Some("cluster-check-then-insert"),
    ];
    let pool = pool(2);
    for trace in TRACES {
        for design in [
            Design::InMemory,
            Design::Stored,
            Design::Adapter,
            Design::Cluster,
        ] {
            for mutant in mutants {
                if let Some(m) = mutant.and_then(|n| MUTANTS.iter().find(|m| m.name == n)) {
                    if !(m.designs.is_empty() || m.designs.contains(&design)) {
                        continue;
                    }
                }
                let p = exhaustive::trace_plan(&plan(trace, design, mutant));
                let x = exhaustive::explore(
                    &p,
                    &Options {
                        audit: usize::MAX,
                        ..options(&p, 2)
                    },
                    &pool,
                );
                assert_eq!(x.audited, x.pruned(), "{trace} {design:?} {mutant:?}");
                assert!(
                    x.mismatches.is_empty(),
                    "{trace} {design:?} {mutant:?}: {:?}",
                    x.mismatches
                );
            }
        }
    }
}

/// X4 judges the order frames were written in: a stall on the resume's response delays it,
/// it does not lose it, so `resume-answers-first` is still caught (X4 took any nemesis op
/// naming the frame for a loss and stopped judging the resume).
#[test]
fn a_stalled_resume_answer_is_still_judged() {
    let mut p = exhaustive::trace_plan(&plan(RFD02, Design::Stored, Some("resume-answers-first")));
    p.faults.push(at_frame(
        FaultKind::LoseFrame,
        Side::Request,
        "session/list",
        1,
    ));
    let mut stall = at_frame(FaultKind::StallFrame, Side::Response, "session/resume", 1);
    stall.stall_ms = Some(100);
    p.faults.push(stall);
    let x4 = x4_of(&p);
    assert_eq!(x4.status, Status::Invalid, "{}", x4.message);
}

/// A level is placed and run a chunk of candidates at a time (flat memory, issue 41): the
/// exploration is the same for any chunk. Under `no-dedup` with the protocol-state key, so the
/// audit has mismatches whose representatives must be the same schedules; and stopped at the
/// first catch, whose run number must not count a chunk twice.
#[test]
fn an_exploration_is_the_same_for_any_chunk_of_a_level() {
    let p = plan(RFD02, Design::Stored, Some("no-dedup"));
    let full = Options {
        audit: 400,
        merge: exhaustive::Merge::ProtocolStateOnly,
        ..options(&p, 2)
    };
    let first = Options {
        stop_at_first: true,
        target: Some(target("no-dedup")),
        // Past the first catch of a level placed whole: its run number is what chunks change.
        kinds: vec![FaultKind::StallFrame, FaultKind::LoseFrame],
        ..options(&p, 2)
    };
    let parties = acp_chaos::world::Parties::default();
    for opts in [full, first] {
        let run = |chunk| exhaustive::explore_chunked(&p, &opts, &pool(2), &parties, chunk);
        let whole = run(usize::MAX);
        let audit = |x: &Exploration| -> Vec<(Vec<String>, Vec<String>)> {
            x.mismatches
                .iter()
                .map(|m| (m.pruned.clone(), m.representative.clone()))
                .collect()
        };
        for chunk in [1, 7, 4096] {
            let x = run(chunk);
            assert_eq!(counts(&x), counts(&whole), "chunk {chunk}");
            assert_eq!(x.levels, whole.levels, "chunk {chunk}");
            assert_eq!(x.first_catch, whole.first_catch, "chunk {chunk}");
            let id = |x: &Exploration| x.caught.as_ref().map(|e| e.id.clone());
            assert_eq!(id(&x), id(&whole), "chunk {chunk}");
            assert_eq!((x.audited, audit(&x)), (whole.audited, audit(&whole)));
        }
        if opts.audit > 0 {
            assert!(
                !whole.mismatches.is_empty(),
                "the audit found nothing to compare"
            );
        } else {
            assert!(
                whole.first_catch.is_some_and(|n| n > 8),
                "{:?}",
                whole.first_catch
            );
        }
    }
}

#[test]
fn lineage_breaks_a_held_prompts_connection_half_open() {
    // held-01 under O1 `drop`: P2 is held behind P1's long turn on the first connection, and
    // no frame crosses that connection while it is held. `drop-held-drops-retries` shows only
    // when the Agent sees that connection end after the Client's retry began to wait for the
    // held original: a `half-open` break at `while-held` (the Client's end closes, the
    // Agent's ends by heartbeat). Lineage tries it in the first round of cuts (the held
    // prompt's derivation is a kind of its own). The correct models stay valid on the same
    // budget.
    let m = "drop-held-drops-retries";
    let opts = |target: Option<Target>| lineage::Options {
        faults: 2,
        budget: 20,
        stop_at_first: target.is_some(),
        target,
    };
    let name = "held-01-retry-becomes-submission";
    let x = lineage::lineage(&plan(name, Design::Stored, Some(m)), &opts(Some(target(m))));
    let caught = x
        .caught
        .as_ref()
        .expect("lineage catches it within 20 runs");
    let lines = fault_lines(&caught.plan);
    assert!(
        lines.iter().any(|l| l.starts_with("half-open")),
        "{lines:?}"
    );
    for d in [Design::InMemory, Design::Stored, Design::Adapter] {
        let ok = lineage::lineage(&plan(name, d, None), &opts(None));
        assert!(ok.violations.is_empty(), "{d:?}: {}", ok.certificate());
    }
}
