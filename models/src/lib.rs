//! Sans-IO models of ACP v2 Agents and Clients for acp-chaos, with their mutants.
//!
//! Each model is a state machine: `handle(input, &mut out)` appends [`Action`]s (frames to
//! send, records to persist, timers, protocol points, effects for the history). A driver (the
//! turmoil world in the `acp-chaos` crate) runs them; unit tests drive them directly.
//!
//! Rule ids (`A1`, `C1`, ...) refer to `spec/RULES.md`.

pub mod action;
pub mod agent;
pub mod client;
pub mod cluster;
pub mod digest;
pub mod methods;
pub mod mutant;
pub mod op;
pub mod property;
pub mod proxy;
pub mod rpc;
pub mod store;
pub mod watcher;

pub use action::{Action, ConnId, Effect, Point};
pub use agent::{
    AgentConfig, AgentInput, AgentModel, AgentMutant, CancelRequest, Design, DuringTurn,
    HeldOnDisconnect, ModelAgent, Retention, StoredAgent, WorkOnDisconnect,
};
pub use client::{
    ClientConfig, ClientInput, ClientKind, ClientModel, ClientMutant, KeyScheme, SpecClient,
};
pub use methods::RetryClass;
pub use mutant::{Mutant, Need, Party, Witness, MUTANTS};
pub use property::Property;
