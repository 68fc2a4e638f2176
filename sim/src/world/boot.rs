//! How an Agent under test plugs in: [`AgentFactory`] builds it from an [`AgentBoot`] at every
//! start of the Agent process.

use std::rc::Rc;

use acp_chaos_models::AgentModel;
use serde_json::Value;

use crate::plan::Plan;

#[allow(unused_imports)] // for the docs
use acp_chaos_models::Action;

/// What an Agent process starts from, handed to an [`AgentFactory`] at every start (the first
/// one and each restart after a crash).
#[derive(Debug, Clone, Copy)]
pub struct AgentBoot<'a> {
    /// Which start this is: 0 for the first, then 1, 2, ... (put it in the ids you mint, so
    /// they stay unique across restarts).
    pub boot: u32,
    /// The run's seed: derive any randomness of the Agent from it (never from the OS).
    pub seed: u64,
    /// The records the Agent's earlier processes wrote with [`Action::Persist`], in write
    /// order, as they survived on the simulated disk: every synced record, and unsynced ones
    /// only if no crash came before a later sync (a torn tail is cut). Empty at the first
    /// start.
    pub records: &'a [Value],
    /// The run's plan (`plan.agent` holds the design's settings, `plan.seed` the seed).
    pub plan: &'a Plan,
}

/// Builds the Agent under test from its [`AgentBoot`]: the simulator calls it at every start
/// of the single-process Agent host. See [`crate::world::run_with`].
pub type AgentFactory = Rc<dyn Fn(AgentBoot<'_>) -> Box<dyn AgentModel>>;
