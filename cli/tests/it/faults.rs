//! Every fault kind fires in a shipped scenario that uses it, and has its effect on the wire or
//! the disk: the history shows both the nemesis applying it and what it did (a frame that never
//! arrived, a stall that ended later, a process that booted again, a torn tail cut, a damaged
//! store refused, ...).

use crate::common;

use acp_chaos::history::{History, Op};
use acp_chaos::models::Design;
use acp_chaos::nemesis::FaultKind;
use serde_json::Value;

/// Frames sent on a connection after op `after` that never arrived there (by `from`).
fn lost_after(h: &History, after: usize, from: &dyn Fn(&str) -> bool) -> usize {
    let sends = h.ops.iter().filter(|o| {
        o.index > after
            && o.process == "net"
            && o.f == "send"
            && from(o.value["from"].as_str().unwrap_or(""))
    });
    sends
        .filter(|s| arrival(h, s.index, &s.value["conn"], &s.value["frame"]).is_none())
        .count()
}

/// The first read of `frame` on connection `conn` after op `after`.
fn arrival<'a>(h: &'a History, after: usize, conn: &Value, frame: &Value) -> Option<&'a Op> {
    h.ops.iter().find(|r| {
        r.index > after
            && r.process == "net"
            && r.f == "recv"
            && r.value["conn"] == *conn
            && r.value["frame"] == *frame
    })
}

/// The first op after `after` matching `process` and `f`.
fn next<'a>(h: &'a History, after: usize, process: &str, f: &str) -> Option<&'a Op> {
    h.ops
        .iter()
        .find(|o| o.index > after && o.process == process && o.f == f)
}

fn booted_again(h: &History, after: usize, host: &str) -> bool {
    h.ops.iter().any(|o| {
        o.index > after
            && o.process == host
            && matches!(o.f.as_str(), "boot" | "recover")
            && o.value["boot"].as_u64() >= Some(1)
    })
}

fn is_agent(p: &str) -> bool {
    p == "agent" || p.starts_with("node")
}

type Effect = fn(&History, &Op) -> Result<(), String>;

