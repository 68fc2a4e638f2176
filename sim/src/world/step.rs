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

use super::hosts;
use super::io::{Ctx, PointHit};
use super::ledger::Ledger;
use super::parties::Parties;
use super::snapshot::{of_debug, Snapshots};
use super::trace::Trace;
use super::wakes::Wakes;
use crate::history::{op, process, History, OpType, FORMAT};
use crate::nemesis::in_force::{Ended, InForce, Start};
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

/// A suspend-barrier for one protocol point: how many times the Agent passed it, the faults
/// waiting for an `nth` pass (nth → fault index), and the barrier itself.
type PointBarrier = (Rc<Cell<u32>>, BTreeMap<u32, usize>, Barrier<PointHit>);

/// A process-level fault due now: (fault index, action, already logged as fired).
type Due = (usize, NemesisAction, bool);

/// turmoil's calls for skipping idle ticks, as the patched turmoil of this workspace has them
/// (`Sim::step_by`, `Sim::step_by_with`, `Sim::has_pending_work`, `Sim::next_delivery`:
/// vendor/turmoil/NOTE.md). Rust prefers a type's own
/// methods to a trait's, so this trait is used only when the crate is built against turmoil as
/// published (`cargo publish` drops `[patch]`): then nothing is ever known to be idle, every
/// tick is stepped, and the histories are the same, only slower.
#[allow(dead_code)] // used only against turmoil as published
trait SkipIdle {
    /// Whether a host has work at the next step: unknown, so yes.
    fn has_pending_work(&self) -> bool {
        true
    }
    /// How long until the network next delivers a message: unknown, so at once.
    fn next_delivery(&self) -> Option<Duration> {
        Some(Duration::ZERO)
    }
    /// Step `d`, one tick at a time.
    fn step_by(&mut self, d: Duration) -> turmoil::Result<bool>;
    /// Step `d` ticking only the hosts with work: unknown, so every host.
    fn step_by_with(
        &mut self,
        d: Duration,
        _timer_due: &mut dyn FnMut(&str) -> bool,
    ) -> turmoil::Result<bool> {
        self.step_by(d)
    }
}

impl SkipIdle for turmoil::Sim<'_> {
    fn step_by(&mut self, d: Duration) -> turmoil::Result<bool> {
        let end = self.elapsed() + d;
        loop {
            let done = self.step()?;
            if done || self.elapsed() >= end {
                return Ok(done);
            }
        }
    }
}

/// How a run advanced its simulated clock: the ticks it stepped one by one and the steps that
/// skipped idle ticks. Summed per thread over the runs since the last [`take_steps`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Steps {
    /// Runs.
    pub runs: u64,
    /// Simulated time, ms.
    pub sim_ms: u64,
    /// Steps of one tick.
    pub ticks: u64,
    /// Steps that covered more than one tick (no host could act before their end).
    pub skips: u64,
    /// Simulated time those steps covered, ms.
    pub skipped_ms: u64,
}

impl Steps {
    /// turmoil steps taken: one per tick stepped and one per skip.
    pub fn steps(&self) -> u64 {
        self.ticks + self.skips
    }

    fn add(&mut self, o: &Steps) {
        self.runs += o.runs;
        self.sim_ms += o.sim_ms;
        self.ticks += o.ticks;
        self.skips += o.skips;
        self.skipped_ms += o.skipped_ms;
    }
}

thread_local! {
    static STEPS: Cell<Steps> = Cell::new(Steps::default());
}

/// The [`Steps`] of the runs on this thread since the last call (for `bench`; no run reads it).
pub fn take_steps() -> Steps {
    STEPS.with(|s| s.take())
}

