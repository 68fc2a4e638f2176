//! How the parties under test plug in: a [`Parties`] holds one factory per party (Agent,
//! Client, proxy), each building that party from a [`Boot`] at every start of its process. A
//! party without a factory is the project's model.

use std::rc::Rc;

use acp_chaos_models::proxy::ProxyModel;
use acp_chaos_models::{AgentModel, ClientModel};
use serde_json::Value;

use crate::plan::Plan;

#[allow(unused_imports)] // for the docs
use acp_chaos_models::Action;

/// What a process starts from, handed to a factory at every start (the first one and each
/// restart after a crash).
#[derive(Debug, Clone, Copy)]
pub struct Boot<'a> {
    /// Which start this is: 0 for the first, then 1, 2, ... (put it in the ids you mint, so
    /// they stay unique across restarts).
    pub boot: u32,
    /// The run's seed: derive any randomness of the party from it (never from the OS).
    pub seed: u64,
    /// The records the party's earlier processes wrote with [`Action::Persist`], in write
    /// order, as they survived on the simulated disk: every synced record, and unsynced ones
    /// only if no crash came before a later sync (a torn tail is cut). Empty at the first
    /// start, and always empty for a proxy (it has no disk).
    pub records: &'a [Value],
    /// The run's plan (`plan.agent` and `plan.client` hold the models' settings, `plan.seed`
    /// the seed).
    pub plan: &'a Plan,
}

/// The Agent's [`Boot`] (the name the Agent-only API has always used).
pub type AgentBoot<'a> = Boot<'a>;

/// Builds the Agent under test from its [`Boot`]: the simulator calls it at every start of the
/// single-process Agent host. See [`crate::world::run_with`].
pub type AgentFactory = Rc<dyn Fn(Boot<'_>) -> Box<dyn AgentModel>>;

/// Builds the Client under test from its [`Boot`] at every start of the Client process.
pub type ClientFactory = Rc<dyn Fn(Boot<'_>) -> Box<dyn ClientModel>>;

/// Builds the proxy under test from its [`Boot`] at every start of the proxy process (only
/// in plans with `proxy = true`).
pub type ProxyFactory = Rc<dyn Fn(Boot<'_>) -> Box<dyn ProxyModel>>;

/// The parties of a run that are not the project's models: each `None` is the model
/// ([`acp_chaos_models::ModelAgent`], [`acp_chaos_models::SpecClient`],
/// [`acp_chaos_models::proxy::Proxy`]). The default is all models, and
/// [`crate::world::Run::parties`] with it is [`crate::world::run()`], byte for byte.
///
/// ```no_run
/// # use acp_chaos::models::{Action, ClientInput, ClientModel, SpecClient};
/// # use acp_chaos::world::{Boot, Parties};
/// // Your Client, here the model Client built the way the simulator builds it.
/// let parties = Parties::default().client(|b: Boot<'_>| {
///     Box::new(SpecClient::recover(b.plan.client.clone(), b.boot, b.seed, b.records))
/// });
/// # let _ = parties;
/// ```
#[derive(Clone, Default)]
pub struct Parties {
    /// The Agent (single-process plans only; cluster nodes are always model Agents).
    pub agent: Option<AgentFactory>,
    /// The Client.
    pub client: Option<ClientFactory>,
    /// The proxy.
    pub proxy: Option<ProxyFactory>,
}

impl Parties {
    /// These parties with `f` building the Agent.
    pub fn agent<F>(mut self, f: F) -> Parties
    where
        F: Fn(Boot<'_>) -> Box<dyn AgentModel> + 'static,
    {
        self.agent = Some(Rc::new(f));
        self
    }

    /// These parties with `f` building the Client.
    pub fn client<F>(mut self, f: F) -> Parties
    where
        F: Fn(Boot<'_>) -> Box<dyn ClientModel> + 'static,
    {
        self.client = Some(Rc::new(f));
        self
    }

    /// These parties with `f` building the proxy.
    pub fn proxy<F>(mut self, f: F) -> Parties
    where
        F: Fn(Boot<'_>) -> Box<dyn ProxyModel> + 'static,
    {
        self.proxy = Some(Rc::new(f));
        self
    }

    /// Whether every party is the project's model.
    pub fn all_models(&self) -> bool {
        self.agent.is_none() && self.client.is_none() && self.proxy.is_none()
    }

    /// The parties that are not models, as `agent`, `client`, `proxy` (for messages).
    pub fn replaced(&self) -> Vec<&'static str> {
        [
            ("agent", self.agent.is_some()),
            ("client", self.client.is_some()),
            ("proxy", self.proxy.is_some()),
        ]
        .into_iter()
        .filter_map(|(n, on)| on.then_some(n))
        .collect()
    }
}

impl std::fmt::Debug for Parties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Parties {:?}", self.replaced())
    }
}