/// (fault kind, scenario, design, seed, effect the history must show after the fault fired).
const CASES: &[(&str, &str, Design, u64, Effect)] = &[
    (
        "lose-frame",
        "rfd-02-retry-after-resume-new-connection",
        Design::Stored,
        0,
        |h, f| {
            // The lost frame never arrives and its connection ends.
            let d = &f.value["detail"];
            let arrived = arrival(h, f.index, &d["conn"], &d["frame"]).is_some();
            let ended = h
                .ops
                .iter()
                .any(|o| o.index > f.index && o.f == "conn-end" && o.value["conn"] == d["conn"]);
            (!arrived && ended)
                .then_some(())
                .ok_or(format!("arrived={arrived} ended={ended}"))
        },
    ),
    (
        "stall-frame",
        "rfd-01-retry-same-connection",
        Design::Stored,
        0,
        |h, f| {
            let d = &f.value["detail"];
            let end = next(h, f.index, "net", "stall-end").ok_or("no stall-end")?;
            match arrival(h, f.index, &d["conn"], &d["frame"]) {
                Some(r) if r.index > end.index && end.time_ms > f.time_ms => Ok(()),
                Some(_) => Err("the stalled frame arrived before the stall ended".into()),
                None => Err("the stalled frame never arrived".into()),
            }
        },
    ),
    (
        "stall-point",
        "cluster-07-insert-race",
        Design::Cluster,
        0,
        |h, f| {
            // The node that passed the point inserts only once its stall is over.
            let i = f.value["fault"].as_u64().ok_or("no fault index")? as usize;
            let ms = h.header["plan"]["faults"][i]["stall_ms"]
                .as_u64()
                .ok_or("no stall_ms")?;
            let insert = next(h, f.index, "store", "insert").ok_or("no insert after it")?;
            (insert.time_ms > f.time_ms + ms)
                .then_some(())
                .ok_or(format!(
                    "stalled {ms} ms at {} but inserted at {}",
                    f.time_ms, insert.time_ms
                ))
        },
    ),
    (
        "half-open",
        "held-02-half-open-retry-becomes-submission",
        Design::Stored,
        0,
        |h, f| {
            // The Client's end closes at once; the Agent's end of the same connection only by
            // its heartbeat, after it read a frame on the Client's next connection.
            let client = next(h, f.index, "client", "conn-end").ok_or("no Client conn-end")?;
            let conn = &client.value["conn"];
            let agent = h
                .ops
                .iter()
                .find(|o| {
                    o.index > f.index
                        && is_agent(&o.process)
                        && o.f == "conn-end"
                        && &o.value["conn"] == conn
                })
                .ok_or("the Agent never ended the connection")?;
            let retry_read = h.ops.iter().any(|o| {
                o.index > client.index
                    && o.index < agent.index
                    && o.f == "recv"
                    && o.value["from"] == "client"
                    && &o.value["conn"] != conn
            });
            (client.value["reason"] == "half-open"
                && client.time_ms == f.time_ms
                && agent.value["reason"] == "heartbeat timeout"
                && retry_read)
                .then_some(())
                .ok_or(format!(
                    "client {} agent {} read between: {retry_read}",
                    client.value, agent.value
                ))
        },
    ),
    (
        "reorder-frame",
        "net-02-reorder-across-connections",
        Design::Stored,
        0,
        |h, f| {
            let end = next(h, f.index, "net", "reorder-end").ok_or("no reorder-end")?;
            let by = &end.value["overtaken_by"];
            let op = by["op"].as_u64().ok_or("not overtaken")? as usize;
            (by["conn"] != f.value["detail"]["conn"] && op > f.index)
                .then_some(())
                .ok_or(format!("overtaken_by {by}"))
        },
    ),
    (
        "partition",
        "client-01-stale-pending",
        Design::Stored,
        0,
        |h, f| {
            // Neither end hears the other: the connection dies by heartbeat on both ends.
            let hb = h
                .ops
                .iter()
                .filter(|o| {
                    o.index > f.index
                        && o.f == "conn-end"
                        && o.value["reason"] == "heartbeat timeout"
                })
                .count();
            (hb >= 2)
                .then_some(())
                .ok_or(format!("{hb} heartbeat timeouts"))
        },
    ),
    (
        "partition-oneway",
        "net-01-oneway-and-hold",
        Design::Stored,
        0,
        |h, f| {
            // agent-to-client: the Agent's frames are lost, and the Client gives up by heartbeat
            // while the Agent, still hearing it, sees the close.
            let lost = lost_after(h, f.index, &is_agent);
            let client_hb = h.ops.iter().any(|o| {
                o.index > f.index
                    && o.process == "client"
                    && o.f == "conn-end"
                    && o.value["reason"] == "heartbeat timeout"
            });
            (lost > 0 && client_hb)
                .then_some(())
                .ok_or(format!("lost={lost} client heartbeat end={client_hb}"))
        },
    ),
    (
        "hold",
        "net-01-oneway-and-hold",
        Design::Stored,
        0,
        |h, f| {
            // The held prompt arrives, late: only after the release.
            let release = next(h, f.index, "nemesis", "release").ok_or("no release")?;
            let prompt_recv = h
                .ops
                .iter()
                .find(|o| {
                    o.index > f.index
                        && o.f == "recv"
                        && o.value["frame"]["method"] == "session/prompt"
                })
                .ok_or("held prompt never arrived")?;
            (prompt_recv.index > release.index && release.time_ms >= f.time_ms + 100)
                .then_some(())
                .ok_or(format!(
                    "prompt read at op {}, release at op {} ({} ms after the hold)",
                    prompt_recv.index,
                    release.index,
                    release.time_ms - f.time_ms
                ))
        },
    ),
    (
        "crash-agent",
        "rfd-03-retry-after-agent-restart",
        Design::Stored,
        0,
        |h, f| {
            let ended = h
                .ops
                .iter()
                .any(|o| o.index > f.index && o.process == "client" && o.f == "conn-end");
            (booted_again(h, f.index, "agent") && ended)
                .then_some(())
                .ok_or(
                    "the Agent did not boot again, or the Client never saw its connection end"
                        .into(),
                )
        },
    ),
    (
        "restart-client",
        "rfd-06-same-key-other-session",
        Design::Stored,
        0,
        |h, f| {
            // The Client boots again with its pending inputs from its own disk.
            let boot = h
                .ops
                .iter()
                .find(|o| {
                    o.index > f.index
                        && o.process == "client"
                        && o.f == "boot"
                        && o.value["boot"] == 1
                })
                .ok_or("no second Client boot")?;
            boot.value["pending"]
                .as_array()
                .map(|p| !p.is_empty())
                .unwrap_or(false)
                .then_some(())
                .ok_or(format!("booted with {}", boot.value))
        },
    ),
    (
        "transient-error",
        "rfd-05-retry-after-error",
        Design::Stored,
        0,
        |h, f| {
            let d = &f.value["detail"];
            let err = h.ops.iter().any(|o| {
                o.index > f.index
                    && o.f == "recv"
                    && o.value["conn"] == d["conn"]
                    && o.value["frame"]["id"] == d["frame"]["id"]
                    && o.value["frame"]["error"]["code"] == -32603
            });
            err.then_some(())
                .ok_or("the Client never read the -32603".into())
        },
    ),
    (
        "crash-proxy",
        "proxy-01-retry-through-rewritten-ids",
        Design::Stored,
        0,
        |h, f| {
            let ended = h
                .ops
                .iter()
                .any(|o| o.index > f.index && o.process == "client" && o.f == "conn-end");
            (booted_again(h, f.index, "proxy") && ended)
                .then_some(())
                .ok_or("the proxy did not boot again, or the Client never saw its leg close".into())
        },
    ),
    (
        "crash-store",
        "cluster-02-store-answer-lost",
        Design::Cluster,
        0,
        |h, f| {
            booted_again(h, f.index, "store")
                .then_some(())
                .ok_or("the store did not recover".into())
        },
    ),
    (
        "partition-store",
        "cluster-02-store-answer-lost",
        Design::Cluster,
        0,
        |h, f| {
            // A node's store op got no answer in time and was sent again.
            next(h, f.index, "node1", "store-retry")
                .or_else(|| {
                    h.ops
                        .iter()
                        .find(|o| o.index > f.index && o.f == "store-retry")
                })
                .map(|_| ())
                .ok_or("no store-retry".into())
        },
    ),
    (
        "lose-exchange",
        "cluster-03-remote-exchange-lost",
        Design::Cluster,
        0,
        |h, f| {
            // A request not accepted: the Client learns so and resends on the same connection.
            let d = &f.value["detail"];
            let resend = next(h, f.index, "client", "resend-not-accepted").ok_or("no resend")?;
            (resend.value["conn"] == d["conn"])
                .then_some(())
                .ok_or(format!("resent on {}", resend.value))
        },
    ),
    (
        "drop-updates",
        "cluster-05-update-stream-dies",
        Design::Cluster,
        0,
        |h, f| {
            // Updates written on the dead stream are dropped; responses still flow on it.
            let d = &f.value["detail"];
            let dropped = h
                .ops
                .iter()
                .filter(|o| o.index > f.index && o.f == "dropped" && o.value["conn"] == d["conn"])
                .count();
            let answered = h.ops.iter().any(|o| {
                o.index > f.index
                    && o.f == "recv"
                    && o.value["conn"] == d["conn"]
                    && o.value["frame"].get("result").is_some()
            });
            (dropped > 0 && answered)
                .then_some(())
                .ok_or(format!("dropped={dropped} answered={answered}"))
        },
    ),
    (
        "flip-bit",
        "disk-02-flipped-bit",
        Design::Stored,
        0,
        |h, f| {
            // A bit flipped in a middle record while the Agent was down; it refused to start.
            let flipped = next(h, f.index, "agent", "flipped").ok_or("no flipped op")?;
            let refused = next(h, flipped.index, "agent", "store-corrupt").ok_or(format!(
                "flipped {} but the Agent did not refuse",
                flipped.value
            ))?;
            (flipped.value["record"].as_u64() < flipped.value["of"].as_u64().map(|n| n - 1)
                && refused.value["at"].as_u64() < refused.value["synced"].as_u64()
                && !booted_again(h, refused.index, "agent"))
            .then_some(())
            .ok_or(format!(
                "flipped {} refused {}",
                flipped.value, refused.value
            ))
        },
    ),
    (
        "zero-sector",
        "disk-03-zeroed-sector",
        Design::Stored,
        0,
        |h, f| {
            // A sector zeroed inside the synced part while the Agent was down; it refused.
            let zeroed = next(h, f.index, "agent", "zeroed-sector").ok_or("no zeroed op")?;
            let refused = next(h, zeroed.index, "agent", "store-corrupt").ok_or(format!(
                "zeroed {} but the Agent did not refuse",
                zeroed.value
            ))?;
            let v = &zeroed.value;
            (v["from"].as_u64() < v["synced"].as_u64()
                && v["to"].as_u64() > v["from"].as_u64()
                && refused.value["at"].as_u64() <= v["from"].as_u64()
                && !booted_again(h, refused.index, "agent"))
            .then_some(())
            .ok_or(format!("zeroed {v} refused {}", refused.value))
        },
    ),
    (
        "lose-synced-record",
        "disk-04-lost-synced-record",
        Design::Stored,
        0,
        |h, f| {
            // The log cut before its last synced record; it reads whole, and the Agent refused.
            let cut = next(h, f.index, "agent", "lost-synced-record").ok_or("no cut op")?;
            let refused = next(h, cut.index, "agent", "store-corrupt")
                .ok_or(format!("cut {} but the Agent did not refuse", cut.value))?;
            let r = &refused.value;
            (cut.value["to"].as_u64() < cut.value["from"].as_u64()
                && r["at"] == cut.value["to"]
                && r["len"] == cut.value["to"]
                && r["synced"].as_u64() > r["len"].as_u64()
                && !booted_again(h, refused.index, "agent"))
            .then_some(())
            .ok_or(format!("cut {} refused {r}", cut.value))
        },
    ),
];

