//! One run: build the turmoil world from a [`Plan`], drive `sim.step()` by hand so the nemesis
//! acts between steps, then heal and run the liveness phase until quiet or the bound.
//!
//! Hosts: `client` and `agent`, both `sim.host` (turmoil cannot crash a `sim.client`), so the
//! step loop decides when the run is over.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;
use turmoil::barriers::{Barrier, Reaction};

use crate::history::{History, OpType, FORMAT};
use crate::hosts::{self, Ctx, PointHit};
use crate::ledger::{Ledger, NemesisAction};
use crate::models::Point;
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
    b
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Timed {
    Restart(&'static str),
    Heal,
    Fire(usize),
}

/// Run one plan to its end and return the history.
pub fn run(plan: &Plan) -> History {
    let ledger = Rc::new(RefCell::new(Ledger::new(plan)));
    let mut sim = builder(plan).build();
    let ctx = Rc::new(Ctx {
        ledger: ledger.clone(),
        plan: plan.clone(),
    });
    let c = ctx.clone();
    sim.host("agent", move || hosts::agent(c.clone()));
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
    // Partitions cut the Client from its next hop.
    let hop = plan.client_target();

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
                    actions.push((
                        i,
                        NemesisAction::of(&plan.faults[i]).expect("point faults crash"),
                        true,
                    ));
                }
                // The suspended task dies with the crash below; the handle is dropped here.
            }
            !nths.is_empty()
        });
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
                Timed::Heal => {
                    sim.repair("client", hop);
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
            match a {
                NemesisAction::Crash {
                    host,
                    restart_after_ms,
                } if !down.contains(&host) && (host != "proxy" || plan.proxy) => {
                    sim.crash(host);
                    down.push(host);
                    if host == "agent" {
                        // A crashed Agent does no work; its restart recovers an idle model.
                        ledger.borrow_mut().agent_idle = true;
                    }
                    ledger.borrow_mut().record(
                        "nemesis",
                        OpType::Info,
                        "crash",
                        json!({"host": host}),
                    );
                    timed.push((now + restart_after_ms, Timed::Restart(host)));
                }
                NemesisAction::Partition { heal_after_ms } if !partitioned => {
                    sim.partition("client", hop);
                    partitioned = true;
                    ledger.borrow_mut().record(
                        "nemesis",
                        OpType::Info,
                        "partition",
                        json!({"between": ["client", hop]}),
                    );
                    timed.push((now + heal_after_ms, Timed::Heal));
                }
                _ => {}
            }
        }

        let quiet = {
            let l = ledger.borrow();
            down.is_empty()
                && l.delivered == l.workload.len()
                && l.client_pending.is_empty()
                && l.agent_idle
        };
        if !liveness {
            let nothing_left = timed.is_empty() && !partitioned && down.is_empty();
            if now >= plan.safety_ms || (quiet && nothing_left) {
                // Heal: stop the nemesis, repair the network, restart what is down.
                liveness = true;
                barriers.clear();
                ledger.borrow_mut().disarm();
                if partitioned {
                    sim.repair("client", hop);
                    partitioned = false;
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
                ledger
                    .borrow_mut()
                    .record("nemesis", OpType::Info, "heal", json!({}));
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
