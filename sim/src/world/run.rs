//! [`Run`]: one run of a plan, configured, then carried out by the step loop.

use super::parties::Parties;
use super::step::run_plan;
use super::trace::Trace;
use crate::history::History;
use crate::plan::Plan;

/// One run of a plan: which parties play, whether the world is snapshotted for exploration,
/// whether idle ticks are skipped. The same plan and parties give the same history, byte for
/// byte, whatever else is set.
///
/// ```
/// # use acp_chaos::world::{Parties, Run};
/// let plan = acp_chaos::explore::strategy::base(acp_chaos::models::Design::Stored);
/// let (history, trace) = Run::new(&plan).parties(&Parties::default()).traced();
/// assert_eq!(history, acp_chaos::world::run(&plan));
/// # let _ = trace;
/// ```
#[derive(Clone, Copy)]
pub struct Run<'a> {
    plan: &'a Plan,
    parties: Option<&'a Parties>,
    skip: bool,
    snapshots: bool,
}

impl<'a> Run<'a> {
    /// A run of `plan` with the project's model parties, skipping idle ticks, no snapshots.
    pub fn new(plan: &'a Plan) -> Run<'a> {
        Run {
            plan,
            parties: None,
            skip: true,
            snapshots: false,
        }
    }

    /// Play `parties` (your Agent, Client or proxy in place of the project's models; with
    /// `Parties::default()` the run is the same as without).
    ///
    /// The run panics when `parties.agent` is set on a cluster plan (`plan.nodes > 0`):
    /// cluster nodes are always model Agents.
    pub fn parties(self, parties: &'a Parties) -> Run<'a> {
        Run {
            parties: Some(parties),
            ..self
        }
    }

    /// Step every tick, idle or not: the reference the skipping of idle ticks must match byte
    /// for byte (tests compare the two). Slower; the same history.
    pub fn every_tick(self) -> Run<'a> {
        Run {
            skip: false,
            ..self
        }
    }

    /// Take a snapshot of the world at every place a fault can land (the trace's
    /// `frame_states` and each point's and submission's `state`, [`super::snapshot`]): for a
    /// run exploration places further faults over. A party without `state_digest` makes its
    /// snapshots `None`, so nothing merges there. The same history.
    pub fn snapshots(self) -> Run<'a> {
        Run {
            snapshots: true,
            ..self
        }
    }

    /// Carry out the run: its history and its [`Trace`] (the protocol points passed and the
    /// submissions accepted, placed among the ops: what exploration places faults with).
    pub fn traced(self) -> (History, Trace) {
        let default = Parties::default();
        let parties = self.parties.unwrap_or(&default);
        assert!(
            parties.agent.is_none() || !self.plan.cluster(),
            "world: a cluster plan runs model Agent nodes; give a single-process plan (nodes = 0) for your Agent"
        );
        run_plan(self.plan, parties, self.skip, self.snapshots)
    }

    /// Carry out the run: its history.
    pub fn history(self) -> History {
        self.traced().0
    }
}