fn fired<'a>(h: &'a History, kind: &str) -> Option<&'a Op> {
    h.ops
        .iter()
        .find(|o| o.process == "nemesis" && o.f == kind && o.value.get("fault").is_some())
}

#[test]
fn every_fault_kind_fires_in_its_scenario_and_has_its_effect() {
    for &(kind, scen, design, seed, effect) in CASES {
        let s = common::scenario(scen);
        assert!(
            s.faults.iter().any(|f| f.kind.as_str() == kind),
            "{scen} does not use {kind}"
        );
        let (h, _) = acp_chaos::run::run_one(&s, seed, None, design);
        let f = fired(&h, kind).unwrap_or_else(|| panic!("{kind} never fired in {scen}"));
        if let Err(e) = effect(&h, f) {
            panic!(
                "{kind} in {scen} seed {seed}: fired at op {} without its effect: {e}",
                f.index
            );
        }
    }
}

#[test]
fn torn_writes_leave_a_torn_tail_that_recovery_cuts() {
    let s = common::scenario("disk-01-torn-writes");
    assert!(s.disk.block_size.is_some());
    let (h, r) = acp_chaos::run::run_one(&s, 0, None, Design::Adapter);
    let cut = h
        .ops
        .iter()
        .find(|o| o.f == "truncate-torn-tail")
        .expect("a torn tail was cut");
    let (from, to) = (cut.value["from"].as_u64(), cut.value["to"].as_u64());
    assert!(from > to, "cut {:?}", cut.value);
    // And the correct design survives it.
    assert!(r
        .verdicts
        .iter()
        .all(|v| v.status != acp_chaos::checkers::Status::Invalid));
}