/// One run's step loop: the simulation, the ledger, and what the nemesis has in force.
struct StepLoop<'a> {
    plan: &'a Plan,
    ledger: Rc<RefCell<Ledger>>,
    /// The hosts' clock and armed timers.
    wakes: Rc<Wakes>,
    sim: turmoil::Sim<'a>,
    /// Skip idle ticks (false: step every tick, the reference the skips must equal).
    skip: bool,
    /// The step loop acted since the last step (a crash, restart, heal, partition, release,
    /// a host let past a barrier): a host may have work that no timer or message shows, so
    /// the next step is one tick.
    acted: bool,
    steps: Steps,
    /// The Client's next hops: partitions cut the Client from each (every node of a cluster).
    hops: &'static [&'static str],
    barriers: Vec<PointBarrier>,
    /// What the nemesis has in force, and the restarts, heals and timed faults due.
    force: InForce,
    liveness: bool,
    end_ms: u64,
}

/// Run a plan. `skip`: skip the ticks where nothing can happen (the same history as stepping
/// every tick, faster).
///
/// `snapshots`: take a snapshot of the world at every place a fault can land
/// ([`super::snapshot`], for exploration); the history is the same either way.
pub(super) fn run_plan(
    plan: &Plan,
    parties: &Parties,
    skip: bool,
    snapshots: bool,
) -> (History, Trace) {
    let mut w = StepLoop::build(plan, parties.clone(), skip, snapshots);
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    let outcome = loop {
        let now = w.sim.elapsed().as_millis() as u64;
        w.set_now(now);
        w.publish();
        let ms = w.idle_ms(now);
        if ms > 1 {
            w.steps.skips += 1;
            w.steps.skipped_ms += ms;
        } else {
            w.steps.ticks += 1;
        }
        let stepped = if w.skip && !w.acted {
            // Only the hosts with work tick: one woken (by a message delivered in this step,
            // a peer), or one whose timer ends by the step's end.
            let (sim, wakes) = (&mut w.sim, &w.wakes);
            sim.step_by_with(Duration::from_millis(ms), &mut |host| {
                wakes.due(host, now + ms)
            })
        } else {
            // The step loop acted (a crash, restart, heal, a host let past a barrier): every
            // host ticks, as a host may have work that nothing above shows.
            w.sim.step_by(Duration::from_millis(ms))
        };
        w.acted = false;
        if let Err(e) = stepped {
            w.ledger.borrow_mut().record(
                process::WORLD,
                OpType::Info,
                op::ERROR,
                json!({"error": e.to_string()}),
            );
            break "error";
        }
        let now = w.sim.elapsed().as_millis() as u64;
        w.set_now(now);
        let mut due = w.points_reached(&mut cx);
        w.stdio_respawn(now);
        let queued = w.ledger.borrow_mut().nemesis.take_queued();
        w.acted |= !queued.is_empty();
        due.extend(queued.into_iter().map(|(i, a)| (i, a, false)));
        w.timed_events(now, &mut due);
        for d in due {
            w.apply(d, now);
        }
        if let Some(outcome) = w.phase(now) {
            break outcome;
        }
    };
    w.finish(outcome)
}

