//! One run: build the turmoil world from a [`Plan`], drive `sim.step()` by hand so the nemesis
//! acts between steps, then heal and run the liveness phase until quiet or the bound.
//!
//! Hosts: `client`, the Agent (`agent`, or a cluster's `node1`..`nodeN` and `store`), and
//! optionally `proxy` and `watcher`; all `sim.host` (turmoil cannot crash a `sim.client`), so
//! the step loop decides when the run is over. A fault aimed at "the Agent" of a cluster hits
//! the node serving the Client (or, at a protocol point, the node that reached it).

//! - `run.rs`: [`Run`], one run of a plan as configured (your parties, snapshots for
//!   exploration, every tick stepped): the one way in besides [`run()`] and [`run_with`];
//! - [`step`]: the step loop (build, safety, heal, liveness) and the turmoil builder;
//! - [`hosts`]: one async event loop per host (Agent, cluster node and store, Client, proxy,
//!   watcher) around a sans-IO model;
//! - `event.rs`: `Ev`, what a host's event loop reacts to (sent by the frame layer and, for a
//!   `half-open` break, by the ledger);
//! - [`io`]: the frame layer every host shares (connections, heartbeats, frame faults at the
//!   writer, the simulated disk, the cluster store link);
//! - [`ledger`]: the out-of-band ledger: the history, connection numbers, what is in flight,
//!   and the run's [`crate::nemesis::Nemesis`];
//! - [`parties`]: [`Parties`], [`Boot`] and the factories: how a user's Agent, Client or proxy
//!   plugs in;
//! - [`trace`]: what a run did that its history does not hold (points passed, submissions
//!   accepted), for exploration;
//! - [`wakes`]: the hosts' simulated clock and every timer they have armed, which tells the
//!   step loop which ticks it may skip (docs/internals/performance.md).

mod event;
pub mod hosts;
pub mod io;
pub mod ledger;
pub mod parties;
mod run;
pub mod snapshot;
pub mod step;
pub mod trace;
pub mod wakes;

pub use parties::{AgentBoot, AgentFactory, Boot, ClientFactory, Parties, ProxyFactory};
pub use run::Run;
pub use step::{builder, epoch, take_steps, Steps, TICK_MS};
pub use trace::Trace;

use crate::history::History;
use crate::models::AgentModel;
use crate::plan::Plan;

/// Run one plan to its end and return the history: `Run::new(plan).history()`.
pub fn run(plan: &Plan) -> History {
    Run::new(plan).history()
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
    Run::new(plan)
        .parties(&Parties::default().agent(agent))
        .history()
}