#[test]
fn a_flipped_bit_is_refused_not_cut_and_judged_valid() {
    let s = common::scenario("disk-02-flipped-bit");
    for seed in 0..3 {
        let (h, r) = acp_chaos::run::run_one(&s, seed, None, Design::Stored);
        assert!(
            h.ops.iter().any(|o| o.f == "store-corrupt"),
            "seed {seed}: no refusal"
        );
        // The records after the damage were not cut: no torn tail, no restart that lost them.
        assert!(!h.ops.iter().any(|o| o.f == "truncate-torn-tail"));
        let bad: Vec<_> = r
            .verdicts
            .iter()
            .filter(|v| v.status != acp_chaos::checkers::Status::Valid)
            .map(|v| format!("{} {:?}: {}", v.property, v.status, v.message))
            .collect();
        assert!(bad.is_empty(), "seed {seed}: {bad:?}");
    }
}

/// The disk faults that damage the synced part of the log are refused, never served around,
/// and judged valid on the correct design.
#[test]
fn a_zeroed_sector_or_a_lost_synced_record_is_refused_and_judged_valid() {
    for name in ["disk-03-zeroed-sector", "disk-04-lost-synced-record"] {
        let s = common::scenario(name);
        for seed in 0..3 {
            let (h, r) = acp_chaos::run::run_one(&s, seed, None, Design::Stored);
            assert!(
                h.ops.iter().any(|o| o.f == "store-corrupt"),
                "{name} seed {seed}: no refusal"
            );
            assert!(!h.ops.iter().any(|o| o.f == "truncate-torn-tail"), "{name}");
            let bad: Vec<_> = r
                .verdicts
                .iter()
                .filter(|v| v.status != acp_chaos::checkers::Status::Valid)
                .map(|v| format!("{} {:?}: {}", v.property, v.status, v.message))
                .collect();
            assert!(bad.is_empty(), "{name} seed {seed}: {bad:?}");
        }
    }
}

