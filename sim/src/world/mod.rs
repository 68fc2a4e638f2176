//! One run: build the turmoil world from a [`Plan`], drive `sim.step()` by hand so the nemesis
//! acts between steps, then heal and run the liveness phase until quiet or the bound.
//!
//! Hosts: `client`, the Agent (`agent`, or a cluster's `node1`..`nodeN` and `store`), and
//! optionally `proxy` and `watcher`; all `sim.host` (turmoil cannot crash a `sim.client`), so
//! the step loop decides when the run is over. A fault aimed at "the Agent" of a cluster hits
//! the node serving the Client (or, at a protocol point, the node that reached it).

//! - [`step`]: the step loop (build, safety, heal, liveness) and the turmoil builder;
//! - [`hosts`]: one async event loop per host (Agent, cluster node and store, Client, proxy,
//!   watcher) around a sans-IO model;
//! - [`io`]: the frame layer every host shares (connections, heartbeats, frame faults at the
//!   writer, the simulated disk, the cluster store link);
//! - [`ledger`]: the out-of-band ledger: the history, connection numbers, armed faults;
//! - [`parties`]: [`Parties`], [`Boot`] and the factories: how a user's Agent, Client or proxy
//!   plugs in;
//! - [`trace`]: what a run did that its history does not hold (points passed, submissions
//!   accepted), for exploration;
//! - [`wakes`]: the hosts' simulated clock and every timer they have armed, which tells the
//!   step loop which ticks it may skip (docs/internals/performance.md).

pub mod hosts;
pub mod io;
pub mod ledger;
pub mod parties;
pub mod snapshot;
pub mod step;
pub mod trace;
pub mod wakes;

pub use parties::{AgentBoot, AgentFactory, Boot, ClientFactory, Parties, ProxyFactory};
pub use step::{builder, epoch, take_steps, Steps, TICK_MS};
pub use trace::Trace;

use crate::history::History;
use crate::models::AgentModel;
use crate::plan::Plan;
use step::run_plan;

/// Run one plan to its end and return the history.
pub fn run(plan: &Plan) -> History {
    run_plan(plan, &Parties::default(), true, false).0
}

/// [`run`] stepping every tick, idle or not: the reference the skipping of idle ticks must
/// match byte for byte (tests and `bench` compare the two). Slower; same history.
pub fn run_every_tick(plan: &Plan) -> History {
    run_plan(plan, &Parties::default(), false, false).0
}

/// Run one plan with the given [`Parties`] (your Agent, Client or proxy in place of the
/// project's models) and return the history. With `Parties::default()` this is [`run`].
///
/// Panics when `parties.agent` is set on a cluster plan (`plan.nodes > 0`): cluster nodes are
/// always model Agents.
pub fn run_parties(plan: &Plan, parties: &Parties) -> History {
    run_parties_traced(plan, parties).0
}

/// [`run_parties`] with the run's [`Trace`] (see [`run_traced`]).
pub fn run_parties_traced(plan: &Plan, parties: &Parties) -> (History, Trace) {
    assert!(
        parties.agent.is_none() || !plan.cluster(),
        "world: a cluster plan runs model Agent nodes; give a single-process plan (nodes = 0) for your Agent"
    );
    run_plan(plan, parties, true, false)
}

/// Run one plan to its end and return the history and the run's [`Trace`] (the protocol points
/// passed and the submissions accepted, placed among the ops): what exploration needs to place
/// faults. The history is the one [`run`] returns.
pub fn run_traced(plan: &Plan) -> (History, Trace) {
    run_plan(plan, &Parties::default(), true, false)
}

/// [`run_traced`], taking a snapshot of the world at every place a fault can land (the
/// trace's `frame_states` and each point's and submission's `state`): for a run exploration
/// places further faults over. The history is the one [`run`] returns.
pub fn run_snapshotted(plan: &Plan) -> (History, Trace) {
    run_plan(plan, &Parties::default(), true, true)
}

/// [`run_snapshotted`] with the given [`Parties`]: what exploration runs a user's parties with
/// (a party without `state_digest` makes its snapshots `None`, so nothing merges there).
/// Panics on a cluster plan with `parties.agent` set, as [`run_parties`] does.
pub fn run_parties_snapshotted(plan: &Plan, parties: &Parties) -> (History, Trace) {
    assert!(
        parties.agent.is_none() || !plan.cluster(),
        "world: a cluster plan runs model Agent nodes; give a single-process plan (nodes = 0) for your Agent"
    );
    run_plan(plan, parties, true, true)
}

/// Run one plan with your own Agent in place of the project's model Agent, and return the
/// history (check it with [`crate::checkers::check_all`]).
///
/// `agent` builds the Agent at every start of the Agent process: the first one, and each
/// restart after a crash, from the records its earlier processes persisted ([`AgentBoot`]).
/// Everything else (the Client, the network, the nemesis, the history) is as in [`run`]: the
/// same plan and Agent give the same history, byte for byte.
///
/// The plan's `agent.design` declares your Agent's retention to the checkers (`stored`:
/// durable, `in-memory`: process); its other Agent settings are the model Agent's and are not
/// used. Single-process plans only: panics on a cluster plan (`plan.nodes > 0`), whose nodes
/// are always model Agents.
///
/// ```no_run
/// # use acp_chaos::models::{Action, AgentInput, AgentModel, Design};
/// # struct MyAgent;
/// # impl AgentModel for MyAgent {
/// #     fn handle(&mut self, _: AgentInput, _: &mut Vec<Action>) {}
/// #     fn is_idle(&self) -> bool { true }
/// # }
/// # impl MyAgent { fn recover(_: &[serde_json::Value]) -> Self { MyAgent } }
/// let plan = acp_chaos::explore::strategy::base(Design::Stored);
/// let history = acp_chaos::world::run_with(&plan, |boot| Box::new(MyAgent::recover(boot.records)));
/// for v in acp_chaos::checkers::check_all(&history) {
///     println!("{} {:?} {}", v.property, v.status, v.message);
/// }
/// ```
pub fn run_with<F>(plan: &Plan, agent: F) -> History
where
    F: Fn(AgentBoot<'_>) -> Box<dyn AgentModel> + 'static,
{
    run_parties(plan, &Parties::default().agent(agent))
}