impl<'a> StepLoop<'a> {
    /// Build the world: one turmoil host per process of the plan, and the nemesis's
    /// protocol-point barriers and timed faults.
    fn build(plan: &'a Plan, parties: Parties, skip: bool, snapshots: bool) -> StepLoop<'a> {
        let ledger = Rc::new(RefCell::new(Ledger::new(plan)));
        let wakes = Rc::new(Wakes::default());
        if snapshots {
            ledger.borrow_mut().snapshots = Some(Snapshots::new(wakes.clone()));
        }
        let mut sim = builder(plan).build();
        let ctx = Rc::new(Ctx {
            ledger: ledger.clone(),
            plan: plan.clone(),
            parties,
            wakes: wakes.clone(),
            snapshots,
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
        let hops: &'static [&'static str] = if plan.proxy {
            &["proxy"]
        } else {
            plan.agent_hosts()
        };

        // Crashes at protocol points: one suspend-barrier per point, counting every time the
        // Agent passes it (a trigger wakes at most one barrier, so one counter per point); the
        // step loop polls them and carries out the fault whose `nth` came up.
        let (points, times) = ledger.borrow().nemesis.points_and_times();
        let mut barriers: Vec<PointBarrier> = Vec::new();
        for (p, nths) in points {
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
        StepLoop {
            plan,
            ledger,
            wakes,
            sim,
            skip,
            // The hosts' software starts in the first step.
            acted: true,
            steps: Steps::default(),
            hops,
            barriers,
            force: InForce::new(times),
            liveness: false,
            end_ms: plan.safety_ms + plan.liveness_ms,
        }
    }

    /// In a snapshotting run, hand the ledger the nemesis's state as the next step will see
    /// it: what is in force and when each restart, heal or release is due.
    fn publish(&self) {
        let mut l = self.ledger.borrow_mut();
        let Some(s) = &mut l.snapshots else { return };
        let points: Vec<_> = self.barriers.iter().map(|b| (b.0.get(), &b.1)).collect();
        let f = &self.force;
        s.set_nemesis(of_debug(&(
            (&f.timed, &f.down, f.partitioned, f.store_cut),
            (f.oneway, f.held, self.liveness, self.end_ms, points),
        )));
    }

    /// The simulated time the hosts run at in the next step, ms.
    fn set_now(&mut self, now: u64) {
        self.ledger.borrow_mut().now_ms = now;
        self.wakes.set_now(now);
    }

    /// How many ticks (ms) the next step covers: one, or, when every tick before some instant
    /// is idle, up to that instant in one step. Idle: no host has a task ready (none was woken,
    /// the step loop did not act), no armed timer ends before it, no message becomes deliverable before
    /// it, and the step loop has nothing due before it (a timed fault, restart or heal; the
    /// end of the safety phase or of the run). Every event then happens at the same simulated
    /// time and in the same order as when stepping every tick.
    fn idle_ms(&self, now: u64) -> u64 {
        // A task woken by another host (turmoil answers a connect in process) or by a timer at
        // the end of the last step has work now.
        if !self.skip || self.acted || self.sim.has_pending_work() {
            return 1;
        }
        // The first instant something may happen: the step that starts there has work, or the
        // step loop acts after the step that reaches it.
        let mut until = if self.liveness {
            self.end_ms
        } else {
            self.plan.safety_ms
        };
        if let Some(t) = self.force.next_at() {
            until = until.min(t);
        }
        // A timer ending at t wakes its task at the end of the step reaching t.
        if let Some(t) = self.wakes.next() {
            until = until.min(t);
        }
        // A message due in d reaches its host in the step that reaches now + d, which starts
        // one tick earlier.
        if let Some(d) = self.sim.next_delivery() {
            let d = d.as_nanos().div_ceil(1_000_000) as u64;
            until = until.min((now + d).saturating_sub(TICK_MS));
        }
        until.saturating_sub(now).max(1)
    }

    /// Cut (or repair) the Client from its next hops, both ways.
    fn cut(&mut self, on: bool) {
        for h in self.hops {
            if on {
                self.sim.partition("client", *h);
            } else {
                self.sim.repair("client", *h);
            }
        }
    }

    /// Cut (or repair) one direction between the Client and its next hops.
    fn cut_oneway(&mut self, from_client: bool, on: bool) {
        for h in self.hops {
            let (a, b) = if from_client {
                ("client", *h)
            } else {
                (*h, "client")
            };
            if on {
                self.sim.partition_oneway(a, b);
            } else {
                self.sim.repair_oneway(a, b);
            }
        }
    }

    /// Hold (or release) every frame between the Client and its next hops.
    fn hold(&mut self, on: bool) {
        for h in self.hops {
            if on {
                self.sim.hold("client", *h);
            } else {
                self.sim.release("client", *h);
            }
        }
    }

    /// The crashes due because a host reached a protocol point an armed fault waits for.
    fn points_reached(&mut self, cx: &mut Context<'_>) -> Vec<Due> {
        let (ledger, acted) = (&self.ledger, &mut self.acted);
        let mut due: Vec<Due> = Vec::new();
        self.barriers.retain_mut(|(seen, nths, b)| {
            let mut fut = std::pin::pin!(b.wait());
            if let Poll::Ready(Some(hit)) = fut.as_mut().poll(cx) {
                // The host goes on past the barrier in the next step.
                *acted = true;
                if let Some(i) = nths.remove(&seen.get()) {
                    let mut l = ledger.borrow_mut();
                    l.fire(i, json!({"point": hit.0.as_str(), "nth": seen.get()}));
                    let a = l.nemesis.at_point(i, hit.1).expect("point faults act");
                    due.push((i, a, true));
                }
                // The suspended task dies with the crash below; the handle is dropped here.
            }
            !nths.is_empty()
        });
        due
    }

    /// Stdio: the Agent process exited with its pipe; the Client starts a new one (a
    /// transport fact, not a fault: also after heal).
    fn stdio_respawn(&mut self, now: u64) {
        let exited = std::mem::take(&mut self.ledger.borrow_mut().stdio_exit);
        if exited && self.force.exit("agent", now + 5) {
            self.acted = true;
            self.sim.crash("agent");
            self.ledger.borrow_mut().on_crash("agent");
            if let Some(i) = self.ledger.borrow_mut().idle.get_mut("agent") {
                *i = true;
            }
            self.ledger.borrow_mut().record(
                process::CLIENT,
                OpType::Info,
                op::RESPAWN_AGENT,
                json!({"after_ms": 5}),
            );
        }
    }

    /// Carry out what is due by `now` (restarts, heals, releases); timed faults join `due`.
    fn timed_events(&mut self, now: u64, due: &mut Vec<Due>) {
        while let Some(ended) = self.force.next_due(now) {
            self.acted = true;
            let logged = match ended {
                Ended::Restart(h) => {
                    self.sim.bounce(h);
                    (op::RESTART, json!({"host": h}))
                }
                Ended::HealOneway(cut) => {
                    if let Some(from_client) = cut {
                        self.cut_oneway(from_client, false);
                    }
                    (op::HEAL_PARTITION, json!({"oneway": true}))
                }
                Ended::Release => {
                    self.hold(false);
                    (op::RELEASE, json!({}))
                }
                Ended::HealStore(node) => {
                    self.sim.repair("store", node);
                    (op::HEAL_PARTITION, json!({"between": ["store", node]}))
                }
                Ended::Heal => {
                    self.cut(false);
                    (op::HEAL_PARTITION, json!({}))
                }
                Ended::Fire(i) => {
                    if let Some(a) = self.ledger.borrow().nemesis.at_time(i) {
                        due.push((i, a, false));
                    }
                    continue;
                }
            };
            let mut l = self.ledger.borrow_mut();
            l.record(process::NEMESIS, OpType::Info, logged.0, logged.1);
        }
    }

    /// Apply one due fault (safety phase only): log it as fired, ask what it starts given
    /// what is in force ([`InForce::start`]), and carry that out.
    fn apply(&mut self, (i, a, logged): Due, now: u64) {
        if self.liveness {
            return;
        }
        if !logged {
            if !self.ledger.borrow().nemesis.may_fire(i) {
                return;
            }
            self.ledger.borrow_mut().fire(i, json!({}));
        }
        let serving = self.ledger.borrow().serving;
        let Some(start) = self.force.start(a, now, self.plan.topology(), serving) else {
            return;
        };
        let logged = match start {
            Start::Crash(host) => {
                self.crash(i, host);
                (op::CRASH, json!({"host": host}))
            }
            Start::Partition => {
                self.cut(true);
                (op::PARTITION, json!({"between": ["client", self.hops]}))
            }
            Start::Oneway(from_client) => {
                self.cut_oneway(from_client, true);
                let way = if from_client {
                    "client-to-agent"
                } else {
                    "agent-to-client"
                };
                (op::PARTITION, json!({"oneway": way, "hops": self.hops}))
            }
            Start::Hold => {
                self.hold(true);
                (op::HOLD, json!({"between": ["client", self.hops]}))
            }
            Start::StoreCut(node) => {
                self.sim.partition("store", node);
                (op::PARTITION, json!({"between": ["store", node]}))
            }
            Start::Pause(host, ms) => {
                // The host, let past its point's barrier, sleeps it out (its fault op says so).
                self.ledger.borrow_mut().pauses.insert(host, ms);
                return;
            }
            Start::HalfOpen => {
                // Its fault op says so; each connection's end at the Client is logged.
                self.ledger.borrow_mut().half_open_client();
                return;
            }
        };
        let mut l = self.ledger.borrow_mut();
        l.record(process::NEMESIS, OpType::Info, logged.0, logged.1);
    }

    /// Crash `host` for fault `i`: what it held in flight is gone, a disk kind marks the
    /// Agent's log for damage, and a crashed Agent does no work (its restart recovers an idle
    /// model).
    fn crash(&mut self, i: usize, host: &'static str) {
        self.sim.crash(host);
        let mut l = self.ledger.borrow_mut();
        l.on_crash(host);
        if let (Some(d), "agent") = (self.plan.faults[i].kind.disk_damage(), host) {
            l.disk_fault = Some(d);
        }
        if let Some(idle) = l.idle.get_mut(host) {
            *idle = true;
        }
    }

    /// After the step's faults: in the safety phase, heal once its time is up or everything is
    /// quiet with nothing left to come; in the liveness phase, end the run when it is quiet
    /// (`quiescent`) or at its bound (`bound`).
    fn phase(&mut self, now: u64) -> Option<&'static str> {
        let quiet = {
            let l = self.ledger.borrow();
            self.force.down.is_empty()
                && l.delivered == l.workload.len()
                && l.client_pending.is_empty()
                && l.agents_idle()
                && l.outstanding.is_empty()
                && l.queued.is_empty()
        };
        if !self.liveness {
            if now >= self.plan.safety_ms || (quiet && self.force.nothing_left()) {
                self.heal(now);
            }
            None
        } else if quiet {
            Some("quiescent")
        } else if now >= self.end_ms {
            Some("bound")
        } else {
            None
        }
    }

    /// Heal: stop the nemesis, repair the network, restart what is down, and start the
    /// liveness phase.
    fn heal(&mut self, now: u64) {
        self.acted = true;
        self.liveness = true;
        self.barriers.clear();
        self.ledger.borrow_mut().nemesis.disarm();
        let healed = self.force.heal();
        if healed.partitioned {
            self.cut(false);
        }
        if let Some(node) = healed.store_cut {
            self.sim.repair("store", node);
        }
        if let Some(from_client) = healed.oneway {
            self.cut_oneway(from_client, false);
        }
        if healed.held {
            self.hold(false);
        }
        for h in healed.down {
            self.sim.bounce(h);
            self.ledger.borrow_mut().record(
                process::NEMESIS,
                OpType::Info,
                op::RESTART,
                json!({"host": h}),
            );
        }
        let applied = self.ledger.borrow().nemesis.applied();
        self.ledger
            .borrow_mut()
            .record(process::NEMESIS, OpType::Info, op::HEAL, applied);
        self.ledger.borrow_mut().record(
            process::WORLD,
            OpType::Info,
            op::PHASE,
            json!({"phase": "liveness"}),
        );
        self.end_ms = now + self.plan.liveness_ms;
    }

    /// The run is over: log what the Client still held and how it ended, and hand back the
    /// history with its header, and the trace.
    fn finish(mut self, outcome: &str) -> (History, Trace) {
        let plan = self.plan;
        self.steps.runs = 1;
        self.steps.sim_ms = self.sim.elapsed().as_millis() as u64;
        STEPS.with(|s| {
            let mut t = s.get();
            t.add(&self.steps);
            s.set(t);
        });
        let mut l = self.ledger.borrow_mut();
        let pending = l.client_pending.clone();
        l.record(
            process::CLIENT,
            OpType::Info,
            op::PENDING_AT_END,
            json!({"submissions": pending}),
        );
        let undelivered = l.workload.len() - l.delivered;
        l.record(
            process::WORLD,
            OpType::Info,
            op::END,
            json!({"outcome": outcome, "undelivered": undelivered}),
        );
        let header = json!({
            "format": FORMAT,
            "scenario": plan.scenario,
            "seed": plan.seed,
            "mutant": plan.mutant,
            "plan": plan,
        });
        let history = History {
            header,
            ops: std::mem::take(&mut l.ops),
        };
        (history, std::mem::take(&mut l.trace))
    }
}