#[test]
fn every_fault_kind_has_a_case_and_the_nemesis_counts_what_it_applied() {
    for k in FaultKind::ALL {
        assert!(
            CASES.iter().any(|c| c.0 == k.as_str()),
            "{} has no fault test",
            k.as_str()
        );
    }
    // The heal op counts each fault applied and names those whose trigger never came.
    let s = common::scenario("net-01-oneway-and-hold");
    let (h, _) = acp_chaos::run::run_one(&s, 0, None, Design::Stored);
    let heal = h
        .ops
        .iter()
        .find(|o| o.process == "nemesis" && o.f == "heal")
        .expect("heal");
    let applied: u64 = heal.value["applied"]
        .as_object()
        .expect("applied")
        .values()
        .filter_map(Value::as_u64)
        .sum();
    let fired = h
        .ops
        .iter()
        .filter(|o| o.process == "nemesis" && o.value.get("fault").is_some())
        .count() as u64;
    assert_eq!(applied, fired);
    assert_eq!(heal.value["planned"].as_u64(), Some(s.faults.len() as u64));
    assert_eq!(
        applied
            + heal.value["not_applied"]
                .as_array()
                .map_or(0, |a| a.len() as u64),
        s.faults.len() as u64
    );
}

/// The node each `route` op of the Client (or its proxy) sent a connection to, with its index.
fn routes(h: &History) -> Vec<(usize, String)> {
    h.ops
        .iter()
        .filter(|o| o.f == "route" && o.value["from"] != "watcher")
        .map(|o| (o.index, o.value["to"].as_str().unwrap_or("").to_string()))
        .collect()
}

