//! The step loop: build the turmoil world from a [`Plan`], drive `sim.step()` by hand so the
//! nemesis acts between steps (crashes at protocol points through barriers, timed faults,
//! restarts, heals), then heal and run the liveness phase until quiet or the bound.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;
use turmoil::barriers::{Barrier, Reaction};

use super::boot::AgentFactory;
use super::hosts;
use super::io::{Ctx, PointHit};
use super::ledger::Ledger;
use crate::history::{History, OpType, FORMAT};
use crate::models::Point;
use crate::nemesis::NemesisAction;
use crate::plan::Plan;

/// Simulated tick.
pub const TICK_MS: u64 = 1;

/// A fixed epoch: the simulated wall clock never depends on the machine.
pub fn epoch() -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_790_000_000)
}

/// A turmoil builder with the plan's seed, tick, latency and fs settings.
pub fn builder(plan: &Plan) -> turmoil::Builder {
    let mut b = turmoil::Builder::new();
    b.rng_seed(plan.seed)
        .epoch(epoch())
        .tick_duration(Duration::from_millis(TICK_MS))
        .simulation_duration(Duration::from_millis(
            plan.safety_ms + plan.liveness_ms + 10_000,
        ))
        .min_message_latency(Duration::from_millis(plan.latency_ms_min))
        .max_message_latency(Duration::from_millis(plan.latency_ms_max));
    // Only fsync makes writes durable.
    b.fs().sync_probability(0.0);
    if let Some(bytes) = plan.block_size {
        b.fs().block_size(bytes);
    }
    b
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Timed {
    Restart(&'static str),
    Heal,
    HealOneway,
    Release,
    HealStore(&'static str),
    Fire(usize),
}

pub(super) fn run_plan(plan: &Plan, agent: Option<AgentFactory>) -> History {
    let ledger = Rc::new(RefCell::new(Ledger::new(plan)));
    let mut sim = builder(plan).build();
    let ctx = Rc::new(Ctx {
        ledger: ledger.clone(),
        plan: plan.clone(),
        agent,
    });
    if plan.cluster() {
        for &name in plan.agent_hosts() {
            let c = ctx.clone();
            sim.host(name, move || hosts::node(c.clone(), name));
        }
        let c = ctx.clone();
        sim.host("store", move || hosts::store(c.clone()));
    } else {
        let c = ctx.clone();
        sim.host("agent", move || hosts::agent(c.clone()));
    }
    let c = ctx.clone();
    sim.host("client", move || hosts::client(c.clone()));
    if plan.proxy {
        let c = ctx.clone();
        sim.host("proxy", move || hosts::proxy(c.clone()));
    }
    if plan.watcher {
        let c = ctx.clone();
        sim.host("watcher", move || hosts::watcher(c.clone()));
    }
    // Partitions cut the Client from its next hop (every node of a cluster).
    let hops: &[&str] = if plan.proxy {
        &["proxy"]
    } else {
        plan.agent_hosts()
    };
    let cut = |sim: &mut turmoil::Sim, on: bool| {
        for h in hops {
            if on {
                sim.partition("client", *h);
            } else {
                sim.repair("client", *h);
            }
        }
    };

    // Crashes at protocol points: one suspend-barrier per point, counting every time the
    // Agent passes it (a trigger wakes at most one barrier, so one counter per point); the
    // step loop polls them and crashes the Agent for the fault whose `nth` came up.
    type PointBarrier = (Rc<Cell<u32>>, BTreeMap<u32, usize>, Barrier<PointHit>);
    let mut barriers: Vec<PointBarrier> = Vec::new();
    let mut timed: Vec<(u64, Timed)> = Vec::new();
    let mut by_point: BTreeMap<&'static str, (Point, BTreeMap<u32, usize>)> = BTreeMap::new();
    for (i, f) in plan.faults.iter().enumerate() {
        if let Some(p) = f.on.point {
            by_point
                .entry(p.as_str())
                .or_insert((p, BTreeMap::new()))
                .1
                .entry(f.on.nth)
                .or_insert(i);
        } else if let Some(at) = f.on.at_ms {
            timed.push((at, Timed::Fire(i)));
        }
    }
    for (_, (p, nths)) in by_point {
        let seen = Rc::new(Cell::new(0u32));
        let (c, wanted) = (seen.clone(), nths.keys().copied().collect::<Vec<_>>());
        let b = Barrier::build(Reaction::Suspend, move |h: &PointHit| {
            if h.0 != p {
                return false;
            }
            c.set(c.get() + 1);
            wanted.contains(&c.get())
        });
        barriers.push((seen, nths, b));
    }

    let mut down: Vec<&'static str> = Vec::new();
    let mut partitioned = false;
    let mut store_cut: Option<&'static str> = None;
    // One-way cut in force (true: frames from the Client are lost), and held links.
    let mut oneway: Option<bool> = None;
    let mut held = false;
    let cut_oneway = |sim: &mut turmoil::Sim, from_client: bool, on: bool| {
        for h in hops {
            let (a, b) = if from_client {
                ("client", *h)
            } else {
                (*h, "client")
            };
            if on {
                sim.partition_oneway(a, b);
            } else {
                sim.repair_oneway(a, b);
            }
        }
    };
    let hold = |sim: &mut turmoil::Sim, on: bool| {
        for h in hops {
            if on {
                sim.hold("client", *h);
            } else {
                sim.release("client", *h);
            }
        }
    };
    let mut liveness = false;
    let mut end_ms = plan.safety_ms + plan.liveness_ms;
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    let mut outcome = "bound";
    loop {
        let now = sim.elapsed().as_millis() as u64;
        ledger.borrow_mut().now_ms = now;
        if let Err(e) = sim.step() {
            ledger.borrow_mut().record(
                "world",
                OpType::Info,
                "error",
                json!({"error": e.to_string()}),
            );
            outcome = "error";
            break;
        }
        let now = sim.elapsed().as_millis() as u64;
        ledger.borrow_mut().now_ms = now;

        // (fault index, action, already logged as fired)
        let mut actions: Vec<(usize, NemesisAction, bool)> = Vec::new();
        barriers.retain_mut(|(seen, nths, b)| {
            let mut fut = std::pin::pin!(b.wait());
            if let Poll::Ready(Some(hit)) = fut.as_mut().poll(&mut cx) {
                if let Some(i) = nths.remove(&seen.get()) {
                    ledger
                        .borrow_mut()
                        .fire(i, json!({"point": hit.0.as_str(), "nth": seen.get()}));
                    // crash-agent: the host that passed the point crashes (a cluster node, or
                    // the agent). crash-proxy: the proxy crashes while the Agent is at the
                    // point; the Agent goes on when the barrier's handle is dropped below.
                    let a = match NemesisAction::of(&plan.faults[i]).expect("point faults crash") {
                        NemesisAction::Crash {
                            restart_after_ms, ..
                        } if plan.faults[i].kind == crate::nemesis::FaultKind::CrashAgent => {
                            NemesisAction::Crash {
                                host: hit.1,
                                restart_after_ms,
                            }
                        }
                        other => other,
                    };
                    actions.push((i, a, true));
                }
                // The suspended task dies with the crash below; the handle is dropped here.
            }
            !nths.is_empty()
        });
        if std::mem::take(&mut ledger.borrow_mut().stdio_exit) && !down.contains(&"agent") {
            // Stdio: the Agent process exited with its pipe; the Client starts a new one (a
            // transport fact, not a fault: also after heal).
            sim.crash("agent");
            ledger.borrow_mut().on_crash("agent");
            if let Some(i) = ledger.borrow_mut().idle.get_mut("agent") {
                *i = true;
            }
            ledger.borrow_mut().record(
                "client",
                OpType::Info,
                "respawn-agent",
                json!({"after_ms": 5}),
            );
            down.push("agent");
            timed.push((now + 5, Timed::Restart("agent")));
        }
        let queued: Vec<_> = ledger.borrow_mut().queue.drain(..).collect();
        actions.extend(queued.into_iter().map(|(i, a)| (i, a, false)));
        timed.sort_by_key(|t| t.0);
        while timed.first().is_some_and(|t| t.0 <= now) {
            let (_, t) = timed.remove(0);
            match t {
                Timed::Restart(h) => {
                    sim.bounce(h);
                    down.retain(|d| *d != h);
                    ledger.borrow_mut().record(
                        "nemesis",
                        OpType::Info,
                        "restart",
                        json!({"host": h}),
                    );
                }
                Timed::HealOneway => {
                    if let Some(from_client) = oneway.take() {
                        cut_oneway(&mut sim, from_client, false);
                    }
                    ledger.borrow_mut().record(
                        "nemesis",
                        OpType::Info,
                        "heal-partition",
                        json!({"oneway": true}),
                    );
                }
                Timed::Release => {
                    hold(&mut sim, false);
                    held = false;
                    ledger
                        .borrow_mut()
                        .record("nemesis", OpType::Info, "release", json!({}));
                }
                Timed::HealStore(node) => {
                    sim.repair("store", node);
                    store_cut = None;
                    ledger.borrow_mut().record(
                        "nemesis",
                        OpType::Info,
                        "heal-partition",
                        json!({"between": ["store", node]}),
                    );
                }
                Timed::Heal => {
                    cut(&mut sim, false);
                    partitioned = false;
                    ledger.borrow_mut().record(
                        "nemesis",
                        OpType::Info,
                        "heal-partition",
                        json!({}),
                    );
                }
                Timed::Fire(i) => {
                    if let Some(a) = NemesisAction::of(&plan.faults[i]) {
                        actions.push((i, a, false));
                    }
                }
            }
        }
        for (i, a, logged) in actions {
            if liveness {
                continue;
            }
            if !logged {
                if !ledger.borrow().may_fire(i) {
                    continue;
                }
                ledger.borrow_mut().fire(i, json!({}));
            }
            // "The Agent" of a cluster is the node serving the Client.
            let a = match a {
                NemesisAction::Crash {
                    host: "agent",
                    restart_after_ms,
                } if plan.cluster() => NemesisAction::Crash {
                    host: ledger.borrow().serving,
                    restart_after_ms,
                },
                other => other,
            };
            match a {
                NemesisAction::Crash {
                    host,
                    restart_after_ms,
                } if !down.contains(&host)
                    && (host != "proxy" || plan.proxy)
                    && (host != "store" || plan.cluster()) =>
                {
                    sim.crash(host);
                    down.push(host);
                    ledger.borrow_mut().on_crash(host);
                    if let Some(i) = ledger.borrow_mut().idle.get_mut(host) {
                        // A crashed Agent does no work; its restart recovers an idle model.
                        *i = true;
                    }
                    ledger.borrow_mut().record(
                        "nemesis",
                        OpType::Info,
                        "crash",
                        json!({"host": host}),
                    );
                    timed.push((now + restart_after_ms, Timed::Restart(host)));
                }
                NemesisAction::Partition { heal_after_ms }
                    if !partitioned && oneway.is_none() && !held =>
                {
                    cut(&mut sim, true);
                    partitioned = true;
                    ledger.borrow_mut().record(
                        "nemesis",
                        OpType::Info,
                        "partition",
                        json!({"between": ["client", hops]}),
                    );
                    timed.push((now + heal_after_ms, Timed::Heal));
                }
                // turmoil 0.7.2 cannot hold a link that is cut one way, nor the reverse.
                NemesisAction::PartitionOneway {
                    from_client,
                    heal_after_ms,
                } if oneway.is_none() && !held && !partitioned => {
                    cut_oneway(&mut sim, from_client, true);
                    oneway = Some(from_client);
                    ledger.borrow_mut().record(
                        "nemesis",
                        OpType::Info,
                        "partition",
                        json!({"oneway": if from_client { "client-to-agent" } else { "agent-to-client" }, "hops": hops}),
                    );
                    timed.push((now + heal_after_ms, Timed::HealOneway));
                }
                NemesisAction::Hold { release_after_ms }
                    if oneway.is_none() && !held && !partitioned =>
                {
                    hold(&mut sim, true);
                    held = true;
                    ledger.borrow_mut().record(
                        "nemesis",
                        OpType::Info,
                        "hold",
                        json!({"between": ["client", hops]}),
                    );
                    timed.push((now + release_after_ms, Timed::Release));
                }
                NemesisAction::PartitionStore { heal_after_ms }
                    if plan.cluster() && store_cut.is_none() =>
                {
                    let node = ledger.borrow().serving;
                    sim.partition("store", node);
                    store_cut = Some(node);
                    ledger.borrow_mut().record(
                        "nemesis",
                        OpType::Info,
                        "partition",
                        json!({"between": ["store", node]}),
                    );
                    timed.push((now + heal_after_ms, Timed::HealStore(node)));
                }
                _ => {}
            }
        }

        let quiet = {
            let l = ledger.borrow();
            down.is_empty()
                && l.delivered == l.workload.len()
                && l.client_pending.is_empty()
                && l.agents_idle()
                && l.outstanding.is_empty()
                && l.queued.is_empty()
        };
        if !liveness {
            let nothing_left = timed.is_empty()
                && !partitioned
                && store_cut.is_none()
                && oneway.is_none()
                && !held
                && down.is_empty();
            if now >= plan.safety_ms || (quiet && nothing_left) {
                // Heal: stop the nemesis, repair the network, restart what is down.
                liveness = true;
                barriers.clear();
                ledger.borrow_mut().disarm();
                if partitioned {
                    cut(&mut sim, false);
                    partitioned = false;
                }
                if let Some(node) = store_cut.take() {
                    sim.repair("store", node);
                }
                if let Some(from_client) = oneway.take() {
                    cut_oneway(&mut sim, from_client, false);
                }
                if std::mem::take(&mut held) {
                    hold(&mut sim, false);
                }
                for h in std::mem::take(&mut down) {
                    sim.bounce(h);
                    ledger.borrow_mut().record(
                        "nemesis",
                        OpType::Info,
                        "restart",
                        json!({"host": h}),
                    );
                }
                timed.clear();
                let applied = ledger.borrow().applied();
                ledger
                    .borrow_mut()
                    .record("nemesis", OpType::Info, "heal", applied);
                ledger.borrow_mut().record(
                    "world",
                    OpType::Info,
                    "phase",
                    json!({"phase": "liveness"}),
                );
                end_ms = now + plan.liveness_ms;
            }
        } else if quiet {
            outcome = "quiescent";
            break;
        } else if now >= end_ms {
            break;
        }
    }
    let mut l = ledger.borrow_mut();
    let pending = l.client_pending.clone();
    l.record(
        "client",
        OpType::Info,
        "pending-at-end",
        json!({"submissions": pending}),
    );
    let undelivered = l.workload.len() - l.delivered;
    l.record(
        "world",
        OpType::Info,
        "end",
        json!({"outcome": outcome, "undelivered": undelivered}),
    );
    let header = json!({
        "format": FORMAT,
        "scenario": plan.scenario,
        "seed": plan.seed,
        "mutant": plan.mutant,
        "plan": plan,
    });
    History {
        header,
        ops: std::mem::take(&mut l.ops),
    }
}