#[test]
fn reroute_moves_the_client_to_another_node_and_only_then() {
    use acp_chaos::nemesis::{FaultSpec, Side, Trigger};
    use acp_chaos::plan::Plan;
    let s = common::scenario("swarm-basic");
    let (mut moved, mut same_without) = (0, 0);
    for seed in 0..12 {
        let base = Plan::derive(&s, seed, None, Design::Cluster);
        if base.nodes < 2 {
            continue;
        }
        let run = |reroute: bool| {
            let mut p = acp_chaos::explore::exhaustive::trace_plan(&base);
            p.faults = vec![FaultSpec {
                reroute,
                ..FaultSpec::new(
                    FaultKind::LoseFrame,
                    Trigger::at_frame(Side::Request, "session/prompt", 2),
                )
            }];
            let h = acp_chaos::world::run(&p);
            let f = fired(&h, "lose-frame").expect("the break fires").index;
            let r = routes(&h);
            let before = r
                .iter()
                .rev()
                .find(|(i, _)| *i < f)
                .expect("a route before")
                .1
                .clone();
            let after = r
                .iter()
                .find(|(i, _)| *i > f)
                .expect("a reconnect")
                .1
                .clone();
            (before, after)
        };
        let (b, a) = run(true);
        assert_ne!(b, a, "seed {seed}: reroute sent the Client back to {b}");
        moved += 1;
        let (b, a) = run(false);
        same_without += usize::from(b == a);
    }
    assert!(moved >= 4, "only {moved} seeds drew two nodes or more");
    // Without the flag the routing stream alone decides, and sometimes picks the same node:
    // the flag is what moves the Client.
    assert!(
        same_without > 0,
        "no seed routed back to the same node without reroute"
    );
    // It is a lose-frame or restart-client setting only.
    let mut stall = FaultSpec::new(
        FaultKind::StallFrame,
        Trigger::at_frame(Side::Request, "session/prompt", 1),
    );
    stall.stall_ms = Some(50);
    assert_eq!(stall.check(), None);
    stall.reroute = true;
    assert_eq!(
        stall.check().as_deref(),
        Some("reroute`: only for lose-frame, restart-client")
    );
}

#[test]
fn partition_store_at_a_nodes_point_cuts_that_node_from_the_store() {
    use acp_chaos::models::Point;
    use acp_chaos::nemesis::{FaultSpec, Trigger};
    use acp_chaos::plan::Plan;
    let s = common::scenario("swarm-basic");
    let base = Plan::derive(&s, 0, None, Design::Cluster);
    let mut p = acp_chaos::explore::exhaustive::trace_plan(&base);
    let fault = FaultSpec {
        heal_after_ms: Some(100),
        ..FaultSpec::new(
            FaultKind::PartitionStore,
            Trigger::at_point(Point::AfterInsertBeforeSync, 1),
        )
    };
    assert_eq!(fault.check(), None);
    p.faults = vec![fault];
    let h = acp_chaos::world::run(&p);
    let f = fired(&h, "partition-store").expect("fires").index;
    let cut = next(&h, f, "nemesis", "partition").expect("a partition");
    // The node whose write waited: its first insert lands at the store after the heal.
    let insert = h
        .ops
        .iter()
        .find(|o| o.index > f && o.process == "store" && o.f == "insert")
        .expect("the write lands after the heal");
    let heal = next(&h, f, "nemesis", "heal-partition").expect("heals");
    assert_eq!(cut.value["between"][1], insert.value["node"]);
    assert!(
        heal.index < insert.index,
        "the write landed before the heal"
    );
    // crash-store stays at the store's own point.
    let mut crash = FaultSpec::new(
        FaultKind::CrashStore,
        Trigger::at_point(Point::AfterInsertBeforeSync, 1),
    );
    crash.restart_after_ms = Some(50);
    assert_eq!(
        crash.check().as_deref(),
        Some("on.point`: crash-store fires only at `after-store-write`")
    );
}
